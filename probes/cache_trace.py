"""What a model's own code caches per sequence while it generates: one prefill on fake tensors, no weights, no GPU.

A hybrid model caches K and V in its attention layers only; its Mamba, gated delta-net, short-convolution or RG-LRU
layers keep a fixed state per sequence whatever its length (Qwen3-Next: 3 of 4 layers, 2.1 MB each at 80B). A count
from the config ("every layer caches its KV heads") prices those layers' KV that does not exist and misses their
states. Here the model's cut with one layer of each kind (``probes.hf_model.first_of_each_kind``) prefills 16 and then
32 tokens with ``use_cache=True``; each layer's cache, read at both lengths, gives its bytes per token and its bytes
per sequence, and the full model's layers take their kind's. The lengths stay below every window (the smallest
configured is 128 tokens), so a sliding layer grows as a full one does; ``knowledge.catalog.kv_groups`` caps it.

torch and transformers are imported inside the functions.
"""

from __future__ import annotations

from typing import Any, Iterator, NamedTuple

LENGTHS = (16, 32)  # tokens prefilled: shorter than any window, longer than any short convolution's kernel
NOISE_BYTES = 64.0  # a cache's bookkeeping scalars (Gemma-3's cumulative length): not a state


class LayerCache(NamedTuple):
    """What one layer caches for one sequence, as the model's own code keeps it."""

    token_bytes: float  # per cached token (K and V, a latent vector)
    state_bytes: float  # fixed, whatever the length (a recurrent layer's convolution and scan states)
    state_values: float  # the state's elements (an engine may keep them in another dtype)


def _tensors(obj: Any, seen: set[int], depth: int = 0) -> Iterator[Any]:
    """Every tensor a cache object holds, through its lists, dicts and attributes, each once."""
    import torch

    if id(obj) in seen or depth > 6:
        return
    seen.add(id(obj))
    if isinstance(obj, torch.Tensor):
        yield obj
    elif isinstance(obj, (list, tuple)):
        for x in obj:
            yield from _tensors(x, seen, depth + 1)
    elif isinstance(obj, dict):
        for x in obj.values():
            yield from _tensors(x, seen, depth + 1)
    elif hasattr(obj, "__dict__") and not isinstance(obj, type) and not type(obj).__module__.startswith("torch"):
        for x in vars(obj).values():
            yield from _tensors(x, seen, depth + 1)


def _held(obj: Any) -> tuple[float, float]:
    """(bytes, values) of every tensor ``obj`` holds."""
    ts = list(_tensors(obj, set()))
    return float(sum(t.numel() * t.element_size() for t in ts)), float(sum(t.numel() for t in ts))


def _cache_of(args: tuple, kwargs: dict) -> Any:
    """The cache object a decoder layer is handed (``past_key_values``, ``cache_params``, ``layer_past``: each family
    names it its own way): the argument whose class is a cache."""
    for x in (*args, *kwargs.values()):
        if x is not None and "Cache" in type(x).__name__:
            return x
    return None


def _prefill_per_layer(model: Any, fake: Any, tokens: int) -> list[tuple[float, float]]:
    """(bytes, values) each decoder layer adds to the cache while ``tokens`` tokens prefill: the cache's when the layer
    starts and when it ends (whatever class holds them, however it indexes its layers)."""
    import torch

    from probes.hf_model import decoder_layers
    from probes.trace import as_on_a_gpu

    layers = list(decoder_layers(model))
    added, start = [(0.0, 0.0)] * len(layers), [(0.0, 0.0)] * len(layers)
    hooks = []
    for i, layer in enumerate(layers):
        def before(_m: Any, args: tuple, kwargs: dict, i: int = i) -> None:
            cache = _cache_of(args, kwargs)
            start[i] = _held(cache) if cache is not None else (0.0, 0.0)

        def after(_m: Any, args: tuple, kwargs: dict, _out: Any, i: int = i) -> None:
            cache = _cache_of(args, kwargs)
            end = _held(cache) if cache is not None else (0.0, 0.0)
            added[i] = (end[0] - start[i][0], end[1] - start[i][1])

        hooks += [layer.register_forward_pre_hook(before, with_kwargs=True),
                  layer.register_forward_hook(after, with_kwargs=True)]
    try:
        with fake, torch.no_grad(), as_on_a_gpu():
            model(input_ids=torch.zeros((1, tokens), dtype=torch.long), use_cache=True)
    finally:
        for h in hooks:
            h.remove()
    return added


def _built(config: dict[str, Any], cut: list[int] | None) -> tuple[Any, Any]:
    """The model (its layers ``cut``, or all) with fake bf16 parameters, as serving's trace builds it
    (``probes.trace.build_fake_model`` of ``advisor.traces.SERVING_VARIANT``), in eval mode, and its fake mode."""
    from advisor.traces import SERVING_VARIANT
    from probes.trace import build_fake_model

    model, fake = build_fake_model(config, len(cut) if cut else int(config["num_hidden_layers"]), SERVING_VARIANT, cut)
    return model.eval(), fake


def traced_cache(config: dict[str, Any]) -> list[LayerCache] | None:
    """What each layer of the model caches at batch 1, as its own code caches it (transformers' layouts and dtypes: a
    gated delta-net's recurrent state is fp32); None when the model cannot
    prefill on fake tensors (Bamba's defaults, every layer Mamba: transformers asks an attention layer for the length)."""
    from probes.hf_model import first_of_each_kind, layer_signatures

    try:
        sig = layer_signatures(config)
    except Exception:  # noqa: BLE001 - a config transformers cannot read: the config's count stands
        return None
    # the cut with one layer of each kind; the whole model where a cut does not run (RecurrentGemma's block pattern
    # restarts in a cut that has no attention layer)
    for cut in (first_of_each_kind(sig), None):
        try:
            model, fake = _built(config, cut)
            held = [_prefill_per_layer(model, fake, n) for n in LENGTHS]
            break
        except Exception:  # noqa: BLE001 - a family's code raises what it likes; the config's count stands
            continue
    else:
        return None
    (a, _), span = LENGTHS, LENGTHS[1] - LENGTHS[0]
    layers = cut if cut else list(range(len(sig)))

    def per_layer(x: tuple[float, float], y: tuple[float, float]) -> LayerCache:
        """The cache at ``a`` and at ``a + span`` tokens: its growth per token and what it holds at none."""
        (bx, vx), (by, vy) = x, y
        token_bytes, token_values = (by - bx) / span, (vy - vx) / span
        state, values = bx - token_bytes * a, vx - token_values * a
        return LayerCache(max(0.0, token_bytes), *((state, values) if state > NOISE_BYTES else (0.0, 0.0)))

    kinds = {sig[i]: per_layer(x, y) for i, x, y in zip(layers, *held)}
    if not any(k.token_bytes > 0 or k.state_bytes for k in kinds.values()):
        return None  # a family that keeps its states on its modules, not in the cache (RecurrentGemma): not read here
    return [kinds[s] for s in sig]


def cache_layout(config: dict[str, Any]) -> list[dict[str, Any]] | None:
    """The KV cache's layout of ``config`` for serving (``knowledge.catalog.kv_groups``), with which layers cache per
    token and the state each keeps per sequence taken from the model's own cache."""
    from knowledge.catalog import kv_groups

    return kv_groups(config, traced_cache(config))
