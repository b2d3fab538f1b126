"""Measure a ``ServeCase`` on a random-init model: prefill time, one decode step at kv_len, end-to-end.

Decoding runs on a transformers ``StaticCache`` sized to the sequence, one token per sequence per step,
captured in a CUDA graph when that works (what serving engines do; eager otherwise, and
``info["decode_method"]`` says which). ``model.generate`` is not used: its per-step Python overhead
(~50 ms on an H100 host) and DynamicCache's whole-cache copy per token would be timed instead of the GPU.
End-to-end = prefill of the prompts + (output_len - 1) greedy decode steps, timed together.
"""

from __future__ import annotations

import inspect
import statistics
import time
from typing import Any, Callable

from knowledge.schema import Measured, ModelArch, ServeCase
from probes.train_step import is_oom, one_line, oom_guarded, peak_gib, setup_distributed

# how each weight format is built (probes.hf_model): engines' kernels, or bitsandbytes when named
_BUILD = {"bf16": "none", "fp8": "engine:fp8", "int8": "engine:int8", "int4": "engine:int4", "bnb-int8": "int8", "bnb-nf4": "nf4"}


def build_quantization(case: ServeCase) -> str:
    """How to build the case's weights: its format, or the one the model predicts for its hardware's GPU."""
    from knowledge.catalog import resolve_platform
    from knowledge.serving_formats import default_format

    return _BUILD[case.weight_format or default_format(case.weight_bits, resolve_platform(case.hardware).gpu)]


def run_serving(
    case: ServeCase, arch: ModelArch, *, device: str = "cuda", repeats: int = 5, info: dict | None = None
) -> Measured:
    """prefill_s (median of ``repeats``), decode_step_s, peak_mem_gib, and e2e tokens/s when output_len is set.

    ``info`` (optional, filled in place) receives notes on how decode was timed. Single GPU only.
    """
    if case.tensor_parallel > 1:
        return Measured(error="tensor_parallel>1 not measured")
    if case.kv_bits != 16:
        return Measured(error="kv_bits=8 not measured (needs a quantized KV cache backend)")
    info = info if info is not None else {}
    d = setup_distributed(device, need_group=False)
    return oom_guarded(d, lambda: _run(case, arch, d, repeats, info))


def _timed(fn: Callable[[], Any], repeats: int, sync: Callable[[], None], warmup: int = 1) -> float:
    """Median seconds of ``fn`` over ``repeats`` runs after ``warmup`` ones, synchronised around each."""
    for _ in range(warmup):
        fn()
    times = []
    for _ in range(repeats):
        sync()
        t0 = time.perf_counter()
        fn()
        sync()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def _run(case: ServeCase, arch: ModelArch, d: Any, repeats: int, info: dict) -> Measured:
    import torch

    from probes.hf_model import build_model

    dtype = torch.bfloat16 if d.cuda else torch.float32
    model = build_model(arch, device=d.device, dtype=dtype, attn_impl="sdpa",
                        quantization=build_quantization(case), use_cache=True)
    model.eval()

    def sync() -> None:
        if d.cuda:
            torch.cuda.synchronize(d.device)

    B, P, kv = case.batch_size, case.prompt_len, case.kv_len_effective
    with torch.inference_mode():
        prompt = torch.randint(0, arch.vocab_size, (B, P), device=d.device)
        # logits_to_keep=1: a serving prefill only needs the last position's logits (as generate does)
        eager_s = _timed(lambda: model(input_ids=prompt, use_cache=True, logits_to_keep=1), repeats, sync)
        prefill_s = None if d.cuda else eager_s  # a CPU has no graphs: its forward is the eager one
        if d.cuda:  # engines run the prefill compiled or graph-captured: time it so (eager kept beside it)
            try:
                prefill_s = graph_prefill_s(model, prompt, repeats, sync)
            except Exception as e:
                if is_oom(e):
                    raise
                info["prefill_graph"] = f"failed: {one_line(e, 100)}"

        dec = _Decoder(model, B, kv + 1, d.device)
        dec.prefill(torch.randint(0, arch.vocab_size, (B, kv), device=d.device))
        dec.set_position(kv)  # every timed step rewrites slot kv: the cache stays at kv tokens
        info["decode_method"] = dec.try_capture()
        decode_s = _timed(dec.run, max(repeats, 10) if dec.graph else repeats, sync, warmup=2)
        del dec

        e2e = None
        if case.output_len:
            # the first output token comes from the prefill (timed above, graph-captured, as engines run it)
            O = case.output_len
            e2e = B * O / (generate_s(model, prompt, O, d.device, sync) + (prefill_s if prefill_s is not None else eager_s))
    return Measured(prefill_s=prefill_s, prefill_eager_s=eager_s, decode_step_s=decode_s, e2e_output_tokens_per_s=e2e,
                    peak_mem_gib=peak_gib(d.device))


def graph_prefill_s(model: Any, ids: Any, repeats: int, sync: Any) -> float:
    """Median seconds of the prompt forward captured in a CUDA graph (engines compile or capture prefill)."""
    import torch

    def fwd() -> None:
        model(input_ids=ids, use_cache=False, logits_to_keep=1)

    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        for _ in range(2):
            fwd()
    torch.cuda.current_stream().wait_stream(s)
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        fwd()
    try:
        return _timed(g.replay, repeats, sync, warmup=1)
    finally:
        del g


def generate_s(model: Any, prompt: Any, output_len: int, device: Any, sync: Callable[[], None]) -> float:
    """Seconds of output_len - 1 graph-replayed decode steps after ``prompt`` (B, P), the cache growing."""
    B, P = prompt.shape
    dec = _Decoder(model, B, P + output_len, device)
    dec.prefill(prompt)
    dec.set_position(P)
    dec.try_capture()
    sync()
    t0 = time.perf_counter()
    for i in range(output_len - 1):
        dec.set_position(P + i)
        dec.run()
    sync()
    del dec
    return time.perf_counter() - t0


def _accepts(fn: Any, name: str) -> bool:
    try:
        return name in inspect.signature(fn).parameters
    except (TypeError, ValueError):
        return False


class _Decoder:
    """Greedy decoding of ``B`` sequences over a StaticCache of ``length`` slots, graph-capturable.

    All step inputs live in fixed device tensors (token, position, mask, the cache's write counters), so
    one captured graph serves every position: ``set_position`` updates them in place before each ``run``.
    """

    def __init__(self, model: Any, B: int, length: int, device: Any) -> None:
        import torch
        from transformers import StaticCache

        self.model, self.B, self.device = model, B, device
        self.cache = StaticCache(config=model.config, max_cache_len=length)
        self.with_cache_pos = _accepts(model.forward, "cache_position")  # older transformers index by it
        self.tok = torch.zeros((B, 1), dtype=torch.long, device=device)
        self.pos = torch.zeros((B, 1), dtype=torch.long, device=device)
        self.cur = torch.zeros((), dtype=torch.long, device=device)
        # A ready 4D mask skips transformers' mask building, whose host-side checks break graph capture
        self.mask = torch.zeros((B, 1, 1, length), dtype=torch.bool, device=device)
        self.counters: list[Any] = []
        self.graph: Any = None

    def prefill(self, ids: Any) -> None:
        """Write ``ids`` (B, P) into slots 0..P-1 and take the next token from the last logits."""
        import torch

        P = ids.shape[1]
        for c in self.counters:
            c.zero_()
        kw = {"cache_position": torch.arange(P, device=self.device)} if self.with_cache_pos else {}
        out = self.model(input_ids=ids, position_ids=torch.arange(P, device=self.device).expand(self.B, P),
                         past_key_values=self.cache, use_cache=True, logits_to_keep=1, **kw)
        if not self.counters:  # the cache allocates its tensors (and device counters) on first use
            self.counters = [layer.cumulative_length for layer in getattr(self.cache, "layers", [])
                             if isinstance(getattr(layer, "cumulative_length", None), torch.Tensor)]
        self.mask.zero_()
        self.mask[..., :P] = True
        self.tok.copy_(out.logits[:, -1:].argmax(-1))

    def set_position(self, p: int) -> None:
        self.cur.fill_(p)
        self.pos.fill_(p)
        self.mask[..., p] = True

    def _forward(self) -> None:
        for c in self.counters:
            c.copy_(self.cur)  # the cache writes the new key/value at slot ``cur``
        kw = {"cache_position": self.cur.view(1)} if self.with_cache_pos else {}
        out = self.model(input_ids=self.tok, position_ids=self.pos, attention_mask=self.mask,
                         past_key_values=self.cache, use_cache=True, logits_to_keep=1, **kw)
        self.tok.copy_(out.logits[:, -1:].argmax(-1))

    def run(self) -> None:
        """One decode step at the current position (graph replay when captured)."""
        if self.graph is not None:
            self.graph.replay()
        else:
            self._forward()

    def try_capture(self) -> str:
        """Capture ``_forward`` in a CUDA graph; returns how decode steps will run."""
        import torch

        if self.device.type != "cuda":
            return "static cache, eager"
        try:
            s = torch.cuda.Stream(self.device)
            s.wait_stream(torch.cuda.current_stream(self.device))
            with torch.cuda.stream(s):
                for _ in range(3):  # kernels and allocator pools settle before capture
                    self._forward()
            torch.cuda.current_stream(self.device).wait_stream(s)
            graph = torch.cuda.CUDAGraph()
            with torch.cuda.graph(graph):
                self._forward()
            self.graph = graph
            return "static cache, CUDA graph"
        except Exception as e:  # capture is best effort; eager timing is still a measurement
            if is_oom(e):
                raise
            return f"static cache, eager (CUDA graph failed: {one_line(e, 120)})"
