#!/usr/bin/env bash
# One lease for the host's cost of eager kernels: probes/eager_ops.py on tiny cuts of the families at 2048 and 512
# tokens, then, when GRID is given, that grid of probes.grids (2026-11-27: h200-scan-families on the H200).
#   bash probes/device_eager.sh [GRID]   -> $OUT/eager_ops.jsonl [, $OUT/camp/{measurements.jsonl,campaign.log}]
set -u
start=$(date +%s)
bash probes/device_wheels.sh || exit 1
export PYTHONPATH=$PWD:/tmp/site PYTHONUNBUFFERED=1 NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1 ADVISOR_HOME=/tmp/advisor-home
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader; nproc
for s in 2048 512; do python3 -m probes.eager_ops --out "$OUT/eager_ops.jsonl" --seq $s 2>&1 | grep -v "Warning\|warn(\|falling back" | cut -c1-110; done
echo "eager_ops done after $(( $(date +%s) - start )) s"
[ -z "${1:-}" ] || python3 -m probes.campaign --grid "$1" --out "$OUT/camp" --budget-s $(( ${TOTAL_S:-520} - ($(date +%s) - start) )) 2>&1 | grep -v "Warning\|warn("
