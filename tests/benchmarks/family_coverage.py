"""Which of transformers' causal-LM families the advisor predicts from their own code: every model_type of
``MODEL_FOR_CAUSAL_LM_MAPPING_NAMES`` (encoders' causal heads and speech/music models left out), built from its config
class's defaults and written as a config.json, asked four cases (LoRA with PyTorch and QLoRA on one H100, full
DeepSpeed ZeRO-2 on two H200s, serving on one H100). Each family is ``ok`` or names the first error line it got.

    python -m tests.benchmarks.family_coverage > tests/benchmarks/family_coverage.out.txt

A default config is not a published checkpoint (some classes leave sizes unset: those errors are the config's, and
they are named as transformers raises them); the point is the code paths: layer patterns, per-layer config lists,
multimodal wrappers, routed experts, hybrids.
"""

from __future__ import annotations

import json
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

# not causal LMs of their own: encoders' decoder heads, encoder-decoders, speech and music, retrieval
SKIP = {"bart", "bert", "bert-generation", "big_bird", "bigbird_pegasus", "blenderbot", "blenderbot-small", "camembert",
        "data2vec-text", "electra", "ernie", "marian", "mbart", "megatron-bert", "mvp", "pegasus", "plbart", "prophetnet",
        "rembert", "roberta", "roberta-prelayernorm", "roc_bert", "roformer", "trocr", "whisper", "xlm", "xlm-roberta",
        "xlm-roberta-xl", "xlnet", "xmod", "musicgen", "musicgen_melody", "reformer", "git", "moshi"}
CASES = (
    {"id": "lora", "hardware": "h100x1", "task": "finetune", "method": "lora", "engine": "pytorch", "seq_len": 1024},
    {"id": "full-z2", "hardware": "h200x2", "task": "pretrain", "zero_stage": 2, "seq_len": 1024},
    {"id": "qlora", "hardware": "h100x1", "task": "finetune", "method": "qlora", "seq_len": 1024},
    {"id": "serve", "hardware": "h100x1", "task": "serve", "batch_size": 8, "prompt_len": 512},
)


def main() -> None:
    from transformers import AutoConfig
    from transformers.models.auto.modeling_auto import MODEL_FOR_CAUSAL_LM_MAPPING_NAMES

    from advisor.cases import parse_case
    from advisor.predictor import Predictor

    predictor = Predictor()
    kinds = sorted(k for k in MODEL_FOR_CAUSAL_LM_MAPPING_NAMES if k not in SKIP)
    tally: Counter = Counter()
    t0 = time.perf_counter()
    with tempfile.TemporaryDirectory() as tmp:
        for kind in kinds:
            try:
                config = {k: v for k, v in AutoConfig.for_model(kind).to_dict().items() if k != "transformers_version"}
            except Exception as e:  # noqa: BLE001 - the family's class itself refuses its defaults
                print(f"{kind:26s} no default config: {type(e).__name__}")
                tally["no default config"] += 1
                continue
            path = Path(tmp) / kind / "config.json"
            path.parent.mkdir()
            path.write_text(json.dumps(config, default=str))
            said = []
            for case in CASES:
                out = predictor.predict_or_error(parse_case({**case, "model": str(path)}))
                said.append("ok" if not hasattr(out, "error") else out.error.replace(str(path), "config.json")[:110])
            ok = sum(s == "ok" for s in said)
            tally["all four" if ok == 4 else "some" if ok else "none"] += 1
            first = next((s for s in said if s != "ok"), "")
            print(f"{kind:26s} {ok}/4 {'ok' if ok == 4 else first}", flush=True)
    print(f"\n{len(kinds)} families: " + ", ".join(f"{v} {k}" for k, v in tally.most_common())
          + f" ({time.perf_counter() - t0:.0f} s)", file=sys.stdout)


if __name__ == "__main__":
    main()
