"""Benchmark: how many sequences vLLM's KV pool holds on one H100, by the page rule of vLLM 0.34 against the token rule
before it, for every bundled config whose layers cache unlike (a hybrid's recurrent layers, sliding windows).

    python tests/benchmarks/vllm_pool.py > tests/benchmarks/vllm_pool.out.txt      (about 10 s on two cores)

Both columns use today's layout and the same pool (``models.serve_memory.kv_pool_bytes``: bf16 weights, vLLM's 0.90
memory fraction, one 8,192-token chunk's activations). "before" is the rule until 2026-12-07 (twenty-ninth session):
16-token blocks over the attention layers' K/V plus each recurrent layer's state as transformers keeps it. "vLLM" is
``models.kv_cache.paged_cache_bytes``: 64-token blocks, states in the model's dtype unless the config names the scan's,
the attention block grown to one state per page, layers paged in groups. No vLLM run checks either here (none installs
on the lent machines): this prints what the rule changes, not an error.
"""

from __future__ import annotations

import glob
import math
import warnings

warnings.filterwarnings("ignore")

from advisor.predictor import Predictor  # noqa: E402
from knowledge.catalog import resolve_model, resolve_platform  # noqa: E402
from models.kv_cache import hybrid_block_tokens, kv_cache_bytes, paged_cache_bytes  # noqa: E402
from models.serve_memory import kv_pool_bytes  # noqa: E402
from models.serve_setup import make_setup  # noqa: E402

LENGTHS = (1025, 8193)  # a prompt and the token decoded
OLD_BLOCK = 16


def main() -> None:
    predictor = Predictor()
    plat = resolve_platform("h100x1")
    cal = predictor.serving_calibration(plat)
    print(f"{'config':<38} {'block':>6} " + " ".join(f"{f'{n} tok before':>15} {'vLLM':>7} {'change':>7}" for n in LENGTHS))
    for path in sorted(glob.glob("knowledge/data/configs/*.json")):
        try:
            arch = predictor.serving_layout(resolve_model(path))
        except Exception:  # noqa: BLE001 - a config the advisor refuses is not this benchmark's business
            continue
        groups = arch.kv_groups or []
        if len(groups) < 2 and not any(g.state_bytes or g.window for g in groups):
            continue
        s = make_setup(arch, plat, cal)
        n_max = getattr(arch, "max_position_embeddings", None)
        pool = kv_pool_bytes(s)
        cells = []
        for n in LENGTHS:
            if n_max and n > n_max:
                cells.append(f"{'-':>15} {'-':>7} {'-':>7}")
                continue
            before = int(pool // kv_cache_bytes(arch, 1, 16, math.ceil(n / OLD_BLOCK) * OLD_BLOCK))
            now = int(pool // paged_cache_bytes(arch, 1, 16, n, s.engine.kv_block_tokens, vllm=True))
            cells.append(f"{before:>15,} {now:>7,} {now / before - 1 if before else 0:>+7.0%}")
        block = hybrid_block_tokens(arch, 1, 16, s.engine.kv_block_tokens)
        print(f"{path.split('/')[-1][:-5]:<38} {block:>6} " + " ".join(cells))


if __name__ == "__main__":
    main()
