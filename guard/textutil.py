"""Splitting text into lines the way a file holds them. Standard library only: log and corpus readers import it."""

from __future__ import annotations


def split_lines(text: str) -> list[str]:
    """The lines of ``text``, split on line feeds only (a CRLF ending is one line feed), without a last empty one.

    ``str.splitlines`` and text-mode reading also break at a bare CR, NEL, U+2028, U+2029, form feed and the
    separators U+001C to U+001E, which JSON allows raw inside a string: a line holding one would become
    several, every later line number would be wrong, and results would be paired with the wrong input line.

    >>> split_lines("a\\u2028b\\r\\nc\\n")
    ['a\\u2028b', 'c']
    """
    lines = text.split("\n")
    if lines[-1] == "":
        lines.pop()
    return [line[:-1] if line.endswith("\r") else line for line in lines]


__all__ = ["split_lines"]
