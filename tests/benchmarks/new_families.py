"""Five families never run before (OLMo-2, GPT-NeoX/Pythia, StableLM-2, Granite-3, StarCoder2) and Qwen1.5-MoE's
QLoRA again, on one H100, 2026-11-24: the predictions stored before the runs
(``knowledge/measurements/own/logs/h100-new-families-predictions-2026-11-24.jsonl``) and the code of today.

The code of today is not held out on these rows: the tracer's CUDA autocast rules (LayerNorm in fp32) and bitsandbytes'
output dtype were found on them (StableLM QLoRA, GPT-NeoX LoRA, StarCoder2).

    python tests/benchmarks/new_families.py > tests/benchmarks/new_families.out.txt
"""

from __future__ import annotations

import json
import statistics
from pathlib import Path

from advisor.predictor import Predictor
from knowledge.schema import TrainCase

OWN = Path(__file__).resolve().parents[2] / "knowledge" / "measurements" / "own"


def _lines(path: Path) -> list[dict]:
    return [json.loads(x) for x in path.read_text().splitlines() if x.strip()]


def _score(label: str, pairs: list[tuple[dict, dict]]) -> None:
    ran = [(p, m) for p, m in pairs if m.get("tokens_per_s")]
    es = [p["tokens_per_s"] / m["tokens_per_s"] - 1 for p, m in ran]
    ms = [p["peak_mem_gib"] / m["peak_mem_gib"] - 1 for p, m in ran]
    ok = [p["fits"] == bool(m.get("tokens_per_s")) for p, m in pairs]
    print(f"{label}: tokens/s MAPE {100 * statistics.mean(map(abs, es)):.1f}% (mean signed {100 * statistics.mean(es):+.1f}%, "
          f"n={len(es)}); peak memory MAPE {100 * statistics.mean(map(abs, ms)):.1f}% (n={len(ms)}); "
          f"fit verdicts {sum(ok)}/{len(ok)}")


def compare(measured: str, predictions: str) -> None:
    """Each run of ``OWN/measured`` beside its prediction stored before it ran (``OWN/logs/predictions``) and the
    prediction of the code of today, then the errors of both."""
    before = {p["id"]: p for p in _lines(OWN / "logs" / predictions)}
    now_p = Predictor()
    stored, now = [], []
    print(f"{'run':38s} {'measured':>16s} | {'stored before':>26s} | {'code of today':>26s}")
    for r in _lines(OWN / measured):
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


def main() -> None:
    compare("h100-new-families-2026-11-24.jsonl", "h100-new-families-predictions-2026-11-24.jsonl")


if __name__ == "__main__":
    main()
