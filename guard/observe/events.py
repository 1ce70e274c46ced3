"""The JSON Lines event log: one line per claim result and per decision.

Several threads and several processes may share one log file. Every line is
written by a single ``os.write`` on a descriptor opened with ``O_APPEND``
while holding an exclusive ``flock`` on a sidecar ``<log>.lock`` file, so
lines never interleave, and the size check, the rotation and the write happen
under that same lock, so no line is lost when another process rotates. A
process notices a rotation done by another one by comparing the inode of its
open descriptor with the inode at the path and reopens.

Rotation follows :class:`logging.handlers.RotatingFileHandler`: ``log`` is
renamed ``log.1``, ``log.1`` becomes ``log.2`` and so on up to
``backup_count``; with ``compress=True`` the rotated files are gzipped
(``log.1.gz``), which holds every writer for the second or so that
compressing ``max_bytes`` takes. :func:`read_events` reads a log with its
rotated files, oldest first. ``flock`` needs a local file system (not NFS).

Example::

    with EventLog("guard.log", max_bytes=10_000_000) as log:
        log.emit({"event": "decision", "action": "answer", "n_claims": 2})
    for event in read_events(["guard.log"]):
        ...
"""

from __future__ import annotations

import contextlib
import fcntl
import gzip
import json
import os
import re
import shutil
import sys
import threading
import zlib
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from guard.errors import EventLogError, OptionError

VALUE_KEYS = ("claimed", "actual")
"""Keys that carry database or model values: logged only when the user opts in."""

_ROTATED = re.compile(r"^(?P<base>.+)\.(?P<index>\d+)(?P<gz>\.gz)?$")


_ENCODER = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"), default=str)
"""One encoder for every line: ``json.dumps`` with options builds a new one per call."""


def _now() -> str:
    return datetime.now(UTC).isoformat()


def _encode(event: Mapping[str, Any], include_values: bool) -> bytes:
    if not isinstance(event, Mapping):
        raise EventLogError(f"an event must be a mapping, got {type(event).__name__}")
    if "ts" in event:
        record = dict(event)
    else:
        record = {"ts": _now()}
        record.update(event)
    if not include_values:
        for key in VALUE_KEYS:
            record.pop(key, None)
    try:
        text = _ENCODER.encode(record)
    except (ValueError, TypeError, RecursionError):  # an integer beyond str's digit limit, a value that will not print
        text = _ENCODER.encode(_loggable(record, 0))
    return (text + "\n").encode("utf-8")


_MAX_DEPTH = 64


def _loggable(value: Any, depth: int) -> Any:
    """The value with whatever JSON cannot hold replaced by a short description, so the line is still written.

    A model can put ``10**5000`` in a dict payload; with values logged, encoding it would otherwise raise
    and lose the decision's whole line.
    """
    if depth > _MAX_DEPTH:
        return "<nested too deeply to log>"
    if isinstance(value, Mapping):
        return {str(k): _loggable(v, depth + 1) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_loggable(v, depth + 1) for v in value]
    if isinstance(value, bool) or value is None or isinstance(value, float | str):
        return value
    if isinstance(value, int):
        return (
            value if value.bit_length() < 13_000 else f"<integer of about {int(value.bit_length() * 0.30103)} digits>"
        )
    try:
        return str(value)
    except Exception:  # a value whose str() raises is described by its type only
        return f"<{type(value).__name__}>"


class EventLog:
    """Append events as JSON Lines to ``path``, rotating at ``max_bytes``.

    ``max_bytes=0`` or ``backup_count=0`` turns rotation off (as in the
    standard library's rotating handler). ``include_values=False`` drops the
    ``claimed``/``actual`` values from claim events, so the log holds no
    customer data unless asked to. The log is safe to share between threads
    and between processes, including processes forked after it was opened.
    """

    def __init__(
        self,
        path: str | os.PathLike[str],
        *,
        max_bytes: int = 50_000_000,
        backup_count: int = 10,
        include_values: bool = False,
        compress: bool = False,
    ) -> None:
        if max_bytes < 0 or backup_count < 0:
            raise OptionError("max_bytes and backup_count must not be negative", location=str(path))
        self.path = Path(path)
        self.max_bytes = max_bytes
        self.backup_count = backup_count
        self.include_values = include_values
        self.compress = compress
        self._where = os.fspath(self.path)
        self._lock_path = self.path.with_name(self.path.name + ".lock")
        self._thread_lock = threading.Lock()
        self._fd: int | None = None
        self._lock_fd: int | None = None
        self._pid = -1
        self._closed = False
        self.failed_writes = 0
        """Appends that raised EventLogError (closed log, full disk): their lines are not in the file."""
        with self._thread_lock:
            self._open()

    # -- file handling -------------------------------------------------------
    def _open(self) -> None:
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self._lock_fd = os.open(self._lock_path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
            self._fd = os.open(self.path, os.O_RDWR | os.O_APPEND | os.O_CREAT | os.O_CLOEXEC, 0o644)
        except OSError as exc:
            raise EventLogError(f"cannot open the event log: {exc.strerror}", location=str(self.path)) from exc
        self._pid = os.getpid()

    def _close_fds(self) -> None:
        for fd in (self._fd, self._lock_fd):
            if fd is not None:
                with contextlib.suppress(OSError):
                    os.close(fd)
        self._fd = self._lock_fd = None

    def _reopen_log(self) -> None:
        if self._fd is not None:
            os.close(self._fd)
        self._fd = os.open(self.path, os.O_RDWR | os.O_APPEND | os.O_CREAT | os.O_CLOEXEC, 0o644)

    def _current_size(self) -> int:
        """Size of the file at ``path``, reopening it if another process rotated it away."""
        assert self._fd is not None
        mine = os.fstat(self._fd)
        try:
            there = os.stat(self._where)
        except FileNotFoundError:
            there = None
        if there is None or (there.st_ino, there.st_dev) != (mine.st_ino, mine.st_dev):
            self._reopen_log()
            return os.fstat(self._fd).st_size
        return mine.st_size

    def _rotated_name(self, index: int) -> Path:
        suffix = f".{index}.gz" if self.compress else f".{index}"
        return self.path.with_name(self.path.name + suffix)

    def _rotate(self) -> None:
        # Shift only the files that exist: a large backup_count must not cost a stat per slot.
        present = sorted((i for i, p in _siblings(self.path).items() if p == self._rotated_name(i)), reverse=True)
        for index in present:
            if index >= self.backup_count:
                self._rotated_name(index).unlink()
            else:
                os.replace(self._rotated_name(index), self._rotated_name(index + 1))
        if self.compress:
            tmp = self.path.with_name(self.path.name + ".rotating")
            os.replace(self.path, tmp)
            with open(tmp, "rb") as src_f, gzip.open(self._rotated_name(1), "wb") as dst_f:
                shutil.copyfileobj(src_f, dst_f)
            tmp.unlink()
        else:
            os.replace(self.path, self._rotated_name(1))
        self._reopen_log()

    # -- public --------------------------------------------------------------
    def emit(self, event: Mapping[str, Any]) -> None:
        """Append one event as one line; adds ``ts`` (UTC, ISO 8601) when missing."""
        self._append(_encode(event, self.include_values))

    def emit_many(self, events: Iterable[Mapping[str, Any]]) -> None:
        """Append several events in one locked write, so one request's lines stay together and cost one lock."""
        data = b"".join(_encode(e, self.include_values) for e in events)
        if data:
            self._append(data)

    def _append(self, line: bytes) -> None:
        with self._thread_lock:
            try:
                self._append_locked(line)
            except EventLogError:
                self.failed_writes += 1
                raise

    def _append_locked(self, line: bytes) -> None:
        """Under the thread lock: open our own descriptors after a fork, then lock, rotate and write."""
        if self._closed:
            raise EventLogError("the event log is closed", location=str(self.path))
        if self._pid != os.getpid():
            # A forked child shares the parent's descriptors, and flock would
            # then not exclude the parent: open our own.
            self._close_fds()
            self._open()
        assert self._fd is not None and self._lock_fd is not None
        try:
            fcntl.flock(self._lock_fd, fcntl.LOCK_EX)
            try:
                size = self._current_size()
                if self.max_bytes and self.backup_count and size and size + len(line) > self.max_bytes:
                    self._rotate()
                    size = os.fstat(self._fd).st_size
                if size and os.pread(self._fd, 1, size - 1) != b"\n":
                    # a line left partial (a writer killed mid-line, a truncation that failed): end it, so
                    # readers count one malformed line and this one is read whole
                    line = b"\n" + line
                self._write_whole(line, size)
            finally:
                fcntl.flock(self._lock_fd, fcntl.LOCK_UN)
        except OSError as exc:
            raise EventLogError(f"cannot write the event log: {exc.strerror}", location=str(self.path)) from exc

    def _write_whole(self, line: bytes, size: int) -> None:
        """Write all of ``line`` at the end of a file ``size`` bytes long, or nothing of it.

        A regular file takes part of a write only when it is full (or a signal interrupts): the rest is
        written under the same lock, and if that fails the file is cut back to ``size``, so the next
        successful write is not glued onto half a line.
        """
        assert self._fd is not None
        view = memoryview(line)
        try:
            while view:
                view = view[os.write(self._fd, view) :]
        except OSError:
            if len(view) < len(line):
                with contextlib.suppress(OSError):
                    os.ftruncate(self._fd, size)
            raise

    def close(self) -> None:
        with self._thread_lock:
            if not self._closed:
                self._close_fds()
                self._closed = True

    def __enter__(self) -> EventLog:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __del__(self) -> None:  # pragma: no cover - interpreter shutdown order varies
        with contextlib.suppress(Exception):
            self._close_fds()


# -- reading -------------------------------------------------------------------
@dataclass
class ReadStats:
    """What :func:`read_events` saw: files, lines, and where the malformed lines were."""

    files: list[str] = field(default_factory=list)
    lines: int = 0
    events: int = 0
    malformed: int = 0
    examples: list[str] = field(default_factory=list)
    max_examples: int = 5

    def _bad(self, where: str, why: str) -> None:
        self.malformed += 1
        if len(self.examples) < self.max_examples:
            self.examples.append(f"{where}: {why}")

    def to_dict(self) -> dict[str, Any]:
        return {
            "files": list(self.files),
            "lines": self.lines,
            "events": self.events,
            "malformed": self.malformed,
            "malformed_examples": list(self.examples),
        }


def _split(path: Path) -> tuple[Path, int]:
    """``log.3.gz`` -> (``log``, 3); ``log`` -> (``log``, 0)."""
    m = _ROTATED.match(path.name)
    if m:
        return path.with_name(m.group("base")), int(m.group("index"))
    return path, 0


def _siblings(base: Path) -> dict[int, Path]:
    found: dict[int, Path] = {}
    if not base.parent.is_dir():
        return found
    prefix = base.name + "."
    for entry in base.parent.iterdir():
        if entry.name.startswith(prefix):
            b, index = _split(entry)
            if index and b == base:
                found[index] = entry
    return found


def log_files(paths: Iterable[str | os.PathLike[str]]) -> list[Path]:
    """The files to read for ``paths``, each log's rotated files first (oldest first).

    A path naming a live log brings in its rotated ``.N``/``.N.gz`` siblings;
    a path naming one rotated file is read on its own. Duplicates (as from a
    shell glob ``guard.log*``) are read once.
    """
    groups: dict[Path, dict[int, Path]] = {}
    for raw in paths:
        path = Path(raw)
        base, index = _split(path)
        if index == 0 and not path.exists() and not _siblings(path):
            raise EventLogError("no such log file", location=str(path))
        if index and not path.exists():
            raise EventLogError("no such log file", location=str(path))
        group = groups.setdefault(base, {})
        if index == 0:
            group.update(_siblings(base))
            if path.exists():
                group[0] = path
        else:
            group[index] = path
    ordered: list[Path] = []
    seen: set[Path] = set()
    for group in groups.values():
        for index in sorted(group, reverse=True):
            real = group[index].resolve()
            if real not in seen:
                seen.add(real)
                ordered.append(group[index])
    return ordered


def _open_binary(path: Path):
    return gzip.open(path, "rb") if path.suffix == ".gz" else open(path, "rb")


def _lines(handle: Any, name: str, stats: ReadStats) -> Iterator[dict[str, Any]]:
    loads = json.loads
    number = 0
    try:
        for number, raw in enumerate(handle, 1):
            stats.lines += 1
            try:
                event = loads(raw.decode("utf-8"))  # str, not bytes: json skips guessing the encoding
            except (ValueError, RecursionError) as exc:  # undecodable, too deep, an integer beyond int's limit
                if raw.strip():
                    stats._bad(f"{name}:{number}", f"not JSON ({exc.__class__.__name__})")
                else:
                    stats.lines -= 1
                continue
            if type(event) is not dict:
                stats._bad(f"{name}:{number}", "not a JSON object")
                continue
            stats.events += 1
            yield event
    except (OSError, EOFError, zlib.error) as exc:
        # A truncated or damaged gzip member: keep what was read and say where it ended.
        stats._bad(f"{name}:{number + 1}", f"file ends early or is damaged ({exc})")


def read_events(
    paths: str | os.PathLike[str] | Iterable[str | os.PathLike[str]], stats: ReadStats | None = None
) -> Iterator[dict[str, Any]]:
    """Stream the events of ``paths`` (one path or several; with rotated files, gzip or not) one at a time.

    A line that is not a JSON object (half-written by a crashed process, cut by
    a disk, edited by hand, nested too deeply, an integer beyond Python's
    digit limit) is skipped and counted in ``stats`` rather than ending the
    read, and so is the rest of a damaged gzip member: a monitor must survive
    its input. ``-`` reads standard
    input, after the files.
    """
    stats = stats if stats is not None else ReadStats()
    paths = [paths] if isinstance(paths, (str, os.PathLike)) else list(paths)
    for path in log_files([p for p in paths if os.fspath(p) != "-"]):
        stats.files.append(str(path))
        try:
            handle = _open_binary(path)
        except OSError as exc:
            raise EventLogError(f"cannot read the log: {exc.strerror}", location=str(path)) from exc
        with handle:
            yield from _lines(handle, str(path), stats)
    if any(os.fspath(p) == "-" for p in paths):
        stats.files.append("-")
        yield from _lines(sys.stdin.buffer, "<stdin>", stats)


__all__ = ["EventLog", "ReadStats", "read_events", "log_files", "VALUE_KEYS"]
