"""Every measured DeepSpeed ZeRO-3 run of ours without offload, LoRA against full training, by the code and bundled
fit of today: the signed error of each run and the MAPE of each kind.

LoRA under ZeRO-3 leaves the step CPU-bound on DeepSpeed's module hooks (an anatomy, Qwen3-8B LoRA at 2k on two H100s:
1.80 s a step, rank 0's GPU busy 0.33 s of it, against 0.32 s under ZeRO-2). Traced rows (a config.json) are in no fit;
catalog rows are in the bundled fit.

    python -m tests.benchmarks.zero3_lora > tests/benchmarks/zero3_lora.out.txt
"""

from __future__ import annotations

import statistics
from pathlib import Path

from advisor.predictor import Predictor
from advisor.traces import hand_counted
from knowledge.catalog import resolve_model, resolve_platform
from knowledge.measurements import load_own
from knowledge.schema import TrainCase
from models.training import predict_training

OWN = Path(__file__).resolve().parents[2] / "knowledge" / "measurements" / "own"


def main() -> None:
    p = Predictor()
    errs: dict[str, list[float]] = {"lora": [], "full": [], "lora, traced": []}
    for row in load_own(OWN)[0]:
        c, measured = row.case, row.measured.tokens_per_s
        if (c.get("task") not in ("pretrain", "finetune") or c.get("zero_stage") != 3 or c.get("engine", "deepspeed") != "deepspeed"
                or c.get("offload", "none") != "none" or not measured):
            continue
        case = TrainCase.model_validate(c)
        platform, arch = resolve_platform(case.hardware, case.gpus), resolve_model(case.model)
        q = predict_training(case, arch, platform, p.calibration(platform), trace=p.traces.trace(arch, case))
        err = q.tokens_per_s / measured - 1
        kind, traced = "lora" if case.method in ("lora", "qlora") else "full", not hand_counted(arch)
        errs[kind].append(err)
        if kind == "lora" and traced:
            errs["lora, traced"].append(err)
        print(f"{case.id:42s} {kind:4s} {'traced ' if traced else 'catalog':7s} {100 * err:+6.1f}%  {row.source}")
    for kind, e in errs.items():
        print(f"{kind:13s} MAPE {100 * statistics.fmean(map(abs, e)):5.1f}% (signed {100 * statistics.fmean(e):+5.1f}%, n={len(e)})")


if __name__ == "__main__":
    main()
