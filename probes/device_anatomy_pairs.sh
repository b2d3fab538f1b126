#!/usr/bin/env bash
# Anatomies (probes/anatomy.py) of the cases of a JSONL file on a four-GPU machine: lines 1-2 on GPUs 0-1, lines 3-4
# on GPUs 2-3 (a case of one GPU on GPU 2), each case under torchrun with its own ``gpus``.
#   bash probes/device_anatomy_pairs.sh CASES.jsonl   -> $OUT/anatomy-{a,b}.jsonl
set -u
bash probes/device_wheels.sh || exit 1
export PYTHONPATH=$PWD:/tmp/site PYTHONUNBUFFERED=1 NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1 ADVISOR_HOME=/tmp/advisor-home
python3 -c "from probes.train_step import sanitize_arch_list as s; s(); from deepspeed.ops.op_builder import FusedAdamBuilder as F; F().load()" > /tmp/prebuild.log 2>&1 || tail -3 /tmp/prebuild.log
one() {  # devices, line, out
  local case; case=$(sed -n "$2p" "$CASES"); [ -n "$case" ] || return
  local g; g=$(python3 -c "import json,sys; print(json.loads(sys.argv[1]).get('gpus') or 1)" "$case")
  CUDA_VISIBLE_DEVICES=$1 timeout 200 python3 -m torch.distributed.run --standalone --nproc_per_node "$g" -m probes.anatomy \
    --case "$case" --out "$OUT/$3" > "/tmp/$3.$2.log" 2>&1; echo "line $2 rc=$?"; grep -v "Warning\|warn(" "/tmp/$3.$2.log" | tail -2
}
CASES=$1
{ one 0,1 1 anatomy-a.jsonl; one 0,1 2 anatomy-a.jsonl; } &
{ one 2,3 3 anatomy-b.jsonl; one 2 4 anatomy-b.jsonl; } &
wait
