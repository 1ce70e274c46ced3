"""Entry point: builds the typer app from one module per command.

Each module in :data:`COMMANDS` exposes ``register(app)``. A GuardError that
escapes a command becomes a one-line message on stderr, never a traceback, with
the exit code of :mod:`guard.cli.exitcodes`: 2 for an :class:`~guard.errors.OptionError`
(a value given on the command line is wrong), 1 for any other (the input is invalid).
"""

from __future__ import annotations

import gc
import importlib
import sys
import warnings
from typing import Any, TextIO

import typer

from guard._version import __version__
from guard.cli import exitcodes
from guard.errors import GuardError, OptionError

COMMANDS = [
    "guard.cli.check",
    "guard.cli.schema",
    "guard.cli.demo",
    "guard.cli.run",
    "guard.cli.audit",
    "guard.cli.monitor",
    "guard.cli.lint",
    "guard.cli.grammars",
    "guard.cli.shapes",
    "guard.cli.train",
    "guard.cli.classify",
    "guard.cli.rules",
    "guard.cli.serve",
]

app = typer.Typer(
    name="guard",
    help="Make a language model's answers checkable.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,  # click's plain help: typer's rich formatter costs 0.4 s of imports per run
)


def _print_version(value: bool) -> None:
    if value:
        typer.echo(f"guard {__version__}")
        raise typer.Exit()


@app.callback()
def _root(
    version: bool = typer.Option(
        False,
        "--version",
        callback=_print_version,
        is_eager=True,
        help="Print guard's version and exit.",
    ),
) -> None:
    """Make a language model's answers checkable."""


_built: list[bool] = []


def _build() -> typer.Typer:
    if not _built:
        for name in COMMANDS:
            importlib.import_module(name).register(app)
        _built.append(True)
    return app


#: Allocations between young-generation collections while a command runs. Loading a sentence library or the
#: classifier builds hundreds of thousands of small objects that all live until exit; with CPython's default
#: (700) the collector re-scans them over and over, more than half of a lint's start-up. mypy's command line
#: raises its threshold for the same reason.
GC_THRESHOLD = (200_000, 30, 30)
_INTERPRETER_GC = gc.get_threshold()


def long_running() -> None:
    """A command that serves until stopped gives the collector back its usual pace (see :data:`GC_THRESHOLD`)."""
    gc.set_threshold(*_INTERPRETER_GC)


def main(argv: list[str] | None = None) -> int:
    """Run the command line and return its exit code (the ``guard`` script and ``python -m guard``).

    ``argv=None`` means this process is the command (``sys.argv``): what it built is then frozen out of the
    collector's reach, so the collection at interpreter exit does not walk it once more.
    """
    _build()
    before = gc.get_threshold()
    gc.set_threshold(*GC_THRESHOLD)
    try:
        with warnings.catch_warnings():
            warnings.showwarning = _one_line_warnings(warnings.showwarning)
            return _run(argv)
    finally:
        gc.set_threshold(*before)
        if argv is None:
            gc.freeze()


def _one_line_warnings(show: Any) -> Any:
    """guard's own warnings (a policy that reads a table in and out of scope) as one line, like its errors."""

    def shown(
        message: Warning | str,
        category: type[Warning],
        filename: str,
        lineno: int,
        file: TextIO | None = None,
        line: str | None = None,
    ) -> None:
        if category.__module__.split(".", 1)[0] == "guard":
            print(f"guard: warning: {message}", file=sys.stderr)
        else:
            show(message, category, filename, lineno, file, line)

    return shown


def _run(argv: list[str] | None) -> int:
    try:
        app(args=argv, standalone_mode=True)
    except SystemExit as exc:  # typer/click end every run with SystemExit
        code = exc.code
        if code is None:
            return exitcodes.OK
        return code if isinstance(code, int) else exitcodes.USAGE
    except OptionError as exc:
        print(f"guard: error: {exc}", file=sys.stderr)
        return exitcodes.USAGE
    except GuardError as exc:
        print(f"guard: error: {exc}", file=sys.stderr)
        return exitcodes.INVALID_INPUT
    except KeyboardInterrupt:
        print("guard: interrupted", file=sys.stderr)
        return 130
    return exitcodes.OK


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
