"""schemathesis against the OpenAPI document of a running server: no 5xx, every response as documented.

Cases come from each operation's hypothesis strategy (schemathesis's pytest plugin does not run on this pytest),
and every one goes to the real server on loopback through ``call_and_validate`` with schemathesis's checks.
"""

from __future__ import annotations

import pytest
import schemathesis
from hypothesis import HealthCheck, given, settings

from guard import demo
from tests.server.conftest import KEYS

OPERATIONS = [
    ("/v1/run", "POST"),
    ("/v1/check", "POST"),
    ("/v1/lint", "POST"),
    ("/v1/classify", "POST"),
    ("/v1/schema/{policy}", "GET"),
    ("/v1/grammars", "GET"),
    ("/v1/monitor", "GET"),
    ("/healthz", "GET"),
    ("/readyz", "GET"),
    ("/metrics", "GET"),
]


@pytest.fixture(scope="module")
def api_schema(served_sqlite):
    return schemathesis.openapi.from_url(served_sqlite.url + "/openapi.json")


def test_every_operation_is_fuzzed(api_schema):
    found = {(op.path, op.method.upper()) for op in (r.ok() for r in api_schema.get_all_operations())}
    assert found == set(OPERATIONS)


@pytest.mark.parametrize(("path", "method"), OPERATIONS)
def test_the_api_behaves_as_documented(api_schema, served_sqlite, path, method):
    headers = {"Authorization": f"Bearer {KEYS['fuzz']}", "X-Guard-Principal": demo.PRINCIPAL}

    @given(case=api_schema[path][method].as_strategy())
    @settings(max_examples=30, deadline=None, suppress_health_check=list(HealthCheck))
    def fuzz(case):
        case.call_and_validate(base_url=served_sqlite.url, headers=headers)

    fuzz()
