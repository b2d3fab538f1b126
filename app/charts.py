"""Altair charts (Altair ships with Streamlit). They draw what the advisor returned; no arithmetic on it."""

from __future__ import annotations

import altair as alt
import pandas as pd

CAPACITY_COLOR = "#d62728"


def memory_chart(bars: list[tuple[str, dict[str, float], float]]) -> alt.LayerChart:
    """Stacked GiB per memory item, one bar per platform, with the card's capacity as a red tick."""
    rows = [{"platform": name, "item": item, "GiB": gib} for name, items, _ in bars for item, gib in items.items()]
    caps = pd.DataFrame([{"platform": name, "capacity": cap, "label": f"capacity {cap:.0f} GiB"} for name, _, cap in bars])
    order = list(bars[0][1])
    stack = alt.Chart(pd.DataFrame(rows)).mark_bar(size=44).encode(
        y=alt.Y("platform:N", title=None, sort=None),
        x=alt.X("sum(GiB):Q", title="GiB per GPU"),
        color=alt.Color("item:N", sort=order, title=None, legend=alt.Legend(labelLimit=220)),
        order=alt.Order("order:Q"),
        tooltip=["platform", "item", alt.Tooltip("GiB:Q", format=".2f")],
    ).transform_calculate(order=f"indexof({order!r}, datum.item)")
    cap = alt.Chart(caps).mark_tick(color=CAPACITY_COLOR, thickness=3, size=64).encode(
        y="platform:N", x="capacity:Q", tooltip=["label"])
    text = alt.Chart(caps).mark_text(align="right", dx=-6, dy=-26, color=CAPACITY_COLOR).encode(
        y="platform:N", x="capacity:Q", text="label:N")
    return alt.layer(stack, cap, text).properties(height=max(200, 100 * len(bars) + 60))


def time_chart(series: list[tuple[str, dict[str, float]]], unit: str = "s") -> alt.Chart:
    """Seconds per phase, one bar per phase (grouped by platform when there are two)."""
    rows = [{"platform": name, "phase": ph, unit: v} for name, phases in series for ph, v in phases.items()]
    enc = dict(
        y=alt.Y("phase:N", sort=None, title=None, axis=alt.Axis(labelLimit=260)),
        x=alt.X(f"{unit}:Q", title=f"time ({unit})"),
        color=alt.Color("platform:N", title=None) if len(series) > 1 else alt.value("#1f77b4"),
        tooltip=["platform", "phase", alt.Tooltip(f"{unit}:Q", format=".4g")],
    )
    if len(series) > 1:
        enc["yOffset"] = "platform:N"
    return alt.Chart(pd.DataFrame(rows)).mark_bar().encode(**enc).properties(height=36 * len(rows) // max(len(series), 1) + 40)


def roofline_chart(points: pd.DataFrame, peak_tflops: float, bandwidth_tbs: float) -> alt.LayerChart:
    """Log-log roofline: attainable TFLOP/s against FLOP/byte, the compute roof and the bandwidth slope."""
    lo = min(points["intensity"].min(), 0.1) / 2
    hi = max(points["intensity"].max(), peak_tflops / bandwidth_tbs) * 4
    ridge = peak_tflops / bandwidth_tbs
    xs = sorted({lo, ridge, hi})
    roof = pd.DataFrame({"intensity": xs, "TFLOP/s": [min(peak_tflops, bandwidth_tbs * x) for x in xs]})
    x = alt.X("intensity:Q", scale=alt.Scale(type="log"), title="arithmetic intensity (FLOP/byte)")
    y = alt.Y("TFLOP/s:Q", scale=alt.Scale(type="log"), title="attainable TFLOP/s")
    line = alt.Chart(roof).mark_line(color="black").encode(x=x, y=y)
    label = alt.Chart(pd.DataFrame([
        {"intensity": hi, "TFLOP/s": peak_tflops, "text": f"compute roof {peak_tflops:.0f} TFLOP/s"},
        {"intensity": ridge / 10, "TFLOP/s": peak_tflops / 10, "text": f"{bandwidth_tbs * 1e3:,.0f} GB/s slope"},
    ])).mark_text(align="right", dy=-8, color="black").encode(x=x, y=y, text="text:N")
    dots = alt.Chart(points).mark_circle(size=110, opacity=0.85).encode(
        x=x, y=y, color=alt.Color("kind:N", title="operator kind"),
        tooltip=["operator", "kind", alt.Tooltip("intensity:Q", format=".3g", title="FLOP/byte"),
                 alt.Tooltip("TFLOP/s:Q", format=".3g"), alt.Tooltip("GFLOP:Q", format=".4g"),
                 alt.Tooltip("MB:Q", format=".4g"), alt.Tooltip("ms:Q", format=".4g")],
    )
    return alt.layer(line, label, dots).properties(height=420)


def accuracy_chart(points: pd.DataFrame, metric: str) -> alt.LayerChart:
    """Predicted against measured on log-log axes, with the y = x line."""
    lo, hi = min(points["measured"].min(), points["predicted"].min()) / 1.3, max(points["measured"].max(), points["predicted"].max()) * 1.3
    x = alt.X("measured:Q", scale=alt.Scale(type="log", domain=[lo, hi]), title=f"measured {metric}")
    y = alt.Y("predicted:Q", scale=alt.Scale(type="log", domain=[lo, hi]), title=f"predicted {metric}")
    diag = alt.Chart(pd.DataFrame({"measured": [lo, hi], "predicted": [lo, hi]})).mark_line(color="gray", strokeDash=[4, 4]).encode(x=x, y=y)
    dots = alt.Chart(points).mark_circle(size=60, opacity=0.75).encode(
        x=x, y=y, color=alt.Color("dataset:N", title="data set"),
        tooltip=["dataset", "platform", "model", "task", "configuration", alt.Tooltip("measured:Q", format=",.4g"),
                 alt.Tooltip("predicted:Q", format=",.4g")],
    )
    return alt.layer(diag, dots).properties(height=420)
