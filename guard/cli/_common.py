"""Small pieces shared by commands: reading inputs, printing JSON."""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import datetime
from pathlib import Path
from typing import Any

from guard._files import read_utf8
from guard.errors import ConfigError, FileError, OptionError
from guard.textutil import split_lines
from guard.timeutil import parse_time


@contextmanager
def pydantic_plugins_off() -> Iterator[None]:
    """Pydantic plugins off while a one-shot command builds guard's models, as typer does for its parameters.

    The first model pydantic builds looks for plugins in every installed distribution's entry points (6 ms
    of a lint's start-up with 170 distributions); guard's models are its own settings, nothing a plugin
    watches. A ``PYDANTIC_DISABLE_PLUGINS`` the user set is left as it is.
    """
    if "PYDANTIC_DISABLE_PLUGINS" in os.environ:
        yield
        return
    os.environ["PYDANTIC_DISABLE_PLUGINS"] = "__all__"
    try:
        yield
    finally:
        os.environ.pop("PYDANTIC_DISABLE_PLUGINS", None)


def read_text(path: str) -> str:
    """A file's text, or standard input for ``-``; a GuardError names the file otherwise."""
    if path == "-":
        return sys.stdin.read()
    return read_utf8(path)


def read_lines(path: str) -> list[str]:
    """The lines of a file or of standard input, split by :func:`guard.textutil.split_lines` (line feeds only)."""
    try:
        if path == "-" and not hasattr(sys.stdin, "buffer"):
            text = sys.stdin.read()
        else:
            data = sys.stdin.buffer.read() if path == "-" else Path(path).read_bytes()
            text = data.decode("utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        where = "standard input" if path == "-" else path
        raise FileError(f"cannot read {where}: {getattr(exc, 'strerror', None) or exc}", location=path) from None
    return split_lines(text)


def write_output(path: Path, text: str, option: str = "--output") -> None:
    """Write a command's report to ``path``; a folder that is missing or a path that is a folder is a FileError."""
    try:
        path.write_text(text, encoding="utf-8")
    except OSError as exc:
        raise FileError(f"{option}: cannot write {path}: {exc.strerror or exc}", location=str(path)) from None


def writable_file(path: Path, option: str = "--out") -> None:
    """Fail before a long run when ``path`` can never be written: it is a folder, or its folder cannot be made."""
    if path.is_dir():
        raise FileError(f"{option}: {path} is a folder, not a file", location=str(path))
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise FileError(f"{option}: cannot write {path}: {exc.strerror or exc}", location=str(path)) from None


def config_file(path: str, option: str = "--config") -> Path:
    """A gate config file that exists and is UTF-8 text; a ConfigError names it otherwise."""
    read_utf8(path, f"the gate config {path} ({option})", ConfigError)
    return Path(path)


def parse_now(text: str | None) -> datetime | None:
    """The ``--now`` option as an aware datetime (naive means UTC), or None when it is not given."""
    return None if text is None else parse_time(text, location="--now")


def print_json(data: Any) -> None:
    import json  # imported here: a text lint never loads json (1 ms)

    sys.stdout.write(json.dumps(data, indent=2, ensure_ascii=False, default=str) + "\n")


def check_domain(domain: str, grammar_dir: Any) -> None:
    """An unknown ``--domain`` is a usage error that names the closest known one; a domain whose library
    cannot be read keeps its own error (invalid input)."""
    from guard.linting.config import did_you_mean
    from guard.shapes.sentences import list_domains, load_domain

    known = sorted(list_domains(grammar_dir))
    if domain in known:
        return
    if grammar_dir and (Path(grammar_dir) / f"{domain}.lark").is_file():
        load_domain(domain, grammar_dir)  # says why a hand-written .lark library is not read
    hint = did_you_mean(domain, known)
    raise OptionError(
        f"unknown domain {domain!r}{hint}; known domains: {', '.join(known) or 'none'}", location="--domain"
    )


def load_model(model: str | None) -> Any:
    """The classifier for ``--model``, or ``"auto"`` (the shipped one when installed)."""
    if model is None:
        return "auto"
    from guard.linting.freetext import load_classifier

    return load_classifier(Path(model))


_DRIVERS = {"postgresql": ("psycopg2", "postgresql+psycopg"), "mysql": ("MySQLdb", "mysql+pymysql")}
_ALIASES = {"postgres": "postgresql", "mariadb": "mysql"}


def database_url(url: str, option: str = "--db") -> str:
    """``--db`` as SQLAlchemy will open it, or an error that says what the URL should have been.

    A file path suggests ``sqlite:///PATH``; ``postgres://`` and a bare ``mysql://`` suggest the driver forms
    guard installs (``postgresql+psycopg://``, ``mysql+pymysql://``); a SQLite file that does not exist is an
    error (guard only reads, so the file is opened read-only and never created).
    """
    import importlib.util
    from urllib.parse import quote

    from sqlalchemy.engine import make_url
    from sqlalchemy.exc import ArgumentError

    if "://" not in url:
        hint = f"; did you mean sqlite:///{url}?" if url and not url.startswith("-") else ""
        raise OptionError(f"{option} {url!r} is not a database URL{hint}", location=option)
    try:
        u = make_url(url)
    except ArgumentError as exc:
        raise OptionError(f"{option} {url!r} is not a database URL: {exc}", location=option) from None
    dialect, _, driver = u.drivername.partition("+")
    family = _ALIASES.get(dialect, dialect)
    if family in _DRIVERS and (dialect != family or not driver):
        default_module, suggested = _DRIVERS[family]
        if dialect != family or importlib.util.find_spec(default_module) is None:
            better = u.set(drivername=suggested).render_as_string(hide_password=True)
            raise OptionError(
                f"{option}: {u.drivername}:// needs a database driver guard does not install; did you mean {better}?",
                location=option,
            )
    if dialect == "sqlite" and u.database and u.database != ":memory:" and not u.database.startswith("file:"):
        path = Path(u.database)
        if not path.is_file():
            raise FileError(f"{option}: no SQLite database file {path}{_near_file(path)}", location=option)
        query = "&".join(f"{k}={v}" for k, v in {**u.query, "mode": "ro", "uri": "true"}.items())
        return f"{u.drivername}:///file:{quote(str(path.resolve()))}?{query}"
    return url


def _near_file(path: Path) -> str:
    import difflib

    try:
        siblings = [p.name for p in (path.parent if str(path.parent) else Path(".")).iterdir() if p.is_file()]
    except OSError:
        return ""
    close = difflib.get_close_matches(path.name, siblings, n=1, cutoff=0.75)
    return f" (did you mean {str(path.with_name(close[0]))!r}?)" if close else ""
