"""``guard demo``: an embedded SQLite system of record, and an answer, a refusal and a regeneration."""

from __future__ import annotations

import contextlib
import json
import tempfile
from pathlib import Path
from typing import Any

import typer


def demo_cmd(
    db: str | None = typer.Option(None, "--db", help="Database URL to fill (default: a new SQLite file)."),
    orders: int = typer.Option(3000, "--orders", min=10, help="How many orders to generate."),
) -> None:
    """Build a seeded SQLite system of record and show the three decisions side by side."""
    from rich.console import Console

    from guard import demo

    console = Console()
    with contextlib.ExitStack() as stack:
        if db is None:  # a temporary database, removed when the demo ends, however it ends
            tmp = stack.enter_context(tempfile.TemporaryDirectory(prefix="guard-demo-"))
            url, where = f"sqlite:///{Path(tmp) / 'records.db'}", "a temporary SQLite database (removed at exit)"
        else:
            url, where = db, db
        with console.status("building the system of record"):
            demo.build(url, n_orders=orders)
        _show(console, url, where, orders)


def _show(console: Any, url: str, where: str, orders: int) -> None:
    """The three decisions as panels 52 columns wide: side by side on a wide terminal, stacked within 80."""
    from rich.columns import Columns
    from rich.panel import Panel
    from rich.text import Text

    from guard import demo
    from guard.pipeline import verify
    from guard.records.store import RecordStore

    policy = demo.policy()
    console.print(f"[bold]guard demo[/]: {orders} orders in {where}")
    console.print(
        f"policy: {', '.join(policy.entities)}; principal {demo.PRINCIPAL}; clock {demo.NOW.isoformat()}",
        highlight=False,
    )
    panels = []
    styles = {"answer": "green", "refuse": "yellow", "regenerate_from_facts": "magenta"}
    with RecordStore(url, policy) as store:
        for _name, payload in demo.payloads().items():
            d = verify(payload, policy, store, principal=demo.PRINCIPAL, now=demo.NOW)
            body = Text()
            body.append("model wrote\n", style="dim")
            body.append(payload["answer_template"] + "\n")
            for c in payload["claims"]:
                body.append(f"  {c['key']} = {json.dumps(c['value'], ensure_ascii=False)}\n", style="dim")
            body.append("\nresults\n", style="dim")
            for r in d.results:
                body.append(f"  {r.key}: {r.status.value}\n")
            body.append("\nguard says\n", style="dim")
            if d.text is not None:
                body.append(d.text + "\n", style="bold")
                for c in d.citations:
                    body.append(f"  [{c['citation']}]\n", style="dim")
            elif d.message is not None:
                body.append(d.message + "\n", style="bold")
            else:
                body.append(f"contradicted: {', '.join(d.contradicted)}\n", style="bold")
                for k, f in d.facts.items():
                    body.append(f"  {k} = {f['text']}\n")
                    body.append(f"    [{f['citation']}]\n", style="dim")
            panels.append(Panel(body, title=d.action.value, border_style=styles[d.action.value], width=52))
    console.print(Columns(panels))


def register(app: typer.Typer) -> None:
    app.command("demo")(demo_cmd)
