"""Tab 4: which of two cards serves the model faster over batch x sequence length (`advisor compare`)."""

from __future__ import annotations

import streamlit as st

from app import state
from app.sidebar import Selection

BATCHES = (1, 4, 16, 64, 256)
SEQS = (128, 512, 2048, 8192, 32768)


def render(sel: Selection) -> None:
    st.markdown(f"Serving comparison of **{sel.hardware}** (A) and **{sel.hardware_b}** (B) — set B under "
                "*Second platform* in the sidebar. One GPU each, 16-bit weights, no tensor parallelism.")
    phase = st.radio("phase", ("decode", "prefill"), key="compare_phase", horizontal=True,
                     help="decode: one step at a KV length; prefill: one prompt of that length")
    res, err = state.compare_mesh(sel.hardware, sel.hardware_b, sel.model_key, phase, BATCHES, SEQS)
    if err:
        st.error(err)
        return
    left, right = st.columns([3, 2])
    with left:
        st.image(res["png"], caption=f"time({res['b']}) / time({res['a']}): > 1 (blue) means {res['a']} is faster")
    with right:
        st.markdown("**Regions**")
        for line in res["regions"]:
            st.markdown(f"- {line}")
