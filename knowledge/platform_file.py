"""The user's own server as a platform file (``--hardware box.json``) or an inline platform object.

Format (CONTRACT.md)::

    {"gpu": "<catalog id or a full GPU spec>", "count": 2, "interconnect": "pcie",
     "host_ram_gib": 64, "cpu_cores": 16}

Optional keys: ``swap_gib`` (the host's swap: pageable offloaded states may spill into it), ``id`` (a name for
the server; default: the file's stem), ``notes``, and ``platform``: a catalog platform (or another platform file)
to start from, so ``{"platform": "rtx4090x8", "host_ram_gib": 64}`` is that server with 64 GiB of host RAM (what ``--host-ram-gib`` writes). A GPU
spec object may start from a catalog GPU with ``"like": "rtx4090"`` and override some numbers; numbers
without a source are sourced to the file.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from knowledge.catalog import MalformedInput, is_malformed
from knowledge.errors import AdvisorError
from knowledge.schema import GPUSpec, PlatformSpec

MAX_PLATFORM_BYTES = 1 << 20  # a platform file is a few hundred bytes
MAX_PLATFORM_DEPTH = 8  # "platform": another platform file, which may name another…
_depth = 0


def _printable(text: str) -> str:
    return repr(text) if text.isprintable() and text.isascii() else ascii(text)


INTERCONNECTS = ("nvlink", "nvswitch", "nvlink-pairs", "pcie", "pcie-no-p2p", "single")
# what a key of the wrong JSON type should have been, for its one-line error
_EXPECTED = {
    "count": "an integer (GPUs in the server, 1-1024)", "cpu_cores": "an integer", "host_ram_gib": "a finite number (GiB)",
    "swap_gib": "a finite number (GiB)", "gpu": "a catalog GPU id or a GPU spec object",
    "interconnect": f"one of {', '.join(INTERCONNECTS)}", "id": "a string",
    "platform": "a string (a catalog platform id or another platform file)", "notes": "a string",
}


class PlatformFile(BaseModel):
    # strict, as JSON types are: "2", 2.5 and true are not a GPU count, "64" is not GiB (lax pydantic took true for 1)
    model_config = ConfigDict(extra="forbid", strict=True)
    id: str | None = None
    platform: str | None = None
    gpu: str | dict[str, Any] | None = None
    count: int | None = Field(default=None, ge=1, le=1024)
    interconnect: Literal["nvlink", "nvswitch", "nvlink-pairs", "pcie", "pcie-no-p2p", "single"] | None = None
    host_ram_gib: float | None = Field(default=None, gt=0, le=1 << 20, allow_inf_nan=False)
    cpu_cores: int | None = Field(default=None, ge=1, le=1 << 16)
    swap_gib: float | None = Field(default=None, ge=0, le=1 << 20, allow_inf_nan=False)
    notes: str = ""


def _read(spec: str) -> tuple[dict[str, Any], str, str | None]:
    """(object, where it came from, default id)."""
    from knowledge.store import InputFileError, read_bounded_text

    text = spec.strip()
    if text.startswith("{"):
        where, default_id = "inline platform", None
        if len(text) > MAX_PLATFORM_BYTES:
            raise AdvisorError(f"inline platform is {len(text)} characters; at most {MAX_PLATFORM_BYTES}")
    else:
        shown = _printable(text[:200])
        path = Path(text).expanduser()
        where, default_id = f"platform file {shown}", path.stem
        if not path.exists():
            raise AdvisorError(f"platform file {shown} not found (a platform id looks like rtx4090x8, h100x1)")
        try:  # bounded and non-blocking: a FIFO or /dev/zero is refused, not read forever
            text = read_bounded_text(path, MAX_PLATFORM_BYTES, "platform file")
        except InputFileError as e:
            raise AdvisorError(str(e).splitlines()[0] if str(e) else f"platform file {shown} cannot be read") from None
    try:
        obj = json.loads(text)
    except (json.JSONDecodeError, RecursionError) as e:
        raise MalformedInput(f"{where} is not valid JSON: {str(e).splitlines()[0]}") from None
    if not isinstance(obj, dict):
        raise MalformedInput(f"{where} must be a JSON object, got {type(obj).__name__}")
    return obj, where, default_id


def _gpu(value: str | dict[str, Any], where: str) -> GPUSpec:
    from knowledge.catalog import gpus, resolve_gpu

    if isinstance(value, str):
        return resolve_gpu(value)
    fields = dict(value)
    like = fields.pop("like", None)
    if like is not None and not isinstance(like, str):
        raise MalformedInput(f"{where}: gpu.like must be a catalog GPU id (a string such as \"rtx4090\"), "
                             f"got {json.dumps(like, ensure_ascii=True)[:60]}")
    base: dict[str, Any] = resolve_gpu(like).model_dump() if like else {}
    if like:
        base["aliases"] = []
    merged = {**base, **fields}
    merged.setdefault("id", "custom")
    if "name" not in fields:
        merged["name"] = f"{base['name']} ({merged['id']})" if base and "id" in fields else merged.get("name", merged["id"])
    given = dict(fields.get("sources", {}))
    sources = {**base.get("sources", {}), **given}
    for k, v in fields.items():  # a number the file gives is sourced to the file unless it says otherwise
        if isinstance(v, (int, float)) and not isinstance(v, bool) and k not in given:
            sources[k] = where
    merged["sources"] = sources
    try:
        gpu = GPUSpec.model_validate(merged, strict=True)  # "memory_gib": "48" is a malformed file, not 48 GiB
    except ValidationError as e:
        err = e.errors()[0]
        field = ".".join(map(str, err["loc"])) or "gpu"
        missing = [k for k, f in GPUSpec.model_fields.items() if f.is_required() and k not in merged]
        hint = f" (a GPU spec needs {', '.join(missing)}; or start from a catalog GPU with \"like\": \"{sorted({g.id for g in gpus().values()})[0]}\")" if missing else ""
        error = MalformedInput if is_malformed(err) else AdvisorError
        raise error(f"{where}: gpu.{field}: {_message(err)}{hint}") from None
    return gpu


def _message(err: dict[str, Any]) -> str:
    """pydantic's message for one error as one line, with the value it got (a whole-object check has no one value)."""
    msg = " ".join(err["msg"].removeprefix("Value error, ").split())
    got = repr(err.get("input"))[:60]
    return f"{msg} (got {got if got.isprintable() else ascii(got)})" if err["loc"] else msg


def platform_from_spec(spec: str) -> PlatformSpec:
    """A PlatformSpec from a platform file path or an inline platform object (a JSON string)."""
    from knowledge.catalog import _default_host, _interconnect, link_gbs, resolve_platform

    obj, where, default_id = _read(spec)
    try:
        pf = PlatformFile.model_validate(obj)
    except ValidationError as e:
        err = e.errors()[0]
        field = str(err["loc"][0]) if err["loc"] else "platform"  # "gpu", not pydantic's "gpu.str" of the union
        if err["type"] == "extra_forbidden":
            raise AdvisorError(f"{where}: unknown key {field!r}; valid: {', '.join(PlatformFile.model_fields)}") from None
        if is_malformed(err):
            raise MalformedInput(f"{where}: {field}: must be {_EXPECTED.get(field, 'of another JSON type')}, "
                                 f"got {json.dumps(err.get('input'), ensure_ascii=True)[:60]}") from None
        raise AdvisorError(f"{where}: {field}: {_message(err)}") from None
    if pf.id is not None and not (pf.id.strip() and pf.id.isascii() and pf.id.isprintable() and len(pf.id) <= 200):
        raise AdvisorError(f"{where}: id must be 1-200 printable ASCII characters, got {_printable(pf.id[:60])}")
    base = None
    if pf.platform:
        global _depth
        if _depth >= MAX_PLATFORM_DEPTH:
            raise AdvisorError(f"{where}: \"platform\" chains more than {MAX_PLATFORM_DEPTH} platform files (a loop?)")
        _depth += 1
        try:
            base = resolve_platform(pf.platform)
        finally:
            _depth -= 1
    if base is None and (pf.gpu is None or pf.count is None):
        raise AdvisorError(f"{where}: needs \"gpu\" and \"count\" (or \"platform\": a catalog id such as rtx4090x8)")
    gpu = _gpu(pf.gpu, where) if pf.gpu is not None else base.gpu  # type: ignore[union-attr]
    count = pf.count or base.count  # type: ignore[union-attr]
    same_box = base is not None and gpu == base.gpu and count == base.count
    if pf.interconnect is None:
        interconnect = base.interconnect if same_box else _interconnect(gpu, count, None, where)  # type: ignore[union-attr]
    elif count == 1:
        interconnect = "single"
    elif pf.interconnect in ("nvlink", "pcie"):
        interconnect = _interconnect(gpu, count, pf.interconnect, where)
    else:
        interconnect = pf.interconnect
    host = base.host if same_box else _default_host(gpu, count)  # type: ignore[union-attr]
    if pf.host_ram_gib is not None or pf.cpu_cores is not None:
        # the base server's wiring (sockets, root ports, DRAM) stays; a CPU Adam rate measured on other cores, and swap
        # stated for other RAM, do not
        update: dict = {"source": where if pf.platform is None else f"{where} over {base.id}"}  # type: ignore[union-attr]
        if pf.cpu_cores is not None:
            update.update(cpu_cores=pf.cpu_cores, cpu_adam_gparams_per_s=None, cpu_adam_threads=None)
        if pf.host_ram_gib is not None and pf.host_ram_gib != host.host_ram_gib:  # the same RAM restated keeps its swap
            update.update(host_ram_gib=pf.host_ram_gib, swap_gib=0.0, swap_source="")
        host = host.model_copy(update=update)
    if pf.swap_gib is not None:
        host = host.model_copy(update={"swap_gib": pf.swap_gib, "swap_source": where})
    pid = pf.id or (base.id if base is not None else None) or default_id or f"{gpu.id}x{count}"
    notes = pf.notes or (base.notes if same_box else "")  # type: ignore[union-attr]
    return PlatformSpec(id=pid, gpu=gpu, count=count, interconnect=interconnect, link_gbs=link_gbs(gpu, interconnect),
                        host=host, notes=notes)
