"""The kernels a traced training step launches against what real steps launched: one operator one kernel, or each
operator as a GPU launches it (``knowledge.op_launches``, since trace schema 23).

Every own anatomy row of a single-GPU PyTorch step (``knowledge/measurements/own/**/*anatomy*.jsonl``, each with the
device activities of one profiled step: kernels, memsets, copies) beside the count of the model's own trace: its layers'
forward and backward (a recomputed forward again), the rest of the model, a scan's launches per token. The optimizer's
few fused launches and bitsandbytes' dequantization (its host cost priced whole apart, ``knowledge.bnb_host``) are in
the measured count only. Rows of mixtures of experts apart: their routing sorts tokens (CUB's radix sort, 22 launches) and the
backward of its gathers accumulates with a sort (20). Anatomy 37's own rows are those the table was measured on.

    python tests/benchmarks/kernel_counts.py > tests/benchmarks/kernel_counts.out.txt
"""

from __future__ import annotations

import ast
import glob
import json
import statistics
import warnings
from pathlib import Path
from unittest import mock

warnings.filterwarnings("ignore")

from advisor.traces import TraceBook, variant_for  # noqa: E402
from knowledge.catalog import resolve_model  # noqa: E402
from knowledge.op_launches import OP_LAUNCHES  # noqa: E402
from knowledge.schema import TrainCase  # noqa: E402
from probes.hf_model import config_dict  # noqa: E402
from probes.trace import trace_model  # noqa: E402

OWN = Path(__file__).resolve().parents[2] / "knowledge" / "measurements" / "own"


def _rows() -> list[tuple[str, dict, int]]:
    out = []
    for f in sorted(glob.glob(str(OWN / "**" / "*anatomy*.jsonl"), recursive=True)):
        if "predictions" in f:
            continue
        for line in Path(f).read_text().splitlines():
            d = json.loads(line)
            if "kernels" not in d or "case" not in d:
                continue
            c = d["case"] if isinstance(d["case"], dict) else ast.literal_eval(d["case"])
            if c.get("engine") == "pytorch" and (c.get("gpus") or 1) == 1 and (c.get("grad_accum") or 1) == 1:
                out.append((Path(f).name, c, d["kernels"]))
    return out


def traced_launches(trace, case, layers: int) -> float:
    """A step's launches as the trace counts them: each layer's forward, backward and recomputed forward, the rest."""
    part, head = trace.layer, trace.head()
    forward = part.kernels_fwd + part.kernels_seq_fwd * case.seq_len
    backward = part.kernels_bwd + part.kernels_seq_bwd * case.seq_len
    rest = head.kernels_fwd + head.kernels_bwd + (head.kernels_seq_fwd + head.kernels_seq_bwd) * case.seq_len
    return layers * (forward * (2 if case.recompute else 1) + backward) + rest


def main() -> None:
    book = TraceBook()
    rows = []
    for name, c, measured in _rows():
        try:
            case = TrainCase.model_validate(c)
            arch = resolve_model(case.model)
            case = book.with_default_lora_targets(arch, case)
            config, v = config_dict(arch), variant_for(case)
            new = traced_launches(trace_model(config, v), case, arch.num_hidden_layers)
            with mock.patch("knowledge.op_launches.launches_per_call", return_value={}):
                old = traced_launches(trace_model(config, v), case, arch.num_hidden_layers)
        except Exception as e:  # noqa: BLE001 - a row the tracer cannot take is named, not scored
            print(f"not scored: {c.get('id')} ({type(e).__name__}: {str(e)[:80]})")
            continue
        rows.append((name, c["id"], arch.is_moe, measured, old, new, Path(str(c["model"])).stem.split("-defaults")[0]))
    print(f"{'anatomy row':<44} {'file':<34} {'measured':>8} {'one each':>9} {'as launched':>11}")
    for name, rid, moe, m, old, new, _ in rows:
        print(f"{rid[:44]:<44} {name[:34]:<34} {m:>8} {old:>8.0f} {old / m - 1:+5.0%} {new:>8.0f} {new / m - 1:+5.0%}"
              + ("  MoE" if moe else ""))
    measured_on = {Path(p).name for p in json.loads(OP_LAUNCHES.read_text())["rows"]}
    table_models = {r[6].split("-12l")[0].split("-6l")[0].split("-4l")[0] for r in rows if r[0] in measured_on}
    groups = (("mixtures of experts", lambda r: r[2]), ("every other model", lambda r: not r[2]),
              ("MoE, not the table's rows", lambda r: r[2] and r[0] not in measured_on),
              ("MoE, models not in it", lambda r: r[2] and not any(r[6].startswith(m) for m in table_models)),
              ("others, not the table's", lambda r: not r[2] and r[0] not in measured_on))
    for label, pick in groups:
        sel = [r for r in rows if pick(r)]
        for col, title in ((4, "one kernel per operator"), (5, "as a GPU launches them")):
            errs = [r[col] / r[3] - 1 for r in sel]
            print(f"{label:<26} {title:<24} n={len(errs):3d}  median {statistics.median(errs):+6.1%}  "
                  f"mean |err| {statistics.mean(map(abs, errs)):5.1%}")


if __name__ == "__main__":
    main()
