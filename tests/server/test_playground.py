"""The playground at /ui in a real headless browser: Debian's Chromium driven by Playwright.

The server runs with the shipped classifier and a log, so the page shows findings with carets, the nearest
approved wording and the classifier's evidence, and the monitor page reads what the server logged. Chromium is
required, not optional: without it these tests fail (``.ci/run`` installs it).
"""

from __future__ import annotations

import json
from pathlib import Path

import httpx
import pytest
from playwright.sync_api import Page, expect, sync_playwright

from guard import demo
from guard.server.app import create_app
from guard.server.config import load_serve_config
from tests.server.conftest import KEYS, Served, start, stop, write_config

CHROMIUM = Path("/usr/bin/chromium")
ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
SHOTS = Path("/tmp")
TEMPLATE = "Your order {order_id} shiped on {ship_date}.\nIt is cheaper than before because of the sale."


@pytest.fixture(scope="module")
def ui_server(sqlite_demo, tmp_path_factory):
    """The demo records on SQLite, with the shipped classifier and the gate's events logged."""
    tmp = tmp_path_factory.mktemp("ui")
    cfg = load_serve_config(write_config(tmp, sqlite_demo[0], classifier="auto", gate_config=None, log="guard.jsonl"))
    app = create_app(cfg)
    base, server, thread = start(app)
    yield Served(base, app)
    stop(server, thread)


@pytest.fixture(scope="module")
def browser():
    assert CHROMIUM.exists(), "Chromium is required: apt-get install chromium (.ci/run does)"
    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=str(CHROMIUM), headless=True, args=ARGS)
        yield b
        b.close()


@pytest.fixture()
def page(browser):
    context = browser.new_context(viewport={"width": 1100, "height": 900})
    pg = context.new_page()
    errors: list[str] = []
    pg.on("pageerror", lambda e: errors.append(str(e)))
    yield pg
    context.close()
    assert not errors, errors  # no script error on any page


def open_playground(page: Page, base: str) -> None:
    page.goto(base + "/ui")
    page.fill("#key", KEYS["shop"])
    expect(page.locator("#domain option")).to_have_text(["orders"])


def test_findings_carets_nearest_wording_and_spans_appear_as_the_author_types(ui_server, page):
    open_playground(page, ui_server.url)
    page.fill("#slots", "order_id: identifier, ship_date: date")
    page.locator("#input").press_sequentially(TEMPLATE)
    expect(page.locator('.finding[data-code="S201"]')).to_have_count(2)  # one per sentence
    finding = page.locator('.finding[data-code="S201"]', has=page.locator(".where", has_text="line 1,"))
    first_line = TEMPLATE.split("\n")[0]
    caret = " " * first_line.index("shiped") + "^" * len("shiped")
    assert finding.locator("pre.context").inner_text() == first_line + "\n" + caret
    expect(finding.locator(".where")).to_have_text("line 1, column 23")
    expect(finding.locator("ul.nearest li").first).to_have_text("Your order {order_id} shipped on {ship_date}.")
    # the second sentence's comparison: a free-text finding with its caret on line 2, and the classifier's span
    freetext = page.locator('.finding[data-code="T301"]')
    expect(freetext).to_have_count(1)
    assert freetext.locator("pre.context").inner_text().split("\n")[0] == TEMPLATE.split("\n")[1]
    expect(page.locator('.sentence mark[data-labels~="comparative"]').first).to_contain_text("cheaper")
    expect(page.locator('.sentence mark[data-labels~="causal"]').first).to_contain_text("because")
    page.screenshot(path=str(SHOTS / "guard-playground.png"), full_page=True)


def test_a_pasted_payload_is_linted_with_its_claims_slot_types(ui_server, page):
    open_playground(page, ui_server.url)
    payload = demo.payloads()["answer"]
    page.fill("#input", json.dumps(payload))
    expect(page.locator("#findings .ok")).to_have_text("No findings: every sentence is approved wording.")
    expect(page.locator(".sentence")).to_have_count(2)
    expect(page.locator(".sentence .shape").first).to_contain_text("approved shape: ")
    expect(page.locator("#status")).to_contain_text("Payload template: 0 finding(s)")


def test_payload_text_is_shown_as_text_never_run_as_markup(ui_server, page):
    open_playground(page, ui_server.url)
    hostile = "Hi <img src=x onerror=\"document.title='pwned'\"><b id=injected>there</b>."
    page.fill("#input", hostile)
    expect(page.locator(".sentence")).not_to_have_count(0)
    assert page.locator("#injected").count() == 0 and page.locator("main img").count() == 0
    expect(page.locator(".sentence .text").first).to_contain_text("<b id=injected>")
    assert page.title() == "guard playground"


def test_a_wrong_key_is_told_plainly(ui_server, page):
    page.goto(ui_server.url + "/ui")
    page.fill("#key", "gk_not_a_key")
    expect(page.locator("#status")).to_have_text("the API key is not valid")
    expect(page.locator("#status")).to_have_attribute("data-kind", "error")


def test_the_monitor_page_reports_the_servers_own_log(ui_server, page):
    headers = {"Authorization": f"Bearer {KEYS['shop']}", "X-Guard-Principal": demo.PRINCIPAL}
    with httpx.Client(base_url=ui_server.url, headers=headers, timeout=30) as c:
        for name in ("answer", "answer", "regenerate", "refuse"):
            r = c.post("/v1/run", params={"policy": "orders", "now": demo.NOW.isoformat()}, json=demo.payloads()[name])
            assert r.status_code == 200, r.text
    open_playground(page, ui_server.url)  # the key is kept for the tab
    page.click("nav >> text=Monitor")
    expect(page.locator("#key")).to_have_value(KEYS["shop"])
    expect(page).to_have_title("guard monitor")
    expect(page.locator('nav a[aria-current="page"]')).to_have_text("Monitor")
    expect(page.locator("#status")).to_contain_text("events read")
    rows = page.locator("#fields tbody tr")
    expect(rows.first).to_be_visible()
    fields = {r.split("\t")[0]: r.split("\t")[1:] for r in rows.all_inner_texts()}
    assert fields["order.total_minor"] == ["1", "0 (0.0%)", "1 (100.0%)", "0 (0.0%)", "0 (0.0%)", "0"], fields
    assert "order.shipped_at" in fields, fields
    decisions = page.locator("#decisions tbody tr").first.inner_text().split("\t")
    assert [int(x) for x in decisions[1:]] == [2, 1, 1], decisions  # answer, regenerate, refuse
    page.screenshot(path=str(SHOTS / "guard-monitor.png"), full_page=True)


def test_pages_forbid_inline_script_and_framing(ui_server):
    for path in ("/ui", "/ui/monitor", "/ui/static/playground.js"):
        r = httpx.get(ui_server.url + path)
        assert r.status_code == 200
        csp = r.headers["content-security-policy"]
        assert "script-src 'self'" in csp and "frame-ancestors 'none'" in csp
        assert r.headers["x-content-type-options"] == "nosniff"
    assert httpx.get(ui_server.url + "/ui/static/../app.py").status_code == 404
    assert httpx.get(ui_server.url + "/ui/static/serve.yaml").status_code == 404


def test_the_monitor_api_keeps_to_the_keys_domains_and_hides_the_servers_paths(ui_server, served_sqlite):
    def get(base: str, key: str, **params: str) -> httpx.Response:
        return httpx.get(base + "/v1/monitor", params=params, headers={"Authorization": f"Bearer {KEYS[key]}"})

    r = get(ui_server.url, "crm", domain="orders")
    assert r.status_code == 403 and r.json()["problems"][0]["location"]["part"] == "query.domain"
    r = get(ui_server.url, "shop", window="10s")
    assert r.status_code == 400 and r.json()["problems"][0]["location"]["part"] == "query.window"
    r = get(ui_server.url, "shop", window="an hour")
    assert r.status_code == 400 and r.json()["code"] == "option"
    r = get(ui_server.url, "shop")
    assert r.status_code == 200 and r.json()["config"]["domain"] == "orders"
    assert set(r.json()["read"]) == {"lines", "events", "malformed"}
    r = get(served_sqlite.url, "shop")  # a server with no log
    assert r.status_code == 404 and r.json()["code"] == "not_found"


def test_carets_count_characters_as_the_server_does_past_astral_characters(ui_server, page):
    """The server's offsets count code points; an emoji is two UTF-16 units, so indexing the JS string would
    put every later caret one column off."""
    open_playground(page, ui_server.url)
    page.fill("#slots", "order_id: identifier, ship_date: date")
    text = "Thanks 😀 again.\nYour order {order_id} shiped on {ship_date}."
    page.fill("#input", text)
    finding = page.locator('.finding[data-code="S201"]', has=page.locator(".where", has_text="line 2,"))
    expect(finding).to_have_count(1)
    line = text.split("\n")[1]
    assert finding.locator("pre.context").inner_text() == line + "\n" + " " * line.index("shiped") + "^" * 6


def test_ui_false_serves_no_pages(ui_server):
    cfg = ui_server.app.state.guard.cfg.model_copy(update={"ui": False, "classifier": "none", "log": None})
    app = create_app(cfg)  # its routes only: no lifespan runs
    paths = {getattr(r, "path", "") for r in app.routes}
    assert "/v1/monitor" in paths and not any(p.startswith("/ui") for p in paths)
