#!/usr/bin/env bash
# ZeRO-Offload with the offloaded states in pinned host memory (the config the advisor writes) and in pageable memory
# (DeepSpeed's default, "pin_memory": false): the node's host RAM (rise of MemTotal - MemAvailable) and the step, same
# case otherwise. What a server with little RAM for its GPUs (the study's 8x RTX 3090 box, 128 GB) can run.
#   WHEELS=.whlr [PINS=true] bash probes/device_pin_memory.sh CASES.jsonl   (a lent GPU machine; rows -> $OUT/rows.jsonl)
set -u
bash probes/device_wheels.sh || exit 1
export PYTHONPATH=$PWD:/tmp/site PYTHONUNBUFFERED=1 NCCL_NVLS_ENABLE=0 ADVISOR_HOME=/tmp/advisor-home
python3 -c "from probes.train_step import sanitize_arch_list as s; s(); from deepspeed.ops.op_builder import CPUAdamBuilder as C; C().load()" > /tmp/prebuild.log 2>&1 || tail -3 /tmp/prebuild.log
while IFS= read -r case; do
  [ -n "$case" ] || continue
  for pin in ${PINS:-true false}; do
    id=$(python3 -c "import json,sys; print(json.loads(sys.argv[1])['id'])" "$case")
    g=$(python3 -c "import json,sys; print(json.loads(sys.argv[1]).get('gpus') or 1)" "$case")
    # the case's own offload_pin_memory: models.deepspeed_config writes it into the run's DeepSpeed config
    c2=$(python3 -c "import json,sys; d=json.loads(sys.argv[1]); d['id']+='-pin-'+sys.argv[2]; d['offload_pin_memory']=sys.argv[2]=='true'; print(json.dumps(d))" "$case" "$pin")
    timeout "${CASE_TIMEOUT_S:-200}" python3 -m torch.distributed.run --standalone --nproc_per_node "$g" -m probes.run_case \
      --case "$c2" --out "$OUT/rows.jsonl" --steps 3 --warmup 1 --source "probes/device_pin_memory.sh pin_memory=$pin" \
      2>&1 | grep -v "Warning\|warn(" | tail -2
    echo "$id pin=$pin rc=$?"
  done
done < "$1"
