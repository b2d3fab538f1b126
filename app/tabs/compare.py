"""Tab 4: which of two cards serves the model faster over batch x sequence length (`advisor compare`)."""

from __future__ import annotations

import streamlit as st

from app import state
from app.sidebar import Selection

BATCHES = (1, 4, 16, 64, 256)
SEQS = (128, 512, 2048, 8192, 32768)


def render(sel: Selection) -> None:
    st.markdown(f"Serving comparison of **{state.hardware_label(sel.hardware)}** (A) and **{sel.hardware_b}** (B) — set B under "
                "*Second platform* in the sidebar. One GPU each, 16-bit weights, no tensor parallelism, through the same serving model as the predictions.")
    phase = st.radio("Phase", ("decode", "prefill"), key="compare_phase", horizontal=True,
                     format_func={"decode": "decode (one step at a KV-cache length)", "prefill": "prefill (one prompt of that length)"}.get)
    res, err = state.compare_mesh(sel.hardware, sel.hardware_b, sel.model_key, phase, BATCHES, SEQS)
    if err:
        st.error(err)
        return
    st.image(res["png"], width="stretch",
             caption=f"time on {res['b']} / time on {res['a']}: blue (> 1) means {res['a']} is faster, red (< 1) {res['b']}; "
                     "grey cells do not fit on one card or both, or pass the model's context (each cell says which)")
    st.markdown("**Where each card wins**")
    for line in res["regions"]:
        st.markdown(f"- {line}")
    st.download_button("Download the heatmap (PNG)", res["png"], file_name=f"compare-{res['a']}-vs-{res['b']}.png".lower(),
                       mime="image/png", key="dl_compare")
