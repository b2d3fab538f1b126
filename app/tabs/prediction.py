"""Tab 1: the contract prediction of the current controls, its memory and time breakdowns."""

from __future__ import annotations

import json

import streamlit as st

from app import charts, state
from app.sidebar import Selection
from knowledge.schema import ServePrediction, TrainPrediction

TRAIN_MEMORY = {"weights": "weights_gib", "gradients": "grads_gib", "optimizer states": "optimizer_states_gib",
                "activations": "activations_gib", "buffers (logits, buckets)": "buffers_gib", "workspace": "overhead_gib"}
TRAIN_PHASES = {"forward": "forward_s", "backward": "backward_s", "optimizer": "optimizer_s",
                "communication (exposed)": "communication_s", "offload": "offload_s", "overhead": "overhead_s"}
SERVE_PHASES = {"prefill: compute-bound ops": "prefill_compute_s", "prefill: memory-bound ops": "prefill_memory_s",
                "prefill: all-reduces": "prefill_communication_s",
                "decode: weight reads": "decode_weights_s", "decode: KV-cache reads": "decode_kv_s",
                "decode: compute-bound ops": "decode_compute_s", "decode: all-reduces": "communication_s",
                "decode: graph replay overhead": "overhead_s"}


def _sentence(text: str) -> str:
    return text[:1].upper() + text[1:]


def _train_metrics(p: TrainPrediction) -> None:
    from advisor.tables import not_run

    if not p.fits:  # it cannot run: say what it would need, not a throughput as if it ran
        st.error(_sentence(not_run(p)))
    c = st.columns(5)
    if not p.fits:
        c[0].metric("tokens/s", "—", help=not_run(p))
        c[1].metric("step time", "—")
    else:
        c[0].metric("tokens/s", f"{p.tokens_per_s:,.0f}", help="aggregate over all GPUs, steady state")
        c[1].metric("step time", f"{p.step_time_s:.3f} s")
    c[2].metric("GiB/GPU", f"{p.peak_mem_gib:.1f}", help=f"peak of the busiest rank, of {p.capacity_gib:.0f} GiB")
    c[3].metric("fits", "yes" if p.fits else "no")
    if p.host_mem_gib is not None:
        from advisor.explain import swapped

        c[4].metric("host GiB", f"{p.host_mem_gib:.1f}",
                    help=f"host RAM of the node (processes, offloaded states), of {p.host_capacity_gib or 0:.0f} GiB usable "
                         f"(RAM, plus swap where the server has some){swapped(p)}")


def _serve_metrics(p: ServePrediction) -> None:
    from advisor.tables import not_run

    ran = p.fits  # a configuration that does not fit shows no throughput, nor latency, as if it ran
    if not ran:
        st.error(_sentence(not_run(p)))
    c = st.columns(4)
    c[0].metric("decode tokens/s", f"{p.decode_tokens_per_s:,.0f}" if ran else "—", help="batch / one decode step" if ran else not_run(p))
    c[1].metric("e2e output tokens/s", f"{p.e2e_output_tokens_per_s:,.0f}" if ran and p.e2e_output_tokens_per_s else "—")
    c[2].metric("GiB/GPU", f"{p.peak_mem_gib:.1f}", help=f"of {p.capacity_gib:.0f} GiB")
    c[3].metric("fits", "yes" if p.fits else "no")
    c = st.columns(4)
    c[0].metric("prefill (TTFT)", f"{p.prefill_s * 1e3:,.1f} ms" if ran else "—")
    c[1].metric("decode step", f"{p.decode_step_s * 1e3:,.2f} ms" if ran else "—")
    c[2].metric("TPOT (generate)", f"{p.tpot_s * 1e3:,.2f} ms" if ran and p.tpot_s else "—")
    c[3].metric("max batch that fits", f"{p.max_batch_size:,}" if p.max_batch_size is not None else "—",
                help="sequences of this length the engine's KV pool holds" if p.kv_pool_gib is not None else None)
    st.caption(f"As served by **{p.engine}**" + (f": KV pool {p.kv_pool_gib:,.1f} GiB per GPU, prefill in chunks of "
                                                 f"{p.chunk_tokens:,} tokens" if p.kv_pool_gib is not None else ""))
    if p.note:
        st.info(p.note)


def _slo(sel: Selection, p: ServePrediction) -> None:
    """Say whether this configuration meets the service-level objectives set in the sidebar."""
    checks = []
    if sel.slo.get("max_tpot_ms") and p.tpot_s is not None:
        checks.append(("time per output token", p.tpot_s * 1e3, sel.slo["max_tpot_ms"]))
    if sel.slo.get("max_ttft_ms") and p.ttft_s is not None:
        checks.append(("time to first token", p.ttft_s * 1e3, sel.slo["max_ttft_ms"]))
    for what, value, limit in checks:
        text = f"{what}: {value:,.1f} ms against a limit of {limit:g} ms"
        (st.success if value <= limit else st.warning)(("Meets " if value <= limit else "Misses ") + text)


def _memory_items(p) -> dict[str, float]:
    b = p.breakdown
    if isinstance(p, TrainPrediction):
        return {k: getattr(b, f) for k, f in TRAIN_MEMORY.items()}
    items = {"weights": b.weights_gib, "KV cache": b.kv_cache_gib, "activations": b.activations_gib}
    items["workspace & dequant copy"] = max(p.peak_mem_gib - sum(items.values()), 0.0)
    return items


def _phases(p) -> dict[str, float]:
    b = p.breakdown
    table = TRAIN_PHASES if isinstance(p, TrainPrediction) else SERVE_PHASES
    scale = 1.0 if isinstance(p, TrainPrediction) else 1e3
    return {k: getattr(b, f) * scale for k, f in table.items()}


def _headline(sel: Selection, hardware: str, p) -> None:
    info, _ = state.platform_info(hardware)
    where = f"{info.count}× {info.gpu.name} ({info.interconnect})" if info else hardware
    if isinstance(p, TrainPrediction):
        from advisor.explain import describe
        from advisor.cases import parse_case

        st.markdown(f"**{state.hardware_label(hardware)}** · {where} · {describe(parse_case(sel.case(hardware)))}")
    else:
        st.markdown(f"**{state.hardware_label(hardware)}** · {where} · serve")


def render(sel: Selection) -> None:
    platforms = [sel.hardware] + ([sel.hardware_b] if sel.compare_on and sel.hardware_b != sel.hardware else [])
    preds = []
    for hw in platforms:
        p, err = state.predict(sel.case_json(hw))
        if err:
            st.error(f"{state.hardware_label(hw)}: {err}" if len(platforms) > 1 else err)
            continue
        _headline(sel, hw, p)
        (_train_metrics if isinstance(p, TrainPrediction) else _serve_metrics)(p)
        if not p.fits and p.why_not_fits:
            st.warning(f"Does not fit: {p.why_not_fits}; no throughput is shown: it cannot run")
        if p.interval:
            key, words = (("tokens_per_s", "training throughput") if isinstance(p, TrainPrediction)
                          else ("decode_tokens_per_s", "decode throughput"))
            if key in p.interval:
                lo, hi = p.interval[key]
                st.caption(f"Likely range of the {words}, from the held-out error of the last calibration: "
                           f"{lo:,.0f} – {hi:,.0f} tokens/s")
        if isinstance(p, ServePrediction):
            _slo(sel, p)
        preds.append((hw, p))
    if not preds:
        return
    left, right = st.columns(2)
    with left:
        st.subheader("Memory per GPU")
        bars = [(hw, _memory_items(p), p.capacity_gib or 0.0) for hw, p in preds]
        st.altair_chart(charts.memory_chart(bars), width="stretch")
    with right:
        train = isinstance(preds[0][1], TrainPrediction)
        st.subheader("Time per optimizer step" if train else "Time per phase")
        st.altair_chart(charts.time_chart([(hw, _phases(p)) for hw, p in preds], "s" if train else "ms"), width="stretch")
    _details(sel, preds[0][1])


def _details(sel: Selection, p) -> None:
    with st.expander("The case and the prediction as JSON (what `advisor predict --cases case.jsonl --json` reads and writes)"):
        st.code(json.dumps(sel.case(), sort_keys=True), language="json")
        st.code(p.model_dump_json(exclude_none=True), language="json")
    if isinstance(p, TrainPrediction) and sel.knobs.get("engine", "deepspeed") == "deepspeed":
        cfg, err = state.deepspeed_json(sel.case_json())
        if cfg:
            st.download_button("DeepSpeed JSON of this configuration", cfg, file_name="ds_config.json",
                               mime="application/json", key="dl_current")
