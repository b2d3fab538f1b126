#!/usr/bin/env bash
# Kernel-time and memory anatomy of the cases in a JSONL file, one process per case (a lent GPU machine).
#   bash probes/device_anatomy.sh CASES.jsonl   -> $OUT/anatomy.jsonl
set -u
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
export PYTHONPATH=$PWD:/tmp/site PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader
while IFS= read -r case; do
  [ -n "$case" ] || continue
  timeout "${CASE_TIMEOUT_S:-150}" python3 -m probes.anatomy --case "$case" --out "$OUT/anatomy.jsonl" 2>&1 | grep -v "Warning\|warn(" | tail -3
  echo "rc=$?"
done < "$1"
