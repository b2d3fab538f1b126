#!/usr/bin/env bash
# One lease on a lent GPU machine: install the carried wheels, probe, then a campaign in what time is left.
#   bash probes/device_run.sh NAME GRID CAMPAIGN_ARGS...   (NAME: the profile's file name, e.g. h100x1)
# Writes $OUT/NAME.json (the profile), $OUT/camp/measurements.jsonl and campaign.log.
set -u
start=$(date +%s)
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
export PYTHONPATH=$PWD:/tmp/site PYTHONUNBUFFERED=1 NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
name=$1; grid=$2; shift 2
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader; nproc; free -g | head -2
cat /sys/fs/cgroup/memory.max 2>/dev/null
if [ "${PROBE:-1}" = 1 ]; then
  python3 -m advisor.cli probe --out "$OUT/$name.json" --budget "${MACRO_BUDGET:-120}" 2>&1 | grep -v Warning | tail -30
fi
left=$(( ${TOTAL_S:-560} - ($(date +%s) - start) ))
echo "probe done after $(( $(date +%s) - start )) s; campaign budget $left s"
[ "$grid" = none ] || python3 -m probes.campaign --grid "$grid" --out "$OUT/camp" --budget-s "$left" "$@" 2>&1 | grep -v "Warning\|warn(" 
