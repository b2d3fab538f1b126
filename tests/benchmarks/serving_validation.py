"""Serving predictions written *before* the runs, against what the runs measured.

Each validation call on a lent GPU machine first stored the predictions of its cases with the fit of that
moment (``knowledge/measurements/own/logs/*-serve-validation-predictions-*.json``), then ran them
(``*-serve-validation-*.jsonl``): models and shapes the fit had never seen. This prints their errors.

    python tests/benchmarks/serving_validation.py > tests/benchmarks/serving_validation.out.txt
"""

from __future__ import annotations

import json
from pathlib import Path

OWN = Path(__file__).resolve().parents[2] / "knowledge" / "measurements" / "own"
FIELDS = ("prefill_s", "decode_step_s", "e2e_output_tokens_per_s", "peak_mem_gib")


def _key(c: dict) -> tuple:
    return (json.dumps(c["model"], sort_keys=True), c.get("weight_format"), c.get("tensor_parallel", 1), c["batch_size"], c["prompt_len"])


def main() -> None:
    for preds_file in sorted((OWN / "logs").glob("*-serve-validation-predictions-*.json")):
        runs_file = OWN / preds_file.name.replace("-predictions", "").replace(".json", ".jsonl")
        predicted = {_key(p["case"]): p["pred"] for p in json.loads(preds_file.read_text())}
        errors: dict[str, list[float]] = {f: [] for f in FIELDS}
        verdicts = []
        print(f"== {runs_file.name} (predicted beforehand in {preds_file.name})")
        for line in runs_file.read_text().splitlines():
            row = json.loads(line)
            c, m = row["case"], row["measured"]
            p = predicted[_key(c)]
            verdicts.append(p["fits"] == (not m["oom"]))
            name = c["model"] if isinstance(c["model"], str) else c["model"]["name"]
            cells = [f"{name} {c.get('weight_format')} tp{c.get('tensor_parallel', 1)} b{c['batch_size']} p{c['prompt_len']}:"]
            if m["oom"]:
                cells.append(f"out of memory (predicted {'fits' if p['fits'] else 'OOM'} at {p['peak_mem_gib']:.1f} GiB)")
            for f in FIELDS:
                if m.get(f) and not m["oom"]:
                    e = p[f] / m[f] - 1
                    errors[f].append(abs(e))
                    cells.append(f"{f} {e:+.0%}")
            print("  " + " ".join(cells))
        for f, v in errors.items():
            print(f"  {f}: MAPE {sum(v) / len(v):.1%} (n={len(v)})" if v else f"  {f}: n=0")
        print(f"  fit verdicts right: {sum(verdicts)} of {len(verdicts)}")


if __name__ == "__main__":
    main()
