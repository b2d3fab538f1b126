"""Predictions stored before the runs, against what the runs measured: architectures and shapes outside the catalog
(Qwen3-4B, Phi-3-medium 14B, OLMoE 64 experts, Gemma-3's 5:1 sliding pattern, DeepSeek-V2-Lite with its own LoRA
names, ...) on one H100 and on two H200s, 2026-11-24. The predictions are the ones in
``knowledge/measurements/own/logs/*-families-validation-predictions-2026-11-24.jsonl``, written by ``advisor predict``
before each call; the code that made them is the commit that added that file. A second column
predicts the same cases with the code of today (changes made after seeing these runs are not held out).

    python tests/benchmarks/families_validation.py > tests/benchmarks/families_validation.out.txt
"""

from __future__ import annotations

import json
from pathlib import Path

from advisor.predictor import Predictor
from knowledge.schema import TrainCase

OWN = Path(__file__).resolve().parents[2] / "knowledge" / "measurements" / "own"


def _score(label: str, pairs: list[tuple[dict, dict]]) -> None:
    errs = [p["tokens_per_s"] / m["tokens_per_s"] - 1 for p, m in pairs if m.get("tokens_per_s") and p.get("tokens_per_s")]
    mems = [p["peak_mem_gib"] / m["peak_mem_gib"] - 1 for p, m in pairs if m.get("tokens_per_s") and p.get("peak_mem_gib")]
    ok = [p.get("fits") == bool(m.get("tokens_per_s")) for p, m in pairs if "fits" in p]
    print(f"{label}: tokens/s MAPE {100 * sum(map(abs, errs)) / len(errs):.1f}% (mean signed {100 * sum(errs) / len(errs):+.1f}%, "
          f"n={len(errs)}); peak memory MAPE {100 * sum(map(abs, mems)) / len(mems):.1f}% (n={len(mems)}); "
          f"fit verdicts {sum(ok)}/{len(ok)}")


MACHINES = ("h100", "h200x2")


def _lines(path: Path) -> list[dict]:
    return [json.loads(x) for x in path.read_text().splitlines() if x.strip()]


def main() -> None:
    before = {p["id"]: p for m in MACHINES
              for p in _lines(OWN / "logs" / f"{m}-families-validation-predictions-2026-11-24.jsonl")}
    rows = [r for m in MACHINES for r in _lines(OWN / f"{m}-families-validation-2026-11-24.jsonl")
            if r["measured"].get("failure") in (None, "device_oom", "host_oom")]
    now_p = Predictor()
    stored, now = [], []
    print(f"{'run':38s} {'measured':>16s} | {'stored before':>26s} | {'code of today':>26s}")
    for r in rows:
        m, cid = r["measured"], r["case"]["id"]
        q = now_p.predict(TrainCase.model_validate(r["case"])).model_dump()
        b = before[cid]
        stored.append((b, m))
        now.append((q, m))
        meas = f"{m['tokens_per_s']:7.0f} {m['peak_mem_gib']:5.1f}" if m.get("tokens_per_s") else f"OOM {m.get('peak_mem_gib') or 0:5.1f}"
        cols = [f"{p['tokens_per_s']:7.0f} {p['peak_mem_gib']:5.1f} {'fits' if p['fits'] else 'no  '} {p['p_oom']:4.0%}" for p in (b, q)]
        print(f"{cid:38s} {meas:>16s} | {cols[0]:>26s} | {cols[1]:>26s}")
    _score("stored before the runs", stored)
    _score("code of today", now)
    for m in MACHINES:
        _score(f"  {m}, stored", [(p, q) for p, q in stored if p["id"].startswith(m.replace("h200x2", "h200x2v").replace("h100", "h100v"))])


if __name__ == "__main__":
    main()
