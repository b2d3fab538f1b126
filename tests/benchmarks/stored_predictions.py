"""Runs beside the predictions stored before they ran (``knowledge/measurements/own/logs/*-predictions-*.jsonl``) and
the predictions of the code of today: the one comparison every held-out benchmark of ours prints."""

from __future__ import annotations

import json
import statistics
from pathlib import Path
from typing import Callable

from advisor.cases import load_profile_checked
from advisor.predictor import Predictor
from knowledge.schema import TrainCase

OWN = Path(__file__).resolve().parents[2] / "knowledge" / "measurements" / "own"
Pair = tuple[dict, dict]  # (prediction, measured)


def lines(path: Path) -> list[dict]:
    return [json.loads(x) for x in path.read_text().splitlines() if x.strip()]


def runs(name: str) -> list[dict]:
    """The rows of a grid's file by its name under ``OWN`` (``logs/GRID-DATE.jsonl`` while held out): where a grid's
    rows were taken into the fit after they had been scored held out, the same file under ``OWN`` itself."""
    path = OWN / name
    if not path.exists() and name.startswith("logs/"):
        path = OWN / name.removeprefix("logs/")
    if not path.exists():  # a grid stored before its runs, which no lease has run yet
        raise SystemExit(f"no runs yet: {OWN / name} does not exist (the grid's predictions are stored; run it first)")
    return lines(path)


def score(label: str, pairs: list[Pair]) -> None:
    ran = [(p, m) for p, m in pairs if m.get("tokens_per_s")]
    es = [p["tokens_per_s"] / m["tokens_per_s"] - 1 for p, m in ran]
    ms = [p["peak_mem_gib"] / m["peak_mem_gib"] - 1 for p, m in ran]
    ok = [p["fits"] == bool(m.get("tokens_per_s")) for p, m in pairs]
    print(f"{label}: tokens/s MAPE {100 * statistics.mean(map(abs, es)):.1f}% (mean signed {100 * statistics.mean(es):+.1f}%, "
          f"n={len(es)}); peak memory MAPE {100 * statistics.mean(map(abs, ms)):.1f}% (n={len(ms)}); "
          f"fit verdicts {sum(ok)}/{len(ok)}")


def compare(measured: list[str], predictions: list[str], profile: str | None = None,
            label: str = "stored before the runs") -> tuple[list[Pair], list[Pair]]:
    """Each run of the files ``OWN/measured`` (those that ran or ran out of memory) beside its stored prediction
    (``OWN/logs/predictions``, ``label`` says whose) and today's (with ``profile``, a name such as h200x1, where given);
    prints the table and both scores, returns (stored, today) pairs."""
    before = {p["id"]: p for name in predictions for p in lines(OWN / "logs" / name)}
    every = [r for name in measured for r in runs(name)]
    rows = [r for r in every if r["measured"].get("failure") in (None, "device_oom", "host_oom")]
    now_p = Predictor(load_profile_checked(profile) if profile else None)
    stored, now = [], []
    print(f"{'run':38s} {'measured':>16s} | {label[:26]:>26s} | {'code of today':>26s}")
    for r in rows:
        m, cid = r["measured"], r["case"]["id"]
        q = now_p.predict_or_error(TrainCase.model_validate(r["case"])).model_dump()
        b = before[cid]
        if "error" in b or "error" in q:  # a case one of them refused: its line, not a score
            said = [f"error: {p['error'][:60]}" if "error" in p else f"{p['tokens_per_s']:7.0f} {p['peak_mem_gib']:5.1f}" for p in (b, q)]
            print(f"{cid:38s} measured {m.get('tokens_per_s') or 0:7.0f} | stored: {said[0]} | today: {said[1]}")
            continue
        stored.append((b, m))
        now.append((q, m))
        meas = f"{m['tokens_per_s']:7.0f} {m['peak_mem_gib']:5.1f}" if m.get("tokens_per_s") else f"OOM {m.get('peak_mem_gib') or 0:5.1f}"
        cols = [f"{p['tokens_per_s']:7.0f} {p['peak_mem_gib']:5.1f} {'fits' if p['fits'] else 'no  '} {p['p_oom']:4.0%}" for p in (b, q)]
        print(f"{cid:38s} {meas:>16s} | {cols[0]:>26s} | {cols[1]:>26s}")
    for r in (r for r in every if r not in rows):
        print(f"{r['case']['id']:38s} not scored: {r['measured'].get('failure')} ({r['measured'].get('error', '')[:80]})")
    score(label, stored)
    score("code of today", now)
    fitted = [name for name in measured if not (OWN / name).exists()]
    if fitted:  # runs(): scored held out, then taken into the fit
        print(f"(the rows of {', '.join(fitted)} are in the fit since they were scored: 'code of today' is in-sample)")
    return stored, now


def compare_grid(grid: str, where: str, profile: str, measured: str | None = None, date: str = "2026-11-28") -> None:
    """A grid's runs against its predictions stored without a profile and with the bundled ``profile``, one table each
    (``measured``: the rows' file under OWN, the grid's own by default)."""
    for label, preds, prof in (("without a profile", f"{grid}-predictions-{date}.jsonl", None),
                               (f"with the bundled {profile} profile", f"{grid}-predictions-profile-{date}.jsonl", profile)):
        print(f"== {grid}: {where}, {label}")
        compare([measured or f"{grid}-{date}.jsonl"], [preds], prof)
        print()


def compare_grids(grids: dict[str, str], profile: str, date: str) -> None:
    """Each held-out grid (name -> where it ran) against its stored predictions, its rows under ``logs/``."""
    for grid, where in grids.items():
        compare_grid(grid, where, profile, measured=f"logs/{grid}-{date}.jsonl", date=date)


def rank_pairs(name: str, prefix: str) -> None:
    """The runs of ``OWN/name`` made on one rank (ids ending ``-g1``) beside the same case on two (``-g2``, or the id
    without the suffix): measured steps and today's predictions, each pair with its two-rank / one-rank ratio."""
    rows = {r["case"]["id"]: r for r in lines(OWN / name) if not r["measured"].get("error")}
    pred = Predictor()
    print(f"{'pair':<40} {'1 rank s':>9} {'2 ranks s':>10} {'ratio':>6} {'predicted 1 / 2 s':>18} {'ratio':>6}")
    for cid in sorted(k for k in rows if k.endswith("-g1")):
        two = rows.get(cid[:-1] + "2") or rows.get(cid[:-3])
        if two is None:
            continue
        m1, m2 = rows[cid]["measured"]["step_time_s"], two["measured"]["step_time_s"]
        p1, p2 = (pred.predict(TrainCase.model_validate(r["case"])).step_time_s for r in (rows[cid], two))
        print(f"{cid[len(prefix):-3]:<40} {m1:>9.3f} {m2:>10.3f} {m2 / m1:>6.2f} {p1:>9.3f} / {p2:<6.3f} {p2 / p1:>6.2f}")


def group_scores(label: str, pairs: list[Pair], group_of: Callable[[str], str]) -> None:
    """Tokens/s error of each group of runs (``group_of`` a run id), for the runs that ran."""
    groups: dict[str, list[float]] = {}
    for p, m in pairs:
        if m.get("tokens_per_s"):
            groups.setdefault(group_of(p["id"]), []).append(p["tokens_per_s"] / m["tokens_per_s"] - 1)
    for g, es in groups.items():
        print(f"  {label}, {g}: tokens/s MAPE {100 * statistics.mean(map(abs, es)):.1f}% "
              f"(mean signed {100 * statistics.mean(es):+.1f}%, n={len(es)})")


def compare_three_ways(grid: str, date: str, where: str, bundled: str, lease_profile: str,
                       group_of: Callable[[str], str]) -> None:
    """A grid's runs (``logs/GRID-DATE.jsonl``) against its predictions stored before they ran without a profile, with
    the ``bundled`` profile and with the lease's own (``logs/LEASE_PROFILE``), and today's; each scored by group."""
    runs = [f"logs/{grid}-{date}.jsonl"]
    for label, suffix, profile in (("without a profile", "", None),
                                   (f"with the bundled {bundled} profile", "-bundled-profile", bundled),
                                   ("with the profile of the lease it ran on", "-profile",
                                    str(OWN / "logs" / lease_profile))):
        print(f"== {where}, {label}")
        stored, today = compare(runs, [f"{grid}-predictions{suffix}-{date}.jsonl"], profile)
        group_scores("stored", stored, group_of)
        group_scores("today", today, group_of)
        print()


def compare_one_card(gpu: str, stem: str, date: str, group_of: Callable[[str], str]) -> None:
    """``compare_three_ways`` for a grid run on one card of a lease (``{gpu}-{stem}``, the lease's profile
    ``{gpu}x1-profile-{stem}-{date}.json``, the bundled ``{gpu}x1``): how the one-card blind grids are named."""
    compare_three_ways(f"{gpu}-{stem}", date, f"one {gpu.upper()}", f"{gpu}x1", f"{gpu}x1-profile-{stem}-{date}.json",
                       group_of)
