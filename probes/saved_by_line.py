"""Saved-for-backward bytes by source line of a model's code over one real LoRA training step on the GPU: where the
fake-tensor trace (which runs the same code on the CPU) and a GPU part.

    python3 -m probes.saved_by_line CONFIG.json MICRO_BATCH SEQ_LEN '["q_proj", "v_proj"]'   -> one JSON line on stdout

The model is built random-initialised in bf16 on the GPU with eager attention, wrapped by PEFT (rank 64), and run
twice under bf16 autocast; the second step is recorded. A saved tensor is counted once per storage, at the innermost
line of the model's (or PEFT's) code that saved it. Found (2026-11-29): DeepSeek-V4 saves 25.1 GiB on an H200 where the
trace and a real CPU run count 17.6 (``knowledge/measurements/own/logs/h200-saved-by-line-2026-11-29.jsonl``).
"""

from __future__ import annotations

import collections
import json
import sys
import traceback
from typing import Any

LINES_KEPT = 40


def _where() -> str:
    for f in reversed(traceback.extract_stack(limit=14)):
        if "/transformers/models/" in f.filename or "/peft/" in f.filename:
            return f"{f.filename.rsplit('/', 1)[-1]}:{f.lineno} {(f.line or '')[:70]}"
    return "?"


def saved_by_line(config: dict[str, Any], batch: int, seq: int, targets: list[str]) -> dict[str, Any]:
    import peft
    import torch
    import transformers

    conf = transformers.AutoConfig.for_model(**{k: v for k, v in config.items() if not k.startswith("_")})
    conf._attn_implementation = "eager"
    torch.manual_seed(0)
    with torch.device("cuda"):
        model = transformers.AutoModelForCausalLM.from_config(conf, dtype=torch.bfloat16)
    model = peft.get_peft_model(model, peft.LoraConfig(r=64, target_modules=targets))
    model.train()
    params = {t.untyped_storage().data_ptr() for t in [*model.parameters(), *model.buffers()]}
    built = torch.cuda.memory_allocated()
    ids = torch.randint(0, config["vocab_size"], (batch, seq), device="cuda")
    for _ in range(2):  # the first step warms up; the second is recorded
        seen: dict[int, int] = {}
        by: collections.Counter[str] = collections.Counter()

        def pack(x: Any) -> Any:
            st = x.untyped_storage()
            if st.data_ptr() not in params and st.data_ptr() not in seen:
                seen[st.data_ptr()] = st.nbytes()
                by[_where()] += st.nbytes()
            return x

        torch.cuda.reset_peak_memory_stats()
        with torch.autocast("cuda", dtype=torch.bfloat16), torch.autograd.graph.saved_tensors_hooks(pack, lambda x: x):
            out = model(input_ids=ids, labels=ids)
        forward_end, forward_peak = torch.cuda.memory_allocated(), torch.cuda.max_memory_allocated()
        out.loss.backward()
        del out
        model.zero_grad(set_to_none=True)
    gib = 2.0**30
    return {"B": batch, "S": seq, "gpu": torch.cuda.get_device_name(), "torch": torch.__version__,
            "transformers": transformers.__version__, "built_gib": built / gib, "forward_end_gib": forward_end / gib,
            "forward_peak_gib": forward_peak / gib, "backward_peak_gib": torch.cuda.max_memory_allocated() / gib,
            "saved_gib": sum(seen.values()) / gib, "by_line_mib": {w: n / 2**20 for w, n in by.most_common(LINES_KEPT)}}


def main() -> None:
    path, batch, seq, targets = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), json.loads(sys.argv[4])
    with open(path) as f:
        rec = saved_by_line(json.load(f), batch, seq, targets)
    print(json.dumps({"config": path, **rec}))


if __name__ == "__main__":
    main()
