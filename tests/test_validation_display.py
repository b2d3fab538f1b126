"""`advisor validate` reads as people name things: one n everywhere, no internal names, no duplicate rows."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from rich.console import Console

from advisor.validation_display import (
    dataset_label, grid_label, group_label, platform_label, pooled_datasets, pooled_groups, print_report,
)

CACHED = Path(__file__).resolve().parents[1] / "knowledge" / "calibration" / "validation-all-model.json"


@pytest.fixture(scope="module")
def report() -> dict:
    # the bundled report as stored, whatever its fingerprint: only its display is under test here
    return json.loads(CACHED.read_text())["report"]


def _render(rep: dict) -> str:
    console = Console(width=80, record=True, file=open("/dev/null", "w"), color_system=None)
    print_report(rep, console)
    return console.export_text()


def test_one_n_agrees_everywhere(report) -> None:
    text = _render(report)
    n = report["throughput_overall"]["n"]
    title_n = int(re.search(r"Throughput \(tokens/s\) of (\d+) runs", text)[1])
    all_row = re.search(r"all held-out\s*│\s*(\d+)", text)
    assert title_n == n == int(all_row[1])
    assert sum(g["n"] for _, g in pooled_groups(report)) == n
    assert sum(tp["n"] * times for _, tp, _, _, times in pooled_datasets(report) if tp) == n
    rows = report["rows"]
    assert f"The {rows} training rows" in " ".join(text.split())
    verdicts = sum(fv["n"] * times for _, _, _, fv, times in pooled_datasets(report) if fv)
    assert verdicts == sum(v["n"] for v in report["fit_verdict_by_dataset"].values()) == rows


def test_no_internal_names_and_80_columns(report) -> None:
    text = _render(report)
    assert max(len(line) for line in text.splitlines()) <= 80
    raw = set(report["throughput_by_dataset"]) | set(report["memory_by_dataset"]) | {g["group"] for g in report["throughput_by_group"]}
    models = {g for g in raw if re.fullmatch(r"[a-z0-9.]+-\d+(\.\d+)?b", g)}  # model names stay as they are
    first_cells = {line.split("│")[1].strip() for line in text.splitlines() if line.startswith("│")}
    assert not (raw - models) & first_cells, (raw - models) & first_cells
    for name in raw - models - {"own", "inline"}:  # words of "own runs" and "unnamed model (inline JSON)"
        assert not re.search(rf"(?<![\w-]){re.escape(name)}(?![\w-])", text), name
    assert "|" not in text and "(Zhang et al.)" not in text.replace("paper (Zhang et al.)", "")


def test_no_two_data_set_rows_alike(report) -> None:
    rows = [r[1:4] for r in pooled_datasets(report)]
    assert len(rows) == len({json.dumps(r, sort_keys=True) for r in rows})
    names = [r[0] for r in pooled_datasets(report)]
    assert len(names) == len(set(names))


def test_rows_sharing_a_name_pool_exactly_and_identical_rows_show_once() -> None:
    tp = {"own-h100": {"n": 2, "mape": 0.1, "n_profiled": 0, "mape_profiled_without": None, "mape_profiled_with": None},
          "own-h100x1": {"n": 1, "mape": 0.4, "n_profiled": 1, "mape_profiled_without": 0.4, "mape_profiled_with": 0.3}}
    mem = {"probe-h100x1": {"n": 40, "mape": 0.345, "within_10pct": 0.38},
           "probe-h200x1": {"n": 40, "mape": 0.345, "within_10pct": 0.38},
           "probe-h200x2": {"n": 25, "mape": 0.138, "within_10pct": 0.52}}
    rep = {"throughput_by_dataset": tp, "memory_by_dataset": mem, "fit_verdict_by_dataset": {}}
    rows = {r[0]: r for r in pooled_datasets(rep)}
    own = rows["own runs, H100"][1]
    assert own["n"] == 3 and own["mape"] == pytest.approx((2 * 0.1 + 0.4) / 3)
    assert own["n_profiled"] == 1 and own["mape_profiled_with"] == pytest.approx(0.3)
    assert set(rows) == {"own runs, H100", "probes, H100 and H200", "probes, H200 x2"}
    assert rows["probes, H100 and H200"][4] == 2 and rows["probes, H200 x2"][4] == 1


def test_names_as_people_say_them() -> None:
    assert platform_label("a800x8") == "A800 x8"
    assert platform_label("h100x1") == "H100"
    assert platform_label("rtx3090x8-pcie") == "RTX 3090 x8 PCIe"
    assert platform_label("rtx3090x8") == "RTX 3090 x8 NVLink"  # the catalog's NVLink-bridged twin
    assert group_label("a800x8 (Zhang et al.)", "model") == "paper: A800 x8"
    assert group_label("inline", "model") == "unnamed model (inline JSON)"
    assert group_label("h200", "gpu") == "H200"
    assert dataset_label("own-h200x2") == "own runs, H200 x2" and dataset_label("own-h100") == "own runs, H100"
    assert dataset_label("zhang2023") == "paper (Zhang et al.)"
    assert grid_label("zhang2023|Table III|a800x8|pretrain|llama2-7b") == "paper Table III · A800 x8 · pretrain llama2-7b"
    assert grid_label("own-h100|own-h100|h100x1|finetune|llama2-7b") == "own runs · H100 · finetune llama2-7b"
