"""The check, schema and demo commands: output, exit codes, no tracebacks."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import jsonschema
import pytest

from guard import demo
from guard.cli.main import main

POLICY = str(Path(demo.__file__).parent / "policy.yaml")


@pytest.fixture()
def payload_file(tmp_path):
    def write(data, name="payload.json"):
        p = tmp_path / name
        p.write_text(data if isinstance(data, str) else json.dumps(data), encoding="utf-8")
        return str(p)

    return write


def test_check_prints_decision_json(sqlite_demo, payload_file, capsys):
    url = sqlite_demo[0]
    code = main(
        [
            "check",
            payload_file(demo.payloads()["answer"]),
            "--policy",
            POLICY,
            "--db",
            url,
            "--principal",
            demo.PRINCIPAL,
            "--now",
            demo.NOW.isoformat(),
        ]
    )
    out = json.loads(capsys.readouterr().out)
    assert code == 0
    assert out["action"] == "answer" and out["text"].startswith("Your order ord_88431 shipped on 30 July 2026")
    assert out["citations"][0]["citation"] == "order:ord_88431#id"


@pytest.mark.parametrize(
    "name,action,keys",
    [
        ("refuse", "refuse", {"message", "unverified"}),
        ("regenerate", "regenerate_from_facts", {"facts", "contradicted"}),
    ],
)
def test_check_other_decisions_exit_zero(sqlite_demo, payload_file, capsys, name, action, keys):
    code = main(
        [
            "check",
            payload_file(demo.payloads()[name]),
            "--policy",
            POLICY,
            "--db",
            sqlite_demo[0],
            "--principal",
            demo.PRINCIPAL,
            "--now",
            demo.NOW.isoformat(),
        ]
    )
    out = json.loads(capsys.readouterr().out)
    assert code == 0 and out["action"] == action and keys <= set(out)


def test_invalid_payload_exit_one_message_on_stderr(sqlite_demo, payload_file, capsys):
    code = main(
        [
            "check",
            payload_file('{"answer_template": "{x.y}", "claims": []}'),
            "--policy",
            POLICY,
            "--db",
            sqlite_demo[0],
        ]
    )
    cap = capsys.readouterr()
    assert code == 1 and cap.out == ""
    assert "F101" in cap.err and "attribute access" in cap.err and "Traceback" not in cap.err


def test_bad_policy_exit_one(sqlite_demo, payload_file, tmp_path, capsys):
    bad = tmp_path / "p.yaml"
    bad.write_text("timezone: Nowhere/Land\nentities: {}\n")
    code = main(["check", payload_file(demo.payloads()["answer"]), "--policy", str(bad), "--db", sqlite_demo[0]])
    err = capsys.readouterr().err
    assert code == 1 and "Nowhere/Land" in err


def test_usage_error_exit_two(capsys):
    assert main(["check"]) == 2
    assert main(["no-such-command"]) == 2


def test_database_down_gives_refuse_not_crash(payload_file, capsys):
    code = main(
        [
            "check",
            payload_file(demo.payloads()["answer"]),
            "--policy",
            POLICY,
            "--db",
            "postgresql+psycopg://nobody@127.0.0.1:1/none",
            "--principal",
            demo.PRINCIPAL,
        ]
    )
    out = json.loads(capsys.readouterr().out)
    assert code == 0 and out["action"] == "refuse"
    assert "system of record could not be reached" in out["message"]
    assert {r["status"] for r in out["results"]} == {"unavailable"}


def test_schema_enums_come_from_policy(capsys):
    assert main(["schema", "--policy", POLICY]) == 0
    schema = json.loads(capsys.readouterr().out)
    jsonschema.Draft202012Validator.check_schema(schema)
    v = jsonschema.Draft202012Validator(schema)
    assert v.is_valid(demo.payloads()["answer"])
    bad = demo.payloads()["answer"]
    bad["claims"][0]["field"] = "password"
    assert not v.is_valid(bad)
    bad["claims"][0].update(field="shipped_at", type="money")
    assert not v.is_valid(bad)


def test_console_script_demo_runs(tmp_path):
    guard = Path(sys.executable).parent / "guard"
    proc = subprocess.run(
        [str(guard), "demo", "--orders", "200", "--db", f"sqlite:///{tmp_path / 'd.db'}"],
        capture_output=True,
        text=True,
        timeout=120,
        env={"COLUMNS": "200", "PATH": "/usr/bin"},
    )
    assert proc.returncode == 0, proc.stderr
    for word in ("answer", "refuse", "regenerate_from_facts", "£1,299.00", "stale", "contradicted"):
        assert word in proc.stdout
