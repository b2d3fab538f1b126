"""Tab 3: the operators of one layer's forward placed on the GPU's roofline (models.operators)."""

from __future__ import annotations

import pandas as pd
import streamlit as st

from app import charts, state
from app.sidebar import Selection


def render(sel: Selection) -> None:
    if sel.task == "serve":
        st.info("The roofline shows a training step's operators: pick pretrain or finetune. "
                "For serving, the Compare tab maps where decode and prefill are compute- or bandwidth-bound.")
        return
    res, err = state.operators(sel.case_json())
    if err:
        st.error(err)
        return
    ops = res["ops"]
    df = pd.DataFrame([{
        "operator": o.name, "kind": o.kind, "intensity": o.intensity, "TFLOP/s": o.achieved_flops / 1e12,
        "GFLOP": o.flops / 1e9, "MB": o.bytes / 1e6, "ms": o.time_s * 1e3,
        "scope": "per layer" if o.per_layer else "once per model",
    } for o in ops])
    peak, bw = res["peak_flops"] / 1e12, res["bandwidth"] / 1e12
    st.markdown(f"**{res['gpu']}**: dense 16-bit roof {peak:,.0f} TFLOP/s, memory {bw * 1e3:,.0f} GB/s "
                f"(datasheet); ridge at {peak / bw:,.0f} FLOP/byte. One micro-batch "
                f"({sel.knobs['micro_batch_size']} × {sel.knobs['seq_len']} tokens) on one rank; "
                f"{res['layers']} layers.")
    st.altair_chart(charts.roofline_chart(df, peak, bw), width="stretch")
    st.caption("Each point is an operator at the throughput the step-time model predicts for it (FLOPs / its time); "
               "its distance below the roof is the fitted efficiency. Elementwise FLOPs are estimates.")
    st.dataframe(df.round({"intensity": 2, "TFLOP/s": 2, "GFLOP": 3, "MB": 2, "ms": 4}), hide_index=True, width="stretch")
