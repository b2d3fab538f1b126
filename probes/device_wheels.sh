#!/usr/bin/env bash
# The carried wheels (deepspeed, bitsandbytes, pydantic... : ../shared/scripts/offline-wheels.sh) into /tmp/site on a lent
# GPU machine, for every probes/device_*.sh. WHEELS names the folder (default .whl; .whlr is the same without optuna
# and its SQL stack, so that a carried tree stays under the device's 64 MiB).
#   bash probes/device_wheels.sh || exit 1      (repo root)
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site "${WHEELS:-.whl}"/*.whl
