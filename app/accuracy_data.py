"""Predicted vs measured for the measurements the advisor ships (published + own), via the Predictor."""

from __future__ import annotations

from collections import defaultdict
from typing import Any

from advisor.evaluation import mape, training_rows
from advisor.explain import describe
from advisor.predictor import Predictor
from knowledge.errors import AdvisorError
from knowledge.measurements import load_own, load_published
from knowledge.units import gb_to_gib


def accuracy_points(predictor: Predictor) -> dict[str, Any]:
    """Points (one per measured row and metric) and, per data set and metric, n and MAPE.

    Throughput rows need a measured tokens/s; memory rows a measured peak (published 'GB' converted
    from decimal GB). OOM rows carry no number and are counted apart.
    """
    own, problems = load_own()
    rows, skipped = training_rows(load_published() + own)
    points: list[dict[str, Any]] = []
    pairs: dict[tuple[str, str], list[tuple[float, float]]] = defaultdict(list)
    oom = defaultdict(int)
    for r in rows:
        meas = r.m.measured
        if meas.oom:
            oom[r.m.dataset] += 1
            continue
        try:
            p = predictor.predict(r.case)
        except AdvisorError as e:
            skipped.append(f"{r.m.source}: {e}")
            continue
        mem = meas.peak_mem_gib or (gb_to_gib(meas.peak_mem_gb_reported) if meas.peak_mem_gb_reported else None)
        for metric, measured, predicted in (("tokens/s", meas.tokens_per_s, p.tokens_per_s), ("peak GiB", mem, p.peak_mem_gib)):
            if not measured:
                continue
            pairs[(r.m.dataset, metric)].append((predicted, measured))
            points.append({"dataset": r.m.dataset, "metric": metric, "measured": measured, "predicted": predicted,
                           "platform": r.platform.id, "model": r.arch.name, "task": r.case.task,
                           "configuration": f"{describe(r.case)} · seq {r.case.seq_len}"})
    stats = [{"data set": ds, "metric": metric, "n": len(v), "MAPE": mape(v)} for (ds, metric), v in sorted(pairs.items())]
    return {"points": points, "stats": stats, "skipped": len(skipped) + len(problems), "oom": dict(oom)}
