"""serve.yaml is checked whole at start: every mistake is a ConfigError naming its key; keys are stored hashed."""

from __future__ import annotations

import hashlib

import pytest
import yaml

from guard.cli.main import main
from guard.errors import ConfigError
from guard.server.config import hash_key, load_serve_config
from tests.server.conftest import write_config


@pytest.fixture()
def config(tmp_path, sqlite_demo):
    path = write_config(tmp_path, sqlite_demo[0])
    return path, yaml.safe_load(path.read_text())


def problems_of(path, data) -> dict[str, str]:
    path.write_text(yaml.safe_dump(data))
    with pytest.raises(ConfigError) as info:
        load_serve_config(path)
    return {str(p.location): p.message for p in info.value.problems}


def test_the_test_config_loads(config):
    cfg = load_serve_config(config[0])
    assert set(cfg.policies) == {"orders", "customers"} and cfg.principal_header == "X-Guard-Principal"
    assert cfg.policies["customers"].policy == config[0].parent / "customers.yaml"


@pytest.mark.parametrize(
    ("change", "where", "says"),
    [
        (
            lambda d: d["keys"]["shop"]["policies"].append("billing"),
            "keys.shop.policies[1]",
            "no policy named 'billing'",
        ),
        (lambda d: d["keys"]["crm"]["domains"].append("travel"), "keys.crm.domains[1]", "no policy serves domain"),
        (lambda d: d["keys"]["shop"].update(hash="plain-text-key"), "keys.shop.hash", "sha256"),
        (lambda d: d["keys"]["shop"].update(hash=d["keys"]["crm"]["hash"]), "keys.shop.hash", "same key hash"),
        (lambda d: d["keys"]["shop"].update(rate="lots"), "keys.shop.rate", "not a rate"),
        (lambda d: d["keys"]["shop"].update(role="admin"), "keys.shop.role", "Extra inputs"),
        (lambda d: d["policies"]["orders"]["domains"].append("Orders"), "policies.orders.domains[1]", "unknown domain"),
        (lambda d: d["policies"]["orders"].update(policy="missing.yaml"), "policies.orders.policy", "does not exist"),
        (lambda d: d["policies"]["orders"].pop("db"), "policies.orders.db", "Field required"),
        (lambda d: d["policies"]["orders"].update(statement_timeout=0), "policies.orders.statement_timeout", "greater"),
        (lambda d: d["limits"].update(max_body_bytes=10), "limits.max_body_bytes", "greater"),
        (lambda d: d["limits"].update(rate="5/fortnight"), "limits.rate", "not a rate"),
        (lambda d: d.update(principal_header="Authorization"), "principal_header", "header name"),
        (lambda d: d.update(classifier="nowhere.joblib"), "classifier", "does not exist"),
        (lambda d: d.update(proxy={"upstream": "ftp://x"}), "proxy.upstream", "pattern"),
        (lambda d: d.update(keys={}), "keys", "at least 1"),
    ],
)
def test_each_mistake_names_its_key(config, change, where, says):
    path, data = config
    change(data)
    found = problems_of(path, data)
    assert where in found, found
    assert says in found[where]


def test_every_problem_is_reported_at_once(config):
    path, data = config
    data["keys"]["shop"]["policies"].append("nope")
    data["keys"]["crm"]["rate"] = "often"
    assert {"keys.shop.policies[1]", "keys.crm.rate"} <= set(problems_of(path, data))


def test_not_a_mapping_or_not_yaml(tmp_path):
    (tmp_path / "a.yaml").write_text("- 1\n")
    (tmp_path / "b.yaml").write_text("a: [\n")
    for name in ("a.yaml", "b.yaml", "missing.yaml"):
        with pytest.raises(ConfigError) as info:
            load_serve_config(tmp_path / name)
        assert info.value.location.endswith(name)


def test_keys_are_stored_as_sha256():
    assert hash_key("gk_abc") == "sha256:" + hashlib.sha256(b"gk_abc").hexdigest()


def test_hash_key_command(capsys):
    assert main(["serve", "hash-key", "--key", "gk_abc"]) == 0
    assert capsys.readouterr().out.strip() == hash_key("gk_abc")
    assert main(["serve", "hash-key", "--new"]) == 0
    key, digest = (line.split(":", 1)[1].strip() for line in capsys.readouterr().out.splitlines())
    assert key.startswith("gk_") and len(key) > 40 and digest == hash_key(key)


def test_serve_without_or_with_a_bad_config_is_one_line(tmp_path, capsys):
    assert main(["serve"]) == 2
    assert "--config" in capsys.readouterr().err
    (tmp_path / "serve.yaml").write_text("policies: {}\nkeys: {}\n")
    assert main(["serve", "--config", str(tmp_path / "serve.yaml")]) == 1
    err = capsys.readouterr().err
    assert "policies: Dictionary should have at least 1 item" in err and "Traceback" not in err


def test_the_example_config_is_valid(tmp_path):
    """deploy/serve/serve.example.yaml, with its policy file and gate config made to exist."""
    from importlib import resources
    from pathlib import Path

    example = Path(__file__).resolve().parents[2] / "deploy" / "serve" / "serve.example.yaml"
    data = yaml.safe_load(example.read_text())
    (tmp_path / "policies").mkdir()
    (tmp_path / "policies" / "orders.yaml").write_text((resources.files("guard.demo") / "policy.yaml").read_text())
    (tmp_path / "gate.yaml").write_text("{}\n")
    data["log"] = "events.jsonl"
    cfg = load_serve_config(data, base=tmp_path)
    assert cfg.keys["storefront"].hash == hash_key("gk_example_do_not_use")
    assert cfg.proxy is not None and cfg.proxy.upstream.endswith("/v1")
