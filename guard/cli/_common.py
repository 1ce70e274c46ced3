"""Small pieces shared by commands: reading inputs, printing JSON."""

from __future__ import annotations

import json
import sys
from datetime import datetime
from pathlib import Path
from typing import Any

from guard.errors import FileError
from guard.timeutil import parse_time


def read_text(path: str) -> str:
    """A file's text, or standard input for ``-``; a GuardError names the file otherwise."""
    if path == "-":
        return sys.stdin.read()
    try:
        return Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise FileError(f"cannot read {path}: {getattr(exc, 'strerror', None) or exc}", location=path) from None


def parse_now(text: str | None) -> datetime | None:
    """The ``--now`` option as an aware datetime (naive means UTC), or None when it is not given."""
    return None if text is None else parse_time(text, location="--now")


def print_json(data: Any) -> None:
    sys.stdout.write(json.dumps(data, indent=2, ensure_ascii=False, default=str) + "\n")
