#!/usr/bin/env bash
# How the lent box is wired (probes/links.py), within ~200 s: P2P matrix; all-reduce / all-gather /
# reduce-scatter bus bandwidth by size with P2P on and with NCCL_P2P_DISABLE=1 (stands in for a GeForce
# box); pinned copies from every GPU at once; DeepSpeed CPU Adam with 1 and 2 processes at once,
# each with the threads the launch line gives a rank (cores / processes).
#   bash probes/device_links.sh        (repo root, .whl carried)
#   PROCS=1,2,4,8 PLATFORM=h200x8 BUDGET=400 bash probes/device_links.sh   (8 GPUs over two sockets: the study's shape)
# Writes $OUT/links.json (a LinksProbe), $OUT/links.jsonl (one line per measurement), $OUT/links.log.
set -u
PROCS=${PROCS:-1,2} PLATFORM=${PLATFORM:-h200x2} BUDGET=${BUDGET:-200}
start=$(date +%s)
bash probes/device_wheels.sh || exit 1
export PYTHONPATH=$PWD:/tmp/site PYTHONUNBUFFERED=1 NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
{ nvidia-smi --query-gpu=name,pci.bus_id,pcie.link.gen.current,pcie.link.width.current --format=csv,noheader
  nvidia-smi topo -m; lscpu | grep -E "Model name|Socket|NUMA node\(s\)|^CPU\(s\)"; } > "$OUT/links.log" 2>&1
# build DeepSpeed's CPU Adam once (JIT, ~1 min) so the concurrent processes do not race to build it
timeout 150 python3 -c "from probes.micro import cpu_adam_gparams_per_s as f; print('cpu adam 1 proc, all threads:', f(10_000_000, allow_build=True))" >> "$OUT/links.log" 2>&1
timeout $(( BUDGET - ($(date +%s) - start) )) python3 -m probes.links --out "$OUT" --procs "$PROCS" --adam-params 50000000 >> "$OUT/links.log" 2>&1
echo "rc=$? after $(( $(date +%s) - start )) s" >> "$OUT/links.log"
python3 -m probes.links_check "$OUT/links.json" "$PLATFORM" >> "$OUT/links.log" 2>&1
tail -40 "$OUT/links.log"
