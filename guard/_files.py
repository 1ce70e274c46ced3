"""Reading a user's file as UTF-8 text, with one wording for each way it can fail."""

from __future__ import annotations

import os
from pathlib import Path

from guard.errors import FileError, GuardError


def read_utf8(path: str | os.PathLike[str], what: str = "", error: type[GuardError] = FileError) -> str:
    """The text of ``path`` (newlines translated, as ``Path.read_text``), or ``error`` located at the path.

    ``what`` names the file in the message (``"the policy file"``; the path by default): ``cannot read
    <what>: <reason>`` when it cannot be opened, ``<what> is not UTF-8 text (byte N cannot be read)`` when
    it is not text guard can read.
    """
    where = str(path)
    what = what or where
    try:
        return Path(path).read_text(encoding="utf-8")
    except OSError as exc:
        raise error(f"cannot read {what}: {exc.strerror or exc}", location=where) from None
    except UnicodeDecodeError as exc:
        raise error(f"{what} is not UTF-8 text (byte {exc.start} cannot be read)", location=where) from None


__all__ = ["read_utf8"]
