"""Benchmark: the spread of a serving case's memory verdict, fitted to which serving runs really ran out.

Run: python -m tests.benchmarks.serve_oom_boundary > tests/benchmarks/serve_oom_boundary.out.txt   (~1 min on 2 cores)

A serving case's ``p_oom`` is P(its true requirement > what it may use): for the transformers runtime the usable GPU
memory; for an engine its memory fraction's share, so that the sequences' blocks overflow its KV pool (the engine then
preempts or refuses, ``models.serve_memory``). The requirement is taken as normal around the predicted one times
``1 + bias``, ``sigma`` of it wide, as training's (``models.oom``), and (bias, sigma) are fitted by probit maximum
likelihood to every own serving run that ran with its prefill, or ran out, scored held out by family (each family's
runs judged by a spread fitted on the other families' runs). Serving's requirement is counted by hand, not traced, and
its engine runs' peaks are predicted within about 1% near the limit, so sigma may be tighter here than training's.
"""

from __future__ import annotations

import time
import warnings

warnings.filterwarnings("ignore")

from models.oom import P_OOM_FITS, SERVE_SPREAD, Spread, p_exceeds  # noqa: E402
from tests.benchmarks.oom_boundary import fit_spread as fit_probit, log_likelihood, verdicts  # noqa: E402

SIGMAS = [i / 1000 for i in range(10, 151)]  # no tighter than 1%: the engine runs' peaks near the limit are 0.7-1.1% off


def outcomes() -> list[dict]:
    """One dict per own serving run whose peak is the case's (its prefill ran) or that ran out of memory."""
    from advisor.calibrate import measurements
    from advisor.evaluation import serving_rows
    from advisor.predictor import calibration_for
    from knowledge.efficiency import load_efficiencies
    from models.serving import predict_serving

    eff = load_efficiencies(task="serve")
    cals: dict = {}
    out = []
    for r in serving_rows(measurements("all")[0], include_oom=True):
        if not (r.m.measured.oom or r.peak_comparable):
            continue
        key = (r.platform.id, r.platform.count)
        cals.setdefault(key, calibration_for(r.platform, None, eff))
        p = predict_serving(r.case, r.arch, r.platform, cals[key])
        c = r.case
        out.append({"need": p.required_gib, "usable": p.usable_gib, "oom": bool(r.m.measured.oom),
                    "family": r.arch.hf_model_type or r.arch.name, "engine": p.engine,
                    "label": f"{r.platform.id} {r.arch.name} {p.engine} b{c.batch_size} p{c.prompt_len} kv{c.kv_len}"})
    return out


def fit_spread(rows: list[dict]) -> Spread:
    """Bias and sigma by probit maximum likelihood (training's fit, ``oom_boundary``), sigma on this benchmark's grid."""
    return fit_probit(rows, biased=True, sigmas=SIGMAS)


def main() -> None:
    t0 = time.perf_counter()
    rows = outcomes()
    fitted = fit_spread(rows)
    print(f"own serving runs: {len(rows)} ({sum(r['oom'] for r in rows)} out of memory or refused by the engine's pool)")
    print(f"fitted on all (probit ML): bias {fitted.bias:+.4f}, sigma {fitted.sigma:.3f}   "
          f"(in force, models.oom.SERVE_SPREAD: {SERVE_SPREAD.bias:+.4f}, {SERVE_SPREAD.sigma:.3f})")
    held: dict[int, Spread] = {}
    for fam in sorted({r["family"] for r in rows}):
        sp = fit_spread([r for r in rows if r["family"] != fam])
        held.update({id(r): sp for r in rows if r["family"] == fam})
    print(f"\nfit verdicts (fits = P(OOM) <= {P_OOM_FITS:.0%}): right / crashed though called fitting / ran though refused")
    for label, spread_of in (("the bare boundary (required <= usable)", lambda r: Spread(0.0, 1e-9)),
                             ("in force", lambda r: SERVE_SPREAD),
                             ("held out by family", lambda r: held[id(r)])):
        for eng in (None, *sorted({r["engine"] for r in rows})):
            sel = [r for r in rows if eng is None or r["engine"] == eng]
            right, crashed, refused = verdicts(sel, spread_of)
            print(f"  {label:40s} {eng or 'all':14s} {right:4d}/{len(sel):<4d} crashed {crashed:2d}  refused {refused:2d}")
    ll = sum(log_likelihood([r], held[id(r)]) for r in rows)
    print(f"  held-out log-likelihood {ll:.1f}")
    print("\nruns within 90-130% of what they may use: ratio, outcome, P(OOM) in force, held out")
    for r in sorted(rows, key=lambda r: r["need"] / r["usable"]):
        ratio = r["need"] / r["usable"]
        if 0.9 <= ratio <= 1.3:
            print(f"  {ratio:6.3f}  {'OOM' if r['oom'] else 'ran':3s}  {p_exceeds(r['need'], r['usable'], SERVE_SPREAD):6.1%}"
                  f"  {p_exceeds(r['need'], r['usable'], held[id(r)]):6.1%}  {r['label']}")
    print(f"\n({time.perf_counter() - t0:.0f} s)")


if __name__ == "__main__":
    main()
