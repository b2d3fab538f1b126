"""Every training run of ours on a model the trace predicts (a config.json outside the catalog's hand count), each
predicted as ``advisor predict`` predicts it today, without a profile and with the bundled profile of its platform.
No fit has seen these rows (``advisor.evaluation.training_rows`` keeps them out), so every figure is held out by
architecture; several of them were run to find what the trace missed, and fixed after, so they are not all a blind
test (``unrun_families`` and ``heldout_families`` are). The share of the step the host's dispatch is predicted to
hold (``overhead / step``) splits host-bound runs from GPU-bound ones.

    python -m tests.benchmarks.traced_rows > tests/benchmarks/traced_rows.out.txt
"""

from __future__ import annotations

import statistics
from collections import defaultdict

from advisor.cases import parse_case
from advisor.evaluation import _with_omp_threads, traced
from advisor.predictor import Predictor
from knowledge.catalog import resolve_model, resolve_platform
from knowledge.measurements import load_bundled_profiles, load_own


def rows() -> list[dict]:
    own, _ = load_own()
    plain = Predictor()
    profiled = {k: Predictor(profile=v) for k, v in load_bundled_profiles().items()}
    out = []
    for m in own:
        if m.case.get("task") not in ("pretrain", "finetune") or not m.measured.tokens_per_s:
            continue
        case = parse_case(_with_omp_threads(m))
        arch = resolve_model(case.model)
        if not traced(arch):
            continue
        platform = resolve_platform(case.hardware, case.gpus)
        key = f"{platform.gpu.id}x{platform.count}"
        p0 = plain.predict(case)
        p1 = profiled[key].predict(case) if key in profiled else None
        out.append({"family": arch.hf_model_type, "platform": key, "engine": case.engine, "zero": case.zero_stage,
                    "method": case.method, "recompute": case.recompute, "host_share": p0.breakdown.overhead_s / p0.step_time_s,
                    "e0": p0.tokens_per_s / m.measured.tokens_per_s - 1,
                    "e1": p1.tokens_per_s / m.measured.tokens_per_s - 1 if p1 else None})
    return out


def line(label: str, sel: list[dict]) -> str:
    def cols(k: str) -> str:
        es = [r[k] for r in sel if r[k] is not None]
        return f"{100 * statistics.mean(map(abs, es)):5.1f}% {100 * statistics.mean(es):+5.1f}% {len(es):4d}" if es else " " * 17
    return f"{label:34s} {cols('e0')} | {cols('e1')}"


def main() -> None:
    rs = rows()
    print(f"{'group':34s} {'no profile: MAPE signed n':>25s} | {'bundled profile: MAPE signed n':>30s}")
    print(line("all", rs))
    bands = (("host share < 0.1", 0, 0.1), ("host share 0.1-0.35", 0.1, 0.35), ("host share >= 0.35", 0.35, 2))
    for label, lo, hi in bands:
        print(line(f"{label} (not ZeRO-3)", [r for r in rs if lo <= r["host_share"] < hi and r["zero"] != 3]))
    groups: dict[str, list[dict]] = defaultdict(list)
    for r in rs:
        groups[f"platform {r['platform']}"].append(r)
        groups[f"{r['engine']} ZeRO-{r['zero']}" if r["engine"] == "deepspeed" else "pytorch"].append(r)
        groups[f"method {r['method']}"].append(r)
        groups["recompute" if r["recompute"] else "no recompute"].append(r)
    for k in sorted(groups):
        print(line(k, groups[k]))
    print("\nby family")
    fam: dict[str, list[dict]] = defaultdict(list)
    for r in rs:
        fam[r["family"]].append(r)
    for k in sorted(fam):
        print(line(k, fam[k]))


if __name__ == "__main__":
    main()
