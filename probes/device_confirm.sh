#!/usr/bin/env bash
# advisor confirm of offload picks on a lent GPU machine (rows under $OUT); see knowledge/measurements/README.md
set -u
bash probes/device_wheels.sh || exit 1
export PYTHONPATH=$PWD:/tmp/site PYTHONUNBUFFERED=1 NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1 ADVISOR_HOME=/tmp/advisor-home
python3 -c "from deepspeed.ops.op_builder import CPUAdamBuilder; CPUAdamBuilder().load()" > /dev/null 2>&1
for args in "$@"; do
  python3 -m advisor.cli confirm $args --steps 3 --warmup 1 --timeout-s 300 --out "$OUT/confirm.jsonl" --no-refit 2>&1 | grep -v "Warning\|warn("
done
python3 -m advisor.cli confirm --task pretrain --model llama3-8b --dry-run 2>&1 | tail -2
