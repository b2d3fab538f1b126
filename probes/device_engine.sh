#!/usr/bin/env bash
# One lease on a lent GPU machine: engine-style serving sweeps (probes.engine_sweep: vLLM's decoder structure in
# torch, CUDA-graph decode, chunked prefill), all models in one process.
#   bash probes/device_engine.sh HARDWARE BUDGET_S MODEL [MODEL ...]   (MODEL: catalog name or inline JSON without spaces)
# ENGINE_SWEEP_ARGS adds flags (e.g. "--batches 1,8,64 --kv 1024,4096"). Writes $OUT/engine.jsonl and $OUT/engine.log.
set -u
bash probes/device_wheels.sh || exit 1
export PYTHONPATH=$PWD:/tmp/site PYTHONUNBUFFERED=1
hw=$1; budget=$2; shift 2
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader; nproc
models=(); for m in "$@"; do models+=(--model "$m"); done
timeout $(( ${budget%.*} + 90 )) python3 -m probes.engine_sweep "${models[@]}" --hardware "$hw" --budget-s "$budget" \
  --out "$OUT/engine.jsonl" --tag "$hw" --dataset "own-$hw" ${ENGINE_SWEEP_ARGS:-} 2>&1 | grep -v "Warning\|warn(" | tee -a "$OUT/engine.log"
echo "exit ${PIPESTATUS[0]}" | tee -a "$OUT/engine.log"
