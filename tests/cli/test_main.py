"""The root of the command line: which commands a run sees (``guard.cli.main`` registers only the command a run
names, every command otherwise)."""

from __future__ import annotations

import re

from guard.cli.main import COMMANDS, _command
from tests.cli.conftest import Run

USAGE = 2


def test_help_lists_every_command_in_order(cli: Run) -> None:
    """Commands in :data:`COMMANDS` order, then the ones with sub-commands (typer lists groups last)."""
    code, out, _ = cli("--help")
    assert code == 0
    listed = re.findall(r"^  (\w+) ", out.split("Commands:", 1)[1], flags=re.M)
    groups = ["grammars", "shapes", "serve"]
    assert listed == [c for c in COMMANDS if c not in groups] + groups


def test_help_still_lists_every_command_after_a_run_of_one(cli: Run) -> None:
    assert cli("rules", "F101")[0] == 0
    code, out, _ = cli("--help")
    assert code == 0 and "lint" in out and "serve" in out


def test_a_misspelt_command_is_a_usage_error_that_names_the_closest(cli: Run) -> None:
    code, _, err = cli("lnt")
    assert code == USAGE
    assert "No such command 'lnt'" in err and "Did you mean 'lint'?" in err


def test_a_command_after_a_root_option_is_run_by_the_whole_app(cli: Run) -> None:
    code, out, _ = cli("--version", "lint")
    assert code == 0 and out.startswith("guard ")


def test_the_named_command_is_the_first_word_only() -> None:
    assert _command(["lint", "t.txt"]) == "lint"
    assert _command(["grammars", "list"]) == "grammars"
    assert _command(["--help"]) is None
    assert _command(["--version", "lint"]) is None
    assert _command(["lnt"]) is None
    assert _command([]) is None
