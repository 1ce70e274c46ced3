"""``guard serve``: the gate as an HTTP service (see :mod:`guard.server`); ``guard serve hash-key`` for keys."""

from __future__ import annotations

import sys
from pathlib import Path

import typer

serve_app = typer.Typer(
    help="Run guard as an HTTP service (guard serve --config serve.yaml), or make an API key.",
    invoke_without_command=True,
    no_args_is_help=False,
)


@serve_app.callback()
def serve_cmd(
    ctx: typer.Context,
    config: Path | None = typer.Option(None, "--config", "-c", help="serve.yaml: policies, keys, limits."),
    host: str | None = typer.Option(None, "--host", help="Address to listen on (default: the config's host)."),
    port: int | None = typer.Option(None, "--port", help="Port to listen on (default: the config's port)."),
    workers: int | None = typer.Option(None, "--workers", help="Worker processes (default: the config's workers)."),
) -> None:
    """Serve the gate over HTTP with the policies, keys and limits of --config."""
    if ctx.invoked_subcommand is not None:
        return
    from guard.cli.main import long_running
    from guard.errors import OptionError
    from guard.server import serve

    if config is None:
        raise OptionError("--config is required (a serve.yaml)", location="--config")
    long_running()
    serve(config, host=host, port=port, workers=workers)


@serve_app.command("hash-key")
def hash_key_cmd(
    key: str | None = typer.Option(None, "--key", help="Hash this key (default: read one line from stdin)."),
    new: bool = typer.Option(False, "--new", help="Make a new random key and print it with its hash."),
) -> None:
    """Print the sha256 form of an API key for serve.yaml (keys.<name>.hash)."""
    from guard.server.config import hash_key, new_key

    if new:
        made = new_key()
        typer.echo(f"key:  {made}\nhash: {hash_key(made)}")
        return
    text = key if key is not None else sys.stdin.readline().rstrip("\r\n")
    if not text:
        from guard.errors import OptionError

        raise OptionError("no key given (--key, --new, or one line on stdin)", location="--key")
    typer.echo(hash_key(text))


def register(app: typer.Typer) -> None:
    app.add_typer(serve_app, name="serve")


__all__ = ["register"]
