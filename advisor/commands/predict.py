"""`advisor predict --cases CASES.jsonl [--profile P] --json`: the prediction contract."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Optional

import typer

from advisor.output import fail, print_json_line
from knowledge.errors import AdvisorError


def predict(
    cases: Path = typer.Option(..., "--cases", help="JSON lines, one contract case each ('-' = stdin)."),
    profile: Optional[str] = typer.Option(None, "--profile", help="Calibration profile written by `advisor probe`: a path, or a name (h100x1, h200x1, h200x2, or one under ADVISOR_HOME/profiles)."),
    as_json: bool = typer.Option(False, "--json", help="JSON lines on stdout (the contract); default is a table."),
) -> None:
    """Predict throughput, step time and peak memory for every case of a file."""
    from advisor.cases import MalformedFile, read_cases
    from advisor.predictor import Predictor, load_profile
    from knowledge.paths import find_profile
    from knowledge.schema import ErrorLine

    try:
        text = sys.stdin.read() if str(cases) == "-" else cases.read_text()
    except (OSError, UnicodeDecodeError) as e:
        fail(f"cannot read cases file {str(cases)!r}: {e.strerror if isinstance(e, OSError) else e}", code=2)
    try:
        rows = read_cases(text)
    except MalformedFile as e:
        fail(f"{cases}: {e}", code=2)
    try:
        predictor = Predictor(load_profile(find_profile(profile)) if profile else None)
    except AdvisorError as e:
        fail(str(e))
    results = []
    for n, raw, case, err in rows:
        if case is None:
            results.append(ErrorLine(id=raw.get("id") if raw else None, error=f"line {n}: {err}"))
        else:
            results.append(predictor.predict_or_error(case))
    if as_json:
        for r in results:
            print_json_line(r)
    else:
        from advisor.tables import predictions_table

        predictions_table(results)
    if any(isinstance(r, ErrorLine) for r in results):
        raise typer.Exit(1)


def register(app: typer.Typer) -> None:
    app.command("predict")(predict)
