"""Run the whole command line in-process (``guard.cli.main.main``), as the ``guard`` script does."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from guard.cli.main import main

SHIPPED = "Your order {order_id} shipped on {ship_date}.\n"
SHIPPED_TYPES = "order_id: identifier\nship_date: date\n"
BAD = "Hi {name},\nYour order {order_id} shipped on {total}. This is unusual for orders of this size.\n"
BAD_TYPES = "name: string\norder_id: identifier\ntotal: money\n"
WORDY = "Your order {order_id} shipped on {ship_date}.\nThank you for your order.\nThank you for your patience.\n"

PAYLOAD = {
    "answer_template": "Your order {order_id} shipped on {ship_date}.",
    "claims": [
        {"key": "order_id", "type": "identifier", "entity": "order", "entity_id": "o1", "field": "id", "value": "o1"},
        {
            "key": "ship_date",
            "type": "date",
            "entity": "order",
            "entity_id": "o1",
            "field": "shipped_at",
            "value": "2026-01-02",
        },
    ],
}
"""A payload whose template the orders library approves (tests that need another template keep its claims)."""

Run = Callable[..., tuple[int, str, str]]


@pytest.fixture
def cli(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> Run:
    """``cli(*args, cwd=path)``: the exit code, standard output and standard error of one command."""

    def run(*args: object, cwd: Path | None = None) -> tuple[int, str, str]:
        if cwd is not None:
            monkeypatch.chdir(cwd)
        capsys.readouterr()
        code = main([str(a) for a in args])
        out, err = capsys.readouterr()
        assert "Traceback" not in err
        return code, out, err

    return run


def template(where: Path, text: str = SHIPPED, types: str | None = SHIPPED_TYPES) -> Path:
    """A template file with its slot-types sidecar."""
    where.parent.mkdir(parents=True, exist_ok=True)
    where.write_text(text, encoding="utf-8")
    if types is not None:
        Path(str(where) + ".slots.yaml").write_text(types, encoding="utf-8")
    return where
