"""Database faults against the real servers: each gives a refusal that names the cause, never an answer
and never an exception, and the next request after the fault clears is answered without any help.

The slow queries come from a view the policy points at (``slow_orders_<worker>``) whose
select sleeps for as long as a one-row ``knob`` table says, so a test turns
the fault on and off with an UPDATE.
"""

from __future__ import annotations

import contextlib
import sqlite3
import threading
import time
from collections.abc import Callable

import pytest
import sqlalchemy as sa

from guard import demo
from guard.decision import Action
from guard.pipeline import Guard, verify
from guard.records.checker import Status
from guard.records.policy import Policy, load_policy
from guard.records.store import RecordStore
from tests.conftest import backend_url

from .conftest import worker

GATE = {
    "domains": {"orders": {"stages": {"format": "enforce", "shape": "enforce", "freetext": "off", "ratio": "report"}}}
}
CAUSE_TEXT = {
    "timeout": "statement timeout",
    "connection": "could not be reached",
    "locked": "locked",
    "schema": "no longer matches the policy",
}

VIEW = f"slow_orders_{worker()}"
"""Named per xdist worker: the killer finds its query by the view's name, never another worker's."""
SLOW_VIEW = {
    "postgresql": f"CREATE VIEW {VIEW} AS SELECT o.* FROM orders o, (SELECT pg_sleep((SELECT seconds FROM knob))) AS k",
    "mariadb": f"CREATE VIEW {VIEW} AS SELECT o.* FROM orders o WHERE SLEEP((SELECT seconds FROM knob)) = 0",
}
RUNNING = {
    "postgresql": f"SELECT pid FROM pg_stat_activity WHERE state = 'active' AND query LIKE '%{VIEW}%' "
    "AND pid <> pg_backend_pid()",
    "mariadb": f"SELECT id FROM information_schema.processlist WHERE info LIKE '%{VIEW}%' AND id <> connection_id()",
}
KILL = {"postgresql": "SELECT pg_terminate_backend({})", "mariadb": "KILL {}"}


def slow_policy() -> Policy:
    data = demo.policy().model_dump(mode="json", exclude_none=True)
    data["entities"]["order"]["table"] = VIEW
    return load_policy(data)


def ask(policy: Policy, store: RecordStore):
    return verify(demo.payloads()["answer"], policy, store, principal=demo.PRINCIPAL, now=demo.NOW)


def assert_refused(d, cause: str) -> None:
    assert d.action is Action.REFUSE and d.text is None
    assert "because the system of record could not be reached" in d.message
    assert d.results and all(r.status is Status.UNAVAILABLE for r in d.results)
    assert {r.cause for r in d.results} == {cause}
    assert all(
        r.reason.startswith("the system of record could not be reached") and CAUSE_TEXT[cause] in r.reason
        for r in d.results
    )
    assert d.to_dict()["results"][0]["status"] == "unavailable"


@pytest.fixture(scope="module", params=["postgresql", "mariadb"])
def slow_db(request, tmp_path_factory):
    """(backend, url, engine, set_sleep) on a server, with the sleeping view."""
    backend = request.param
    url = backend_url(backend, tmp_path_factory, worker(), "faults")
    engine = demo.build(url, n_orders=60, n_customers=20)
    with engine.begin() as conn:
        conn.execute(sa.text("CREATE TABLE knob (seconds FLOAT)"))
        conn.execute(sa.text("INSERT INTO knob VALUES (0)"))
        conn.execute(sa.text(SLOW_VIEW[backend]))

    def set_sleep(seconds: float) -> None:
        with engine.begin() as conn:
            conn.execute(sa.text("UPDATE knob SET seconds = :s"), {"s": seconds})

    yield backend, url, engine, set_sleep
    engine.dispose()


def kill_when_running(backend: str, admin: sa.Engine, done: list) -> Callable[[], None]:
    def run() -> None:
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            with admin.connect() as conn:
                ids = conn.execute(sa.text(RUNNING[backend])).scalars().all()
                if ids:
                    conn.execute(sa.text(KILL[backend].format(int(ids[0]))))
                    done.append(int(ids[0]))
                    return
            time.sleep(0.02)

    return run


def test_connection_killed_mid_query(slow_db):
    """pg_terminate_backend / KILL on the store's connection while its query runs."""
    backend, url, engine, set_sleep = slow_db
    policy = slow_policy()
    store = RecordStore(url, policy, statement_timeout=30)
    admin = sa.create_engine(url, isolation_level="AUTOCOMMIT")
    try:
        assert ask(policy, store).action is Action.ANSWER
        set_sleep(20)
        killed: list[int] = []
        killer = threading.Thread(target=kill_when_running(backend, admin, killed))
        killer.start()
        d = ask(policy, store)
        killer.join()
        assert killed, "the slow query never showed up to be killed"
        assert_refused(d, "connection")
        set_sleep(0)
        assert ask(policy, store).action is Action.ANSWER
    finally:
        set_sleep(0)
        store.close()
        admin.dispose()


def test_statement_timeout(slow_db):
    backend, url, engine, set_sleep = slow_db
    policy = slow_policy()
    store = RecordStore(url, policy, statement_timeout=0.5)
    try:
        set_sleep(3)
        assert_refused(ask(policy, store), "timeout")
        set_sleep(0)
        assert ask(policy, store).action is Action.ANSWER
    finally:
        set_sleep(0)
        store.close()


def test_statement_timeout_through_the_gate(slow_db, tmp_path):
    """The same fault through Guard.run: logged as unavailable, refused, then answered."""
    from guard.observe.events import EventLog, read_events

    backend, url, engine, set_sleep = slow_db
    log = tmp_path / "guard.jsonl"
    g = Guard(slow_policy(), url, domain="orders", config=GATE, log=EventLog(log), statement_timeout=0.5)
    try:
        set_sleep(3)
        assert_refused(g.run(demo.payloads()["answer"], principal=demo.PRINCIPAL, now=demo.NOW), "timeout")
        set_sleep(0)
        assert g.run(demo.payloads()["answer"], principal=demo.PRINCIPAL, now=demo.NOW).action is Action.ANSWER
    finally:
        set_sleep(0)
        g.close()
    actions = [e["action"] for e in read_events([log]) if e["event"] == "decision"]
    statuses = {e["status"] for e in read_events([log]) if e["event"] == "claim"}
    assert actions == ["refuse", "answer"] and statuses == {"unavailable", "confirmed"}


def test_locked_sqlite_file(tmp_path):
    path = tmp_path / "records.db"
    url = f"sqlite:///{path}"
    demo.build(url, n_orders=60, n_customers=20).dispose()
    policy = demo.policy()
    store = RecordStore(url, policy, statement_timeout=0.2)
    other = sqlite3.connect(path, isolation_level=None)
    try:
        assert ask(policy, store).action is Action.ANSWER
        other.execute("BEGIN EXCLUSIVE")
        assert_refused(ask(policy, store), "locked")
        other.execute("ROLLBACK")
        assert ask(policy, store).action is Action.ANSWER
    finally:
        other.close()
        store.close()


@pytest.mark.parametrize("backend", ["sqlite", "postgresql", "mariadb"])
def test_dropped_column_after_start_up(backend, tmp_path_factory):
    url = backend_url(backend, tmp_path_factory, worker(), "faults_schema")
    engine = demo.build(url, n_orders=60, n_customers=20)
    policy = demo.policy()
    store = RecordStore(url, policy)
    try:
        for _ in range(6):  # past psycopg's prepare threshold, so a cached plan would be in play
            assert ask(policy, store).action is Action.ANSWER
        with engine.begin() as conn:
            conn.execute(sa.text("ALTER TABLE orders DROP COLUMN line_count"))
        assert_refused(ask(policy, store), "schema")
        with engine.begin() as conn:
            conn.execute(sa.text("ALTER TABLE orders ADD COLUMN line_count INTEGER"))
            conn.execute(sa.text("UPDATE orders SET line_count = 3 WHERE id = 'ord_88431'"))
        assert ask(policy, store).action is Action.ANSWER
    finally:
        store.close()
        engine.dispose()


class Relay:
    """A TCP relay in front of a real server, cut and restored by the test: the server goes away, comes back."""

    def __init__(self, target_port: int) -> None:
        import socket

        self._socket = socket
        self.target = target_port
        probe = socket.socket()
        probe.bind(("127.0.0.1", 0))
        self.port = probe.getsockname()[1]
        probe.close()
        self._open: list = []
        self._listener = None

    def start(self) -> None:
        s = self._socket.socket()
        s.setsockopt(self._socket.SOL_SOCKET, self._socket.SO_REUSEADDR, 1)
        s.bind(("127.0.0.1", self.port))
        s.listen(16)
        self._listener = s
        threading.Thread(target=self._accept, args=(s,), daemon=True).start()

    def _accept(self, listener) -> None:
        while True:
            try:
                client, _ = listener.accept()
            except OSError:
                return
            upstream = self._socket.create_connection(("127.0.0.1", self.target))
            self._open += [client, upstream]
            for a, b in ((client, upstream), (upstream, client)):
                threading.Thread(target=self._pump, args=(a, b), daemon=True).start()

    @staticmethod
    def _pump(src, dst) -> None:
        try:
            while data := src.recv(65536):
                dst.sendall(data)
        except OSError:
            pass
        finally:
            for s in (src, dst):
                with contextlib.suppress(OSError):
                    s.close()

    def stop(self) -> None:
        """Refuse new connections and drop every open one, as a server that went down."""
        if self._listener is not None:
            with contextlib.suppress(OSError):  # shutdown wakes the blocked accept(); close alone does not
                self._listener.shutdown(self._socket.SHUT_RDWR)
            self._listener.close()
            self._listener = None
        for s in list(self._open):
            with contextlib.suppress(OSError):
                s.shutdown(self._socket.SHUT_RDWR)
            s.close()
        self._open.clear()


SERVER_PORT = {"postgresql": 5432, "mariadb": 3306}


@pytest.mark.parametrize("backend", ["postgresql", "mariadb"])
def test_server_goes_away_mid_run_and_comes_back(backend, tmp_path_factory):
    url = backend_url(backend, tmp_path_factory, worker(), "faults_relay")
    demo.build(url, n_orders=60, n_customers=20).dispose()
    relay = Relay(SERVER_PORT[backend])
    relay.start()
    policy = demo.policy()
    store = RecordStore(url.replace(f":{SERVER_PORT[backend]}/", f":{relay.port}/"), policy)
    try:
        assert ask(policy, store).action is Action.ANSWER
        relay.stop()
        assert_refused(ask(policy, store), "connection")
        assert_refused(ask(policy, store), "connection")
        relay.start()
        assert ask(policy, store).action is Action.ANSWER
    finally:
        relay.stop()
        store.close()


@pytest.mark.parametrize("backend", ["postgresql", "mariadb"])
def test_server_down_at_start_up_is_checked_once_it_is_up(backend, tmp_path_factory):
    url = backend_url(backend, tmp_path_factory, worker(), "faults_relay")
    demo.build(url, n_orders=60, n_customers=20).dispose()
    relay = Relay(SERVER_PORT[backend])
    policy = demo.policy()
    store = RecordStore(url.replace(f":{SERVER_PORT[backend]}/", f":{relay.port}/"), policy)
    try:
        assert_refused(ask(policy, store), "connection")
        relay.start()
        assert ask(policy, store).action is Action.ANSWER
    finally:
        relay.stop()
        store.close()
