"""The system of record, read through SQLAlchemy Core.

One statement per entity is built and compiled once at start-up (an expanding
``IN`` over bound ids, plus the row scope when a principal is given), so a
payload costs one round trip per entity whatever its number of claims. Table
and column names come from the policy, checked against the reflected schema;
ids and principals are always bound parameters. Driver errors are translated
into :class:`guard.errors.StoreUnavailable` with a cause a person can read.
"""

from __future__ import annotations

import contextlib
import re
import select
import time
import uuid
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from decimal import Decimal
from functools import lru_cache
from operator import itemgetter
from typing import Any, Protocol, cast

import sqlalchemy as sa
from sqlalchemy import event
from sqlalchemy import exc as sa_exc
from sqlalchemy.engine import Engine

from guard.errors import PolicyError, Problem, StoreUnavailable
from guard.records._coalesce import Coalescer
from guard.records._deadline import WATCHDOG, socket_of
from guard.records.policy import EntityPolicy, Policy
from guard.records.results import UTC_NAMES, aware
from guard.records.types import TYPES, _all

UPDATED_AT = "__updated_at__"
ID = "__id__"
_INT = re.compile(r"[+-]?[0-9]{1,19}")
"""An integer key as text: ASCII digits only (``\\d`` would take ``٤٢`` and ``４２``), matched whole (``$`` would
take ``42\\n``)."""
_INT_MIN, _INT_MAX = -(2**63), 2**63 - 1
"""The range of a 64-bit integer column; a value outside it names no row and would overflow the driver."""
_first = itemgetter(0)
_UUID = re.compile(r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}")
_NUMBER = re.compile(r"[+-]?(?:[0-9]{1,1000}(?:\.[0-9]{0,1000})?|\.[0-9]{1,1000})")
"""A number as text a numeric column can compare: ASCII digits, no exponent (``1e999999`` overflows PostgreSQL)."""
_MARIADB_LATIN1 = "".join(
    chr(b) if b in (0x81, 0x8D, 0x8F, 0x90, 0x9D) else bytes([b]).decode("cp1252") for b in range(256)
)
"""MySQL's ``latin1`` is Windows-1252, with the five bytes that code page leaves undefined as C1 controls."""
_CHARSETS: dict[str, re.Pattern[str]] = {
    "utf8mb3": re.compile("[\U00010000-\U0010ffff]"),
    "utf8": re.compile("[\U00010000-\U0010ffff]"),
    "ucs2": re.compile("[\U00010000-\U0010ffff]"),
    "ascii": re.compile("[^\x00-\x7f]"),
    "latin1": re.compile(f"[^{re.escape(_MARIADB_LATIN1)}]"),
}
"""Characters a MySQL/MariaDB column of these character sets cannot hold: comparing text holding one with such
a column is an error ("Illegal mix of collations"), not a mismatch."""
_SAMPLE = 20
"""Update times read at open to check that a text column holds times."""

_PG_STATES: dict[str, str] = {
    "57014": "timeout",  # query_canceled: statement_timeout
    "3D000": "missing_database",  # invalid_catalog_name
    "42P01": "schema",  # undefined_table
    "42703": "schema",  # undefined_column
    "55P03": "locked",  # lock_not_available
    "40P01": "locked",  # deadlock_detected
    "55006": "locked",  # object_in_use
    "57P01": "connection",  # admin_shutdown (pg_terminate_backend)
    "57P02": "connection",  # crash_shutdown
    "57P03": "connection",  # cannot_connect_now
    "53300": "connection",  # too_many_connections
}
"""PostgreSQL SQLSTATEs guard names a cause for; class ``08`` (connection exception) is connection too."""

_MYSQL_CODES: dict[int, str] = {
    1049: "missing_database",  # ER_BAD_DB_ERROR
    1146: "schema",  # ER_NO_SUCH_TABLE
    1054: "schema",  # ER_BAD_FIELD_ERROR
    1205: "locked",  # ER_LOCK_WAIT_TIMEOUT
    1213: "locked",  # ER_LOCK_DEADLOCK
    1969: "timeout",  # MariaDB ER_STATEMENT_TIMEOUT (max_statement_time)
    3024: "timeout",  # MySQL ER_QUERY_TIMEOUT (max_execution_time)
    1317: "timeout",  # ER_QUERY_INTERRUPTED (KILL QUERY)
    1040: "connection",  # ER_CON_COUNT_ERROR
    1053: "connection",  # ER_SERVER_SHUTDOWN
    1927: "connection",  # MariaDB ER_CONNECTION_KILLED
    2002: "connection",  # CR_CONNECTION_ERROR
    2003: "connection",  # CR_CONN_HOST_ERROR
    2006: "connection",  # CR_SERVER_GONE_ERROR
    2013: "connection",  # CR_SERVER_LOST
    2055: "connection",  # CR_SERVER_LOST_EXTENDED
    4031: "connection",  # MySQL ER_CLIENT_INTERACTION_TIMEOUT
}
"""MySQL and MariaDB error numbers (server ``ER_*`` and client ``CR_*``) guard names a cause for."""

_SQLITE_CODES: dict[int, str] = {
    5: "locked",  # SQLITE_BUSY (and its extended codes)
    6: "locked",  # SQLITE_LOCKED
    9: "timeout",  # SQLITE_INTERRUPT
    14: "connection",  # SQLITE_CANTOPEN
}
"""SQLite primary result codes (the low byte of ``sqlite_errorcode``) guard names a cause for."""

_PG_MISSING_DATABASE = re.compile(r'FATAL:\s+database "[^"]*" does not exist')
"""libpq's one connection failure that carries no SQLSTATE but has its own cause (see :func:`classify_error`)."""

_CAUSE_TEXT = {
    "timeout": "the query took longer than the statement timeout",
    "locked": "the database is locked",
    "schema": "the database no longer matches the policy (a table or column is missing)",
    "missing_database": "the database does not exist",
    "connection": "the database server could not be reached",
    "garbage": "the database returned a value that could not be read",
    "error": "the database reported an error",
}


class _Garbage(Exception):
    pass


_PG_INCOMPARABLE = "22"
"""PostgreSQL's data exception class: a bound id the column's type cannot read (``22P02`` invalid text
representation, ``22003`` out of range)."""
_MYSQL_INCOMPARABLE = frozenset({1267, 1270, 1271, 1300, 1366})
"""Illegal mix of collations (two, three or more operands), invalid character string, incorrect string value."""


def _incomparable(exc: BaseException) -> bool:
    """Whether a driver error says a bound value cannot be compared with its column, rather than that the database
    is in trouble: such a value names no row."""
    orig = exc.orig if isinstance(exc, sa_exc.DBAPIError) and exc.orig is not None else exc
    state = getattr(orig, "sqlstate", None) or getattr(orig, "pgcode", None)
    if isinstance(state, str):
        return state.startswith(_PG_INCOMPARABLE)
    module = type(orig).__module__.split(".", 1)[0]
    if module in ("pymysql", "MySQLdb", "mariadb"):
        return bool(orig.args) and orig.args[0] in _MYSQL_INCOMPARABLE
    return False


class _DriverError(Exception):
    """A driver's error (or SQLAlchemy's) on a read, with whether it was a disconnect."""

    def __init__(self, error: BaseException, disconnect: bool) -> None:
        self.error, self.disconnect = error, disconnect


def classify_error(exc: BaseException) -> str:
    """The cause of a driver error, as a key of the causes a refusal can name.

    Decided by exception class and the driver's own error code, never by the
    wording of a message: SQLAlchemy's ``connection_invalidated``, pool
    ``TimeoutError`` and ``DisconnectionError`` first; then psycopg's
    ``sqlstate`` (``pgcode`` for psycopg2), PyMySQL's error number
    (``args[0]``) or sqlite3's ``sqlite_errorcode``. ``exc`` is an SQLAlchemy
    error or, on the store's direct cursor path, the DBAPI error itself.

    Two cases have no code to read. SQLite reports "no such table" and "no
    such column" under its generic ``SQLITE_ERROR`` (1); for that code only,
    the message is checked for those two prefixes, which SQLite's resolver
    writes verbatim and never translates. libpq reports connection failures
    with no SQLSTATE at all; such a psycopg ``OperationalError`` is a
    connection cause, except the server's ``FATAL: database "..." does not
    exist`` (SQLSTATE 3D000 on the server side), recognised by that sentence.
    """
    if isinstance(exc, (sa_exc.TimeoutError, sa_exc.DisconnectionError)):
        return "connection"
    if isinstance(exc, sa_exc.DBAPIError) and exc.connection_invalidated:
        return "connection"
    orig = exc.orig if isinstance(exc, sa_exc.DBAPIError) and exc.orig is not None else exc
    if isinstance(orig, (ConnectionError, TimeoutError)):
        return "connection"
    module = type(orig).__module__.split(".", 1)[0]
    if module in ("psycopg", "psycopg2"):
        state = getattr(orig, "sqlstate", None) or getattr(orig, "pgcode", None)
        if state:
            return _PG_STATES.get(state) or ("connection" if state.startswith("08") else "error")
        if _PG_MISSING_DATABASE.search(str(orig)):
            return "missing_database"
        return "connection" if type(orig).__name__ in ("OperationalError", "InterfaceError") else "error"
    if module in ("pymysql", "MySQLdb", "mariadb"):
        number = orig.args[0] if orig.args and isinstance(orig.args[0], int) else None
        return _MYSQL_CODES.get(number, "error") if number is not None else "error"
    code = getattr(orig, "sqlite_errorcode", None)
    if isinstance(code, int):
        if code & 0xFF == 1:
            text = str(orig)
            return "schema" if text.startswith(("no such table", "no such column")) else "error"
        return _SQLITE_CODES.get(code & 0xFF, "error")
    return "error"


def unavailable(exc: BaseException, where: str, *, disconnect: bool = False) -> StoreUnavailable:
    cause = "connection" if disconnect else classify_error(exc)
    err = StoreUnavailable(f"the system of record could not be reached: {_CAUSE_TEXT[cause]}", location=where)
    err.cause = cause  # type: ignore[attr-defined]
    return err


def _declared(col: sa.Column[Any]) -> type | None:
    try:
        return cast(type, col.type.python_type)
    except NotImplementedError:
        return None


@dataclass(frozen=True)
class _Text:
    """Which texts a column can compare, so that one it cannot is no row rather than a driver error.

    ``form`` checks and spells the text as the database returns it (a uuid in lower case); ``chars`` finds a
    character the column's character set lacks. Both None: any text compares.
    """

    form: Callable[[str], str | None] | None = None
    chars: re.Pattern[str] | None = None

    def __call__(self, text: str) -> str | None:
        if self.chars is not None and self.chars.search(text):
            return None
        return text if self.form is None else self.form(text)

    @property
    def open(self) -> bool:
        return self.form is None and self.chars is None


def _uuid_text(text: str) -> str | None:
    return text.lower() if _UUID.fullmatch(text) else None


def _number_text(text: str) -> str | None:
    return text if _NUMBER.fullmatch(text) else None


def _text_of(col: sa.Column[Any], charset: str | None, dialect: str) -> _Text:
    """What ``col`` can compare; SQLite compares any text with any column (and a NUMERIC one may hold text)."""
    t = _declared(col) if dialect != "sqlite" else None
    form = _uuid_text if t is uuid.UUID else _number_text if t in (Decimal, float) else None
    return _Text(form, _CHARSETS.get(charset or ""))


def _scope_read(col: sa.Column[Any], dialect: str) -> Callable[[Any], Any] | None:
    """Stored scope values as text; PostgreSQL pads ``CHAR(n)`` with spaces that are not part of the value."""
    if _python_type(col) is int:
        return None
    if dialect == "postgresql" and isinstance(col.type, sa.CHAR):
        return lambda v: v.rstrip(" ") if type(v) is str else str(v)
    return lambda v: v if type(v) is str else str(v)


_MAX_STATEMENTS = 2048


@dataclass
class _Lookup:
    """What is read for one entity, and its statements compiled once per (batch size, scope, fields)."""

    entity: str
    policy: EntityPolicy
    id_kind: type
    scope_kind: type | None
    columns: dict[str, sa.ColumnElement[Any]]
    id_col: sa.Column[Any]
    scope_col: sa.Column[Any] | None
    updated_col: sa.ColumnElement[Any] | None
    id_text: _Text = field(default_factory=_Text)
    scope_text: _Text = field(default_factory=_Text)
    scope_read: Callable[[Any], Any] | None = None
    """How a stored scope value reads as the principal's text; None: the column is integer, compared exactly."""
    owner: Callable[[Any], Any] | None = field(init=False, default=None)
    """The stored scope of a scoped row, when it is compared again after the database."""
    compiled: dict[tuple[int, bool, tuple[str, ...]], tuple[str, tuple[str, ...], str]] = field(default_factory=dict)
    orders: dict[Any, tuple[str, ...]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.scope_read is not None:
            self.owner = itemgetter(-2 if self.updated_col is not None else -1)

    def order(self, fields: Iterable[str] | None) -> tuple[str, ...]:
        """The readable ones of ``fields`` (default: all) in policy order, remembered per set of names."""
        key = None if fields is None else frozenset(fields)
        hit = self.orders.get(key)
        if hit is None:
            hit = tuple(self.columns) if key is None else tuple(f for f in self.columns if f in key)
            if len(self.orders) >= _MAX_STATEMENTS:
                self.orders.clear()
            self.orders[key] = hit
        return hit

    def statement(
        self, n: int, scoped: bool, fields: tuple[str, ...], dialect: Any
    ) -> tuple[str, tuple[str, ...], str]:
        """SQL text, parameter names in order, and how the driver takes them: ``named``, or by position
        in the order the ids are ``given`` (then the principal), or ``reordered``.

        Names come from the policy only.

        The select list is ``id, *fields, updated_at`` (the last only when the entity has one): reading
        the columns a payload claims, not every whitelisted one, keeps the rows as small as the lookup.
        """
        key = (n, scoped, fields)
        hit = self.compiled.get(key)
        if hit is None:
            scoped = scoped and self.scope_col is not None
            selected = [self.id_col.label(ID), *(self.columns[f] for f in fields)]
            if scoped and self.scope_read is not None:
                selected.append(cast(sa.Column[Any], self.scope_col))
            if self.updated_col is not None:
                selected.append(self.updated_col)
            stmt = sa.select(*selected).where(self.id_col.in_([sa.bindparam(f"id{i}") for i in range(n)]))
            if scoped:
                stmt = stmt.where(cast(sa.Column[Any], self.scope_col) == sa.bindparam("principal"))
            c = stmt.compile(dialect=dialect)
            names = tuple(c.positiontup or ()) if c.positional else self.canonical(n, scoped)
            mode = "named" if not c.positional else "given" if names == self.canonical(n, scoped) else "reordered"
            hit = (c.string, names, mode)
            if len(self.compiled) >= _MAX_STATEMENTS:
                self.compiled.clear()
            self.compiled[key] = hit
        return hit

    @staticmethod
    @lru_cache(maxsize=1024)
    def canonical(n: int, scoped: bool) -> tuple[str, ...]:
        """Parameter names in the order the ids are given: ``id0 .. id{n-1}``, then ``principal``."""
        return (*(f"id{i}" for i in range(n)), *(("principal",) if scoped else ()))


def _python_type(col: sa.Column[Any]) -> type:
    t = _declared(col)
    return int if t is int else str


def _timeouts(engine: Engine, statement_timeout: float) -> None:
    """Per-connection statement timeout for servers that support one."""
    name = engine.dialect.name
    if name == "mysql" or name == "mariadb":

        @event.listens_for(engine, "connect")
        def _set(dbapi_conn: Any, record: Any) -> None:
            cur = dbapi_conn.cursor()
            try:
                server = dbapi_conn.get_server_info() if hasattr(dbapi_conn, "get_server_info") else ""
                if "MariaDB" in str(server):
                    cur.execute(f"SET SESSION max_statement_time = {float(statement_timeout):.3f}")
                else:
                    cur.execute(f"SET SESSION max_execution_time = {int(statement_timeout * 1000)}")
            finally:
                cur.close()


def make_engine(
    url: str, *, statement_timeout: float = 5.0, connect_timeout: float = 5.0, pool_size: int = 10
) -> Engine:
    """An engine with guard's defaults: pre-ping (recovers after restarts), timeouts, a bounded pool."""
    try:
        u = sa.make_url(url)
    except sa_exc.ArgumentError:
        raise StoreUnavailable(f"'{url}' is not a database URL", location="db") from None
    backend = u.get_backend_name()
    # PostgreSQL is pinged at checkout, when idle or not quiet, under a client-side deadline instead (_liveness)
    kw: dict[str, Any] = {"pool_pre_ping": backend not in ("sqlite", "postgresql")}
    connect_args: dict[str, Any] = {}
    if backend == "sqlite":
        connect_args = {"timeout": statement_timeout, "check_same_thread": False}
    else:
        kw.update(pool_size=pool_size, max_overflow=pool_size, pool_timeout=connect_timeout, pool_recycle=1800)
        if backend == "postgresql":
            options = " ".join(
                filter(None, [str(u.query.get("options", "")), f"-c statement_timeout={int(statement_timeout * 1000)}"])
            )
            connect_args = {
                "connect_timeout": max(1, int(connect_timeout)),
                "options": options,
                # a dead network (no device answering for the server) is noticed by TCP itself
                "keepalives": 1,
                "keepalives_idle": 30,
                "keepalives_interval": 5,
                "keepalives_count": 3,
                "tcp_user_timeout": int((statement_timeout + DEADLINE_MARGIN) * 1000),
            }
        elif backend in ("mysql", "mariadb"):
            connect_args = {
                "connect_timeout": max(1, int(connect_timeout)),
                "read_timeout": max(1, int(statement_timeout * 2 + 1)),
            }
    if backend == "postgresql":
        kw.update(isolation_level=AUTOCOMMIT, pool_reset_on_return=None)
    try:
        engine = sa.create_engine(u, connect_args=connect_args, **kw)
    except (sa_exc.SQLAlchemyError, ImportError, TypeError, ValueError) as exc:
        raise StoreUnavailable(f"cannot open {u.render_as_string(hide_password=True)}: {exc}", location="db") from None
    _timeouts(engine, statement_timeout)
    if backend == "postgresql":
        _liveness(engine, connect_timeout)
        _reset_when_busy(engine)
    return engine


AUTOCOMMIT = "AUTOCOMMIT"
"""PostgreSQL connections run each statement on its own: every read already takes a connection from the pool for
one statement, so a transaction around it adds a ``BEGIN`` and a ``ROLLBACK`` (two of the four round trips of a
lookup, with the checkout's ping) and no isolation (a single statement sees one snapshot either way)."""

DEADLINE_MARGIN = 1.0
"""Seconds a PostgreSQL statement may take beyond its statement timeout before the client cuts the connection."""


PING_IDLE = 5.0
"""Seconds a pooled PostgreSQL connection may have been idle and still be handed out without a ping (when its
socket is quiet, see :func:`_liveness`)."""

_RETURNED = "guard.returned"
"""``record.info`` key: when the connection was last returned to the pool (``time.monotonic``)."""

_USED = "guard.used"
"""``record.info`` key: when :class:`AsyncRecordStore` last read on a connection it keeps out of the pool."""

_CURSOR = "guard.cursor"
"""``record.info`` key: the psycopg cursor :class:`AsyncRecordStore` reads with on that connection, kept with the
driver connection it belongs to. Used again for the next statement: a new cursor cost its own set-up and, in its
fresh ``Transformer``, a loader lookup per column of every result (together more than the cursor's use)."""

HOLD = 60.0
"""Seconds :class:`AsyncRecordStore` may keep a connection it checked out for reads after the first, before it goes
back through the pool (whose checkout recycles an old one and pings one that was idle)."""


def _quiet(dbapi_conn: Any) -> bool:
    """Whether the connection's socket has nothing to read. An idle connection the server has given up on (a
    killed backend, a restart, an idle timeout) has its farewell, or the end of the stream, waiting there; a
    closed connection has no socket. One ``poll`` with no timeout: no round trip."""
    fd = socket_of(dbapi_conn)
    if fd is None:
        return False
    poller = select.poll()
    poller.register(fd, select.POLLIN | select.POLLPRI)
    return not poller.poll(0)


def _liveness(engine: Engine, ping_timeout: float) -> None:
    """Ping a pooled PostgreSQL connection at checkout under a client-side deadline (see
    :mod:`guard.records._deadline`: SQLAlchemy's own pre-ping would wait forever on a path that stopped
    answering), but only when it has been idle :data:`PING_IDLE` seconds or more, or its socket is not quiet
    (:func:`_quiet`). Under load every connection is back in the pool within milliseconds, and a ping at each
    checkout was one round trip in two for a payload of one entity. A ping that fails raises
    ``DisconnectionError``, so the pool opens a new connection (under libpq's ``connect_timeout``)."""

    @event.listens_for(engine, "checkin")
    def _returned(dbapi_conn: Any, record: Any) -> None:
        # a connection the asyncio store kept between reads comes back with the time of its last read
        record.info[_RETURNED] = record.info.pop(_USED, None) or time.monotonic()

    @event.listens_for(engine, "checkout")
    def _ping(dbapi_conn: Any, record: Any, proxy: Any) -> None:
        returned = record.info.get(_RETURNED)
        if returned is None:  # opened by this checkout
            return
        if time.monotonic() - returned < PING_IDLE and _quiet(dbapi_conn):
            return
        try:
            with WATCHDOG.watching(dbapi_conn, ping_timeout):
                cur = dbapi_conn.cursor()
                try:
                    cur.execute("SELECT 1")
                finally:
                    cur.close()
        except Exception as exc:  # any failure of the ping means this connection cannot be used
            raise sa_exc.DisconnectionError(f"ping failed: {type(exc).__name__}") from exc


def _reset_when_busy(engine: Engine) -> None:
    """The pool's rollback on return, only for a connection that is not idle (an interrupted statement, a
    transaction someone opened on it); the engine is built with ``pool_reset_on_return=None``.

    The connections are in autocommit, so after a read they are idle and psycopg's rollback does nothing; but
    on the asyncio engine it still cost a trip through the greenlet bridge, psycopg's connection lock and a
    wait on the socket, about 10 us of CPU per read. A rollback that fails invalidates the connection, as the
    pool's own reset does.
    """
    idle = _pg_idle()

    @event.listens_for(engine, "reset")
    def _reset(dbapi_conn: Any, record: Any, state: Any) -> None:
        if state.asyncio_safe and dbapi_conn.info.transaction_status != idle:
            dbapi_conn.rollback()


def _pg_idle() -> Any:
    from psycopg.pq import TransactionStatus

    return TransactionStatus.IDLE


@dataclass(frozen=True)
class Read:
    """One entity's read: the id keys (from :meth:`RecordStore.id_key`), the fields wanted (None: all) and the
    principal whose rows they must be (None: any)."""

    entity: str
    keys: list[str]
    fields: tuple[str, ...] | None = None
    principal: Any = None


@dataclass
class _Plan:
    """One entity's read, ready to run: its statements' chunks of ids, then its rows per chunk or its error."""

    lk: _Lookup
    wanted: tuple[str, ...]
    scoped: bool
    principal: Any
    chunks: list[list[Any]]
    rows: list[Sequence[Any]] | None = None
    error: _DriverError | None = None

    @property
    def done(self) -> bool:
        return self.rows is not None or self.error is not None


def _fail(plans: list[_Plan], error: _DriverError) -> None:
    for plan in plans:
        if not plan.done:
            plan.error = error


class _Conn(Protocol):
    """A checked-out connection the store reads through."""

    def execute(self, sql: str, params: Any) -> Sequence[Any]:
        """The rows of one statement; raises :class:`_DriverError`."""
        ...


class _Direct:
    """A pooled DBAPI connection read through its own cursor: the same SQL and parameters as SQLAlchemy's
    Connection would send, without the result machinery that costs as much as the lookup itself. A connection
    the driver reports as disconnected is invalidated, so the pool does not hand it out again."""

    def __init__(self, raw: Any, store: RecordStore) -> None:
        self.raw, self.store = raw, store

    def execute(self, sql: str, params: Any) -> Sequence[Any]:
        raw, store = self.raw, self.store
        cur = None
        try:
            cur = raw.cursor()
            with store._deadline(raw.dbapi_connection):
                cur.execute(sql, params)
            rows: Sequence[Any] = cur.fetchall()
            cur.close()
            return rows
        except store._dbapi_error as exc:
            disconnect = store.engine.dialect.is_disconnect(cast(Any, exc), raw.dbapi_connection, cur)
            if disconnect:
                raw.invalidate(exc)
            raise _DriverError(exc, disconnect) from None


class _Instrumented:
    """SQLAlchemy's Connection, so that every listener of the engine sees the statements."""

    def __init__(self, conn: sa.Connection, store: RecordStore) -> None:
        self.conn, self.store = conn, store

    def execute(self, sql: str, params: Any) -> Sequence[Any]:
        try:
            with self.store._deadline(self.conn.connection.dbapi_connection):
                return self.conn.exec_driver_sql(sql, params).fetchall()
        except sa_exc.SQLAlchemyError as exc:
            raise _DriverError(exc, isinstance(exc, sa_exc.DBAPIError) and exc.connection_invalidated) from None


class RecordStore:
    """Reads whitelisted fields of policy entities, many ids per query.

    Opening the store reflects the policy's tables: a table or column that the
    database lacks is a :class:`PolicyError` now, not at the first request.
    """

    def __init__(
        self,
        db: str | Engine,
        policy: Policy,
        *,
        statement_timeout: float = 5.0,
        connect_timeout: float = 5.0,
        pool_size: int = 10,
        defer_if_unavailable: bool = True,
    ) -> None:
        self.policy = policy
        self.statement_timeout = statement_timeout
        self.engine = (
            db
            if isinstance(db, Engine)
            else make_engine(
                db, statement_timeout=statement_timeout, connect_timeout=connect_timeout, pool_size=pool_size
            )
        )
        self.batch_size = 500
        self._built: dict[str, _Lookup] | None = None
        self._keyers: dict[str, Callable[[Any], str | None]] = {}
        try:
            self._built = self._build()
        except StoreUnavailable:
            if not defer_if_unavailable:
                raise

    @property
    def _lookups(self) -> dict[str, _Lookup]:
        """Statements per entity; built at open, or at first use when the database was down at open."""
        if self._built is None:
            self._built = self._build()
        return self._built

    @property
    def reflected(self) -> bool:
        """Whether the policy's tables have been reflected (at open, or at the first read after the database was
        down then)."""
        return self._built is not None

    @property
    def url(self) -> str:
        """The database URL without its password."""
        return self.engine.url.render_as_string(hide_password=True)

    def _reflect(self) -> sa.MetaData:
        md = sa.MetaData()
        tables = sorted({e.table for e in self.policy.entities.values()})
        try:
            with self.engine.connect() as conn:
                insp = sa.inspect(conn)
                existing = set(insp.get_table_names()) | set(insp.get_view_names())
                missing = [t for t in tables if t not in existing]
                if missing:
                    raise PolicyError(
                        "the policy names tables the database does not have",
                        problems=[
                            Problem("policy", f"table '{t}' does not exist in {self.url}", f"entities.{n}.table")
                            for n, e in self.policy.entities.items()
                            for t in missing
                            if e.table == t
                        ],
                    )
                md.reflect(bind=conn, only=tables, views=True, resolve_fks=False)
        except sa_exc.SQLAlchemyError as exc:
            raise unavailable(exc, "db") from None
        return md

    def _charsets(self, conn: sa.Connection, tables: list[str]) -> dict[tuple[str, str], str]:
        """The character set of every text column of ``tables`` on MySQL and MariaDB (elsewhere text is Unicode)."""
        if self.engine.dialect.name not in ("mysql", "mariadb"):
            return {}
        rows = conn.execute(
            sa.text(
                "SELECT TABLE_NAME, COLUMN_NAME, CHARACTER_SET_NAME FROM information_schema.COLUMNS "
                "WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME IN :tables AND CHARACTER_SET_NAME IS NOT NULL"
            ).bindparams(sa.bindparam("tables", expanding=True)),
            {"tables": tables},
        )
        return {(t, c): cs.lower() for t, c, cs in rows}

    def _updated_problem(self, conn: sa.Connection, name: str, ent: EntityPolicy, col: sa.Column[Any]) -> str:
        """Why ``col`` cannot be the entity's update time ('' when it can): a column of numbers or dates, or text
        that does not read as times, would make every record look out of date."""
        what = f"column '{col.name}' of table '{ent.table}', the update time of entity '{name}',"
        kind = _declared(col)
        if kind is not None and not issubclass(kind, (datetime, str)):
            return f"{what} is {col.type}, not a date and time (or ISO 8601 text)"
        if kind is datetime and self.engine.dialect.name != "sqlite":
            return ""
        sample = conn.execute(
            sa.select(sa.type_coerce(col, sa.types.NullType())).where(col.is_not(None)).limit(_SAMPLE)
        ).scalars()
        tz, utc = self.policy.db_tz, self.policy.db_timezone in UTC_NAMES
        for value in sample:
            if aware(value, tz, utc) is None:
                return f"{what} holds {str(value)[:40]!r}, which is not a date and time in ISO 8601"
        return ""

    def _build(self) -> dict[str, _Lookup]:
        md = self._reflect()
        try:
            with self.engine.connect() as conn:
                return self._lookups_of(md, conn)
        except sa_exc.SQLAlchemyError as exc:
            raise unavailable(exc, "db") from None

    def _lookups_of(self, md: sa.MetaData, conn: sa.Connection) -> dict[str, _Lookup]:
        charsets = self._charsets(conn, sorted({e.table for e in self.policy.entities.values()}))
        dialect = self.engine.dialect.name
        problems: list[Problem] = []
        lookups: dict[str, _Lookup] = {}
        for name, ent in self.policy.entities.items():
            table = md.tables[ent.table]
            cols = table.c

            def col(colname: str, where: str) -> sa.Column[Any] | None:
                if colname not in cols:
                    problems.append(
                        Problem("policy", f"column '{colname}' does not exist in table '{ent.table}'", where)
                    )
                    return None
                return cols[colname]

            id_col = col(ent.id, f"entities.{name}.id")
            chosen: dict[str, sa.ColumnElement[Any]] = {}
            for fname, fp in ent.fields.items():
                c = col(ent.column(fname), f"entities.{name}.fields.{fname}")
                if c is None:
                    continue
                if TYPES[fp.type].integer_column and _python_type(c) is not int:
                    problems.append(
                        Problem(
                            "policy",
                            f"column '{c.name}' is {c.type}, but a {fp.type.value} field needs an integer "
                            "column" + (" of minor units" if fp.currency else ""),
                            f"entities.{name}.fields.{fname}",
                        )
                    )
                chosen[fname] = c.label(fname)
            upd = col(ent.updated_at, f"entities.{name}.updated_at") if ent.updated_at else None
            if upd is not None:
                why = self._updated_problem(conn, name, ent, upd)
                if why:
                    problems.append(Problem("policy", why, f"entities.{name}.updated_at"))
            scope = col(ent.scope, f"entities.{name}.scope") if ent.scope else None
            if id_col is None or problems:
                continue
            lookups[name] = _Lookup(
                name,
                ent,
                _python_type(id_col),
                _python_type(scope) if scope is not None else None,
                chosen,
                id_col,
                scope,
                upd.label(UPDATED_AT) if upd is not None else None,
                _text_of(id_col, charsets.get((ent.table, id_col.name)), dialect),
                _text_of(scope, charsets.get((ent.table, scope.name)), dialect) if scope is not None else _Text(),
                _scope_read(scope, dialect) if scope is not None else None,
            )
        if problems:
            raise PolicyError("the policy does not match the database", problems=problems)
        return lookups

    @staticmethod
    def _coerce(value: Any, kind: type) -> Any | None:
        """An id or principal as the column's type; None when no row of an integer column can hold it."""
        if kind is int:
            if not (isinstance(value, str) and _INT.fullmatch(value)) and (
                isinstance(value, bool) or not isinstance(value, int)
            ):
                return None
            number = int(value)
            return number if _INT_MIN <= number <= _INT_MAX else None
        return value if isinstance(value, str) else str(value)

    def _storable(self, value: Any) -> bool:
        """Whether the database could hold ``value``: PostgreSQL text cannot contain NUL, so no row has such an id
        (sending one would be a driver error, misreported as the database being unreachable)."""
        if value is None:
            return False
        return not (isinstance(value, str) and "\x00" in value and self.engine.dialect.name == "postgresql")

    def id_key(self, entity: str, entity_id: Any) -> str | None:
        """The key under which :meth:`read` returns the row for ``entity_id`` (None: no row can have it)."""
        return self.keyer(entity)(entity_id)

    def keyer(self, entity: str) -> Callable[[Any], str | None]:
        """:meth:`id_key` for one entity, as a function (the checker calls it once per claim); built once."""
        hit = self._keyers.get(entity)
        if hit is not None:
            return hit
        lk = self._lookups[entity]
        kind, text = lk.id_kind, None if lk.id_text.open else lk.id_text
        no_nul = self.engine.dialect.name == "postgresql"
        coerce, storable = self._coerce, self._storable

        def key(entity_id: Any) -> str | None:
            if kind is str and type(entity_id) is str and not (no_nul and "\x00" in entity_id):
                return entity_id if text is None else text(entity_id)
            v = coerce(entity_id, kind)
            if v is None or not storable(v):
                return None
            if isinstance(v, str):
                return v if text is None else text(v)
            return str(v)

        self._keyers[entity] = key
        return key

    def keys(self, entity: str, entity_ids: list[Any]) -> list[str | None]:
        """:meth:`id_key` of many ids; text ids of a text-keyed entity are their own keys when the column can hold
        every character of them."""
        lk = self._lookups[entity]
        if len(entity_ids) >= 8 and lk.id_kind is str and lk.id_text.form is None and _all(entity_ids, str):
            chars, no_nul = lk.id_text.chars, self.engine.dialect.name == "postgresql"
            joined = "".join(entity_ids) if chars is not None or no_nul else ""
            if not (no_nul and "\x00" in joined) and not (chars is not None and chars.search(joined)):
                return list(entity_ids)
        return list(map(self.keyer(entity), entity_ids))

    def fields(self, entity: str, among: Iterable[str] | None = None) -> tuple[str, ...]:
        """The entity's readable fields (those ``among`` the given names, default all) in policy order: the
        order :meth:`read` selects them in."""
        return self._lookups[entity].order(among)

    def read(
        self, entity: str, keys: Iterable[str], fields: Iterable[str] | None = None, principal: Any = None
    ) -> dict[str, Sequence[Any]]:
        """Rows of ``entity`` by id key (from :meth:`id_key`) as sequences ``(id, *fields, [scope,] updated_at)``.

        ``fields`` (default: all readable ones) must be whitelisted fields of the
        entity; ``updated_at`` is the last item when the entity has one. With a
        principal and a scoped entity, rows outside the scope are simply absent;
        the empty principal is nobody's, so it reads no scoped row. A text scope
        is selected too (before ``updated_at``) and compared again here, exactly:
        the column's collation may hold ``ALICE``, ``alice `` and ``alicé`` equal
        to ``alice``, as ids are (the caller finds a row under its exact key).
        Raises StoreUnavailable when the database cannot answer.
        """
        got = self.read_many([Read(entity, list(keys), None if fields is None else tuple(fields), principal)])[0]
        if isinstance(got, StoreUnavailable):
            raise got
        return got

    def read_many(self, reads: Sequence[Read]) -> list[dict[str, Sequence[Any]] | StoreUnavailable]:
        """:meth:`read` of several entities on one pooled connection: each one's rows, or the
        :class:`StoreUnavailable` that says why the database could not give them (one entity's missing table
        does not lose another's rows)."""
        try:
            plans = [self._plan(r) for r in reads]
        except StoreUnavailable as exc:  # the database was down at open, and still is
            return [exc for _ in reads]
        todo = [p for p in plans if p is not None]
        if todo:
            self._run(todo)
        return [{} if p is None else self._outcome(p) for p in plans]

    def _plan(self, r: Read) -> _Plan | None:
        """What to ask the database for one entity; None when no row can match (no id or principal a row of
        the entity could hold)."""
        lk = self._lookups[r.entity]
        wanted = lk.order(r.fields)
        bound = self._bound(lk, r.keys)
        if not bound:
            return None
        principal = r.principal
        scoped = lk.scope_col is not None and principal is not None
        principal_value = None
        if scoped:
            if isinstance(principal, str) and not principal:
                return None
            principal_value = self._coerce(principal, lk.scope_kind or str)
            if isinstance(principal_value, str):
                principal_value = lk.scope_text(principal_value)
            if principal_value is None or not self._storable(principal_value):
                return None
        size = self.batch_size
        chunks = [bound[k : k + size] for k in range(0, len(bound), size)]
        return _Plan(lk, wanted, scoped, principal_value, chunks)

    def _bound(self, lk: _Lookup, keys: Iterable[str]) -> list[int] | list[str]:
        """The id values bound for ``keys``, each once, as the id column takes them; keys no row can have are
        left out."""
        if lk.id_kind is int:
            coerce = self._coerce
            return list(dict.fromkeys(n for n in (coerce(k, int) for k in keys) if n is not None))
        if lk.id_text.open:
            return list(dict.fromkeys(keys))
        return list(dict.fromkeys(k for k in map(lk.id_text, keys) if k is not None))

    def merge_key(self, r: Read) -> Any:
        """What reads must share to be sent as one (:mod:`guard.records._coalesce`): the entity, the fields and,
        for a scoped entity, the principal with its type; None when the read cannot be merged."""
        lk = self._built.get(r.entity) if self._built is not None else None
        if lk is None:
            return None
        fields = None if r.fields is None else tuple(r.fields)
        if lk.scope_col is None:
            return (r.entity, fields)
        try:
            hash(r.principal)
        except TypeError:
            return None
        return (r.entity, fields, type(r.principal), r.principal)

    def share(self, rows: dict[str, Sequence[Any]], r: Read) -> dict[str, Sequence[Any]]:
        """The rows of a merged read that are ``r``'s: those under the keys its own ids are found by."""
        bound = self._bound(self._lookups[r.entity], r.keys)
        return {k: rows[k] for k in (bound if _all(bound, str) else map(str, bound)) if k in rows}

    def _statement(self, plan: _Plan, chunk: list[Any]) -> tuple[str, Any]:
        """The SQL text and the driver's parameters that read the ids ``chunk`` of ``plan``."""
        lk = plan.lk
        sql, names, mode = lk.statement(len(chunk), plan.scoped, plan.wanted, self.engine.dialect)
        values = [*chunk, plan.principal] if plan.scoped else chunk
        if mode == "named":
            return sql, dict(zip(names, values))
        if mode == "given":
            return sql, tuple(values)
        by_name = dict(zip(lk.canonical(len(chunk), plan.scoped), values))
        return sql, tuple(by_name[n] for n in names)

    def _outcome(self, plan: _Plan) -> dict[str, Sequence[Any]] | StoreUnavailable:
        """The rows of ``plan`` by id key, kept in its principal's scope; or why there are none."""
        where = f"entity '{plan.lk.entity}'"
        if isinstance(plan.error, _DriverError):
            return unavailable(plan.error.error, where, disconnect=plan.error.disconnect)
        out: dict[str, Sequence[Any]] = {}
        lk, owner = plan.lk, plan.lk.owner if plan.scoped else None
        try:
            for rows in plan.rows or ():
                if owner is not None and rows:
                    owners = list(map(owner, rows))
                    if owners.count(plan.principal) != len(rows):
                        same = cast(Callable[[Any], Any], lk.scope_read)
                        rows = [r for r, o in zip(rows, owners) if same(o) == plan.principal]
                ids = list(map(_first, rows))
                if not (ids and _all(ids, str)):
                    ids = [i if type(i) is str else str(i) for i in ids]
                got = dict(zip(ids, rows))
                if len(got) != len(rows) or (out and not got.keys().isdisjoint(out)):
                    raise _Garbage("id is not unique")
                if out:
                    out.update(got)
                else:
                    out = got
        except _Garbage as exc:
            err = StoreUnavailable(
                f"the system of record could not be reached: {_CAUSE_TEXT['garbage']} ({exc})", location=where
            )
            err.cause = "garbage"  # type: ignore[attr-defined]
            return err
        return out

    def _run(self, plans: list[_Plan]) -> None:
        """Every plan's statements on one pooled connection, each plan's rows or error kept in it."""
        if self._instrumented():
            try:
                with self.engine.connect() as conn:
                    self._run_on(plans, _Instrumented(conn, self))
            except sa_exc.SQLAlchemyError as exc:  # the checkout: no connection could be had
                _fail(plans, _DriverError(exc, False))
            return
        try:
            raw = self.engine.raw_connection()
        except (self._dbapi_error, sa_exc.SQLAlchemyError) as exc:
            _fail(plans, _DriverError(exc, True))
            return
        try:
            self._run_on(plans, _Direct(raw, self))
        finally:
            raw.close()

    def _run_on(self, plans: list[_Plan], conn: _Conn) -> None:
        """The plans not yet read, in order, on ``conn``; after a disconnect, the rest fail with it."""
        for plan in plans:
            if plan.done:
                continue
            rows: list[Sequence[Any]] = []
            try:
                for chunk in plan.chunks:
                    rows.append(self._select(conn, plan, chunk))
            except _DriverError as exc:
                if exc.disconnect:
                    _fail(plans, exc)
                    return
                plan.error = exc
                continue
            plan.rows = rows

    def _select(self, conn: _Conn, plan: _Plan, chunk: list[Any]) -> Sequence[Any]:
        """The rows of the ids ``chunk``; ids the id column cannot compare (the database refuses the statement as a
        data error) are told apart by halving the chunk, and name no row."""
        try:
            return conn.execute(*self._statement(plan, chunk))
        except _DriverError as exc:
            if exc.disconnect or not _incomparable(exc.error):
                raise
        if len(chunk) == 1:
            return []
        half = len(chunk) // 2
        return [*self._select(conn, plan, chunk[:half]), *self._select(conn, plan, chunk[half:])]

    def _instrumented(self) -> bool:
        """Whether someone listens to this engine's statements (tracing, auditing, tests counting queries)."""
        d = self.engine.dispatch
        return bool(d.before_cursor_execute or d.after_cursor_execute or d.before_execute or d.after_execute)

    def _deadline(self, dbapi_conn: Any) -> Any:
        """A client-side deadline of the statement timeout plus a margin, on PostgreSQL (whose path may stop
        answering, :mod:`guard.records._deadline`); nothing elsewhere."""
        if self.engine.dialect.name != "postgresql":
            return contextlib.nullcontext()
        return WATCHDOG.watching(dbapi_conn, self.statement_timeout + DEADLINE_MARGIN)

    @property
    def _dbapi_error(self) -> type[BaseException]:
        return self.engine.dialect.loaded_dbapi.Error

    def fetch(self, entity: str, ids: Iterable[Any], principal: Any = None) -> dict[str, dict[str, Any]]:
        """Rows of ``entity`` by id key as mappings of every readable field (plus ``__id__``, ``__updated_at__``)."""
        lk = self._lookups[entity]
        keys = [k for k in (self.id_key(entity, i) for i in ids) if k is not None]
        rows = self.read(entity, keys, None, principal)
        names = (ID, *lk.columns)
        last = (UPDATED_AT,) if lk.updated_col is not None else ()
        return {k: {**dict(zip(names, row)), **dict(zip(last, row[-1:]))} for k, row in rows.items()}

    def scoped(self, entity: str) -> bool:
        """Whether the entity's rows are scoped to a principal."""
        return self._lookups[entity].scope_col is not None

    def ping(self) -> bool:
        """Whether the database answers a trivial query now."""
        try:
            with self.engine.connect() as conn:
                conn.execute(sa.text("SELECT 1"))
            return True
        except sa_exc.SQLAlchemyError:
            return False

    def close(self) -> None:
        """Release every pooled connection."""
        self.engine.dispose()

    def __enter__(self) -> RecordStore:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


# -- the asyncio engine -----------------------------------------------------------
_ASYNC_DRIVERS = {"sqlite": "aiosqlite", "postgresql": "psycopg_async", "mysql": "aiomysql", "mariadb": "aiomysql"}
"""The asyncio driver guard uses per backend; each raises its sync sibling's errors (sqlite3, psycopg, PyMySQL), so
:func:`classify_error` names the same causes on both engines."""


def async_url(url: str | sa.URL) -> sa.URL:
    """``url`` with its backend's asyncio driver (``sqlite:///x.db`` becomes ``sqlite+aiosqlite:///x.db``); a URL
    that already names one of guard's asyncio drivers is kept."""
    try:
        u = sa.make_url(url)
    except sa_exc.ArgumentError:
        raise StoreUnavailable(f"'{url}' is not a database URL", location="db") from None
    backend = u.get_backend_name()
    driver = _ASYNC_DRIVERS.get(backend)
    if driver is None:
        raise StoreUnavailable(
            f"guard has no asyncio driver for {backend}; use {', '.join(sorted(_ASYNC_DRIVERS))}", location="db"
        )
    return u if u.get_driver_name() == driver else u.set(drivername=f"{backend}+{driver}")


def make_async_engine(
    url: str | sa.URL, *, statement_timeout: float = 5.0, connect_timeout: float = 5.0, pool_size: int = 10
) -> Any:
    """An :class:`~sqlalchemy.ext.asyncio.AsyncEngine` with the defaults of :func:`make_engine`, on the backend's
    asyncio driver (aiosqlite, psycopg's async connection, aiomysql)."""
    from sqlalchemy.ext.asyncio import create_async_engine

    u = async_url(url)
    backend = u.get_backend_name()
    # PostgreSQL is pinged at checkout, when idle or not quiet, under a client-side deadline instead (_liveness)
    kw: dict[str, Any] = {
        "pool_pre_ping": backend not in ("sqlite", "postgresql"),
        "pool_size": pool_size,
        "max_overflow": pool_size,
    }
    connect_args: dict[str, Any] = {}
    if backend == "sqlite":  # aiosqlite runs a thread per connection: a pool that keeps them saves starting one
        connect_args = {"timeout": statement_timeout, "check_same_thread": False}
    else:
        kw.update(pool_timeout=connect_timeout, pool_recycle=1800)
        if backend == "postgresql":
            options = " ".join(
                filter(None, [str(u.query.get("options", "")), f"-c statement_timeout={int(statement_timeout * 1000)}"])
            )
            connect_args = {"connect_timeout": max(1, int(connect_timeout)), "options": options}
        else:
            connect_args = {"connect_timeout": max(1, int(connect_timeout))}
    if backend == "postgresql":
        kw.update(isolation_level=AUTOCOMMIT, pool_reset_on_return=None)
    try:
        engine = create_async_engine(u, connect_args=connect_args, **kw)
    except (sa_exc.SQLAlchemyError, ImportError, TypeError, ValueError) as exc:
        raise StoreUnavailable(f"cannot open {u.render_as_string(hide_password=True)}: {exc}", location="db") from None
    if backend in ("mysql", "mariadb"):
        _async_mysql_timeout(engine.sync_engine, statement_timeout)
    if backend == "postgresql":
        _liveness(engine.sync_engine, connect_timeout)
        _reset_when_busy(engine.sync_engine)
    return engine


def _async_mysql_timeout(engine: Engine, statement_timeout: float) -> None:
    """The statement timeout of :func:`_timeouts` for aiomysql, whose connection does not say which server it
    reached: the server's version string does."""

    @event.listens_for(engine, "connect")
    def _set(dbapi_conn: Any, record: Any) -> None:
        cur = dbapi_conn.cursor()
        try:
            cur.execute("SELECT VERSION()")
            row = cur.fetchone()
            if "MariaDB" in str(row[0] if row else ""):
                cur.execute(f"SET SESSION max_statement_time = {float(statement_timeout):.3f}")
            else:
                cur.execute(f"SET SESSION max_execution_time = {int(statement_timeout * 1000)}")
        finally:
            cur.close()


class AsyncRecordStore(RecordStore):
    """The record store on SQLAlchemy's asyncio engine, for :class:`guard.pipeline.AsyncGuard`.

    The statements, the reading code and the checker are :class:`RecordStore`'s own: :meth:`call` runs them
    through SQLAlchemy's greenlet bridge (the mechanism behind ``AsyncConnection.run_sync``), where every round
    trip the sync code makes is awaited on the event loop through the asyncio driver. One code path therefore
    reads for both gates, and the loop never blocks on the database. On PostgreSQL the reads of a run are the
    one exception: :meth:`aread_many` sends :class:`RecordStore`'s statements on psycopg's ``AsyncConnection``
    itself, on a connection kept between reads (the bridge cost more than the statement). Reflection happens in
    :meth:`open`, or at the first :meth:`call` when the database was down then.
    """

    def __init__(
        self,
        db: str | sa.URL | Any,
        policy: Policy,
        *,
        statement_timeout: float = 5.0,
        connect_timeout: float = 5.0,
        pool_size: int = 10,
        coalesce: int = 0,
    ) -> None:
        from sqlalchemy.ext.asyncio import AsyncEngine

        self.async_engine: AsyncEngine = (
            db
            if isinstance(db, AsyncEngine)
            else make_async_engine(
                db, statement_timeout=statement_timeout, connect_timeout=connect_timeout, pool_size=pool_size
            )
        )
        self._deferred = True
        super().__init__(self.async_engine.sync_engine, policy, defer_if_unavailable=True)
        self._deferred = False
        self._direct = self.engine.dialect.name == "postgresql"
        """Whether reads go on psycopg's ``AsyncConnection`` itself (see :meth:`aread_many`)."""
        self._idle = _pg_idle() if self._direct else None
        self._held: list[tuple[Any, float]] = []
        """Connections checked out of the pool and kept between reads, with when each was checked out."""
        self._hold = pool_size
        self.coalescer = Coalescer(self, coalesce) if coalesce else None
        """Merges concurrent runs' reads (see :mod:`guard.records._coalesce`); None: each run reads alone."""

    def _build(self) -> dict[str, _Lookup]:
        if self._deferred:  # the base class builds at once; here that waits for the event loop (open or call)
            raise StoreUnavailable("the asynchronous store reflects the database when opened", location="db")
        return super()._build()

    async def call(self, fn: Callable[..., Any], /, *args: Any, **kwargs: Any) -> Any:
        """``fn(*args, **kwargs)``, synchronous code that reads this store, with its database access awaited."""
        from sqlalchemy.util import greenlet_spawn

        return await greenlet_spawn(fn, *args, **kwargs)

    async def aread_many(self, reads: Sequence[Read]) -> list[dict[str, Sequence[Any]] | StoreUnavailable]:
        """:meth:`read_many`, awaited: by :meth:`aread_each`, or with ``coalesce`` (the number of merged batches
        the store may have at the database at once) sent together with other runs' reads of the same entity,
        fields and scope (:class:`~guard.records._coalesce.Coalescer`), with the same answers."""
        if self.coalescer is not None and self._built is not None:
            return await self.coalescer.read_many(reads)
        return await self.aread_each(reads)

    async def aread_each(self, reads: Sequence[Read]) -> list[dict[str, Sequence[Any]] | StoreUnavailable]:
        """:meth:`read_many` of one run's reads, awaited (the reference the merged reads are tested against).

        On PostgreSQL the statements go on psycopg's ``AsyncConnection`` itself, on a connection the store keeps
        checked out between reads (at most ``pool_size`` of them, each for :data:`HOLD` seconds at most): the
        greenlet bridge, the pool's checkout and return and SQLAlchemy's cursor adapter cost about 0.09 ms of
        CPU a read, more than the statement does on the driver. A kept connection is used again only when it
        is idle in the driver, was used less than :data:`PING_IDLE` seconds ago and its socket is quiet, as
        the pool's checkout would hand it out unpinged (:func:`_liveness`); any other goes back to the pool,
        with the time of its last read, so that the next checkout pings it. The statements, their parameters,
        the client-side deadline and the handling of errors are :meth:`read_many`'s. Elsewhere (aiosqlite,
        aiomysql), before the database is reflected, and when someone listens to the engine's statements,
        :meth:`read_many` runs through the greenlet bridge (see :meth:`call`).
        """
        if not self._direct or self._built is None or self._instrumented():
            return cast(list[dict[str, Sequence[Any]] | StoreUnavailable], await self.call(self.read_many, reads))
        try:
            plans = [self._plan(r) for r in reads]
        except StoreUnavailable as exc:
            return [exc for _ in reads]
        todo = [p for p in plans if p is not None]
        if todo:
            await self._arun(todo)
        return [{} if p is None else self._outcome(p) for p in plans]

    async def _arun(self, plans: list[_Plan]) -> None:
        """:meth:`_run` on a kept connection, or one checked out through the bridge; kept again afterwards when
        it is idle and there is room."""
        from sqlalchemy.util import greenlet_spawn

        got = await self._take()
        if isinstance(got, _DriverError):
            _fail(plans, got)
            return
        fairy, since = got
        kept = False
        try:
            if await self._arun_on(plans, fairy):
                conn = fairy.dbapi_connection
                if len(self._held) < self._hold and not conn.closed and conn.info.transaction_status == self._idle:
                    fairy.info[_USED] = time.monotonic()
                    self._held.append((fairy, since))
                    kept = True
        finally:
            if not kept:  # back to the pool: its reset rolls back (or invalidates) a connection that is not idle
                await greenlet_spawn(fairy.close)

    async def _take(self) -> tuple[Any, float] | _DriverError:
        """A kept connection that can be used as it is (see :meth:`aread_many`), or one from the pool."""
        from sqlalchemy.util import greenlet_spawn

        now = time.monotonic()
        while self._held:
            fairy, since = self._held.pop()
            if now - since < HOLD and now - fairy.info[_USED] < PING_IDLE and _quiet(fairy.dbapi_connection):
                return fairy, since
            await greenlet_spawn(fairy.close)
        try:
            return await greenlet_spawn(self.engine.raw_connection), now
        except (self._dbapi_error, sa_exc.SQLAlchemyError) as exc:
            return _DriverError(exc, True)

    async def _arun_on(self, plans: list[_Plan], fairy: Any) -> bool:
        """:meth:`_run_on` on psycopg's ``AsyncConnection``; False when the connection was lost."""
        for plan in plans:
            if plan.done:
                continue
            rows: list[Sequence[Any]] = []
            try:
                for chunk in plan.chunks:
                    rows.append(await self._aselect(fairy, plan, chunk))
            except _DriverError as exc:
                if exc.disconnect:
                    _fail(plans, exc)
                    return False
                plan.error = exc
                continue
            plan.rows = rows
        return True

    async def _aselect(self, fairy: Any, plan: _Plan, chunk: list[Any]) -> Sequence[Any]:
        """:meth:`_select`, awaited."""
        try:
            return await self._aexecute(fairy, *self._statement(plan, chunk))
        except _DriverError as exc:
            if exc.disconnect or not _incomparable(exc.error):
                raise
        if len(chunk) == 1:
            return []
        half = len(chunk) // 2
        return [*await self._aselect(fairy, plan, chunk[:half]), *await self._aselect(fairy, plan, chunk[half:])]

    async def _aexecute(self, fairy: Any, sql: str, params: Any) -> Sequence[Any]:
        """:meth:`_Direct.execute` on psycopg's ``AsyncConnection``: the same statement under the same deadline; a
        connection the driver reports as disconnected is invalidated."""
        from sqlalchemy.util import greenlet_spawn

        conn = fairy.dbapi_connection
        driver = conn.driver_connection
        kept = fairy.info.pop(_CURSOR, None)  # back only after a statement that succeeded (not one cut short)
        cur = kept[1] if kept is not None and kept[0] is driver and not kept[1].closed else None
        try:
            if cur is None:
                cur = driver.cursor()
            with WATCHDOG.watching(conn, self.statement_timeout + DEADLINE_MARGIN):
                await cur.execute(sql, params)
                rows: Sequence[Any] = await cur.fetchall()
            fairy.info[_CURSOR] = (driver, cur)
            return rows
        except self._dbapi_error as exc:
            disconnect = self.engine.dialect.is_disconnect(cast(Any, exc), conn, cur)
            if disconnect:
                await greenlet_spawn(fairy.invalidate, exc)
            raise _DriverError(exc, disconnect) from None

    async def open(self, *, defer_if_unavailable: bool = True) -> AsyncRecordStore:
        """Reflect the policy's tables now: a missing table or column is a :class:`PolicyError` at start-up."""
        try:
            await self.call(lambda: self._lookups)
        except StoreUnavailable:
            if not defer_if_unavailable:
                raise
        return self

    async def aping(self) -> bool:
        """Whether the database answers a trivial query now."""
        try:
            async with self.async_engine.connect() as conn:
                await conn.execute(sa.text("SELECT 1"))
            return True
        except (sa_exc.SQLAlchemyError, OSError):
            return False

    def ping(self) -> bool:
        """Not available on the asyncio engine: use :meth:`aping`."""
        raise TypeError("AsyncRecordStore.ping is asynchronous: await store.aping()")

    async def aclose(self) -> None:
        """Release every pooled connection."""
        from sqlalchemy.util import greenlet_spawn

        held, self._held = self._held, []
        for fairy, _since in held:
            await greenlet_spawn(fairy.close)
        await self.async_engine.dispose()

    def close(self) -> None:
        """Drop the pool without awaiting its connections (use :meth:`aclose` inside the event loop); the
        connections kept between reads are closed at once, unawaited."""
        held, self._held = self._held, []
        for fairy, _since in held:
            with contextlib.suppress(Exception):  # a connection that is already gone has nothing to close
                fairy.invalidate()
        self.async_engine.sync_engine.dispose(close=False)


__all__ = [
    "Read",
    "RecordStore",
    "AsyncRecordStore",
    "make_engine",
    "make_async_engine",
    "async_url",
    "classify_error",
    "UPDATED_AT",
    "ID",
]
