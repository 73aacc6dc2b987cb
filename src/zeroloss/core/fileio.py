"""Every file zeroloss writes goes through here: whole files written atomically (a crash leaves the old file or the
new one), journal lines appended and fsynced, a document's state patched in place when the disk is full, new files
of a rebuilt tree, process logs, and bounded reads. Nothing is written through a symlink someone planted, files are
0600 unless a caller says why not, and every failure is one ZeroLossError line naming the file.

A bottom-layer module: the standard library and zeroloss.core.errors only.
"""

from __future__ import annotations

import gzip
import io
import json
import os
import re
import stat
import tempfile
import time
import zlib
from pathlib import Path
from typing import Any, BinaryIO, NamedTuple

from zeroloss.core.errors import ZeroLossError

MAX_READ = 1 << 30  # a whole document read into memory (result files of 10,000 trials are ~100 MB)
GZIP_MAGIC = b"\x1f\x8b"
WRITE_REMEDY = "free space or choose a writable folder (-o)"


def now_iso() -> str:
    """The local time as documents store it (2026-11-25T14:03:12+0100)."""
    return time.strftime("%Y-%m-%dT%H:%M:%S%z")


def shown(path: object) -> str:
    """A file name as messages show it: on one line, whatever characters it has."""
    text = str(path)
    return text if text.isprintable() else repr(text)


def _write_error(path: Path, e: OSError) -> ZeroLossError:
    """A failed write as one line: what the system said, or the file in the way of a folder."""
    why = e.strerror or str(e)
    if isinstance(e, FileExistsError | NotADirectoryError):  # mkdir under a file: name that file
        above = next((d for d in path.parents if d.exists()), None)
        why = f"{above} is not a folder" if above and not above.is_dir() else why
    return ZeroLossError(f"cannot write {shown(path)}: {why}", WRITE_REMEDY)


def write_text_atomic(path: Path, text: str | bytes, mode: int = 0o600) -> None:
    """Writes text so that a crash leaves either the old file or the new one, and nobody can redirect it.

    The temporary file has an unpredictable name and is created exclusively (mkstemp: O_EXCL, never through a
    symlink) in the target's folder, then renamed over the target: a symlink planted at the final path is
    replaced, never followed (resuming through a symlink of the user's own writes its target: ResultFile.load).
    Mode 0600 by default: result files hold the kernel command line and the machine id. Any failure (full
    disk, read-only or missing folder) is one line, and no temporary file is left."""
    path = Path(path)
    tmp = None
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
        with os.fdopen(fd, "wb") as f:
            os.fchmod(f.fileno(), mode)
            f.write(text.encode() if isinstance(text, str) else text)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
        tmp = None
    except OSError as e:
        raise _write_error(path, e) from e
    finally:
        if tmp is not None:
            try:
                os.unlink(tmp)
            except OSError:
                pass


def remove_temps(path: Path) -> list[Path]:
    """Removes the temporary files write_text_atomic left beside path when its writer was killed mid-write: named as
    mkstemp names them (.NAME.XXXXXXXX.tmp), regular files owned by this user; nothing else. Only for a caller that
    holds path's writer lock (a live writer's temporary file looks the same). Returns what it removed."""
    path = Path(path)
    ours = re.compile(rf"\.{re.escape(path.name)}\.[a-z0-9_]{{8}}\.tmp")
    removed = []
    try:
        entries = list(os.scandir(path.parent))
    except OSError:
        return []
    for entry in entries:
        if not ours.fullmatch(entry.name):
            continue
        try:
            st = entry.stat(follow_symlinks=False)
            if stat.S_ISREG(st.st_mode) and st.st_uid == os.geteuid():
                os.unlink(entry.path)
                removed.append(Path(entry.path))
        except OSError:
            continue
    return removed


def write_json_atomic(path: Path, doc: Any, mode: int = 0o600) -> None:
    """Writes doc as indented JSON so that a crash leaves either the old file or the new one (write_text_atomic)."""
    write_text_atomic(path, json.dumps(doc, indent=1), mode)


def write_new(path: Path, data: bytes, mode: int = 0o600) -> None:
    """Creates a file that must not exist yet (O_EXCL: never through a symlink, never over another file), without
    fsync: for trees rebuilt from their source (a host's /sys and /proc read by the collector) and work files."""
    path = Path(path)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, mode)
        with os.fdopen(fd, "wb") as f:
            f.write(data)
    except OSError as e:
        raise _write_error(path, e) from e


def open_log(path: Path) -> BinaryIO:
    """A process's log file, opened for writing from its start (truncated), 0600, never through a symlink."""
    path = Path(path)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
    except OSError as e:
        raise _write_error(path, e) from e
    return os.fdopen(fd, "wb")


def open_lockfile(path: Path) -> int:
    """A lock file's descriptor, read-write, created 0600 if missing, never through a symlink (OSError as is: the
    caller names the lock)."""
    return os.open(path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)


def overwrite_fd(fd: int, data: bytes) -> None:
    """Replaces the content of an open file in place: a lock file, whose inode must stay (the flock is on it)."""
    os.ftruncate(fd, 0)
    if data:
        os.pwrite(fd, data, 0)


def patch_state_in_place(path: Path, old: str, new: str) -> bool:
    """Changes the document's top-level state from old to new without a new copy of the file: the last resort
    when the disk is full. Only to a state of old's length or shorter (padded with spaces, still JSON), and only
    in the file's first KiB, where the top-level `state` key is written (documents keep it before the bulk)."""
    if len(new) > len(old):
        return False
    try:
        fd = os.open(path, os.O_RDWR | os.O_NOFOLLOW | os.O_CLOEXEC)
    except OSError:
        return False
    try:
        head = os.pread(fd, 1024, 0)
        for sep in (": ", ":"):  # indented, or compact (a result file since format 3)
            at = head.find(f'"state"{sep}"{old}"'.encode())
            if at >= 0:
                break
        else:
            return False
        os.pwrite(fd, f'"state"{sep}"{new}"'.encode() + b" " * (len(old) - len(new)), at)
        os.fsync(fd)
        return True
    except OSError:
        return False
    finally:
        os.close(fd)


def _too_large(what: str, path: Path, size: str, limit: int) -> ZeroLossError:
    return ZeroLossError(f"{what} {shown(path)} is {size} bytes, more than the {limit} zeroloss reads",
                         "is it the right file?")


def read_bytes_plain(path: Path, what: str, limit: int) -> bytes:
    """A file's bytes as they are (no gzip), at most limit, or one line; FileNotFoundError passes through."""
    try:
        with open(path, "rb") as f:
            size = os.fstat(f.fileno()).st_size
            if size > limit:
                raise _too_large(what, path, str(size), limit)
            data = f.read(limit + 1)
    except FileNotFoundError:
        raise
    except OSError as e:
        raise ZeroLossError(f"cannot read {what} {shown(path)}: {e.strerror or e}") from e
    except MemoryError as e:
        raise ZeroLossError(f"{what} {shown(path)} is too large to read") from e
    if len(data) > limit:
        raise _too_large(what, path, f"over {limit}", limit)
    return data


def read_bytes(path: Path, what: str, limit: int = MAX_READ) -> bytes:
    """A file's bytes, gzip-compressed files decompressed, or one line naming the fault. A file (or its decompressed
    text) over limit bytes is refused before it is read whole."""
    try:
        data = read_bytes_plain(path, what, limit)
    except FileNotFoundError as e:
        raise ZeroLossError(f"cannot read {what} {shown(path)}: {e.strerror or e}") from e
    if data[:2] != GZIP_MAGIC:
        return data
    try:  # gzip: archived result files are read as they are
        with gzip.GzipFile(fileobj=io.BytesIO(data)) as g:
            data = g.read(limit + 1)
    except (EOFError, zlib.error, gzip.BadGzipFile) as e:
        raise ZeroLossError(f"{what} {shown(path)} is a damaged gzip file ({e})") from e
    except MemoryError as e:
        raise ZeroLossError(f"{what} {shown(path)} is too large to read") from e
    if len(data) > limit:
        raise _too_large(what, path, f"over {limit} uncompressed", limit)
    return data


def read_json(path: Path, what: str, limit: int = MAX_READ) -> Any:
    """A JSON document from a file (plain or gzip-compressed, at most limit bytes), or one line naming the file and
    the fault. No schema: results/schema.py checks what the document holds."""
    data = read_bytes(path, what, limit)
    try:
        return json.loads(data)
    except MemoryError as e:
        raise ZeroLossError(f"{what} {shown(path)} is too large to read") from e
    except UnicodeDecodeError as e:
        raise ZeroLossError(f"{what} {shown(path)} is not JSON text ({e.reason})") from e
    except json.JSONDecodeError as e:
        raise ZeroLossError(f"{what} {shown(path)} is not valid JSON (line {e.lineno})") from e
    except RecursionError as e:
        raise ZeroLossError(f"{what} {shown(path)} is nested too deeply to be a zeroloss file") from e
    except ValueError as e:  # a number of more digits than Python converts
        raise ZeroLossError(f"{what} {shown(path)} is not valid JSON ({str(e).split(':')[0]})") from e


def _drop_torn_tail(fd: int) -> None:
    """Cuts a line that a killed writer left without its newline, so that the next line starts on a line of its
    own (a torn line is no record: read_lines skips it)."""
    end = os.fstat(fd).st_size
    if end == 0 or os.pread(fd, 1, end - 1) == b"\n":
        return
    at = end
    while at > 0:
        start = max(0, at - 65536)
        chunk = os.pread(fd, at - start, start)
        nl = chunk.rfind(b"\n")
        if nl >= 0:
            os.ftruncate(fd, start + nl + 1)
            return
        at = start
    os.ftruncate(fd, 0)


def append_line(path: Path, line: str) -> None:
    """Appends line and a newline to path (created 0600, never through a symlink), fsynced before it returns: a
    journal record. A torn line left by a killed writer is cut first (so the file is opened read-write, to see its
    last byte). One line of the caller's text only."""
    if "\n" in line:
        raise ValueError("append_line: the line holds a newline")
    data = (line + "\n").encode()
    path = Path(path)
    try:
        fd = os.open(path, os.O_RDWR | os.O_APPEND | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
        try:
            _drop_torn_tail(fd)
            while data:
                data = data[os.write(fd, data):]
            os.fsync(fd)
        finally:
            os.close(fd)
    except OSError as e:
        raise _write_error(path, e) from e


class Lines(NamedTuple):
    """What read_lines read: the complete lines (len(lines) of them), and whether a torn last line was skipped."""

    lines: list[str]
    torn: bool


def read_lines(path: Path, limit: int, what: str = "journal") -> Lines:
    """The complete lines of a file (no newline), at most limit bytes; a missing file has none. A last line without
    its newline (a writer killed mid-line) is not a line: skipped, and `torn` says so."""
    try:
        data = read_bytes_plain(path, what, limit)
    except FileNotFoundError:
        return Lines([], False)
    parts = data.split(b"\n")
    lines = []
    for n, raw in enumerate(parts[:-1], 1):
        try:
            lines.append(raw.decode())
        except UnicodeDecodeError as e:
            raise ZeroLossError(f"{what} {shown(path)}: line {n} is not UTF-8 text ({e.reason})") from e
    return Lines(lines, parts[-1] != b"")
