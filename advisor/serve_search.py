"""Search serving deployments: tensor parallel x data-parallel replicas x weight format x KV dtype x batch.

Every point is predicted through ``advisor.predictor.Predictor`` (one instance per search: it keeps the
calibration per platform). The space is small (a few hundred points), so it is enumerated: the ranking is
deterministic and no sampler can miss the best point. Throughput is the whole deployment's: all replicas.

TTFT and TPOT are defined as vLLM's ``benchmark_serving`` defines them (``SLO_DEFINITIONS``), and the limits
apply to their means over requests. Without a load (``--requests`` / ``--rate``) a configuration's batch
of requests arrives at once and is served as one wave.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from typing import Any

from advisor.space import KV_BITS
from knowledge.errors import AdvisorError, unknown
from knowledge.schema import FORMAT_BITS, GPUSpec, ModelArch, PlatformSpec, ServeCase
from knowledge.serving_formats import has_fp8
from models.serve_launch import ENGINES, per_replica

MAX_BATCH = 4096  # concurrent sequences per replica: beyond this no engine schedules one step
DEFAULT_RATE_REQUESTS = 1000  # requests of a --rate load without --requests (benchmark_serving's default)
ENGINE_FORMATS = tuple(f for f in FORMAT_BITS if not f.startswith("bnb-"))  # what engines serve natively
FORMAT_ORDER = {f: i for i, f in enumerate(FORMAT_BITS)}  # more precise first: bf16, fp8, int8, int4, bnb-*
SLO_DEFINITIONS = ("TTFT = time from a request's arrival to its first output token, queueing included; "
                   "TPOT = (request latency - TTFT) / (output tokens - 1); both are means over requests "
                   "(as vLLM's benchmark_serving reports them)")


def not_searched(gpu: GPUSpec) -> dict[str, str]:
    """Engine formats left out of the default search on ``gpu``, with why. On a GPU with FP8 tensor cores int8
    W8A8 runs at the FP8 rate with the same bytes per weight: it would repeat every fp8 row, so the 8-bit format
    searched is FP8, the one an engine picks there (``knowledge.serving_formats.default_format``)."""
    if has_fp8(gpu):
        return {"int8": f"int8 W8A8 has the same tensor-core rate and bytes as fp8 on the {gpu.name}: fp8 stands for both"}
    return {"fp8": f"the {gpu.name} has no FP8 tensor cores"}


def weight_formats_for(gpu: GPUSpec, asked: tuple[str, ...] | None = None) -> tuple[str, ...]:
    """The formats searched: engine formats the GPU runs, one 8-bit format (fp8 with FP8 tensor cores, else
    int8; ``not_searched``); bitsandbytes only when asked. ``asked`` (the user's ``--weight-format``) replaces
    them; a bad one raises AdvisorError."""
    native = tuple(f for f in ENGINE_FORMATS if f not in not_searched(gpu))
    if not asked:
        return native
    for f in asked:
        if f not in FORMAT_BITS:
            raise unknown("--weight-format", f, FORMAT_BITS)
        if f == "fp8" and not has_fp8(gpu):
            raise AdvisorError(f"--weight-format fp8: the {gpu.name} has no FP8 tensor cores; valid here: "
                               f"{', '.join(x for x in FORMAT_BITS if x != 'fp8')}")
    return tuple(sorted(dict.fromkeys(asked), key=FORMAT_ORDER.get))


def check_engine(engine: str) -> str:
    if engine not in ENGINES:
        raise unknown("--engine", engine, ENGINES)
    return engine


def placements(arch: ModelArch, platform: PlatformSpec, gpus: int | None = None) -> list[tuple[int, int]]:
    """(tensor parallel, replicas): TP divides the GPUs used and the attention heads; replicas = GPUs // TP."""
    n = gpus or platform.count
    if n > platform.count:
        raise AdvisorError(f"--gpus {n} exceeds the {platform.count} GPUs of {platform.id!r}; serving is modelled on one "
                           "server (each replica within it)")
    return [(t, n // t) for t in range(1, n + 1) if n % t == 0 and arch.num_attention_heads % t == 0]


@dataclass(frozen=True)
class Job:
    """What is served: ``hardware`` and ``model`` as the user gave them (they go into every ServeCase)."""

    hardware: str
    model: str | dict
    platform: PlatformSpec
    arch: ModelArch
    prompt_len: int
    output_len: int
    engine: str = "vllm"


@dataclass(frozen=True)
class Config:
    tensor_parallel: int
    replicas: int
    weight_format: str
    kv_bits: int
    max_num_seqs: int  # concurrent sequences per replica

    @property
    def gpus(self) -> int:
        return self.tensor_parallel * self.replicas

    @property
    def batch_size(self) -> int:  # concurrent sequences of the deployment
        return self.max_num_seqs * self.replicas

    @property
    def placement(self) -> str:
        return f"{self.tensor_parallel}x{self.replicas}"

    @property
    def kv_dtype(self) -> str:
        return "fp8" if self.kv_bits == 8 else "bf16"

    def describe(self) -> str:
        return (f"TP{self.tensor_parallel} x {self.replicas} replica(s), {self.weight_format} weights, {self.kv_dtype} KV, "
                f"batch {self.max_num_seqs} per replica")


def _ms(seconds: float | None) -> float | None:
    """Seconds as milliseconds, None kept (a TPOT of a one-token output)."""
    return None if seconds is None else seconds * 1e3


def tpot_text(tpot_s: float | None) -> str:
    """TPOT in ms, or a dash for a one-token output (benchmark_serving defines no TPOT there)."""
    return "–" if tpot_s is None else f"{tpot_s * 1e3:.1f}"


@dataclass
class Point:
    """One configuration's prediction for the whole deployment."""

    config: Config
    fits: bool
    tokens_per_s: float  # deployment output tokens/s (under the load, when one is given)
    ttft_s: float
    tpot_s: float | None  # None for a one-token output: benchmark_serving defines no TPOT there
    peak_mem_gib: float
    prediction: Any  # the ServePrediction of the deployment case
    load: dict | None = None
    why_not_fits: str | None = None

    def violation(self, max_tpot_ms: float | None, max_ttft_ms: float | None) -> float:
        """The largest relative excess over the limits (0 when all are met)."""
        v = 0.0
        for value, limit in ((_ms(self.tpot_s), max_tpot_ms), (_ms(self.ttft_s), max_ttft_ms)):
            if limit is not None and value is not None:
                v = max(v, value / limit - 1.0 if limit > 0 else math.inf)
        return v


def _case(job: Job, c: Config, batch: int, replicas: int, output_len: int | None, kv_len: int | None = None) -> ServeCase:
    return ServeCase(id=f"tp{c.tensor_parallel}-r{replicas}-{c.weight_format}-kv{c.kv_bits}-b{batch}", hardware=job.hardware,
                     model=job.model, task="serve", batch_size=batch, prompt_len=job.prompt_len, kv_len=kv_len,
                     output_len=output_len, weight_bits=FORMAT_BITS[c.weight_format], weight_format=c.weight_format,
                     kv_bits=c.kv_bits, tensor_parallel=c.tensor_parallel, replicas=replicas, engine=job.engine)


def predict_point(predictor, job: Job, c: Config) -> Point:
    """The deployment's prediction: ``c.replicas`` copies, ``c.batch_size`` sequences over all of them."""
    p = predictor.predict(_case(job, c, c.batch_size, c.replicas, job.output_len))
    return Point(c, p.fits, p.e2e_output_tokens_per_s or 0.0, p.ttft_s or 0.0, p.tpot_s, p.peak_mem_gib, p,
                 why_not_fits=p.why_not_fits)


def _step_times(predictor, job: Job, c: Config):
    """Per-replica step times for the load simulation, interpolated from predictions on a small grid:
    batch at powers of two up to ``max_num_seqs``, cache length at the prompt and the prompt + output."""
    cache: dict[tuple[int, int], Any] = {}

    def pred(b: int, kv: int):
        if (b, kv) not in cache:
            cache[(b, kv)] = predictor.predict(_case(job, c, b, 1, None, kv_len=kv))
        return cache[(b, kv)]

    grid = sorted({*(1 << i for i in range(int(math.log2(c.max_num_seqs)) + 1)), c.max_num_seqs})
    lo_kv, hi_kv = job.prompt_len, job.prompt_len + job.output_len

    def interpolated(value) -> list[float]:
        """``value(b)`` at every batch 0..max_num_seqs, linear between the grid's predictions (index 0 unused). The
        simulation asks millions of times: a table, not a search of the grid each time (a 13 s recommend)."""
        out = [0.0] * (c.max_num_seqs + 1)
        for lo, hi in zip(grid, grid[1:] + [grid[-1]]):
            a, z = value(lo), value(hi)
            for b in range(lo, hi + 1):
                out[b] = a if hi == lo else a + (z - a) * (b - lo) / (hi - lo)
        return out

    prefill = interpolated(lambda b: pred(b, lo_kv).prefill_s)
    dec_lo = interpolated(lambda b: pred(b, lo_kv).decode_step_s)
    dec_hi = interpolated(lambda b: pred(b, hi_kv).decode_step_s)
    span = hi_kv - lo_kv

    def prefill_s(k: int) -> float:
        return prefill[min(k, c.max_num_seqs)]

    def decode_s(b: int, kv: float) -> float:
        b = min(b, c.max_num_seqs)
        g = min(max((kv - lo_kv) / span, 0.0), 1.0)
        return dec_lo[b] + (dec_hi[b] - dec_lo[b]) * g

    return prefill_s, decode_s


def serve_load(predictor, job: Job, config: Config, *, requests: int | None = None, rate_per_s: float | None = None) -> dict:
    """The one way a request load is predicted: ``requests`` arriving at once (continuous batching, the
    serving model's ``continuous_batching``), or arriving at ``rate_per_s`` (Poisson, seed 0; ``requests``
    of them, default 1000) served by the engine simulation (``models.serve_load``) on per-step predictions.
    Requests are spread evenly over the replicas. Returns deployment output tokens/s, mean TTFT and TPOT."""
    from models.serve_load import poisson_arrivals, simulate

    n = requests or DEFAULT_RATE_REQUESTS
    per = math.ceil(n / config.replicas)
    if rate_per_s is None:
        from models.serving import continuous_batching

        b = continuous_batching(job.arch, job.platform, predictor.serving_calibration(job.platform), per, job.prompt_len,
                                job.output_len, config.max_num_seqs, weight_bits=FORMAT_BITS[config.weight_format],
                                weight_format=config.weight_format, kv_bits=config.kv_bits,
                                tensor_parallel=config.tensor_parallel, replicas=1, engine=job.engine)
        # the deployment's rate is its n requests over the busiest replica's time: per replica's rate x replicas
        # counted ceil(n / replicas) requests on every replica (one request on eight GPUs read as eight)
        return {"requests": n, "rate_per_s": None, "arrivals": "all at once", "duration_s": b["total_s"],
                "output_tokens_per_s": n * job.output_len / b["total_s"],
                "mean_ttft_s": b["mean_ttft_s"], "mean_tpot_s": b["tpot_s"], "waves": b["waves"]}
    prefill_s, decode_s = _step_times(predictor, job, config)
    r = simulate(poisson_arrivals(per, rate_per_s / config.replicas), job.prompt_len, job.output_len,
                 config.max_num_seqs, prefill_s, decode_s)
    return {**r, "requests": n, "rate_per_s": rate_per_s, "arrivals": "Poisson, seed 0",
            "output_tokens_per_s": n * job.output_len / r["duration_s"], "requests_per_s": n / r["duration_s"]}


@dataclass
class SearchResult:
    picks: list[Point]  # best batch of each configuration that meets the limits, ranked
    points: list[Point]  # every fitting point predicted
    closest_miss: dict | None = None  # when nothing meets the limits
    would_meet: list[dict] = field(default_factory=list)
    spaces: dict = field(default_factory=dict)


def _rank_key(pt: Point, best: float):
    c = pt.config
    # throughput within 1% of another is a tie: fewer GPUs, more precise weights and KV, smaller batch win it
    bucket = round(math.log(max(pt.tokens_per_s, 1e-9) / best) / math.log(1.01)) if best > 0 else 0
    return (-bucket, c.gpus, FORMAT_ORDER[c.weight_format], -c.kv_bits, c.max_num_seqs, c.tensor_parallel)


def _rank(points: list[Point]) -> list[Point]:
    best = max((p.tokens_per_s for p in points), default=0.0)
    return sorted(points, key=lambda p: _rank_key(p, best))


def _evaluate(predictor, job: Job, formats, kv_bits, gpus, requests, rate_per_s) -> list[Point]:
    """Every fitting point: per (placement, format, KV dtype), the batch at powers of two until one does not fit, then
    the largest batch that fits between the last two (the KV pool full: what an engine tuned for throughput runs, as
    trtllm-bench sizes max_batch_size; without it a pool holding 460 sequences was searched at 256)."""
    points = []

    def point(c: Config) -> Point:
        pt = predict_point(predictor, job, c)
        if pt.fits and (requests or rate_per_s):
            pt.load = serve_load(predictor, job, pt.config, requests=requests, rate_per_s=rate_per_s)
            pt.tokens_per_s, pt.ttft_s, pt.tpot_s = (pt.load["output_tokens_per_s"], pt.load["mean_ttft_s"],
                                                     pt.load["mean_tpot_s"])
        return pt

    for tp, reps in placements(job.arch, job.platform, gpus):
        for fmt in formats:
            for kb in kv_bits:
                b = 1
                while b <= MAX_BATCH:
                    pt = point(Config(tp, reps, fmt, kb, b))
                    if not pt.fits:
                        break  # memory grows with the batch: no larger one fits
                    points.append(pt)
                    b *= 2
                lo, hi = b // 2, min(b, MAX_BATCH + 1)  # lo fits (when >= 1), hi does not (or is past the cap)
                best = None
                while lo >= 1 and hi - lo > 1:
                    mid = (lo + hi) // 2
                    pt = point(Config(tp, reps, fmt, kb, mid))
                    lo, hi, best = (mid, hi, pt) if pt.fits else (lo, mid, best)
                if best is not None:
                    points.append(best)
    return points


def _best_meeting(points: list[Point], max_tpot_ms, max_ttft_ms) -> list[Point]:
    """The best batch of each (placement, format, KV) meeting the limits, ranked."""
    best: dict[tuple, Point] = {}
    for pt in points:
        if pt.violation(max_tpot_ms, max_ttft_ms) > 0:
            continue
        c = pt.config
        key = (c.tensor_parallel, c.replicas, c.weight_format, c.kv_bits)
        if key not in best or _rank([pt, best[key]])[0] is pt:
            best[key] = pt
    return _rank(list(best.values()))


def point_summary(pt: Point) -> dict:
    c = pt.config
    return {"tensor_parallel": c.tensor_parallel, "replicas": c.replicas, "weight_format": c.weight_format,
            "kv_bits": c.kv_bits, "max_num_seqs": c.max_num_seqs, "batch_size": c.batch_size, "gpus": c.gpus,
            "e2e_output_tokens_per_s": pt.tokens_per_s, "ttft_ms": pt.ttft_s * 1e3, "tpot_ms": _ms(pt.tpot_s),
            "peak_mem_gib": pt.peak_mem_gib}


def _verb(pt: Point, max_tpot_ms, max_ttft_ms) -> str:
    """What a point does about the limits, said only as far as it is true: "meets the limits" when it meets all,
    else the ones it meets ("meets TTFT ≤ 500 ms"), else "fits"."""
    given = [(n, v, lim) for n, v, lim in (("TPOT", _ms(pt.tpot_s), max_tpot_ms), ("TTFT", _ms(pt.ttft_s), max_ttft_ms))
             if lim is not None and v is not None]
    met = [f"{n} ≤ {lim:g} ms" for n, v, lim in given if v <= lim]
    if given and len(met) == len(given):
        return "meets the limits"
    return f"meets {' and '.join(met)}" if met else "fits"


def _misses(pt: Point, max_tpot_ms, max_ttft_ms) -> list[str]:
    out = []
    for name, value, limit in (("TPOT", _ms(pt.tpot_s), max_tpot_ms), ("TTFT", _ms(pt.ttft_s), max_ttft_ms)):
        if limit is not None and value is not None:
            verdict = f"> {limit:g} ms (misses by {value / limit - 1:.0%})" if value > limit else f"≤ {limit:g} ms"
            out.append(f"{name} {value:,.1f} ms {verdict}")
    return out


def search_serving(predictor, job: Job, *, gpus: int | None = None, weight_formats: tuple[str, ...] | None = None,
                   kv_bits: tuple[int, ...] = KV_BITS, max_tpot_ms: float | None = None, max_ttft_ms: float | None = None,
                   requests: int | None = None, rate_per_s: float | None = None, top: int = 5,
                   widen: bool = True) -> SearchResult:
    """Rank deployments by output tokens/s of all replicas among those that fit and meet the limits.

    When none meets them: ``closest_miss`` (the fitting point with the smallest relative violation, by how
    much it misses each limit) and ``would_meet`` (what meets them: one limit alone in this space, all GPUs,
    every weight format and the FP8 KV cache, twice the GPUs of this kind).
    """
    if job.prompt_len < 1 or job.output_len < 1:
        raise AdvisorError("prompt_len and output_len must be at least 1")
    if max_tpot_ms is not None and job.output_len < 2:
        raise AdvisorError(f"--max-tpot-ms needs --output-len of at least 2: TPOT is the time per output token after the "
                           f"first, and one output token has none (got --output-len {job.output_len})")
    for flag, v in (("--max-tpot-ms", max_tpot_ms), ("--max-ttft-ms", max_ttft_ms), ("--rate", rate_per_s)):
        if v is not None and not (v > 0 and math.isfinite(v)):
            raise AdvisorError(f"{flag} must be a positive finite number, got {v!r}")
    check_engine(job.engine)
    formats = weight_formats_for(job.platform.gpu, weight_formats)
    points = _evaluate(predictor, job, formats, kv_bits, gpus, requests, rate_per_s)
    picks = _best_meeting(points, max_tpot_ms, max_ttft_ms)
    skipped = {} if weight_formats else not_searched(job.platform.gpu)
    res = SearchResult(picks[:top], points, spaces={"weight_formats": list(formats), "kv_bits": list(kv_bits),
                                                     "not_searched": skipped,
                                                     "placements": [f"{t}x{r}" for t, r in placements(job.arch, job.platform, gpus)]})
    if picks or not widen:
        return res
    if points:
        miss = min(points, key=lambda p: (p.violation(max_tpot_ms, max_ttft_ms), -p.tokens_per_s))
        res.closest_miss = {**point_summary(miss), "violation": miss.violation(max_tpot_ms, max_ttft_ms),
                            "misses": _misses(miss, max_tpot_ms, max_ttft_ms),
                            "text": f"{miss.config.describe()}: {'; '.join(_misses(miss, max_tpot_ms, max_ttft_ms))}"}
    res.would_meet = _would_meet(predictor, job, points, gpus, weight_formats, kv_bits, max_tpot_ms, max_ttft_ms,
                                 requests, rate_per_s)
    return res


def _would_meet(predictor, job, points, gpus, weight_formats, kv_bits, max_tpot_ms, max_ttft_ms, requests, rate_per_s) -> list[dict]:
    out: list[dict] = []

    def add(change: str, pt: Point, note: str = "") -> None:
        s = point_summary(pt)
        verb = _verb(pt, max_tpot_ms, max_ttft_ms)
        out.append({"change": change, **s, "text": f"{change}: {pt.config.describe()} {verb} at "
                    f"{pt.tokens_per_s:,.0f} tok/s (TTFT {s['ttft_ms']:,.0f} ms, TPOT {tpot_text(pt.tpot_s)} ms){note}"})

    if max_tpot_ms is not None and max_ttft_ms is not None:  # each limit alone, in this space
        for name, tp_lim, tt_lim in (("TPOT", max_tpot_ms, None), ("TTFT", None, max_ttft_ms)):
            alone = _best_meeting(points, tp_lim, tt_lim)
            if alone:
                other = _misses(alone[0], max_tpot_ms if name == "TTFT" else None, max_ttft_ms if name == "TPOT" else None)
                add(f"{name} ≤ {tp_lim or tt_lim:g} ms alone", alone[0], f"; but {other[0]}" if other else "")
    wider = []
    if gpus and gpus < job.platform.count:
        wider.append((f"all {job.platform.count} GPUs", job, None, weight_formats, kv_bits))
    if weight_formats or tuple(kv_bits) != tuple(KV_BITS):
        wider.append(("every weight format and an FP8 KV cache", job, gpus, None, KV_BITS))
    from knowledge.catalog import GPUS_PER_SERVER_MAX, resolve_platform

    bigger_tried = job.platform.count * 2 <= GPUS_PER_SERVER_MAX  # an 8-GPU server has no bigger sibling
    if bigger_tried:
        bigger = resolve_platform(f"{job.platform.gpu.id}x{job.platform.count * 2}")
        wider.append((f"{bigger.count}x {job.platform.gpu.name} (twice the GPUs)",
                      replace(job, hardware=bigger.id, platform=bigger), None, None, KV_BITS))
    for change, j, g, wf, kb in wider:
        try:
            r = search_serving(predictor, j, gpus=g, weight_formats=wf, kv_bits=kb, max_tpot_ms=max_tpot_ms,
                               max_ttft_ms=max_ttft_ms, requests=requests, rate_per_s=rate_per_s, top=1, widen=False)
        except AdvisorError:
            continue
        if r.picks:
            add(change, r.picks[0])
    if not out and points:
        floor = min(points, key=lambda p: p.tpot_s if max_tpot_ms is not None else p.ttft_s)
        s = point_summary(floor)
        out.append({"change": "none found", **s, "text": f"nothing searched{' (up to twice the GPUs)' if bigger_tried else ''} meets them; the lowest "
                    f"{'TPOT' if max_tpot_ms is not None else 'TTFT'} found is {s['tpot_ms' if max_tpot_ms is not None else 'ttft_ms']:,.1f} ms "
                    f"({floor.config.describe()}): loosen the limit or shorten the prompt/output"})
    return out
