"""Durable files: atomic whole-file writes, lock-protected appends of JSON lines, bounded reads.

Every file the advisor writes goes through here, so a crash, a ``kill -9`` or a second process never
leaves half a file or loses a line that was there:

- ``atomic_write_bytes`` writes an unnamed file (Linux ``O_TMPFILE``) in the target's folder, names it
  once it is whole and synced, and renames it over the target: a writer killed while writing leaves
  nothing. Elsewhere a named temporary file is used; its name carries the writer's pid, and the next
  write to the same target removes any a killed writer left.
- ``append_jsonl`` appends under an exclusive ``flock``. A writer killed mid-append can leave a torn
  last line (no trailing newline); the next append, under the same lock, cuts it off before writing,
  so the torn fragment never glues itself to the next row. Readers take the shared lock and skip a
  torn last line, reporting it.
- ``read_bounded`` reads a user-given input file: regular files only (a FIFO, a directory, ``/dev/zero``
  are refused at once, without blocking), at most ``limit`` bytes.
"""

from __future__ import annotations

import errno
import fcntl
import json
import os
import stat
import tempfile
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from pydantic import BaseModel

MAX_INPUT_BYTES = 64 << 20  # default limit of read_bounded


class InputFileError(ValueError):
    """A user-given file that cannot be read as input; ``str(e)`` is one line naming the file."""


def read_bounded(path: str | Path, limit: int = MAX_INPUT_BYTES, what: str = "file") -> bytes:
    """The bytes of a regular file of at most ``limit`` bytes; InputFileError otherwise, never blocking."""
    name = str(path)
    try:
        fd = os.open(name, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    except (OSError, ValueError) as e:  # ValueError: a NUL byte in the name
        reason = e.strerror if isinstance(e, OSError) and e.strerror else str(e)
        raise InputFileError(f"cannot read {what} {_printable(name)}: {reason}") from None
    try:
        st = os.fstat(fd)
        if stat.S_ISDIR(st.st_mode):
            raise InputFileError(f"{what} {_printable(name)} is a directory, not a file")
        if not stat.S_ISREG(st.st_mode):
            raise InputFileError(f"{what} {_printable(name)} is not a regular file (a FIFO, device or socket)")
        if st.st_size > limit:
            raise InputFileError(f"{what} {_printable(name)} is too large ({st.st_size:,} bytes, limit {limit:,})")
        chunks, total = [], 0
        while True:  # a file that grows while read is still cut at the limit
            chunk = os.read(fd, min(1 << 20, limit + 1 - total))
            if not chunk:
                break
            chunks.append(chunk)
            total += len(chunk)
            if total > limit:
                raise InputFileError(f"{what} {_printable(name)} is too large (more than {limit:,} bytes)")
        return b"".join(chunks)
    except OSError as e:
        raise InputFileError(f"cannot read {what} {_printable(name)}: {e.strerror or e}") from None
    finally:
        os.close(fd)


def read_bounded_text(path: str | Path, limit: int = MAX_INPUT_BYTES, what: str = "file") -> str:
    data = read_bounded(path, limit, what)
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as e:
        raise InputFileError(f"{what} {_printable(str(path))} is not UTF-8 text (byte {e.start})") from None


def _printable(text: str) -> str:
    """``repr`` of a name that may hold lone surrogates or control characters, safe on any terminal."""
    return ascii(text) if not text.isprintable() or not text.isascii() else repr(text)


# --------------------------------------------------------------------------------------------------
# whole-file writes


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:  # EPERM: alive, someone else's
        return True
    return True


def remove_orphans(path: str | Path) -> int:
    """Remove temporary files of ``path`` left by writers that died before their rename; returns how many."""
    path = Path(path)
    removed = 0
    try:
        entries = list(path.parent.glob(f".{path.name}.*.tmp"))
    except OSError:
        return 0
    for tmp in entries:
        parts = tmp.name[len(path.name) + 2:].split(".")
        if len(parts) < 3 or not parts[0].isdigit():
            continue
        pid = int(parts[0])
        if pid != os.getpid() and not _pid_alive(pid):
            try:
                tmp.unlink()
                removed += 1
            except OSError:
                pass
    return removed


def atomic_write_bytes(path: str | Path, data: bytes, mode: int = 0o644) -> None:
    """Write ``data`` to ``path`` through a temporary file in the same folder and a rename, with permissions ``mode``
    (0o755 for a script the user runs).

    Raises OSError (unwritable folder, ``path`` a directory, disk full); the old file is then intact.
    """
    path = Path(path)
    if path.is_dir():
        raise IsADirectoryError(errno.EISDIR, "is a directory", str(path))
    if path.exists() and not path.is_file():  # the rename would replace /dev/null or a FIFO with a file
        raise OSError(errno.EINVAL, "not a regular file", str(path))
    path.parent.mkdir(parents=True, exist_ok=True)
    remove_orphans(path)
    if _write_unnamed(path, data, mode):
        return
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.{os.getpid()}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fchmod(f.fileno(), mode)
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def _write_unnamed(path: Path, data: bytes, mode: int) -> bool:
    """Linux: write into an unnamed file (O_TMPFILE), give it a name only once it is whole and synced,
    and rename that over ``path``. A writer killed while writing leaves nothing behind; only the
    microseconds between the link and the rename leave a name, which the next write removes.
    False where the filesystem has no O_TMPFILE (then a named temporary file is used)."""
    flag = getattr(os, "O_TMPFILE", 0)
    if not flag or not os.path.isdir("/proc/self/fd"):
        return False
    try:
        fd = os.open(path.parent, flag | os.O_WRONLY | getattr(os, "O_CLOEXEC", 0), 0o644)
    except OSError:
        return False
    tmp = None
    try:
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view):]
        os.fsync(fd)
        os.fchmod(fd, mode)
        tmp = path.parent / f".{path.name}.{os.getpid()}.{os.urandom(4).hex()}.tmp"
        if not _linkat_follow(f"/proc/self/fd/{fd}", str(tmp)):
            tmp = None
            return False
        os.replace(tmp, path)
        tmp = None
        return True
    finally:
        os.close(fd)
        if tmp is not None:
            Path(tmp).unlink(missing_ok=True)


def _linkat_follow(src: str, dst: str) -> bool:
    """linkat(2) with AT_SYMLINK_FOLLOW (os.link does not follow /proc/self/fd links everywhere)."""
    import ctypes

    try:
        libc = ctypes.CDLL(None, use_errno=True)
        at_fdcwd, at_symlink_follow = -100, 0x400
        return libc.linkat(at_fdcwd, src.encode(), at_fdcwd, os.fsencode(dst), at_symlink_follow) == 0
    except (OSError, AttributeError):
        return False


def atomic_write_text(path: str | Path, text: str, mode: int = 0o644) -> None:
    atomic_write_bytes(path, text.encode(), mode)


def atomic_write_json(path: str | Path, obj: Any, indent: int | None = 2) -> None:
    """``obj`` as JSON at ``path``, atomically; ``indent=None`` writes it compact (the bundled traces)."""
    if isinstance(obj, BaseModel):
        text = obj.model_dump_json(indent=indent)
    else:
        text = json.dumps(obj, indent=indent, sort_keys=True, separators=None if indent else (",", ":"))
    atomic_write_text(path, text + "\n")


# --------------------------------------------------------------------------------------------------
# append-only JSON lines


def _cut_torn_tail(fd: int) -> int:
    """Under the exclusive lock: truncate a last line that lacks its newline (a killed writer's). Bytes cut."""
    size = os.fstat(fd).st_size
    if size == 0 or os.pread(fd, 1, size - 1) == b"\n":
        return 0
    end = size
    while end > 0:  # scan back for the last newline, 64 KiB at a time
        start = max(0, end - (1 << 16))
        block = os.pread(fd, end - start, start)
        i = block.rfind(b"\n")
        if i >= 0:
            keep = start + i + 1
            break
        end = start
    else:
        keep = 0
    os.ftruncate(fd, keep)
    return size - keep


def append_jsonl(path: str | Path, rows: Iterable[BaseModel | dict]) -> int:
    """Append rows under an exclusive lock; returns the number of rows written.

    A torn last line left by a writer killed mid-append is cut off first (it was never acknowledged:
    ``append_jsonl`` returns only after the fsync), so it cannot corrupt the rows written now.
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    lines = "".join(
        (r.model_dump_json() if isinstance(r, BaseModel) else json.dumps(r, sort_keys=True)) + "\n" for r in rows
    ).encode("utf-8")
    fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_APPEND | getattr(os, "O_CLOEXEC", 0), 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        try:
            _cut_torn_tail(fd)
            view = memoryview(lines)
            while view:
                n = os.write(fd, view)
                view = view[n:]
            os.fsync(fd)
        finally:
            fcntl.flock(fd, fcntl.LOCK_UN)
    finally:
        os.close(fd)
    return lines.count(b"\n")


def read_jsonl(path: str | Path) -> Iterator[tuple[int, dict | None, str | None]]:
    """Yield (line number, object or None, error or None); a corrupt or torn line is reported, not fatal.

    The file is read whole under a shared lock, so a row being appended is either seen whole or not at all.
    """
    with open(path, "rb") as f:
        fcntl.flock(f.fileno(), fcntl.LOCK_SH)
        try:
            data = f.read()
        finally:
            fcntl.flock(f.fileno(), fcntl.LOCK_UN)
    lines = data.split(b"\n")
    torn = lines[-1] != b""  # the last line lacks its newline: a writer was killed mid-append
    for n, raw in enumerate(lines, start=1):
        if not raw.strip():
            continue
        try:
            obj = json.loads(raw.decode("utf-8"))
        except (UnicodeDecodeError, ValueError, RecursionError) as e:
            what = "torn last line (a writer was killed mid-append)" if torn and n == len(lines) else "not JSON"
            yield n, None, f"{path}:{n}: {what} ({getattr(e, 'msg', type(e).__name__)})"
            continue
        if not isinstance(obj, dict):
            yield n, None, f"{path}:{n}: not a JSON object"
            continue
        yield n, obj, None
