"""Reading case files (JSON lines) into contract cases, with the contract's two kinds of failure.

A *malformed* file (a line that is not a JSON object, a field of the wrong type) is rejected whole:
``MalformedFile`` names the line and the field. A well-formed case the advisor cannot handle (an
unknown value, an impossible combination) becomes a per-case error and the other cases still run.
"""

from __future__ import annotations

import difflib
import json
import re
from pathlib import Path
from typing import Any

from pydantic import TypeAdapter, ValidationError

from knowledge.errors import AdvisorError
from knowledge.schema import SCHEMA_VERSION, Case, ModelArch, PlatformSpec, Profile, ServeCase, TrainCase
from knowledge.store import InputFileError, read_bounded_text

MAX_CASE_FILE_BYTES = 16 << 20  # about 80,000 cases
MAX_LINE_CHARS = 256 << 10  # a case, inline architecture included, is under 2 kB: bounds the memory a line can take
MAX_PROFILE_BYTES = 16 << 20  # a full profile is about 50 kB
PROFILE_PEAK_FACTOR = 2.0  # a probe can beat a conservative datasheet figure, not double it
PROFILE_DIR = Path(__file__).resolve().parents[1] / "knowledge" / "measurements" / "profiles"

_ADAPTER: TypeAdapter = TypeAdapter(Case)


class MalformedFile(ValueError):
    """The file is not JSON lines of case objects; the message names line and field."""


_TAGS = ("pretrain", "finetune", "serve", "TrainCase", "ServeCase")
# what a field of two JSON types takes, in words: pydantic names the union member it tried (``list[constrained-str]``)
_TAKES = {"lora_targets": 'a list of module names (["q_proj", "v_proj"], …) or "all-linear"'}


def _field(err: dict[str, Any]) -> str:
    """The field a pydantic error is about, as the case names it: without the task's tag and without the union member
    pydantic tried (``list[constrained-str]``, ``literal['all-linear']``, ``str``), which no user wrote."""
    loc = [str(x) for x in err["loc"] if x not in _TAGS and not _union_member(x)]
    return ".".join(loc) or "case"


def _union_member(part: Any) -> bool:
    return isinstance(part, str) and ("[" in part or part in ("str", "int", "float", "bool", "none", "constrained-str"))


def _task_of(err: dict[str, Any]) -> str | None:
    tag = err["loc"][0] if err["loc"] else None
    return tag if tag in ("pretrain", "finetune", "serve") else None


# a field of one kind of case and what the other kind calls the same thing (a serving case's prompt is a training
# case's sequence): named first, as spelling alone told prompt_len "recompute"
COUNTERPARTS = {"prompt_len": "seq_len", "kv_len": "seq_len", "batch_size": "micro_batch_size",
                "seq_len": "prompt_len", "micro_batch_size": "batch_size"}


def _unknown_field(field: str, task: str | None) -> str:
    """An unknown field, or one of the other kind of case: a training field on a serving case is not unknown, it does
    not apply there (and ``micro_batch_size`` is not the closest name to itself)."""
    own, other, kind = (ServeCase, TrainCase, "training") if task == "serve" else (TrainCase, ServeCase, "serving")
    names = difflib.get_close_matches(field, [f for f in own.model_fields if f != "task"], n=3, cutoff=0.5)
    if COUNTERPARTS.get(field) in own.model_fields:
        names = [COUNTERPARTS[field], *(n for n in names if n != COUNTERPARTS[field])][:3]
    close = ", ".join(names)
    if task and field in other.model_fields:
        mine = "serving" if kind == "training" else "training"
        hint = f"; {mine} fields close to it: {close}" if close else ""
        return f"field {field!r} is a {kind} field: it does not apply to task {task!r}{hint}"
    return f"unknown field {field!r}" + (f"; closest: {close}" if close else "")


def validation_message(e: ValidationError) -> str:
    """One line for the first error: the field, what was wrong, the closest valid names."""
    err = e.errors()[0]
    field = _field(err)
    if err["type"] == "extra_forbidden":
        return _unknown_field(field, _task_of(err))
    if err["type"] == "union_tag_invalid":
        tag = err.get("ctx", {}).get("tag", err["input"])
        return f"task: {_short(tag)} is not one of 'pretrain', 'finetune', 'serve'"
    if err["type"] == "union_tag_not_found":
        return "task: missing (one of 'pretrain', 'finetune', 'serve')"
    if err["type"] == "missing":
        return f"{field}: missing (a required field)"
    msg = err["msg"].replace("\n", " ").removeprefix("Value error, ")
    if isinstance(err.get("input"), dict):  # a rule over several fields: the message names them, the whole case is noise
        return msg
    return f"{field}: {msg} (got {_short(err.get('input'))})"


def _short(value: Any, limit: int = 80) -> str:
    """``repr`` of a value for a one-line message: cut to ``limit`` characters, ASCII-safe (lone surrogates)."""
    text = repr(value)
    if len(text) > limit:
        text = text[:limit] + "…"
    return text if text.isprintable() else ascii(text)


# choice fields whose choices are integers: pydantic's Literal takes True for 1 and 1.0 for 1, even strict
_INT_CHOICES = ("zero_stage", "weight_bits", "kv_bits")


def parse_case(obj: dict[str, Any]) -> TrainCase | ServeCase:
    """Validate one case object; raises AdvisorError (per-case) or MalformedFile (wrong types).

    Validation is strict, as JSON types are: ``"4"``, ``4.0``, ``4.5``, ``true``, NaN and Infinity are
    not integers, ``1`` and ``"true"`` are not booleans.
    """
    if "task" in obj and not isinstance(obj["task"], str):
        raise MalformedFile(f"field 'task': must be a string ('pretrain', 'finetune' or 'serve'), got {_short(obj['task'])}")
    for key in _INT_CHOICES:
        v = obj.get(key)
        if v is not None and (isinstance(v, bool) or not isinstance(v, int)):
            raise MalformedFile(f"field {key!r}: must be an integer, got {_short(v)}")
    try:
        return _ADAPTER.validate_python(obj, strict=True)
    except ValidationError as e:
        err = e.errors()[0]
        from knowledge.catalog import is_malformed

        if is_malformed(err):  # "the file is malformed" rather than "this value is not supported"
            field = _field(err)
            if field in _TAKES:
                raise MalformedFile(f"field {field!r}: must be {_TAKES[field]} (got {_short(err.get('input'))})") from None
            raise MalformedFile(f"field {field!r}: {err['msg']} (got {_short(err.get('input'))})") from None
        raise AdvisorError(validation_message(e)) from None


def read_cases(text: str) -> list[tuple[int, dict[str, Any] | None, TrainCase | ServeCase | None, str | None]]:
    """Parse every line: (line number, raw object, case or None, per-case error or None).

    Raises MalformedFile naming the malformed lines (the first three, and how many there are), so a file is mended in
    one pass rather than a line a run.
    """
    out = []
    malformed: list[str] = []
    if text.startswith("\ufeff"):  # a byte-order mark some editors write
        text = text[1:]
    # CR, LF or CRLF only: str.splitlines() would also split at U+2028, U+2029 and U+0085, which JSON
    # strings may hold raw, and so tear one case into two malformed lines
    for n, line in enumerate(re.split(r"\r\n|\r|\n", text), start=1):
        if not line.strip():
            continue
        try:
            out.append(_read_line(n, line))
        except MalformedFile as e:
            malformed.append(str(e))
    if malformed:
        more = f" ({len(malformed)} malformed lines)" if len(malformed) > 1 else ""
        raise MalformedFile("; ".join(malformed[:3]) + more)
    return out


def _read_line(n: int, line: str) -> tuple[int, dict[str, Any], TrainCase | ServeCase | None, str | None]:
    """One non-blank line: its case, or its per-case error; raises MalformedFile (prefixed ``line n:``)."""
    if len(line) > MAX_LINE_CHARS:
        raise MalformedFile(f"line {n}: {len(line):,} characters, more than a case can hold ({MAX_LINE_CHARS:,})")
    try:
        obj = json.loads(line)
    except json.JSONDecodeError as e:
        raise MalformedFile(f"line {n}: not JSON ({e.msg} at column {e.colno})") from None
    except (RecursionError, ValueError) as e:  # nesting too deep, an integer of thousands of digits
        raise MalformedFile(f"line {n}: not a usable JSON object ({type(e).__name__})") from None
    if not isinstance(obj, dict):
        raise MalformedFile(f"line {n}: expected a JSON object, got {type(obj).__name__}")
    if "id" in obj and not isinstance(obj["id"], str):
        raise MalformedFile(f"line {n}: field 'id' must be a string, got {_short(obj['id'])}")
    try:
        return n, obj, parse_case(obj), None
    except MalformedFile as e:
        raise MalformedFile(f"line {n}: {e}") from None
    except AdvisorError as e:
        return n, obj, None, str(e)


def case_from_arg(text: str) -> TrainCase | ServeCase:
    """One case given on the command line: inline JSON (starts with ``{``) or a path to a JSON file.

    Raises MalformedFile (unreadable, not JSON, wrong types) or AdvisorError (unsupported values).
    """
    try:
        obj = json.loads(text if text.strip().startswith("{") else read_bounded_text(text, MAX_CASE_FILE_BYTES, "case file"))
    except InputFileError as e:
        raise MalformedFile(str(e)) from None
    except (OSError, ValueError, RecursionError) as e:
        raise MalformedFile(f"neither inline JSON nor a readable JSON file ({type(e).__name__}: {str(e).splitlines()[0][:120]})") from None
    if not isinstance(obj, dict):
        raise MalformedFile(f"expected a JSON object, got {type(obj).__name__}")
    # one case on the command line needs no id to tell it from others (a file of cases does): "cli" where none is given
    return parse_case({"id": "cli", **obj})


def read_case_text(path: str | Path) -> str:
    """The text of a case file (``-`` = stdin), bounded: a FIFO, a directory, a device, a huge file,
    bytes that are not UTF-8 raise MalformedFile at once instead of hanging or filling memory."""
    import sys

    if str(path) == "-":
        data = sys.stdin.buffer.read(MAX_CASE_FILE_BYTES + 1) if hasattr(sys.stdin, "buffer") else sys.stdin.read().encode()
        if len(data) > MAX_CASE_FILE_BYTES:
            raise MalformedFile(f"stdin holds more than {MAX_CASE_FILE_BYTES:,} bytes of cases")
        try:
            return data.decode("utf-8")
        except UnicodeDecodeError as e:
            raise MalformedFile(f"stdin is not UTF-8 text (byte {e.start})") from None
    try:
        return read_bounded_text(path, MAX_CASE_FILE_BYTES, "cases file")
    except InputFileError as e:
        raise MalformedFile(str(e)) from None


# --------------------------------------------------------------------------------------------------
# profiles and plausibility: values of the right type that still make no sense


class ImpossibleProfile(AdvisorError):
    """A readable profile that cannot describe a GPU: its cases get error lines (the contract)."""


class UnknownProfile(AdvisorError):
    """``--profile NAME`` where NAME is no profile's name (user's or bundled); the message names the closest."""


def load_profile_checked(name: str | Path) -> Profile:
    """A profile from a path, or the name of a shipped one (``h100x1``, ``h200x1``, ``h200x2``).

    Bounded and non-blocking like every input file. A file that is missing, unreadable or not a profile
    raises AdvisorError; impossible ceilings (zero, negative, NaN) and a profile of no catalog GPU (a CPU
    profile) raise ImpossibleProfile. Both name the file and the field in one line.
    """
    from pydantic import ValidationError

    from knowledge.catalog import match_gpu

    path = Path(name)
    if not path.exists() and str(name) and "/" not in str(name):
        shipped = [PROFILE_DIR / f"{name}-full.json", PROFILE_DIR / f"{name}-quick.json", PROFILE_DIR / f"{name}.json"]
        path = next((p for p in shipped if p.is_file()), path)
        if not path.exists():  # a name among the user's own profiles (ADVISOR_HOME/profiles)
            from knowledge.paths import find_profile

            try:
                path = find_profile(name)
            except AdvisorError as e:  # a bare name matching no profile: an unknown name, like an unknown model
                if not str(name).endswith(".json"):
                    raise UnknownProfile(str(e)) from None
    try:
        text = read_bounded_text(path, MAX_PROFILE_BYTES, "profile")
        profile = Profile.model_validate_json(text)
    except InputFileError as e:
        known = sorted({p.name.split("-")[0] for p in PROFILE_DIR.glob("*.json")})
        hint = f"; shipped profiles: {', '.join(known)}" if "No such file" in str(e) else ""
        raise AdvisorError(f"{e}{hint}") from None
    except ValidationError as e:
        err = e.errors()[0]
        where = ".".join(map(str, err["loc"])) or "file"
        msg = err["msg"].replace("\n", " ").removeprefix("Value error, ")
        if err["type"] == "value_error":  # well-formed, but a ceiling is zero, negative or NaN
            raise ImpossibleProfile(f"profile {_short(str(path))} holds an impossible value ({where}: {msg})") from None
        raise AdvisorError(f"profile {_short(str(path))} is not a valid profile ({where}: {msg})") from None
    except (RecursionError, ValueError) as e:
        raise AdvisorError(f"profile {_short(str(path))} is not a valid profile ({type(e).__name__})") from None
    if profile.schema_version != SCHEMA_VERSION:  # a profile of another version means other fields: never guess
        raise AdvisorError(f"profile {_short(str(path))} has schema_version {profile.schema_version}; this advisor "
                           f"reads version {SCHEMA_VERSION}: run `advisor probe` again with this version")
    matched = match_gpu(profile.gpu_name)
    if profile.gpu_id is None and matched is None:
        raise ImpossibleProfile(f"profile {_short(str(path))} was measured on {_short(profile.gpu_name)}, which is no catalog GPU "
                                "(a CPU profile?); probe on the GPU you predict for")
    from knowledge.catalog import gpus

    gpu = gpus().get(profile.gpu_id or "") or matched
    if gpu is not None:  # a measurement far above the datasheet peak is a broken probe, not a fast GPU
        limits = {"matmul_tflops": (profile.matmul_tflops, gpu.matmul_tflops),
                  "memory_bandwidth_gbs": (profile.memory_bandwidth_gbs, gpu.memory_bandwidth_gbs)}
        for name, (measured, peak) in limits.items():
            if measured > PROFILE_PEAK_FACTOR * peak:
                raise ImpossibleProfile(f"profile {_short(str(path))}: {name}={measured:g} is above {PROFILE_PEAK_FACTOR:g}x the "
                                        f"{gpu.id} datasheet peak {peak:g}")
    if profile.launch_overhead_s > 1.0:
        raise ImpossibleProfile(f"profile {_short(str(path))}: launch_overhead_s={profile.launch_overhead_s:g} is over a second")
    if profile.gpu_id is None and matched is not None:  # so a case on another GPU is refused, not calibrated
        profile = profile.model_copy(update={"gpu_id": matched.id})
    return profile


def profile_gpu(profile: Profile) -> str:
    """The catalog GPU id a profile was measured on."""
    from knowledge.catalog import match_gpu

    if profile.gpu_id:
        return profile.gpu_id
    matched = match_gpu(profile.gpu_name)
    return matched.id if matched else profile.gpu_name


def check_profile_matches(profile: Profile | None, platform: PlatformSpec) -> None:
    """A profile measured on another GPU kind says nothing about this one: an error, not a silent fallback."""
    if profile is None:
        return
    gpu = profile_gpu(profile)
    if gpu != platform.gpu.id:
        raise AdvisorError(f"profile measured on {gpu} ({_short(profile.gpu_name)}) does not match {platform.id!r} "
                           f"({platform.gpu.id}); probe on {platform.gpu.id} or drop --profile")


def context_length(arch: ModelArch) -> int | None:
    """The model's context window, when its architecture states one (an inline one may not)."""
    return arch.max_position_embeddings if "max_position_embeddings" in arch.model_fields_set else None


def check_plausible(case: TrainCase | ServeCase, profile: Profile | None = None) -> None:
    """Reject a well-typed case that still makes no sense, before anything is predicted for it.

    Sequence lengths beyond the model's context, more GPUs than the platform has, a profile of
    another GPU. Raises AdvisorError with one line naming the value.
    """
    from knowledge.catalog import resolve_model, resolve_platform

    platform = resolve_platform(case.hardware, getattr(case, "gpus", None), nodes=case.nodes)
    arch = resolve_model(case.model)
    check_profile_matches(profile, platform)
    ctx = context_length(arch)
    if isinstance(case, TrainCase):
        if ctx is not None and case.seq_len > ctx:
            raise AdvisorError(f"seq_len={case.seq_len} exceeds the {ctx}-token context of {arch.name}")
        if case.method != "full" and case.lora_rank > arch.hidden_size:
            raise AdvisorError(f"lora_rank={case.lora_rank} exceeds the hidden size {arch.hidden_size} of {arch.name}: "
                               "an adapter of that rank is a full-rank update")
        return
    if case.tensor_parallel > platform.count:
        raise AdvisorError(f"tensor_parallel={case.tensor_parallel} exceeds the {platform.count} GPUs of {platform.id!r}")
    if ctx is not None:
        if case.kv_len_effective > ctx:  # named as the case gave it: kv_len defaults to prompt_len
            given = f"kv_len={case.kv_len}" if case.kv_len is not None else f"prompt_len={case.prompt_len} (the KV length)"
            raise AdvisorError(f"{given} exceeds the {ctx}-token context of {arch.name}")
        if case.prompt_len + (case.output_len or 0) > ctx:
            raise AdvisorError(f"prompt_len={case.prompt_len} + output_len={case.output_len or 0} exceeds the "
                               f"{ctx}-token context of {arch.name}")
