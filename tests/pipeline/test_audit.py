"""Bulk re-checking: the same records sequentially, with joblib processes and on a Dask cluster."""

from __future__ import annotations

import copy
import json
import random
from pathlib import Path

import pytest

from guard import demo
from guard.audit import AuditSettings, audit
from guard.cli.main import main
from guard.observe.events import EventLog
from guard.pipeline import Guard

CFG = {
    "domains": {"orders": {"stages": {"format": "enforce", "shape": "enforce", "freetext": "off", "ratio": "report"}}}
}


def payloads(n: int, seed: int = 3) -> list[dict]:
    rng = random.Random(seed)
    base = demo.payloads()
    out = []
    for _i in range(n):
        p = copy.deepcopy(base[rng.choice(["answer", "refuse", "regenerate"])])
        if rng.random() < 0.2:
            p["answer_template"] += " This is faster than usual."
        if rng.random() < 0.1:
            p["claims"][0]["entity_id"] = demo.order_id(rng.randrange(600))
        out.append(p)
    return out


@pytest.fixture(scope="module")
def inputs(tmp_path_factory):
    d = tmp_path_factory.mktemp("audit")
    items = payloads(240)
    (d / "a.jsonl").write_text("".join(json.dumps(p) + "\n" for p in items[:200]) + "not json\n")
    (d / "b.json").write_text(json.dumps(items[200:]))
    (d / "t.txt").write_text("Your order {order_id} shipped on {ship_date}.")
    (d / "t.txt.slots.yaml").write_text("order_id: identifier\nship_date: date\n")
    return [str(d / "a.jsonl"), str(d / "b.json"), str(d / "t.txt")]


@pytest.fixture(scope="module")
def settings(sqlite_demo):
    url, policy, _ = sqlite_demo
    return AuditSettings(
        policy=policy.model_dump(mode="json", exclude_none=True),
        db=url,
        domain="orders",
        config=CFG,
        now=demo.NOW.isoformat(),
        default_principal=demo.PRINCIPAL,
    )


def test_sequential_audit_matches_the_gate(inputs, settings, sqlite_demo):
    report = audit(inputs, settings)
    assert len(report.records) == 242
    g = Guard(sqlite_demo[1], sqlite_demo[2], domain="orders", config=CFG)
    for rec, p in zip(report.records[:200], payloads(240)[:200]):
        assert rec["action"] == g.run(p, principal=demo.PRINCIPAL, now=demo.NOW).action.value
    assert report.records[200]["action"] == "invalid"
    assert report.records[-1] == {"source": inputs[2], "index": 1, "kind": "template", "ok": True, "findings": []}
    s = report.summary()
    assert s["items"] == 242 and sum(s["actions"].values()) == 242


def test_joblib_and_dask_give_identical_records(inputs, settings):
    from dask.distributed import Client, LocalCluster

    seq = audit(inputs, settings, chunk_size=25).records
    par = audit(inputs, settings, jobs=2, chunk_size=25).records
    assert par == seq
    with (
        LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None) as cluster,
        Client(cluster) as client,
    ):
        dsk = audit(inputs, settings, dask=client, chunk_size=25).records
    assert dsk == seq


def test_audit_reads_payload_events_from_the_gate_log(sqlite_demo, tmp_path, settings):
    url, policy, store = sqlite_demo
    log = tmp_path / "g.jsonl"
    g = Guard(policy, store, domain="orders", config=CFG, log=EventLog(log), log_payloads=True)
    for p in payloads(30):
        g.run(p, principal=demo.PRINCIPAL, now=demo.NOW)
    g.log.close()
    import gzip
    import shutil

    with open(log, "rb") as src, gzip.open(tmp_path / "g.jsonl.1.gz", "wb") as dst:
        shutil.copyfileobj(src, dst)
    report = audit([log], settings)
    assert len(report.records) == 30
    rotated = audit([tmp_path / "g.jsonl.1.gz"], settings)
    assert [r["action"] for r in rotated.records] == [r["action"] for r in report.records]
    assert [r["action"] for r in report.records] == [
        Guard(policy, store, domain="orders", config=CFG).run(p, principal=demo.PRINCIPAL, now=demo.NOW).action.value
        for p in payloads(30)
    ]


def test_cli_audit_and_run(inputs, sqlite_demo, tmp_path, capsys):
    url = sqlite_demo[0]
    policy = str(tmp_path / "p.yaml")
    import yaml

    Path(policy).write_text(yaml.safe_dump(sqlite_demo[1].model_dump(mode="json", exclude_none=True)))
    cfg = tmp_path / "gate.yaml"
    cfg.write_text(yaml.safe_dump(CFG))
    out = tmp_path / "records.jsonl"
    assert (
        main(
            [
                "audit",
                *inputs,
                "--policy",
                policy,
                "--db",
                url,
                "--domain",
                "orders",
                "--config",
                str(cfg),
                "--principal",
                demo.PRINCIPAL,
                "--now",
                demo.NOW.isoformat(),
                "--jobs",
                "2",
                "--out",
                str(out),
            ]
        )
        == 0
    )
    summary = json.loads(capsys.readouterr().out)
    assert summary["items"] == 242 and len(out.read_text().splitlines()) == 242
    pfile = tmp_path / "one.json"
    pfile.write_text(json.dumps(demo.payloads()["answer"]))
    assert (
        main(
            [
                "run",
                str(pfile),
                "--policy",
                policy,
                "--db",
                url,
                "--domain",
                "orders",
                "--config",
                str(cfg),
                "--principal",
                demo.PRINCIPAL,
                "--now",
                demo.NOW.isoformat(),
            ]
        )
        == 0
    )
    assert json.loads(capsys.readouterr().out)["action"] == "answer"
