#!/usr/bin/env bash
# The second lease for eager kernels: probes/eager_ops.py with 1- and 5-layer cuts, steps back to back, at 2048 and 512.
set -u
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/pydantic*.whl .whl/typing*.whl .whl/annotated*.whl || exit 1
export PYTHONPATH=$PWD:/tmp/site PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name --format=csv,noheader; nproc
for s in 2048 512; do python3 -m probes.eager_ops --out "$OUT/eager_ops.jsonl" --seq $s 2>&1 | grep -v "Warning\|warn(\|falling back" | cut -c1-110; done
