"""`advisor validate` for people: groups and data sets named as people name them, one n, no duplicate rows.

Formatting only. The report's figures (``advisor.validation``) are not recomputed: rows that end up with
the same name ("own-h100" and "own-h100x1" are both "own runs, H100") are pooled exactly (a MAPE or a
share is a mean over runs, so it pools weighted by its n), and rows whose figures are identical (the
same probe layers allocate the same bytes on an H100 and an H200) are shown once under both names.
"""

from __future__ import annotations

import re
from typing import Any

from rich.console import Console
from rich.table import Table

PAPER = "paper"  # Zhang et al. 2023 (arXiv 2311.03687), the published rows
_WORDS = {"rtx": "RTX ", "gtx": "GTX "}


def gpu_label(gpu_id: str) -> str:
    """'rtx4090' -> 'RTX 4090', 'h100' -> 'H100', 'a100-40gb' -> 'A100 40GB'."""
    text = gpu_id.upper().replace("-", " ")
    for short, spaced in _WORDS.items():
        if gpu_id.lower().startswith(short):
            text = spaced + text[len(short):]
    return text


def platform_label(platform_id: str) -> str:
    """'a800x8' -> 'A800 x8', 'h100x1' -> 'H100', 'rtx3090x8-pcie' -> 'RTX 3090 x8 PCIe' (and its NVLink twin)."""
    m = re.fullmatch(r"([a-z0-9-]+?)x(\d+)(?:-(pcie|nvlink))?", platform_id.strip().lower())
    if not m:
        return platform_id
    gpu, count, link = m[1], int(m[2]), m[3]
    if link is None and _interconnect(platform_id) == "nvlink-pairs":
        link = "nvlink"  # the paper's RTX 3090 box with its bridges: named so beside its PCIe twin
    return gpu_label(gpu) + (f" x{count}" if count > 1 else "") + {"pcie": " PCIe", "nvlink": " NVLink", None: ""}[link]


def _interconnect(platform_id: str) -> str | None:
    from knowledge.catalog import named_platforms

    spec = named_platforms().get(platform_id) or {}
    return spec.get("interconnect")


def dataset_label(name: str) -> str:
    """'zhang2023' -> 'paper (Zhang et al.)'; 'own-h200x2' -> 'own runs, H200 x2'; 'probe-h100x1' ->
    'probes, H100'; anything else as it is."""
    if name.startswith("zhang"):
        return f"{PAPER} (Zhang et al.)"
    for prefix, words in (("own-", "own runs"), ("probe-", "probes")):
        if name.startswith(prefix):
            rest = name[len(prefix):]
            where = platform_label(rest) if re.search(r"x\d+", rest) else gpu_label(rest)
            return f"{words}, {where}"
    # 'own' holds the grids' runs on every lent machine, a set apart from 'own-h100' (not a superset of it)
    return {"own": "own grids, all GPUs", "probe-macro": "probes"}.get(name, name)


def group_label(name: str, holdout: str) -> str:
    """A held-out group as people name it: 'paper: A800 x8', 'H200 x2', 'unnamed model (inline JSON)'."""
    m = re.fullmatch(r"(.+) \(Zhang et al\.\)", name)
    if m:
        return f"{PAPER}: {platform_label(m[1])}"
    if holdout == "platform":
        return platform_label(name)
    if holdout == "gpu":
        return gpu_label(name)
    if holdout == "dataset":
        return dataset_label(name)
    if holdout == "model" and name == "inline":
        return "unnamed model (inline JSON)"
    return name


def regime_label(name: str) -> str:
    """'GPU h100' -> 'GPU: H100'."""
    return f"GPU: {gpu_label(name[4:])}" if name.startswith("GPU ") else name


def grid_label(key: str) -> str:
    """'zhang2023|Table III|a800x8|pretrain|llama2-7b' -> 'paper Table III · A800 x8 · pretrain llama2-7b'."""
    parts = key.split("|")
    if len(parts) != 5:
        return key
    dataset, table, platform, task, model = parts
    source = f"{PAPER} {table}" if dataset.startswith("zhang") else dataset_label(dataset).split(",")[0]
    return f"{source} · {platform_label(platform)} · {task} {model}"


def _pool(items: list[dict[str, Any]], shares: dict[str, str]) -> dict[str, Any]:
    """Rows of one name as one: counts added, each mean (``shares``: field -> the count it is over) weighted."""
    counts = {c for c in shares.values()}
    out: dict[str, Any] = {c: sum(i.get(c) or 0 for i in items) for c in counts}
    for field, count in shares.items():
        weighted = [(i[field], i.get(count) or 0) for i in items if i.get(field) is not None and i.get(count)]
        total = sum(w for _, w in weighted)
        out[field] = sum(v * w for v, w in weighted) / total if total else None
    return out


THROUGHPUT = {"mape": "n", "mape_profiled_without": "n_profiled", "mape_profiled_with": "n_profiled"}
MEMORY = {"mape": "n", "within_10pct": "n"}
VERDICT = {"accuracy": "n"}


def pooled_groups(rep: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    """The held-out groups by display name, pooled where two share one; in name order."""
    by: dict[str, list[dict[str, Any]]] = {}
    for g in rep["throughput_by_group"]:
        by.setdefault(group_label(g["group"], rep["holdout"]), []).append(g)
    return sorted(((k, _pool(v, THROUGHPUT)) for k, v in by.items()), key=lambda kv: (kv[0].startswith(PAPER), kv[0].lower()))


def pooled_datasets(rep: dict[str, Any]) -> list[tuple[str, Any, Any, Any, int]]:
    """(name, throughput, memory, verdicts, times) per data set by display name, pooled where two share one;
    rows with identical figures once, under both names ('probes, H100 and H200', times 2)."""
    names: dict[str, list[str]] = {}
    for k in sorted(set(rep["throughput_by_dataset"]) | set(rep["memory_by_dataset"]) | set(rep["fit_verdict_by_dataset"])):
        names.setdefault(dataset_label(k), []).append(k)

    def pool(section: str, shares: dict[str, str], keys: list[str]) -> dict[str, Any] | None:
        items = [rep[section][k] for k in keys if k in rep[section]]
        return _pool(items, shares) if items else None

    rows = [(label, pool("throughput_by_dataset", THROUGHPUT, keys), pool("memory_by_dataset", MEMORY, keys),
             pool("fit_verdict_by_dataset", VERDICT, keys)) for label, keys in names.items()]
    merged: list[tuple[str, Any, Any, Any, int]] = []  # the last: how many data sets share these figures
    for row in rows:
        twin = next((i for i, m in enumerate(merged) if m[1:4] == row[1:] and _same_kind(m[0], row[0])), None)
        if twin is None:
            merged.append((*row, 1))
        else:
            label, *figures, times = merged[twin]
            merged[twin] = (_both(label, row[0]), *figures, times + 1)
    return sorted(merged, key=lambda r: (r[0].startswith(PAPER), r[0].lower()))


def _same_kind(a: str, b: str) -> bool:
    return a.split(",")[0] == b.split(",")[0]


def _both(a: str, b: str) -> str:
    """'probes, H100' + 'probes, H200' -> 'probes, H100 and H200'."""
    head, _, rest = b.partition(", ")
    return f"{a} and {rest}" if rest and a.startswith(head + ", ") else f"{a} and {b}"


def _pct(x: float | None) -> str:
    return "-" if x is None else f"{x:.1%}"


def _n_of(x: dict[str, Any] | None, field: str, times: int = 1) -> str:
    """'34.5% (40)', or for figures two data sets share, '34.5% (2×40)': the n still adds up."""
    if not x or x.get(field) is None:
        return "-"
    n = str(x["n"]) if times == 1 else f"{times}×{x['n']}"
    return f"{_pct(x[field])} ({n})"


def counts_line(rep: dict[str, Any]) -> str:
    """Where each of the data's rows is scored: the one count that ties the tables together."""
    n = rep["throughput_overall"]["n"]
    verdicts = rep["fit_verdict_by_dataset"]
    probe = sum(v["n"] for k, v in verdicts.items() if k.startswith("probe-"))
    other = rep["rows"] - n - probe
    text = (f"The {rep['rows']} training rows of '{rep['data']}': {n} runs with a measured throughput (the tables "
            f"above; memory and fit verdicts too), {probe} rows of the probes' real layers (memory and fit verdicts) "
            f"and {other} runs that ran out of memory (fit verdicts only)")
    if rep.get("skipped"):
        text += (f"; {rep['skipped']} more not scored here (traced model families, fitted in the shipped fit and scored "
                 f"held out by family in tests/benchmarks/traced_rows.py; failed runs)")
    return text + "."


def print_report(rep: dict[str, Any], console: Console) -> None:
    """The held-out throughput error by group and by regime, then memory, fit verdicts and regret per data set."""
    o = rep["throughput_overall"]
    t = Table(title=f"Throughput (tokens/s) of {o['n']} runs, each group predicted by a fit that never saw it "
                    f"(held out by {rep['holdout']})", title_justify="left")
    for c in ("held-out group", "n", "MAPE", "n profiled", "w/o profile", "with profile"):
        t.add_column(c, justify="left" if c == "held-out group" else "right", no_wrap=c == "held-out group")
    for label, g in pooled_groups(rep):
        t.add_row(label, str(g["n"]), _pct(g["mape"]), str(g["n_profiled"]), _pct(g["mape_profiled_without"]), _pct(g["mape_profiled_with"]))
    t.add_row("[bold]all held-out[/]", str(o["n"]), f"[bold]{_pct(o['mape'])}[/]", str(o["n_profiled"]),
              _pct(o["mape_profiled_without"]), _pct(o["mape_profiled_with"]))
    console.print(t)
    t1 = Table(title="Own runs by regime (the same held-out predictions; a run counts in each regime it is in)", title_justify="left")
    for c in ("regime", "n", "MAPE", "n profiled", "w/o profile", "with profile"):
        t1.add_column(c, justify="left" if c == "regime" else "right")
    for g in rep["throughput_by_regime"]:
        t1.add_row(regime_label(g["regime"]), str(g["n"]), _pct(g["mape"]), str(g["n_profiled"]),
                   _pct(g["mape_profiled_without"]), _pct(g["mape_profiled_with"]))
    console.print(t1)
    t2 = Table(title="Per data set: MAPE (n) of tokens/s and of peak memory, the share of memory predictions within "
                     "10%, the share of fit verdicts right (n)",
               title_justify="left")
    rows = [(label, _n_of(tp, "mape", times), _n_of(mm, "mape", times), f"{mm['within_10pct']:.0%}" if mm else "-",
             _n_of(fv, "accuracy", times)) for label, tp, mm, fv, times in pooled_datasets(rep)]
    for i, c in enumerate(("data set", "tokens/s", "memory", "±10%", "fit")):
        # a figure is never broken; the names and the headers wrap at spaces
        t2.add_column(c, justify="right" if i else "left", min_width=max(len(r[i]) for r in rows) if i else None)
    for r in rows:
        t2.add_row(*r)
    console.print(t2)
    console.print(counts_line(rep), highlight=False)
    if rep.get("host_memory_offload"):
        h = rep["host_memory_offload"]
        console.print(f"Host RAM of offload runs: MAPE {_pct(h['mape'])} (n={h['n']}, measured as the rise of the node's used RAM); "
                      f"host kills among the runs: {rep['host_kills']}", highlight=False)
    if rep["regret_by_grid"]:
        t3 = Table(title="Regret of the best-predicted configuration in each measured grid (held-out predictions)", title_justify="left")
        t3.add_column("grid")
        t3.add_column("regret", justify="right")
        labels = [grid_label(k) for k in rep["regret_by_grid"]]
        for (k, v), label in zip(rep["regret_by_grid"].items(), labels):
            # two data sets' grids of one job: told apart by the data set's own label, never its internal name
            t3.add_row(label if labels.count(label) == 1 else f"{label} ({dataset_label(k.split('|')[0])})", f"{v:.1%}")
        console.print(t3)
        console.print(f"grids within 5% of the best measured: {rep['regret_within_5pct']:.0%}")
    console.print("Memory and fit verdicts use the bundled calibration (bytes, not fitted efficiencies); published peak "
                  "memory is the paper's 'GB' figure (not max_memory_allocated).", style="dim")
