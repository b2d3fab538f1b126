"""Requests arriving over time, served by one engine replica with continuous batching. Pure, deterministic.

The engine (vLLM-style scheduling, without chunked prefill): whenever sequences are waiting and fewer
than ``max_num_seqs`` run, it admits as many as fit and runs one prefill step for them; their first
token comes out at the end of that step. Otherwise every running sequence advances one token in a
decode step; a sequence leaves after ``output_len`` tokens. Decode steps between two events (an
arrival that can be admitted, a sequence finishing) are summed at once, so a load costs O(requests). Step times come from the caller
(``prefill_s(k)``: k prompts at once; ``decode_s(b, kv)``: b sequences at mean cache length kv), i.e.
from the serving model's per-step predictions.

Metrics as vLLM's ``benchmark_serving`` defines them: TTFT = arrival to first output token, queueing
included; TPOT = (latency - TTFT) / (output tokens - 1) per request; means (and p99) over requests.
"""

from __future__ import annotations

import heapq
import math
import random
from collections.abc import Callable, Sequence

SEED = 0


def poisson_arrivals(n: int, rate_per_s: float, seed: int = SEED) -> list[float]:
    """``n`` arrival times (s) of a Poisson process at ``rate_per_s``, the first at 0, from a fixed seed."""
    if n < 1 or not rate_per_s > 0 or not math.isfinite(rate_per_s):
        raise ValueError("n must be >= 1 and the rate a positive finite number")
    rng, t, out = random.Random(seed), 0.0, [0.0]
    for _ in range(n - 1):
        t += rng.expovariate(rate_per_s)
        out.append(t)
    return out


def _p99(xs: Sequence[float]) -> float:
    s = sorted(xs)
    return s[min(len(s) - 1, math.ceil(0.99 * len(s)) - 1)]


def simulate(arrivals: Sequence[float], prompt_len: int, output_len: int, max_num_seqs: int,
             prefill_s: Callable[[int], float], decode_s: Callable[[int, float], float]) -> dict:
    """Serve requests arriving at ``arrivals`` (seconds, sorted) on one replica; per-request TTFT and TPOT."""
    if not arrivals or prompt_len < 1 or output_len < 1 or max_num_seqs < 1:
        raise ValueError("need at least one request, and prompt_len, output_len, max_num_seqs >= 1")
    n = len(arrivals)
    ttft, done_at = [0.0] * n, [0.0] * n
    # running sequences as a heap of (the decode step at which each finishes, request); decode steps are counted on one
    # clock, so a sequence admitted at step a has produced 1 + clock - a tokens. The next finish and the batch's mean
    # cache length are then O(log b) and O(1) per event, not a pass over the batch (a serving recommend with a rate
    # ran 13 s in those passes)
    running: list[tuple[int, int]] = []
    admitted_sum = 0  # sum over the running sequences of the clock at their admission
    nxt, t, finished, clock = 0, 0.0, 0, 0
    while finished < n:
        if not running and nxt < n and arrivals[nxt] > t:
            t = arrivals[nxt]  # idle until the next request
        room = max_num_seqs - len(running)
        admit = []
        while room > 0 and nxt < n and arrivals[nxt] <= t:
            admit.append(nxt)
            nxt, room = nxt + 1, room - 1
        if admit:
            t += prefill_s(len(admit))
            for i in admit:
                ttft[i] = t - arrivals[i]
                if output_len == 1:
                    done_at[i], finished = t, finished + 1
                else:
                    heapq.heappush(running, (clock + output_len - 1, i))
                    admitted_sum += clock
            continue
        # decode steps until the next event: a sequence finishes, or (with room) a request arrives
        b = len(running)
        steps = running[0][0] - clock
        kv = prompt_len + (b * (1 + clock) - admitted_sum) / b
        if b < max_num_seqs and nxt < n:
            one = decode_s(b, kv)
            steps = max(1, min(steps, math.ceil((arrivals[nxt] - t) / one) if one > 0 else 1))
        t += steps * decode_s(b, kv + (steps - 1) / 2)  # step time is linear in the cache length: its midpoint
        clock += steps
        while running and running[0][0] <= clock:
            end, i = heapq.heappop(running)
            done_at[i], finished = t, finished + 1
            admitted_sum -= end - (output_len - 1)
    latency = [done_at[i] - arrivals[i] for i in range(n)]
    # benchmark_serving defines no TPOT for a one-token output
    tpot = [(latency[i] - ttft[i]) / (output_len - 1) for i in range(n)] if output_len > 1 else None
    span = max(done_at) - arrivals[0]
    return {
        "requests": n, "duration_s": span, "output_tokens_per_s": n * output_len / span, "requests_per_s": n / span,
        "mean_ttft_s": sum(ttft) / n, "p99_ttft_s": _p99(ttft), "mean_tpot_s": sum(tpot) / n if tpot else None,
        "p99_tpot_s": _p99(tpot) if tpot else None,
        "mean_latency_s": sum(latency) / n,
    }
