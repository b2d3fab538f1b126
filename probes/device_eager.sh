#!/usr/bin/env bash
# One lease for the host's cost of eager kernels: probes/eager_ops.py on tiny cuts of the families, then the grid of
# the scan families (h100-/h200-scan-families by the GPU found), then one anatomy (probes/anatomy.py) of Qwen3-Next.
#   bash probes/device_eager.sh   -> $OUT/eager_ops.jsonl, $OUT/camp/{measurements.jsonl,campaign.log}, $OUT/anatomy.jsonl
set -u
start=$(date +%s)
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
export PYTHONPATH=$PWD:/tmp/site PYTHONUNBUFFERED=1 NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1 ADVISOR_HOME=/tmp/advisor-home
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader; nproc
case "$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)" in *H200*) hw=h200 ;; *) hw=h100 ;; esac
python3 -m probes.eager_ops --out "$OUT/eager_ops.jsonl" 2>&1 | grep -v "Warning\|warn(\|falling back"
echo "eager_ops done after $(( $(date +%s) - start )) s"
python3 -m probes.campaign --grid "$hw-scan-families" --out "$OUT/camp" --budget-s $(( ${TOTAL_S:-520} - ($(date +%s) - start) - 90 )) 2>&1 | grep -v "Warning\|warn("
left=$(( ${TOTAL_S:-520} - ($(date +%s) - start) ))
echo "campaign done; $left s left"
if [ "$left" -gt 80 ]; then
  case=$(python3 -c "import json; from probes.grids import grid; print(json.dumps([c for c in grid('$hw-scan-families') if 'qnext-lora-pt-mb1' in c['id']][0]))")
  timeout $(( left - 10 )) python3 -m probes.anatomy --case "$case" --out "$OUT/anatomy.jsonl" 2>&1 | grep -v "Warning\|warn(" | tail -3
fi
