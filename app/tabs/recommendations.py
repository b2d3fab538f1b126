"""Tab 2: what `advisor recommend` ranks for the chosen job (top 10), with why, and the top pick's JSON."""

from __future__ import annotations

import pandas as pd
import streamlit as st

from advisor.serve_recommend import cache_text
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
    slo = sel.slo
    res, err = state.serve_search(sel.hardware, sel.model_key, k["prompt_len"], out_len, TOP,
                                  slo.get("max_tpot_ms"), slo.get("max_ttft_ms"), slo.get("requests"),
                                  k.get("engine", "vllm"), slo.get("rate"))
    if err:
        st.error(err)
        return
    limits = [f"mean time per output token ≤ {slo['max_tpot_ms']:g} ms" if slo.get("max_tpot_ms") else "",
              f"mean time to first token ≤ {slo['max_ttft_ms']:g} ms" if slo.get("max_ttft_ms") else ""]
    limits_text = " and ".join(x for x in limits if x)
    if res["rate_per_s"]:
        load = f"{res['requests'] or 1000:,} requests arriving at {res['rate_per_s']:g}/s (Poisson, seed 0)"
    elif res["requests"]:
        load = f"{res['requests']:,} requests at once"
    else:
        load = "each batch of requests arriving at once"
    if not res["recommendations"]:
        st.error(f"Nothing fits on {state.hardware_label(sel.hardware)}" if res["nothing_fits"] else
                 f"No configuration on {state.hardware_label(sel.hardware)} meets {limits_text} ({load}).")
        if res["closest_miss"]:
            st.markdown(f"**Closest miss:** {res['closest_miss']['text']}")
        if res["would_meet"]:
            st.markdown("**What would meet them:**\n" + "\n".join(f"- {w['text']}" for w in res["would_meet"]))
        st.caption(res["definitions"])
        return
    rows = []
    for r in res["recommendations"]:
        c = r["configuration"]
        rows.append({"#": r["rank"], "TP x replicas": f"{c['tensor_parallel']}x{c['replicas']}",
                     "weights": c["weight_format"], "KV cache": c["kv_cache_dtype"], "sequences per replica": c["max_num_seqs"],
                     "output tokens/s (all replicas)": round(r["e2e_output_tokens_per_s"]),
                     "time to first token (ms)": round(r["ttft_s"] * 1e3),
                     "time per output token (ms)": round(r["tpot_s"] * 1e3, 1) if r["tpot_s"] is not None else None,
                     "GiB per GPU": round(r["peak_mem_gib"], 1), "why": r["why"]})
    st.markdown(f"Serving on **{state.hardware_label(sel.hardware)}** with **{res['engine']}**, prompt {k['prompt_len']} → "
                f"{out_len} tokens, load: {load}: tensor parallel × replicas × weight format × KV cache × batch, "
                "exhaustively (as `advisor recommend --task serve`)" + (f", keeping only those with {limits_text}" if limits_text else ""))
    st.dataframe(pd.DataFrame(rows), hide_index=True, width="stretch")
    st.caption(res["definitions"])
    cache = cache_text(res["cache"]) if res.get("cache") else None
    if cache:
        st.caption(cache)
    st.markdown("**Launch the top pick:**")
    st.code("\n".join(res["launch"]["lines"]), language="bash")
    st.download_button("Download serve.sh", res["launch"]["script"], file_name="serve.sh", mime="text/x-shellscript",
                       key="dl_serve")
    burst = res.get("burst")
    if burst and res["requests"] and not res["rate_per_s"]:
        st.markdown(f"**{res['requests']:,} requests at once** on the top pick: {burst['duration_s']:.1f} s in all, "
                    f"{burst['output_tokens_per_s']:,.0f} output tokens/s, mean time to first token {burst['mean_ttft_s']:.2f} s"
                    + (f", {burst['mean_tpot_s'] * 1e3:.1f} ms per output token" if burst["mean_tpot_s"] is not None else ""))


def render(sel: Selection) -> None:
    (_serve if sel.task == "serve" else _train)(sel)
