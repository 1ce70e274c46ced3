"""Shared fixtures: the demo system of record on real SQLite, PostgreSQL and MariaDB servers.

A server that cannot be reached fails the test run instead of skipping it: the
suite's promise is that it ran against all three.
"""

from __future__ import annotations

import os

import pytest
import sqlalchemy as sa

PG_ADMIN = os.environ.get("GUARD_TEST_PG", "postgresql+psycopg://postgres@127.0.0.1:5432/test")
MARIA_ADMIN = os.environ.get("GUARD_TEST_MARIADB", "mysql+pymysql://root@127.0.0.1:3306/test")
BACKENDS = ["sqlite", "postgresql", "mariadb"]


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
    name = f"guard_{tag}_{worker}".lower()
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
    from guard.store import RecordStore

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
    from guard.store import RecordStore

    url = f"sqlite:///{tmp_path_factory.mktemp('sqlite_demo') / 'records.db'}"
    demo.build(url, n_orders=600, n_customers=200)
    policy = demo.policy()
    store = RecordStore(url, policy)
    yield url, policy, store
    store.close()
