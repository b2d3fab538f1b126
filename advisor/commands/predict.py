"""`advisor predict --cases CASES.jsonl [--profile P] --json`: the prediction contract."""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer

from advisor.output import fail, one_line, print_json_line, warn
from knowledge.errors import AdvisorError


def predict(
    cases: Path = typer.Option(..., "--cases", help="JSON lines, one contract case each ('-' = stdin)."),
    profile: Optional[str] = typer.Option(None, "--profile", help="Calibration profile written by `advisor probe`: a path, or a name (h100x1, h200x1, h200x2, or one under ADVISOR_HOME/profiles)."),
    as_json: bool = typer.Option(False, "--json", help="JSON lines on stdout (the contract); default is a table."),
) -> None:
    """Predict throughput, step time and peak memory for every case of a file.

    Each line of CASES is one JSON case. Required fields: id, hardware, model, task (pretrain | finetune | serve), e.g. {"id": "a", "hardware": "rtx4090x8", "model": "70b", "task": "finetune"}.

    Optional, training: method, gpus, engine, zero_stage, offload, quantization, recompute, flash_attention, micro_batch_size, grad_accum, seq_len, lora_rank, lora_targets, nodes, network. Serving: batch_size, prompt_len, kv_len, output_len, weight_bits, kv_bits, weight_format, tensor_parallel, replicas, engine.

    Every field with its default, and the prediction's fields: `advisor contract`, or knowledge/CONTRACT.md in the repository (the installed copy: `advisor contract --path`).

    Every case gets one output line, in order, as soon as it is computed: a prediction, or an error line when the case cannot be handled (then the exit code is 1). A malformed file exits 2.
    """
    from advisor.cases import ImpossibleProfile, MalformedFile, UnknownProfile, check_plausible, load_profile_checked, read_case_text, read_cases
    from advisor.predictor import Predictor
    from knowledge.schema import ErrorLine

    try:
        rows = read_cases(read_case_text(cases))
    except MalformedFile as e:
        fail(f"{cases}: {e}", code=2)
    if not rows:  # nothing to answer: no output line is right by the contract, but say why the output is empty
        warn(f"{cases}: no cases (every line is blank); nothing to predict")
    repeated = _repeated_ids(rows)
    if repeated:  # still answered in order, but a reader joining outputs to cases by id would mix them up
        warn(f"ids used by more than one case: {repeated}")
    prof, profile_error = None, None
    if profile is not None:
        try:
            prof = load_profile_checked(profile)
        except ImpossibleProfile as e:  # the contract: an impossible profile is an error line per case
            profile_error = str(e)
        except UnknownProfile as e:  # a name that is no profile's: exit 1 naming the closest, like an unknown model
            fail(str(e))
        except AdvisorError as e:  # a file missing, unreadable, not a profile: the run cannot start
            fail(str(e), code=2)
    predictor = Predictor(prof)

    def one(n: int, raw: dict | None, case, err: str | None):
        """The case's prediction, or its error line, which names the line as every one of them does."""
        r = _one(n, raw, case, err)
        if isinstance(r, ErrorLine) and not r.error.startswith(f"line {n}: "):
            r = ErrorLine(id=r.id, error=f"line {n}: {r.error}")
        return r

    def _one(n: int, raw: dict | None, case, err: str | None):
        rid = raw.get("id") if raw and isinstance(raw.get("id"), str) else None
        if case is None:
            return ErrorLine(id=rid, error=err)
        if profile_error:
            return ErrorLine(id=case.id, error=profile_error)
        try:
            check_plausible(case, prof)
            return predictor.predict_or_error(case)
        except AdvisorError as e:
            return ErrorLine(id=case.id, error=one_line(str(e)))
        except (ArithmeticError, RecursionError, MemoryError) as e:  # sizes so extreme the arithmetic breaks
            return ErrorLine(id=case.id, error=f"case too large to compute ({type(e).__name__})")
        except Exception as e:  # noqa: BLE001 - one case must never take the others down
            return ErrorLine(id=case.id, error=one_line(f"internal error on this case ({type(e).__name__}: {e})"[:300]))

    failed = False
    results = []
    for row in rows:
        r = one(*row)
        failed = failed or isinstance(r, ErrorLine)
        if as_json:
            print_json_line(r)  # streamed: a crash later on cannot take back the lines already written
        else:
            results.append(r)
    if not as_json:
        from rich.markup import escape

        from advisor.tables import predictions_table

        def printable(r):  # ids and messages hold user text: never Rich markup, never a lone surrogate
            update = {"id": escape(one_line(r.id or ""))}
            if isinstance(r, ErrorLine):
                update["error"] = escape(one_line(r.error))
            return r.model_copy(update=update)

        predictions_table([printable(r) for r in results])
    if failed:
        raise typer.Exit(1)


def contract(path: bool = typer.Option(False, "--path", help="Print where the contract file is, not its text.")) -> None:
    """Print the prediction contract: every case field with its default, every prediction field."""
    from knowledge.paths import CONTRACT

    if path:
        print(CONTRACT)
        return
    print(CONTRACT.read_text(encoding="utf-8"), end="")


def register(app: typer.Typer) -> None:
    app.command("predict")(predict)
    app.command("contract")(contract)


def _repeated_ids(rows: list) -> str:
    """``'a' (lines 1, 3)`` for each id more than one case carries (at most three named), else ''."""
    lines: dict[str, list[int]] = {}
    for n, raw, _, _ in rows:
        if raw and isinstance(raw.get("id"), str):
            lines.setdefault(raw["id"], []).append(n)
    dup = [f"{i!r} (lines {', '.join(map(str, ns))})" for i, ns in lines.items() if len(ns) > 1]
    return "; ".join(dup[:3]) + (f"; {len(dup) - 3} more" if len(dup) > 3 else "")
