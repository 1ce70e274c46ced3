"""The playground at ``/ui``: static pages for template authors, served from package data with no build step.

``/ui`` lints a template (or a whole payload) as it is typed, through ``/v1/lint`` and ``/v1/classify``, and shows
the findings with carets under the words, the nearest approved wording and the classifier's evidence spans;
``/ui/monitor`` shows ``/v1/monitor``, the monitor's report over the server's own log. The pages hold no data and
need no key to load; every call they make carries the API key typed into the page (kept in the tab's
``sessionStorage``, sent as ``Authorization: Bearer``), so they see exactly what the key may.

Text from the server (templates, findings, sentences) is only ever set as ``textContent``, never parsed as
markup, and the Content-Security-Policy allows no inline script, no other origin and no framing, so a payload
cannot run script in an author's browser.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from importlib import resources

from fastapi import FastAPI
from starlette.responses import Response

from guard.server import problems as P

PAGES = {"/ui": ("playground", "guard playground"), "/ui/monitor": ("monitor", "guard monitor")}
"""Route -> (page name, title): ``static/page.html`` around ``static/<name>.main.html``, with ``<name>.js``."""
ASSETS = {
    "guard.css": "text/css; charset=utf-8",
    "common.js": "text/javascript; charset=utf-8",
    "playground.js": "text/javascript; charset=utf-8",
    "monitor.js": "text/javascript; charset=utf-8",
}
"""The only files ``/ui/static/{name}`` serves, with their media types (a registry, not a directory listing)."""
HEADERS = {
    "Content-Security-Policy": (
        "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; img-src 'self'; "
        "base-uri 'none'; form-action 'none'; frame-ancestors 'none'"
    ),
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "Cache-Control": "no-cache",
}


def _read(name: str) -> bytes:
    return resources.files("guard.server").joinpath("static", name).read_bytes()


def add_playground(app: FastAPI) -> None:
    """Add ``/ui``, ``/ui/monitor`` and their assets to ``app`` (outside the OpenAPI document: they are pages)."""
    files = {name: _read(name) for name in ASSETS}  # read once, at start
    shell = _read("page.html").decode("utf-8")

    def page(body: bytes) -> Callable[[], Awaitable[Response]]:
        async def serve() -> Response:
            return Response(body, media_type="text/html; charset=utf-8", headers=HEADERS)

        return serve

    for route, (name, title) in PAGES.items():
        main = _read(f"{name}.main.html").decode("utf-8")
        body = shell.replace("{{title}}", title).replace("{{script}}", f"{name}.js").replace("{{main}}", main)
        app.add_api_route(route, page(body.encode("utf-8")), methods=["GET"], include_in_schema=False)

    async def asset(name: str) -> Response:
        if name not in ASSETS:
            raise P.ServerProblem(404, "not_found", "no such resource")
        return Response(files[name], media_type=ASSETS[name], headers=HEADERS)

    app.add_api_route("/ui/static/{name}", asset, methods=["GET"], include_in_schema=False)


__all__ = ["add_playground", "PAGES", "ASSETS"]
