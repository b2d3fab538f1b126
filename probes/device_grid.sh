#!/usr/bin/env bash
# One lease for one grid of probes.grids, no profile: install the carried wheels, run the grid within the budget.
#   bash probes/device_grid.sh GRID [BUDGET_S]   -> $OUT/camp/{measurements.jsonl,campaign.log}
set -u
bash probes/device_wheels.sh || exit 1
export PYTHONPATH=$PWD:/tmp/site PYTHONUNBUFFERED=1 NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1 ADVISOR_HOME=/tmp/advisor-home
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader; nproc
python3 -m probes.campaign --grid "$1" --out "$OUT/camp" --budget-s "${2:-500}" 2>&1 | grep -v "Warning\|warn("
