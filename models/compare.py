"""The comparison mesh of two cards (LLMRoofline): time ratio over batch size x sequence length. Pure.

Each cell is one GPU's predicted time for one decode step (batch sequences at a KV length of seq) or one
prefill (batch prompts of seq tokens), weights in 16-bit, over all of a server's GPUs in tensor parallel, from the serving model
(``advisor.commands.compare.serving_comparison`` asks the Predictor for each cell).
"""

from __future__ import annotations

from knowledge.schema import ModelArch, PlatformSpec

Matrix = list[list[float]]
BoundMatrix = list[list[tuple[str, str]]]  # ("compute" | "memory" for card A, same for card B)
FitsMatrix = list[list[tuple[bool, bool]]]  # (fits on card A, fits on card B)
TIE = 0.02  # ratios within 2% of 1 are a draw


def predicted_mesh(cell_a, cell_b, batch_sizes: list[int], seq_lens: list[int], phase: str = "decode",
                   context: int | None = None) -> tuple[Matrix, BoundMatrix, FitsMatrix, list[list[bool]]]:
    """The mesh from two predictors of one cell each (``cell_x(batch, seq) -> (seconds, bound, fits)``: the
    serving model's prediction on that card). Cells beyond the model's ``context`` (a prefill of more tokens
    than it, or a decode step that would write past it) are not predicted: ``beyond`` marks them, with a
    neutral ratio of 1 and fits (False, False), so that every view masks them.
    Returns (ratio = time_b / time_a, bound, fits, beyond)."""
    ratio: Matrix = []
    bound: BoundMatrix = []
    fits: FitsMatrix = []
    beyond: list[list[bool]] = []
    for b in batch_sizes:
        r_row, b_row, f_row, x_row = [], [], [], []
        for s in seq_lens:
            past = context is not None and (s > context if phase == "prefill" else s >= context)
            if past:
                r_row.append(1.0)
                b_row.append(("memory", "memory"))
                f_row.append((False, False))
            else:
                ta, ba, fa = cell_a(b, s)
                tb, bb, fb = cell_b(b, s)
                r_row.append(tb / ta)
                b_row.append((ba, bb))
                f_row.append((fa, fb))
            x_row.append(past)
        ratio.append(r_row)
        bound.append(b_row)
        fits.append(f_row)
        beyond.append(x_row)
    return ratio, bound, fits, beyond


def _span(values: list[int], idx: list[int], unit: str) -> str:
    """'batch ≥ 64', 'seq ≤ 512', 'batch 4–64', 'seq 128', 'any batch' for contiguous index runs."""
    lo, hi = values[idx[0]], values[idx[-1]]
    if len(idx) == len(values):
        return f"any {unit}"
    if lo == hi:
        return f"{unit} {lo}"
    if idx[0] == 0:
        return f"{unit} ≤ {hi}"
    if idx[-1] == len(values) - 1:
        return f"{unit} ≥ {lo}"
    return f"{unit} {lo}–{hi}"


def _runs(idx: list[int]) -> list[list[int]]:
    runs: list[list[int]] = []
    for i in idx:
        if runs and i == runs[-1][-1] + 1:
            runs[-1].append(i)
        else:
            runs.append([i])
    return runs


def _bound_phrase(a: str, b: str, name_a: str, name_b: str) -> str:
    if a == b:
        return "both are compute-bound" if a == "compute" else "both are bandwidth-bound"
    word = {"compute": "compute-bound", "memory": "bandwidth-bound"}
    return f"{name_a} is {word[a]} and {name_b} {word[b]}"


def describe_regions(name_a: str, name_b: str, batch_sizes: list[int], seq_lens: list[int], ratio: Matrix,
                     bound: BoundMatrix, tie: float = TIE, fits: FitsMatrix | None = None,
                     beyond: list[list[bool]] | None = None, context: int | None = None) -> list[str]:
    """One sentence per (winner, bound regime): 'A100 wins where both are compute-bound: batch ≥ 64 at seq ≤ 512'.

    With ``fits``, cells that do not fit on one card or both are described as such, not as a winner.
    """
    groups: dict[tuple[str, tuple[str, str]], list[tuple[int, int]]] = {}
    for i, row in enumerate(ratio):
        for j, r in enumerate(row):
            fa, fb = fits[i][j] if fits else (True, True)
            if beyond and beyond[i][j]:
                key = ("context", ("", ""))
            elif not (fa and fb):
                key = ("oom", ("a" if fa else "", "b" if fb else ""))
            else:
                key = (name_a if r > 1 + tie else name_b if r < 1 - tie else "neither", bound[i][j])
            groups.setdefault(key, []).append((i, j))
    lines = []
    for (who, (ba, bb)), cells in sorted(groups.items(), key=lambda kv: (kv[0][0] == "context", kv[0][0] == "oom",
                                                                         kv[0][0] == "neither", -len(kv[1]))):
        # per sequence column, which batch rows; then merge neighbouring columns with the same rows
        by_col: dict[int, list[int]] = {}
        for i, j in cells:
            by_col.setdefault(j, []).append(i)
        parts: list[tuple[list[int], list[int]]] = []  # (columns, rows)
        for j in sorted(by_col):
            for run in _runs(sorted(by_col[j])):
                same = [p for p in parts if p[1] == run and p[0][-1] == j - 1]
                if same:
                    same[0][0].append(j)
                else:
                    parts.append(([j], run))
        where = "; ".join(f"{_span(batch_sizes, rows, 'batch')} at {_span(seq_lens, cols, 'seq')}" for cols, rows in parts)
        if who == "context":
            lines.append(f"beyond the model's {context:,}-token context (not predicted): {where}" if context
                         else f"beyond the model's context (not predicted): {where}")
            continue
        if who == "oom":
            only = name_a if ba else name_b if bb else None
            lines.append(f"only {only} fits the model and KV cache: {where}" if only else f"neither card fits the model and KV cache: {where}")
            continue
        verb = "is within 2%" if who == "neither" else "wins"
        subject = "neither card" if who == "neither" else who
        lines.append(f"{subject} {verb} where {_bound_phrase(ba, bb, name_a, name_b)}: {where}")
    return lines
