"""Tab 5: predicted against measured for every measurement the advisor ships (published + own)."""

from __future__ import annotations

import pandas as pd
import streamlit as st

from app import charts, state


def render() -> None:
    res = state.accuracy()
    if not res["points"]:
        st.info("No training measurements with numbers yet.")
        return
    fitted = state.has_fitted_correction()
    how = ("with the bundled fitted correction (knowledge/calibration/fitted.json)" if fitted else
           "with the analytic priors (no fitted correction is bundled yet)")
    st.caption(f"Predictions {how}, through the same Predictor as `advisor predict`. "
               + ("The correction was fitted on these same rows, so these errors are **in-sample** (optimistic). "
                  if fitted else "Once `advisor calibrate` fits the correction on these rows, this view is **in-sample**. ")
               + "Held-out accuracy is only what `advisor validate` reports: it predicts each group (platform, GPU, "
               "model or data set) with a fit that never saw it.")
    pts = pd.DataFrame(res["points"])
    metric = st.radio("metric", sorted(pts["metric"].unique(), reverse=True), key="accuracy_metric", horizontal=True)
    sub = pts[pts["metric"] == metric]
    st.altair_chart(charts.accuracy_chart(sub, metric), width="stretch")
    stats = pd.DataFrame(res["stats"])
    stats = stats[stats["metric"] == metric].assign(MAPE=lambda d: (d["MAPE"] * 100).round(1).astype(str) + " %")
    st.dataframe(stats, hide_index=True)
    notes = []
    if res["oom"]:
        notes.append("OOM rows (no number to compare): " + ", ".join(f"{k} {v}" for k, v in res["oom"].items()))
    if res["skipped"]:
        notes.append(f"{res['skipped']} rows skipped (unknown hardware/model or failed runs)")
    if metric == "peak GiB":
        notes.append("published peak memory is the paper's 'GB' figure converted from decimal GB, not max_memory_allocated")
    if notes:
        st.caption("; ".join(notes))
