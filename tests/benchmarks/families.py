"""Seven architectures outside the catalog, each given as its config.json, predicted by the trace of its own code
and by the v2 hand count of a Llama decoder, against real runs (H100 and 2xH200, 2026-11-23).

Nothing of these runs is in the fit (the bundled fit predates them): every figure here is held out by architecture.
The hand count is the prediction v2 gave for the same config.json (where it could: it refuses Phi-3's own module
names and DeepSeek's latent attention).

    python tests/benchmarks/families.py > tests/benchmarks/families.out.txt
"""

from __future__ import annotations

import json
from pathlib import Path

from advisor.predictor import Predictor
from knowledge.catalog import resolve_model, resolve_platform
from knowledge.schema import TrainCase
from models.training import predict_training

OWN = Path(__file__).resolve().parents[2] / "knowledge" / "measurements" / "own"
FILES = ("h100-families-2026-11-23.jsonl", "h200x2-families-2026-11-23.jsonl")


def main() -> None:
    p = Predictor()
    rows = [json.loads(line) for f in FILES for line in (OWN / f).read_text().splitlines() if line.strip()]
    errs: dict[str, list[float]] = {"trace": [], "hand": []}
    mem: dict[str, list[float]] = {"trace": [], "hand": []}
    verdicts: dict[str, list[bool]] = {"trace": [], "hand": []}
    print(f"{'run':40s} {'measured':>18s} | {'trace: tok/s, GiB, fits, p_oom':>34s} | {'hand count':>24s}")
    for r in rows:
        c, m = TrainCase.model_validate(r["case"]), r["measured"]
        if m.get("failure") not in (None, "device_oom", "host_oom"):
            print(f"{c.id:40s} {m['failure']:>18s} (no verdict to check)")
            continue
        plat, arch = resolve_platform(c.hardware, c.gpus), resolve_model(c.model)
        cal = p.calibration(plat)
        ran = m.get("tokens_per_s") is not None
        meas = f"{m['tokens_per_s']:8.0f} {m['peak_mem_gib']:5.1f}" if ran else f"OOM {m.get('peak_mem_gib') or 0:5.1f}"
        line = f"{c.id:40s} {meas:>18s}"
        for name, trace in (("trace", p.traces.trace(arch, c)), ("hand", None)):
            try:
                q = predict_training(c, arch, plat, cal, trace=trace)
            except Exception as e:  # the hand count refuses names it does not know
                line += f" | {name}: {str(e)[:28]}"
                continue
            verdicts[name].append(q.fits == ran)
            if ran:
                errs[name].append(q.tokens_per_s / m["tokens_per_s"] - 1)
                mem[name].append(q.peak_mem_gib / m["peak_mem_gib"] - 1)
            line += f" | {q.tokens_per_s:8.0f} {q.peak_mem_gib:5.1f} {'fits' if q.fits else 'no  '} {q.p_oom or 0:4.0%}"
        print(line)
    for name in ("trace", "hand"):
        e, me, v = errs[name], mem[name], verdicts[name]
        print(f"{name}: tokens/s MAPE {100 * sum(map(abs, e)) / len(e):.1f}% (mean signed {100 * sum(e) / len(e):+.1f}%, "
              f"n={len(e)}); peak memory MAPE {100 * sum(map(abs, me)) / len(me):.1f}% (n={len(me)}); "
              f"fit verdicts {sum(v)}/{len(v)}")


if __name__ == "__main__":
    main()
