"""The advisor's what-if explorer: `streamlit run app/explorer.py`.

Every number on the page comes from the same library functions as the CLI (``advisor predict``,
``advisor recommend``, ``advisor compare``); the app only collects inputs, caches calls and draws.
Only the open tab runs, so a change of a control answers quickly.
"""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:  # `streamlit run` puts app/ on the path, not the repository root
    sys.path.insert(0, str(ROOT))

import streamlit as st  # noqa: E402

from app import state  # noqa: E402
from app.sidebar import sidebar  # noqa: E402
from app.tabs import accuracy, compare, prediction, recommendations, roofline  # noqa: E402

TABS = ("Prediction", "Recommendations", "Roofline", "Compare", "Accuracy")


def _guard(fn, *args) -> None:
    """Show any unexpected failure as one line, never a traceback."""
    try:
        fn(*args)
    except Exception as e:  # noqa: BLE001 - the page must stay usable
        st.error(f"{type(e).__name__}: {state.one_line(e)}")


def main() -> None:
    st.set_page_config(page_title="advisor — what-if explorer", layout="wide")
    sel = sidebar()
    st.title("advisor · what-if explorer")
    st.caption("Predicted throughput and memory for LLM training and serving, and the DeepSpeed configuration to use. "
               "Change any control on the left; every number comes from the advisor's library, as the CLI computes it.")
    tabs = st.tabs(TABS, key="tab", on_change="rerun")
    if sel.model_error:
        st.error(f"Model: {sel.model_error}")
    for tab, name in zip(tabs, TABS):
        if not tab.open:
            continue
        with tab:
            if name == "Accuracy":
                _guard(accuracy.render)
            elif sel.model_error is None:
                _guard({"Prediction": prediction.render, "Recommendations": recommendations.render,
                        "Roofline": roofline.render, "Compare": compare.render}[name], sel)


main()
