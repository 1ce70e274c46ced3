"""Small pieces shared by commands: reading inputs, printing JSON."""

from __future__ import annotations

import json
import sys
from datetime import datetime
from pathlib import Path
from typing import Any

from guard.errors import ConfigError, FileError
from guard.timeutil import parse_time


def read_text(path: str) -> str:
    """A file's text, or standard input for ``-``; a GuardError names the file otherwise."""
    if path == "-":
        return sys.stdin.read()
    try:
        return Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise FileError(f"cannot read {path}: {getattr(exc, 'strerror', None) or exc}", location=path) from None


def read_lines(path: str) -> list[str]:
    """The lines of a file or of standard input, split on line feeds only (a CRLF ending is one line feed).

    ``str.splitlines`` and text-mode reading also break at a bare CR, NEL, U+2028, form feed and the
    separators U+001C to U+001E, so a line holding one of them would become several, and every result after it
    would be paired with the wrong input line.
    """
    try:
        if path == "-" and not hasattr(sys.stdin, "buffer"):
            text = sys.stdin.read()
        else:
            data = sys.stdin.buffer.read() if path == "-" else Path(path).read_bytes()
            text = data.decode("utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        where = "standard input" if path == "-" else path
        raise FileError(f"cannot read {where}: {getattr(exc, 'strerror', None) or exc}", location=path) from None
    lines = text.split("\n")
    if lines[-1] == "":
        lines.pop()
    return [line[:-1] if line.endswith("\r") else line for line in lines]


def config_file(path: str, option: str = "--config") -> Path:
    """A gate config file that exists and is UTF-8 text; a ConfigError names it otherwise."""
    try:
        Path(path).read_bytes().decode("utf-8")
    except OSError as exc:
        raise ConfigError(f"cannot read the gate config {path}: {exc.strerror}", location=path) from None
    except UnicodeDecodeError as exc:
        raise ConfigError(
            f"the gate config {path} ({option}) is not UTF-8 text (byte {exc.start} cannot be read)", location=path
        ) from None
    return Path(path)


def parse_now(text: str | None) -> datetime | None:
    """The ``--now`` option as an aware datetime (naive means UTC), or None when it is not given."""
    return None if text is None else parse_time(text, location="--now")


def print_json(data: Any) -> None:
    sys.stdout.write(json.dumps(data, indent=2, ensure_ascii=False, default=str) + "\n")
