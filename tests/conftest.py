"""Shared fixtures: the demo system of record on real SQLite, PostgreSQL and MariaDB servers.

A server that cannot be reached fails the test run instead of skipping it: the
suite's promise is that it ran against all three.
"""

from __future__ import annotations

import asyncio
import os
import shutil
from pathlib import Path

import pytest
import sqlalchemy as sa

PG_ADMIN = os.environ.get("GUARD_TEST_PG", "postgresql+psycopg://postgres@127.0.0.1:5432/test")
MARIA_ADMIN = os.environ.get("GUARD_TEST_MARIADB", "mysql+pymysql://root@127.0.0.1:3306/test")
ALL_BACKENDS = ("sqlite", "postgresql", "mariadb")
BACKENDS = [b.strip() for b in os.environ.get("GUARD_TEST_BACKENDS", ",".join(ALL_BACKENDS)).split(",") if b.strip()]
"""Backends to run against: all three by default and always in CI; ``GUARD_TEST_BACKENDS=sqlite`` runs locally
without the servers (tests that need a server are then deselected, never skipped)."""
_unknown = set(BACKENDS) - set(ALL_BACKENDS)
if _unknown or not BACKENDS:
    raise pytest.UsageError(
        f"GUARD_TEST_BACKENDS names unknown backends {sorted(_unknown)}; use {', '.join(ALL_BACKENDS)}"
    )
if os.environ.get("CI") and set(BACKENDS) != set(ALL_BACKENDS):
    raise pytest.UsageError("CI runs every backend: unset GUARD_TEST_BACKENDS")
TAG = os.environ.get("GUARD_TEST_DB_TAG", "")
"""Prefix for server-side test databases, so two checkouts can run the suite on one machine at once."""


def _worker(request: pytest.FixtureRequest) -> str:
    return os.environ.get("PYTEST_XDIST_WORKER", "main")


def _reach(url: str) -> sa.Engine:
    engine = sa.create_engine(url, pool_pre_ping=True)
    try:
        with engine.connect() as conn:
            conn.execute(sa.text("SELECT 1"))
    except sa.exc.SQLAlchemyError as exc:
        pytest.fail(f"database server not reachable at {url}: {exc.__class__.__name__}: {exc}", pytrace=False)
    return engine


def backend_url(backend: str, tmp_path_factory: pytest.TempPathFactory, worker: str, tag: str = "demo") -> str:
    """A fresh, isolated database for this worker and tag on the given backend."""
    name = f"guard_{TAG}{tag}_{worker}".lower()
    if backend == "sqlite":
        return f"sqlite:///{tmp_path_factory.mktemp(name) / 'records.db'}"
    if backend == "postgresql":
        admin = _reach(PG_ADMIN)
        with admin.begin() as conn:
            conn.execute(sa.text(f'DROP SCHEMA IF EXISTS "{name}" CASCADE'))
            conn.execute(sa.text(f'CREATE SCHEMA "{name}"'))
        admin.dispose()
        return f"{PG_ADMIN}?options=-csearch_path%3D{name}"
    if backend == "mariadb":
        admin = _reach(MARIA_ADMIN)
        with admin.begin() as conn:
            conn.execute(sa.text(f"DROP DATABASE IF EXISTS `{name}`"))
            conn.execute(sa.text(f"CREATE DATABASE `{name}`"))
        admin.dispose()
        return MARIA_ADMIN.rsplit("/", 1)[0] + f"/{name}"
    raise ValueError(backend)


@pytest.fixture(scope="session", params=BACKENDS)
def demo_db(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory):
    """(url, policy, store) with the demo data, one per backend."""
    from guard import demo
    from guard.records.store import RecordStore

    url = backend_url(request.param, tmp_path_factory, _worker(request))
    engine = _reach(url)
    demo.build(engine, n_orders=600, n_customers=200)
    engine.dispose()
    policy = demo.policy()
    store = RecordStore(url, policy)
    yield url, policy, store
    store.close()


@pytest.fixture(scope="session")
def sqlite_demo(tmp_path_factory: pytest.TempPathFactory):
    """(url, policy, store) on SQLite only, for tests about logic rather than backends."""
    from guard import demo
    from guard.records.store import RecordStore

    url = f"sqlite:///{tmp_path_factory.mktemp('sqlite_demo') / 'records.db'}"
    demo.build(url, n_orders=600, n_customers=200)
    policy = demo.policy()
    store = RecordStore(url, policy)
    yield url, policy, store
    store.close()


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "backend(name): the test needs this database backend's server")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Deselect (not skip) the tests of backends outside GUARD_TEST_BACKENDS."""
    excluded = set(ALL_BACKENDS) - set(BACKENDS)
    if not excluded:
        return
    keep, drop = [], []
    for item in items:
        params = getattr(getattr(item, "callspec", None), "params", {})
        wanted = {v for v in params.values() if isinstance(v, str)} | {
            m.args[0] for m in item.iter_markers("backend") if m.args
        }
        (drop if wanted & excluded else keep).append(item)
    if drop:
        config.hook.pytest_deselected(items=drop)
        items[:] = keep


LOCKERS = Path(__file__).resolve().parent / "data" / "lexicons" / "lockers.yaml"
"""A user's own small lexicon (domain ``lockers``), shared by the CLI, export, suggestion and config tests."""


@pytest.fixture
def lockers_dir(tmp_path: Path) -> Path:
    """A grammar directory of its own holding ``lockers.yaml`` (a copy: a test may write to it)."""
    d = tmp_path / "lexicons"
    d.mkdir()
    shutil.copyfile(LOCKERS, d / "lockers.yaml")
    return d


@pytest.fixture()
def loop():
    """A fresh event loop for tests that drive the async API by hand (closed afterwards)."""
    loop = asyncio.new_event_loop()
    yield loop
    loop.close()
