"""One exit-code contract for every command: 0 success, 1 findings or invalid input, 2 usage errors."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from guard import demo
from guard.cli import exitcodes
from tests.cli.conftest import BAD, BAD_TYPES, Run, template

POLICY = str(Path(demo.__file__).parent / "policy.yaml")
OK, BAD_INPUT, USAGE = exitcodes.OK, exitcodes.INVALID_INPUT, exitcodes.USAGE
NOW = demo.NOW.isoformat()


@pytest.fixture
def payload(tmp_path: Path) -> Path:
    p = tmp_path / "payload.json"
    p.write_text(json.dumps(demo.payloads()["answer"]))
    return p


@pytest.fixture
def db(sqlite_demo) -> str:
    return sqlite_demo[0]


def test_contract_constants() -> None:
    assert (OK, exitcodes.FINDINGS, BAD_INPUT, USAGE) == (0, 1, 1, 2)


def test_check(cli: Run, payload: Path, db: str, tmp_path: Path) -> None:
    base = ("check", payload, "--policy", POLICY, "--db", db, "--principal", demo.PRINCIPAL)
    code, out, _ = cli(*base, "--now", NOW)
    assert code == OK and json.loads(out)["action"] == "answer"
    code, _, err = cli(*base, "--now", "yesterday")
    assert code == USAGE and "--now" in err
    (tmp_path / "broken.json").write_text("{not json")
    assert cli("check", tmp_path / "broken.json", "--policy", POLICY, "--db", db)[0] == BAD_INPUT
    assert cli("check", tmp_path / "absent.json", "--policy", POLICY, "--db", db)[0] == BAD_INPUT
    assert cli("check", payload, "--db", db)[0] == USAGE  # no --policy


def test_database_urls_that_cannot_work_say_what_was_meant(cli: Run, payload: Path, db: str, tmp_path: Path) -> None:
    base = ("check", payload, "--policy", POLICY, "--db")
    real = Path(db.removeprefix("sqlite:///"))
    code, _, err = cli(*base, f"sqlite:///{real.with_name('recrods.db')}")
    assert code == BAD_INPUT and "no SQLite database file" in err and f"did you mean '{real}'" in err
    assert not real.with_name("recrods.db").exists()  # never created
    code, _, err = cli(*base, "shop.db")
    assert code == USAGE and "did you mean sqlite:///shop.db?" in err
    code, _, err = cli(*base, "postgres://app:secret@db.example/records")
    assert code == USAGE and "did you mean postgresql+psycopg://app:***@db.example/records?" in err
    assert "secret" not in err
    code, _, err = cli(*base, "mysql://root@127.0.0.1/test")
    assert code == USAGE and "did you mean mysql+pymysql://root@127.0.0.1/test?" in err


def test_sqlite_is_opened_read_only(cli: Run, payload: Path, db: str) -> None:
    path = Path(db.removeprefix("sqlite:///"))
    before = path.stat().st_mtime_ns, path.stat().st_size
    assert cli("check", payload, "--policy", POLICY, "--db", db, "--principal", demo.PRINCIPAL, "--now", NOW)[0] == OK
    assert (path.stat().st_mtime_ns, path.stat().st_size) == before


def test_run_and_audit_of_its_log(cli: Run, payload: Path, db: str, tmp_path: Path) -> None:
    log = tmp_path / "gate.jsonl"
    base = ("run", payload, "--policy", POLICY, "--db", db, "--principal", demo.PRINCIPAL)
    assert cli(*base, "--domain", "orders", "--log", log, "--now", NOW)[0] == OK
    code, out, err = cli("audit", log, "--policy", POLICY, "--db", db)
    assert code == BAD_INPUT and json.loads(out)["items"] == 0
    assert "no payload events" in err and "--log-payloads" in err
    assert cli(*base, "--domain", "orders", "--log", log, "--log-payloads")[0] == OK
    code, out, _ = cli("audit", log, "--policy", POLICY, "--db", db, "--domain", "orders", "--now", NOW)
    assert code == OK and json.loads(out)["actions"] == {"answer": 1}
    code, _, err = cli(*base, "--domain", "Orders")
    assert code == USAGE and "did you mean 'orders'?" in err
    assert cli(*base, "--log-payloads")[0] == USAGE  # nothing to log to
    assert cli(*base, "--now", "yesterday")[0] == USAGE
    assert cli(*base, "--model", tmp_path / "absent.joblib", "--domain", "orders")[0] == BAD_INPUT
    (tmp_path / "broken.json").write_text("[1, 2")
    code, out, err = cli("run", tmp_path / "broken.json", "--policy", POLICY, "--db", db)
    assert code == BAD_INPUT and out == "" and "invalid JSON" in err  # as guard check


def test_audit(cli: Run, payload: Path, db: str, tmp_path: Path) -> None:
    folder = tmp_path / "items"
    folder.mkdir()
    (folder / "p.json").write_text(payload.read_text())
    template(folder / "t.txt")
    (folder / "requirements.txt").write_text("requests\n")
    (folder / "package.json").write_text('{"name": "x"}')
    base = ("audit", "--policy", POLICY, "--db", db, "--domain", "orders", "--principal", demo.PRINCIPAL)
    code, out, _ = cli(*base, folder, "--now", NOW)
    assert code == OK
    summary = json.loads(out)
    assert summary["items"] == 2 and summary["actions"] == {"answer": 1, "lint_ok": 1}
    assert cli(*base, folder, "--jobs", "0")[0] == USAGE
    assert cli(*base, folder, "--now", "yesterday")[0] == USAGE
    assert cli(*base, folder, "--domain", "nope")[0] == USAGE
    assert cli(*base, tmp_path / "absent.jsonl")[0] == BAD_INPUT
    assert cli(*base, folder, "--model", tmp_path / "absent.joblib")[0] == BAD_INPUT
    grammar = tmp_path / "lex"
    grammar.mkdir()
    assert cli(*base, folder, "--grammar-dir", grammar)[0] == OK


def test_monitor(cli: Run, tmp_path: Path) -> None:
    log = tmp_path / "guard.jsonl"
    log.write_text(json.dumps({"event": "decision", "ts": "2026-01-01T00:00:00Z", "action": "answer"}) + "\n")
    assert cli("monitor", log)[0] == OK
    code, _, err = cli("monitor", log, "--window", "1hour")
    assert code == USAGE and "--window" in err or "1hour" in err
    assert cli("monitor", log, "--baseline-from", "yesterday", "--baseline-to", "today")[0] == USAGE
    assert cli("monitor", log, "--format", "xml")[0] == USAGE
    assert cli("monitor", tmp_path / "absent.jsonl")[0] == BAD_INPUT


def test_lint(cli: Run, tmp_path: Path) -> None:
    good = template(tmp_path / "good.txt")
    bad = template(tmp_path / "bad.txt", BAD, BAD_TYPES)
    base = ("-d", "orders", "--isolated", "--no-freetext")
    assert cli("lint", good, *base)[0] == OK
    assert cli("lint", bad, *base)[0] == exitcodes.FINDINGS
    (tmp_path / "broken.json").write_text('{"answer_template": ')
    code, out, _ = cli("lint", tmp_path / "broken.json", good, *base)
    assert code == BAD_INPUT and "1 file checked" in out and "1 file could not be checked" in out
    code, out, err = cli("lint", "nodir", *base, cwd=tmp_path)
    assert code == BAD_INPUT and out == "" and "nodir: no such file or directory" in err
    assert cli("lint", good, *base, "--format", "xml")[0] == USAGE
    assert cli("lint", good, "--isolated")[0] == USAGE  # no domain
    assert cli("lint", good, *base, "--max-prose-per-slot", "-1")[0] == USAGE
    empty = tmp_path / "empty"
    empty.mkdir()
    assert cli("lint", empty, *base)[0] == USAGE


def test_schema(cli: Run, tmp_path: Path) -> None:
    code, out, _ = cli("schema", "--policy", POLICY)
    assert code == OK and json.loads(out)
    (tmp_path / "p.yaml").write_text("entities:\n  order:\n    feilds: {}\n")
    code, _, err = cli("schema", "--policy", tmp_path / "p.yaml")
    assert code == BAD_INPUT and "did you mean 'fields'?" in err
    assert cli("schema")[0] == USAGE


def test_rules(cli: Run) -> None:
    assert cli("rules")[0] == OK
    assert cli("rules", "S201")[0] == OK
    assert cli("rules", "S299")[0] == USAGE
    assert cli("rules", "--format", "xml")[0] == USAGE


def test_grammars(cli: Run) -> None:
    assert cli("grammars", "list")[0] == OK
    assert cli("grammars", "show", "nope")[0] == USAGE


def test_classify(cli: Run, tmp_path: Path) -> None:
    f = tmp_path / "s.txt"
    f.write_text("Your order shipped.\n")
    assert cli("classify", f)[0] == OK
    assert cli("classify", f, "--format", "xml")[0] == USAGE
    f.write_bytes(b"caf\xe9\n")
    assert cli("classify", f)[0] == BAD_INPUT


def test_train(cli: Run, tmp_path: Path) -> None:
    assert cli("train", "--corpus", tmp_path / "absent", "--out", tmp_path / "m.joblib", "--no-progress")[0] == (
        BAD_INPUT
    )
    assert cli("train", "--folds", "many")[0] == USAGE


def test_shapes(cli: Run, tmp_path: Path) -> None:
    t = template(tmp_path / "t.txt")
    assert cli("shapes", "suggest", t, "-d", "orders", "--no-freetext")[0] == OK
    assert cli("shapes", "suggest", t, "-d", "nope", "--no-freetext")[0] == USAGE
    assert cli("shapes", "suggest", t, "-d", "orders", "--grammar-dir", tmp_path / "none", "--no-freetext")[0] == USAGE
    assert cli("shapes", "suggest", t, "--no-freetext")[0] == USAGE  # no --domain
    (tmp_path / "latin1.txt").write_bytes(b"Your order {order_id} is caf\xe9.\n")
    (tmp_path / "broken.json").write_text("{not json")
    for bad in ("latin1.txt", "broken.json", "absent.txt"):
        code, out, err = cli("shapes", "suggest", tmp_path / bad, "-d", "orders", "--no-freetext")
        assert (code, out) == (BAD_INPUT, ""), bad
        assert err.startswith("guard: error:") and "Traceback" not in err


def test_demo_and_the_entry_point(cli: Run, tmp_path: Path) -> None:
    assert cli("demo", "--db", f"sqlite:///{tmp_path / 'd.db'}", "--orders", "10")[0] == OK
    assert cli("--version")[0] == OK
    assert cli("no-such-command")[0] == USAGE
