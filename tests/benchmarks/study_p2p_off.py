"""The study's setting on two H200s with NCCL_P2P_DISABLE=1: is the PCIe class's fitted link efficiency a property of
NCCL's host-memory transport, or of the study's servers?

Issue 23: the fit learns ``link_eff_pcie`` ~0.1 of the staged ring's ceiling from the study's three 8-GPU PCIe boxes,
while ``probes/links.py`` measured NCCL's all-reduce with P2P off on the lent 2xH200 at 0.87 of it. Llama-2-7B at the
study's 350 tokens under DeepSpeed (ZeRO-2/3, LoRA, offload, micro-batch 1-16), with P2P off and, for three cases, on
(``probes/grids.py`` ``h200x2-study-p2p-*``; rows ``knowledge/measurements/own/logs/h200x2-study-p2p-2026-11-27.jsonl``,
predictions stored before the runs beside them). Printed per run: measured tokens/s; the prediction stored before
(without a profile, and with the h200x2 profile, whose links probe measured the P2P-off bus bandwidth); today's code on
the same case with the OpenMP threads the run had (the first three ran under torchrun's default of 1 per rank: the
stored predictions assumed the launch line's 16); peak GPU memory and the node's host RAM rise against today's code.

    python -m tests.benchmarks.study_p2p_off > tests/benchmarks/study_p2p_off.out.txt
"""

from __future__ import annotations

import statistics
import warnings

from tests.benchmarks.stored_predictions import OWN, lines

warnings.filterwarnings("ignore")

ROOT = OWN.parents[2]
LOGS = OWN / "logs"
ROWS = LOGS / "h200x2-study-p2p-2026-11-27.jsonl"
STORED = {"fit": ("h200x2-study-p2p-off-predictions-2026-11-27.jsonl", "h200x2-study-p2p-on-predictions-2026-11-27.jsonl"),
          "profile": ("h200x2-study-p2p-off-profiled-predictions-2026-11-27.jsonl",
                      "h200x2-study-p2p-on-profiled-predictions-2026-11-27.jsonl")}


def _err(pred: float | None, meas: float) -> float | None:
    return None if not pred else pred / meas - 1


def _pct(e: float | None) -> str:
    return "    -" if e is None else f"{e:+5.0%}"


def main() -> None:
    import os

    from advisor.cases import load_profile_checked
    from advisor.predictor import Predictor
    from knowledge.schema import TrainCase

    os.chdir(ROOT)  # the P2P-off rows name their platform file relative to the repository
    stored = {k: {p["id"]: p for f in files for p in lines(LOGS / f)} for k, files in STORED.items()}
    predictors = {"fit": Predictor(), "profile": Predictor(profile=load_profile_checked("h200x2"))}
    errs: dict[str, list[float]] = {}
    print(f"{'run':34s} {'omp':>3s} {'tok/s':>6s} | stored: fit  profile | today: fit  profile | GPU GiB meas/today  host GiB meas/today")
    for row in lines(ROWS):
        case, m = row["case"], row["measured"]
        threads = row["environment"]["omp_threads"]
        user = TrainCase.model_validate({**case, "omp_threads": threads})
        today = {k: p.predict(user) for k, p in predictors.items()}
        e_stored = {k: _err(stored[k][case["id"]]["tokens_per_s"], m["tokens_per_s"]) for k in stored}
        e_today = {k: _err(p.tokens_per_s, m["tokens_per_s"]) for k, p in today.items()}
        p2p = "off" if "p2p-off" in str(case["hardware"]) else "on"
        for k in ("fit", "profile"):
            errs.setdefault(f"today, {k}, P2P {p2p}", []).append(e_today[k])
        prof = today["profile"]
        print(f"{case['id']:34s} {threads:>3} {m['tokens_per_s']:6.0f} | {_pct(e_stored['fit'])} {_pct(e_stored['profile'])}    | "
              f"{_pct(e_today['fit'])} {_pct(e_today['profile'])}    | {m['peak_mem_gib']:5.1f} / {prof.peak_mem_gib:5.1f}        "
              f"{m['host_peak_gib']:6.1f} / {prof.host_mem_gib or 0:6.1f}")
    print("\ntokens/s, today's code with the runs' threads (+ = predicted faster than measured)")
    for label, es in sorted(errs.items()):
        print(f"  {label:26s} MAPE {statistics.fmean(map(abs, es)):6.1%}  signed {statistics.fmean(es):+6.1%}  n={len(es)}")


if __name__ == "__main__":
    main()
