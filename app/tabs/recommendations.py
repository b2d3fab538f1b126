"""Tab 2: what `advisor recommend` ranks for the chosen job (top 10), with why, and the top pick's JSON."""

from __future__ import annotations

import pandas as pd
import streamlit as st

from app import state
from app.sidebar import Selection

TOP = 10


def _train(sel: Selection) -> None:
    k = sel.knobs
    res, err = state.train_search(sel.hardware, sel.model_key, sel.task, k.get("gpus"), k["seq_len"], k["lora_rank"], TOP)
    if err:
        st.error(err)
        return
    f = res["facts"]
    st.markdown(f"**{res['model']}** · {sel.task} · {res['gpus']}× {res['gpu']} · seq {k['seq_len']} — "
                f"every knob searched except sequence length, GPUs and LoRA rank (from the sidebar)")
    if not res["rows"]:
        st.error(f"Nothing fits {res['model']} {sel.task} on {res['gpus']}× {res['gpu']} at seq {k['seq_len']}.")
        if res.get("leanest"):
            desc, gib, limit = res["leanest"]
            st.markdown(f"Leanest configuration: {desc}: needs {gib:.1f} GiB per GPU, {limit:.1f} GiB usable.")
        if res.get("would_fit"):
            st.markdown("What would fit:")
            st.dataframe(pd.DataFrame(res["would_fit"]), hide_index=True, width="stretch")
        return
    st.dataframe(pd.DataFrame(res["rows"]), hide_index=True, width="stretch",
                 column_config={"why": st.column_config.TextColumn(width="large")})
    st.caption(f"{f['sampler']} search: {f['trials']} trials over {f['space_size']} configurations (Optuna, as the CLI)")
    st.markdown(f"**Top pick:** {res['rows'][0]['configuration']}")
    st.code(res["launch"], language="bash")
    st.markdown(f"With Hugging Face: {res['usage']}")
    if res["deepspeed_json"]:
        st.download_button("Download the top pick's DeepSpeed JSON", res["deepspeed_json"], file_name="ds_config.json",
                           mime="application/json", key="dl_top", type="primary")
        with st.expander("ds_config.json"):
            st.code(res["deepspeed_json"], language="json")
    else:
        st.info("The top pick runs without DeepSpeed (plain PyTorch): no DeepSpeed JSON to write.")


def _serve(sel: Selection) -> None:
    k = sel.knobs
    out_len = k.get("output_len") or 256
    items, err = state.serve_search(sel.hardware, sel.model_key, k["prompt_len"], out_len, TOP)
    if err:
        st.error(err)
        return
    if not items:
        st.error(f"Nothing fits on {sel.hardware}: try more GPUs (tensor parallel) or 4-bit weights.")
        return
    rows = []
    for i, it in enumerate(items, start=1):
        p = it["prediction"]
        rows.append({"#": i, "batch": it["batch_size"], "TP": it["tensor_parallel"], "weights": f"{it['weight_bits']}-bit",
                     "KV": f"{it['kv_bits']}-bit", "out tok/s": round(p.e2e_output_tokens_per_s or 0),
                     "TTFT (ms)": round((p.ttft_s or 0) * 1e3), "TPOT (ms)": round((p.tpot_s or 0) * 1e3, 1),
                     "GiB/GPU": round(p.peak_mem_gib, 1), "why": it["why"]})
    st.markdown(f"Serving on **{sel.hardware}**, prompt {k['prompt_len']} → {out_len} tokens: batch × TP × weight bits × KV bits, "
                "exhaustively (as `advisor recommend --task serve`)")
    st.dataframe(pd.DataFrame(rows), hide_index=True, width="stretch")


def render(sel: Selection) -> None:
    (_serve if sel.task == "serve" else _train)(sel)
