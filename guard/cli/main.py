"""Entry point: builds the typer app from one module per command.

Each module in :data:`COMMANDS` exposes ``register(app)``. A run that names a command registers that command
only: typer reads every registered command's signature and builds its parameters on each run, and the other
twelve cost ``guard lint`` 3.4% of its instructions (about 8 ms). A run without one (``guard --help``, a
misspelt name that click answers with the known names) registers them all. A GuardError that escapes a
command becomes a one-line message on stderr, never a traceback, with the exit code of
:mod:`guard.cli.exitcodes`: 2 for an :class:`~guard.errors.OptionError` (a value given on the command line is
wrong), 1 for any other (the input is invalid).
"""

from __future__ import annotations

import gc
import importlib
import os
import sys
import warnings
from typing import Any, TextIO

import typer

from guard._version import __version__
from guard.cli import exitcodes
from guard.errors import GuardError, OptionError

COMMANDS = {
    "check": "guard.cli.check",
    "schema": "guard.cli.schema",
    "demo": "guard.cli.demo",
    "run": "guard.cli.run",
    "audit": "guard.cli.audit",
    "monitor": "guard.cli.monitor",
    "lint": "guard.cli.lint",
    "grammars": "guard.cli.grammars",
    "shapes": "guard.cli.shapes",
    "train": "guard.cli.train",
    "classify": "guard.cli.classify",
    "rules": "guard.cli.rules",
    "serve": "guard.cli.serve",
}
"""Command name to the module that registers it, in the order ``guard --help`` lists them."""


def _new_app() -> typer.Typer:
    one = typer.Typer(
        name="guard",
        help="Make a language model's answers checkable.",
        no_args_is_help=True,
        add_completion=False,
        pretty_exceptions_enable=False,
        rich_markup_mode=None,  # click's plain help: typer's rich formatter costs 0.4 s of imports per run
    )
    one.callback()(_root)
    return one


def _print_version(value: bool) -> None:
    if value:
        typer.echo(f"guard {__version__}")
        raise typer.Exit()


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


_APPS: dict[str | None, typer.Typer] = {}


def _build(command: str | None = None) -> typer.Typer:
    """The app with ``command`` only, or with every command (``None``); built once per process each."""
    if command not in _APPS:
        app = _new_app()
        for name, module in COMMANDS.items():
            if command in (None, name):
                importlib.import_module(module).register(app)
        _APPS[command] = app
    return _APPS[command]


def _command(argv: list[str]) -> str | None:
    """The command a run names when its first word is one (``lint`` in ``guard lint t.txt``), else None: the
    root's options (``--help``, ``--version``) and unknown names need the app with every command."""
    return argv[0] if argv and argv[0] in COMMANDS else None


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
    args = sys.argv[1:] if argv is None else list(argv)
    app = _build(_command(args))
    before = gc.get_threshold()
    gc.set_threshold(*GC_THRESHOLD)
    _TEARDOWN.clear()
    _KEPT.clear()
    try:
        with warnings.catch_warnings():
            warnings.showwarning = _one_line_warnings(warnings.showwarning)
            code = _run(app, argv)
    finally:
        gc.set_threshold(*before)
        if argv is None:
            gc.freeze()
    if argv is None and _TEARDOWN == ["skip"]:
        _exit_now(code)
    _KEPT.clear()
    return code


#: ``["skip"]`` once a command has said that it leaves nothing to tear down (see :func:`skip_teardown`).
_TEARDOWN: list[str] = []
#: What the command asked to keep until the process ends (freed when main returns instead).
_KEPT: list[Any] = []


def skip_teardown(*keep: Any) -> None:
    """Say that the running command holds no file, thread or handler that must be closed at exit: when this
    process is the command, it then ends right after flushing its output, without freeing ``keep`` (and the
    rest of what it built) one object at a time; ``guard classify``'s caches took a few percent of its run.
    mypy's command line ends the same way."""
    _TEARDOWN[:] = ["skip"]
    _KEPT.extend(keep)


def _exit_now(code: int) -> None:
    """Flush the standard streams and end the process with ``code``; returns (and lets the interpreter end as
    usual, reporting the error) if a stream cannot be flushed."""
    try:
        sys.stdout.flush()
        sys.stderr.flush()
    except (OSError, ValueError):
        return
    os._exit(code)


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


def _run(app: typer.Typer, argv: list[str] | None) -> int:
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
