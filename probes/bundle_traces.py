"""Trace again, with this checkout's tracer, every variant the package ships, and ship the traces of the configs a
maintainer predicted: ``python -m probes.bundle_traces [--from-home] [--workers N] [--only CONFIG_JSON...] [--facts-only]``.

The bundled traces (``knowledge/data/traces/<config hash>.json``) answer a catalog or measured architecture's first
``recommend`` without tracing it; a trace of an older ``TRACE_SCHEMA`` is not used, so a change of the tracer makes
every bundled file stale until this runs (1.5-3.5 minutes on two cores, 2026-11-25). ``--from-home`` also takes in the variants that
``ADVISOR_HOME/traces`` holds for the configs of ``knowledge/data/configs`` (predict a grid's cases first), traced
again here. Each file keeps its config's facts (window, default LoRA targets, KV layout); writes are atomic.
``--facts-only`` rewrites those facts alone, keeping the traces (a new KV layout: about a minute), and drops the keys
of older facts.
"""

from __future__ import annotations

import argparse
import glob
import json
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Any

from advisor.traces import (BUNDLED_TRACES, KV_GROUPS, LORA_DEFAULT, USUAL_LORA_TARGETS, WINDOW, _read,
                            sliding_window)
from knowledge.catalog import models, resolve_model
from knowledge.errors import AdvisorError
from knowledge.paths import BUNDLED, advisor_home
from knowledge.traces import TraceVariant


def _configs() -> dict[str, dict[str, Any]]:
    """{config hash: config} of the catalog's models and the measured architectures' config.json files."""
    from probes.hf_model import config_dict
    from probes.trace import config_hash

    archs = list(models().values()) + [resolve_model(f) for f in sorted(glob.glob(str(BUNDLED / "data" / "configs" / "*.json")))]
    configs = [config_dict(a) for a in archs]
    return {config_hash(c): c for c in configs}


def _trace(job: tuple[str, dict[str, Any], dict[str, Any]]) -> tuple[str, str, dict[str, Any] | str]:
    from probes.trace import trace_model

    h, config, variant = job
    v = TraceVariant.model_validate(variant)
    try:
        return h, v.key, trace_model(config, v).model_dump(mode="json")
    except Exception as e:  # noqa: BLE001 - reported, the file keeps going
        return h, v.key, f"{type(e).__name__}: {str(e)[:200]}"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m probes.bundle_traces", description=__doc__.splitlines()[0])
    ap.add_argument("--from-home", action="store_true", help="also ship ADVISOR_HOME's traces of the measured configs")
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--only", nargs="+", metavar="CONFIG_JSON", help="trace these configs alone (new ones: with --from-home)")
    ap.add_argument("--facts-only", action="store_true", help="rewrite each bundled file's config facts, keep its traces")
    args = ap.parse_args(argv)
    from knowledge.store import atomic_write_json

    configs = _configs()
    if args.only:
        from probes.hf_model import config_dict
        from probes.trace import config_hash

        try:
            wanted = {config_hash(config_dict(resolve_model(f))) for f in args.only}
        except AdvisorError as e:
            print(f"--only: {e}")
            return 2
        configs = {h: c for h, c in configs.items() if h in wanted}
    if args.facts_only:
        return _rewrite_facts(configs)
    jobs: list[tuple[str, dict[str, Any], dict[str, Any]]] = []
    for h, config in configs.items():
        files = [BUNDLED_TRACES / f"{h}.json"] + ([advisor_home() / "traces" / f"{h}.json"] if args.from_home else [])
        variants = {k: r["variant"] for f in files for k, r in _read(f).items() if not k.startswith("_") and isinstance(r, dict)}
        jobs += [(h, config, v) for v in variants.values()]
    t0 = time.perf_counter()
    out: dict[str, dict[str, Any]] = {}
    with ProcessPoolExecutor(max(1, args.workers)) as pool:
        for n, (h, key, record) in enumerate(pool.map(_trace, jobs), 1):
            if isinstance(record, str):
                print(f"  {h} {key}: not traced ({record})", flush=True)
                continue
            out.setdefault(h, {})[key] = record
            print(f"[{n}/{len(jobs)}, {time.perf_counter() - t0:.0f} s] {h} {key}", flush=True)
    for h, records in out.items():
        atomic_write_json(BUNDLED_TRACES / f"{h}.json", {**records, **_facts(configs[h])}, indent=None)  # compact, ~7 MB
    print(f"{sum(map(len, out.values()))} variants of {len(out)} configs written in {time.perf_counter() - t0:.0f} s")
    return 0


def _facts(config: dict[str, Any], kept: dict[str, Any] | None = None) -> dict[str, Any]:
    """A bundled file's entries that are facts of its config, not traces; where one cannot be read (transformers cannot
    build the model: Zamba's shared layers), the one the file ``kept``."""
    from probes.cache_trace import cache_layout
    from probes.trace import default_lora_targets

    readers = {WINDOW: sliding_window, KV_GROUPS: cache_layout,
               LORA_DEFAULT: lambda c: default_lora_targets(c, list(USUAL_LORA_TARGETS))}
    out = {}
    for key, read in readers.items():
        try:
            out[key] = read(config)
        except AdvisorError:
            if kept is None or key not in kept:
                raise
            out[key] = kept[key]
    return out


def _rewrite_facts(configs: dict[str, dict[str, Any]]) -> int:
    """Each bundled file's facts anew, its traces kept; keys of facts no longer read (``_``-prefixed) dropped."""
    from knowledge.store import atomic_write_json

    t0 = time.perf_counter()
    n = 0
    for h, config in configs.items():
        path = BUNDLED_TRACES / f"{h}.json"
        if not path.exists():
            continue
        data = _read(path)
        traces = {k: r for k, r in data.items() if not k.startswith("_")}
        atomic_write_json(path, {**traces, **_facts(config, data)}, indent=None)
        n += 1
        print(f"[{n}, {time.perf_counter() - t0:.0f} s] {h}", flush=True)
    print(f"the facts of {n} bundled files rewritten in {time.perf_counter() - t0:.0f} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
