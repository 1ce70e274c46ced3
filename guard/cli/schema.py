"""``guard schema``: the payload JSON Schema whose entities and fields come from the policy."""

from __future__ import annotations

from pathlib import Path

import typer

from guard.cli._common import print_json


def schema_cmd(policy: str = typer.Option(..., "--policy", help="Policy YAML file.")) -> None:
    """Print a JSON Schema for payloads under POLICY (for structured output)."""
    from guard.records.policy import load_policy
    from guard.records.schema import payload_schema

    print_json(payload_schema(load_policy(Path(policy))))


def register(app: typer.Typer) -> None:
    """Add ``guard schema`` to the command line."""
    app.command("schema")(schema_cmd)
