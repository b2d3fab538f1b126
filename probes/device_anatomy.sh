#!/usr/bin/env bash
# Kernel-time and memory anatomy of the cases in a JSONL file, one torchrun per case with the case's own ``gpus``
# (a lent GPU machine).
#   bash probes/device_anatomy.sh CASES.jsonl   -> $OUT/anatomy.jsonl
set -u
bash probes/device_wheels.sh || exit 1
export PYTHONPATH=$PWD:/tmp/site PYTHONUNBUFFERED=1 NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1 ADVISOR_HOME=/tmp/advisor-home
python3 -c "from probes.train_step import sanitize_arch_list as s; s(); from deepspeed.ops.op_builder import FusedAdamBuilder as F; F().load()" > /tmp/prebuild.log 2>&1 || tail -3 /tmp/prebuild.log
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader
while IFS= read -r case; do
  [ -n "$case" ] || continue
  g=$(python3 -c "import json,sys; print(json.loads(sys.argv[1]).get('gpus') or 1)" "$case")
  timeout "${CASE_TIMEOUT_S:-150}" python3 -m torch.distributed.run --standalone --nproc_per_node "$g" -m probes.anatomy ${ANATOMY_FLAGS:-} \
    --case "$case" --out "$OUT/anatomy.jsonl" 2>&1 | tee -a "$OUT/anatomy.log" | grep -v "Warning\|warn(" | tail -3
  echo "rc=$?"
done < "$1"
