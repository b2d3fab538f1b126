#!/usr/bin/env bash
# One lease on a lent GPU machine: serving sweeps (probes.serve_sweep), one per argument.
#   bash probes/device_serve.sh HARDWARE "MODEL FORMATS BUDGET_S [TP [POINTS [OUTPUT_LEN]]]" ...   (MODEL: catalog name or inline JSON without spaces)
# TP > 1 runs that sweep under torchrun with TP ranks. Writes $OUT/serve.jsonl and $OUT/serve.log.
set -u
bash probes/device_wheels.sh || exit 1
export PYTHONPATH=$PWD:/tmp/site PYTHONUNBUFFERED=1 NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
hw=$1; shift
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader; nproc
for spec in "$@"; do
  set -- $spec
  tp=${4:-1}
  if [ "$tp" -gt 1 ]; then run="torchrun --nproc_per_node $tp -m probes.serve_sweep"; else run="python3 -m probes.serve_sweep"; fi
  extra=""; [ -n "${5:-}" ] && extra="--points $5 --max-prefill-tokens ${MAX_PREFILL:-32768}"; [ -n "${6:-}" ] && extra="$extra --output-len $6"
  timeout $(( $3 + 120 )) $run --model "$1" --hardware "$hw" --formats "$2" --budget-s "$3" --out "$OUT/serve.jsonl" $extra \
    --tag "$hw" --dataset "own-$hw" 2>&1 | grep -v "Warning\|warn(" | tee -a "$OUT/serve.log"
  echo "exit ${PIPESTATUS[0]} for $spec" | tee -a "$OUT/serve.log"
done
