#!/usr/bin/env bash
# One lease on a lent GPU machine: install the carried wheels, probe, then a campaign in what time is left.
#   bash probes/device_run.sh NAME GRID CAMPAIGN_ARGS...   (NAME: the profile's file name, e.g. h100x1)
# QUICK=1: advisor probe --quick; PREDICT=1: the grid's predictions with that profile, before the runs ($OUT/predictions-profile.jsonl)
# Writes $OUT/NAME.json (the profile), $OUT/camp/measurements.jsonl and campaign.log.
set -u
start=$(date +%s)
bash probes/device_wheels.sh || exit 1
export PYTHONPATH=$PWD:/tmp/site PYTHONUNBUFFERED=1 NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1 ADVISOR_HOME=/tmp/advisor-home  # the harness finds the advisor's data there: no platformdirs on the device
name=$1; grid=$2; shift 2
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader; nproc; free -g | head -2
cat /sys/fs/cgroup/memory.max 2>/dev/null
if [ "${PROBE:-1}" = 1 ]; then
  python3 -m advisor.cli probe ${QUICK:+--quick} --out "$OUT/$name.json" --budget "${MACRO_BUDGET:-120}" 2>&1 | grep -v Warning | tail -30
fi
if [ "${PREDICT:-0}" = 1 ] && [ "$grid" != none ]; then
  # the grid's predictions with this host's fresh profile, stored before any of its runs (the code is the commit's)
  python3 -c "import json,sys; from probes.grids import grid; [print(json.dumps({k: v for k, v in c.items() if not k.startswith('_')})) for c in grid(sys.argv[1])]" "$grid" > "$OUT/cases.jsonl"
  ADVISOR_HOME=/tmp/advisor-home python3 -m advisor.cli predict --cases "$OUT/cases.jsonl" --json --profile "$OUT/$name.json" > "$OUT/predictions-profile.jsonl"
  echo "predictions with the fresh profile: $(wc -l < "$OUT/predictions-profile.jsonl") lines"
fi
left=$(( ${TOTAL_S:-560} - ($(date +%s) - start) ))
echo "probe done after $(( $(date +%s) - start )) s; campaign budget $left s"
[ "$grid" = none ] || python3 -m probes.campaign --grid "$grid" --out "$OUT/camp" --budget-s "$left" "$@" 2>&1 | grep -v "Warning\|warn(" 
