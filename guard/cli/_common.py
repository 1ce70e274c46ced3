"""Small pieces shared by commands: reading inputs, printing JSON."""

from __future__ import annotations

import json
import sys
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from guard.errors import GuardError, PayloadError


def read_text(path: str) -> str:
    """A file's text, or standard input for ``-``; a GuardError names the file otherwise."""
    if path == "-":
        return sys.stdin.read()
    try:
        return Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise PayloadError(f"cannot read {path}: {getattr(exc, 'strerror', None) or exc}", location=path) from None


def parse_now(text: str | None) -> datetime | None:
    if text is None:
        return None
    try:
        t = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        raise GuardError(f"--now '{text}' is not an ISO 8601 time", location="--now") from None
    return t if t.tzinfo else t.replace(tzinfo=UTC)


def print_json(data: Any) -> None:
    sys.stdout.write(json.dumps(data, indent=2, ensure_ascii=False, default=str) + "\n")
