#!/usr/bin/env bash
# Two two-GPU grids side by side on a four-GPU machine (GPUs 0-1 and 2-3), or one after the other on two GPUs.
#   bash probes/device_pairs.sh GRID_A GRID_B [BUDGET_S]     (repo root, .whl carried)
# Each pair's rows are those of a two-GPU box of the same GPU (hardware <gpu>x2); the host (cores, RAM) is the
# four-GPU machine's and every row's environment says so. Writes $OUT/{a,b}/measurements.jsonl, campaign.log and
# /tmp/{a,b}.log (their tails printed).
set -u
A=$1 B=$2 BUDGET=${3:-480}
bash probes/device_wheels.sh || exit 1
export PYTHONPATH=$PWD:/tmp/site PYTHONUNBUFFERED=1 NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1 ADVISOR_HOME=/tmp/advisor-home
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader; nproc; free -g | head -2
gpu=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1 | grep -oiE "h100|h200" | tr A-Z a-z)
n=$(nvidia-smi -L | wc -l)
# build DeepSpeed's fused and CPU Adam once, so the two campaigns do not race to compile them
python3 -c "from probes.train_step import sanitize_arch_list as s; s(); from deepspeed.ops.op_builder import FusedAdamBuilder as F, CPUAdamBuilder as C; F().load(); C().load()" > /tmp/prebuild.log 2>&1 || tail -3 /tmp/prebuild.log
camp() { python3 -m probes.campaign --grid "$1" --hardware "${gpu}x2" --out "$OUT/$2" --budget-s "$3" --no-prebuild > "/tmp/$2.log" 2>&1; }
if [ "$n" -ge 4 ]; then
  CUDA_VISIBLE_DEVICES=0,1 camp "$A" a "$BUDGET" &
  CUDA_VISIBLE_DEVICES=2,3 camp "$B" b "$BUDGET" &
  wait
else
  camp "$A" a $((BUDGET / 2)); camp "$B" b $((BUDGET / 2))
fi
tail -n 12 /tmp/a.log /tmp/b.log
