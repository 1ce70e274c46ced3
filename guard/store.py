"""The system of record, read through SQLAlchemy Core.

One statement per entity is built and compiled once at start-up (an expanding
``IN`` over bound ids, plus the row scope when a principal is given), so a
payload costs one round trip per entity whatever its number of claims. Table
and column names come from the policy, checked against the reflected schema;
ids and principals are always bound parameters. Driver errors are translated
into :class:`guard.errors.StoreUnavailable` with a cause a person can read.
"""

from __future__ import annotations

import re
import time
from dataclasses import dataclass, field
from typing import Any, Iterable

import sqlalchemy as sa
from sqlalchemy import event, exc as sa_exc
from sqlalchemy.engine import Engine

from guard.errors import PolicyError, Problem, StoreUnavailable
from guard.payload import ClaimType
from guard.policy import EntityPolicy, Policy

UPDATED_AT = "__updated_at__"
ID = "__id__"
_INT = re.compile(r"^[+-]?\d{1,18}$")

_CAUSES = [
    ("timeout", re.compile(r"statement timeout|canceling statement|max_statement_time|query execution was interrupted"
                           r"|interrupted|timed out|timeout", re.I)),
    ("locked", re.compile(r"database is locked|database table is locked|lock wait", re.I)),
    ("schema", re.compile(r"no such column|no such table|unknown column|does not exist|doesn't exist|undefined", re.I)),
    ("connection", re.compile(r"connect|connection|server closed|gone away|lost connection|terminat|broken pipe"
                              r"|shutdown|reset by peer|unable to open", re.I)),
]
_CAUSE_TEXT = {
    "timeout": "the query took longer than the statement timeout",
    "locked": "the database is locked",
    "schema": "the database no longer matches the policy (a table or column is missing)",
    "connection": "the database server could not be reached",
    "garbage": "the database returned a value that could not be read",
    "error": "the database reported an error",
}


class _Garbage(Exception):
    pass


def classify_error(exc: BaseException) -> str:
    text = f"{type(exc).__name__} {exc}"
    orig = getattr(exc, "orig", None)
    if orig is not None:
        text += f" {type(orig).__name__} {orig}"
    if isinstance(exc, sa_exc.DBAPIError) and exc.connection_invalidated:
        return "connection"
    for cause, pattern in _CAUSES:
        if pattern.search(text):
            return cause
    return "error"


def unavailable(exc: BaseException, where: str) -> StoreUnavailable:
    cause = classify_error(exc)
    err = StoreUnavailable(f"the system of record could not be reached: {_CAUSE_TEXT[cause]}", location=where)
    err.cause = cause  # type: ignore[attr-defined]
    return err


@dataclass
class _Lookup:
    """What is read for one entity, and its statements compiled once per batch size."""

    entity: str
    policy: EntityPolicy
    id_kind: type
    scope_kind: type | None
    selected: list[sa.ColumnElement[Any]]
    id_col: sa.Column[Any]
    scope_col: sa.Column[Any] | None
    names: tuple[str, ...]
    compiled: dict[tuple[int, bool], tuple[str, tuple[str, ...] | None]] = field(default_factory=dict)

    def statement(self, n: int, scoped: bool, dialect: Any) -> tuple[str, tuple[str, ...] | None]:
        """SQL text and parameter order for ``n`` ids; table and column names come from the policy only."""
        key = (n, scoped)
        hit = self.compiled.get(key)
        if hit is None:
            stmt = sa.select(*self.selected).where(self.id_col.in_([sa.bindparam(f"id{i}") for i in range(n)]))
            if scoped and self.scope_col is not None:
                stmt = stmt.where(self.scope_col == sa.bindparam("principal"))
            c = stmt.compile(dialect=dialect)
            hit = (c.string, tuple(c.positiontup) if c.positional else None)
            self.compiled[key] = hit
        return hit


def _python_type(col: sa.Column[Any]) -> type:
    try:
        t = col.type.python_type
    except NotImplementedError:
        return str
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


def make_engine(url: str, *, statement_timeout: float = 5.0, connect_timeout: float = 5.0,
                pool_size: int = 10) -> Engine:
    """An engine with guard's defaults: pre-ping (recovers after restarts), timeouts, a bounded pool."""
    try:
        u = sa.make_url(url)
    except sa_exc.ArgumentError:
        raise StoreUnavailable(f"'{url}' is not a database URL", location="db") from None
    backend = u.get_backend_name()
    kw: dict[str, Any] = {"pool_pre_ping": backend != "sqlite"}
    connect_args: dict[str, Any] = {}
    if backend == "sqlite":
        connect_args = {"timeout": statement_timeout, "check_same_thread": False}
    else:
        kw.update(pool_size=pool_size, max_overflow=pool_size, pool_timeout=connect_timeout, pool_recycle=1800)
        if backend == "postgresql":
            options = " ".join(filter(None, [str(u.query.get("options", "")),
                                             f"-c statement_timeout={int(statement_timeout * 1000)}"]))
            connect_args = {"connect_timeout": max(1, int(connect_timeout)), "options": options}
        elif backend in ("mysql", "mariadb"):
            connect_args = {"connect_timeout": max(1, int(connect_timeout)),
                            "read_timeout": max(1, int(statement_timeout * 2 + 1))}
    try:
        engine = sa.create_engine(u, connect_args=connect_args, **kw)
    except (sa_exc.SQLAlchemyError, ImportError, TypeError, ValueError) as exc:
        raise StoreUnavailable(f"cannot open {u.render_as_string(hide_password=True)}: {exc}", location="db") from None
    _timeouts(engine, statement_timeout)
    return engine


class RecordStore:
    """Reads whitelisted fields of policy entities, many ids per query.

    Opening the store reflects the policy's tables: a table or column that the
    database lacks is a :class:`PolicyError` now, not at the first request.
    """

    def __init__(self, db: str | Engine, policy: Policy, *, statement_timeout: float = 5.0,
                 connect_timeout: float = 5.0, pool_size: int = 10, defer_if_unavailable: bool = True) -> None:
        self.policy = policy
        self.engine = db if isinstance(db, Engine) else make_engine(
            db, statement_timeout=statement_timeout, connect_timeout=connect_timeout, pool_size=pool_size)
        self.batch_size = 500
        self._built: dict[str, _Lookup] | None = None
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
    def url(self) -> str:
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
                        problems=[Problem("policy", f"table '{t}' does not exist in {self.url}",
                                          f"entities.{n}.table")
                                  for n, e in self.policy.entities.items() for t in missing if e.table == t])
                md.reflect(bind=conn, only=tables, views=True, resolve_fks=False)
        except sa_exc.SQLAlchemyError as exc:
            raise unavailable(exc, "db") from None
        return md

    def _build(self) -> dict[str, _Lookup]:
        md = self._reflect()
        problems: list[Problem] = []
        lookups: dict[str, _Lookup] = {}
        for name, ent in self.policy.entities.items():
            table = md.tables[ent.table]
            cols = table.c

            def col(colname: str, where: str) -> sa.Column[Any] | None:
                if colname not in cols:
                    problems.append(Problem("policy", f"column '{colname}' does not exist in table '{ent.table}'",
                                            where))
                    return None
                return cols[colname]

            id_col = col(ent.id, f"entities.{name}.id")
            chosen: list[sa.ColumnElement[Any]] = []
            for fname, fp in ent.fields.items():
                c = col(ent.column(fname), f"entities.{name}.fields.{fname}")
                if c is None:
                    continue
                if fp.type in (ClaimType.MONEY, ClaimType.INTEGER) and _python_type(c) is not int:
                    problems.append(Problem(
                        "policy", f"column '{c.name}' is {c.type}, but a {fp.type.value} field needs an integer "
                                  "column" + (" of minor units" if fp.type is ClaimType.MONEY else ""),
                        f"entities.{name}.fields.{fname}"))
                chosen.append(c.label(fname))
            upd = col(ent.updated_at, f"entities.{name}.updated_at") if ent.updated_at else None
            scope = col(ent.scope, f"entities.{name}.scope") if ent.scope else None
            if id_col is None or problems:
                continue
            selected = [id_col.label(ID), *chosen]
            if upd is not None:
                selected.append(upd.label(UPDATED_AT))
            lookups[name] = _Lookup(name, ent, _python_type(id_col),
                                    _python_type(scope) if scope is not None else None, selected, id_col, scope,
                                    tuple(c.name for c in selected))
        if problems:
            raise PolicyError("the policy does not match the database", problems=problems)
        return lookups

    @staticmethod
    def _coerce(value: Any, kind: type) -> Any | None:
        if kind is int:
            if isinstance(value, bool):
                return None
            if isinstance(value, int):
                return value
            if isinstance(value, str) and _INT.match(value):
                return int(value)
            return None
        return value if isinstance(value, str) else str(value)

    def _storable(self, value: Any) -> bool:
        """Whether the database could hold ``value``: PostgreSQL text cannot contain NUL, so no row has such an id
        (sending one would be a driver error, misreported as the database being unreachable)."""
        if value is None:
            return False
        return not (isinstance(value, str) and "\x00" in value and self.engine.dialect.name == "postgresql")

    def id_key(self, entity: str, entity_id: Any) -> str | None:
        """The key under which :meth:`fetch` returns the row for ``entity_id`` (None: cannot exist)."""
        v = self._coerce(entity_id, self._lookups[entity].id_kind)
        return None if v is None else str(v)

    def fetch(self, entity: str, ids: Iterable[Any], principal: Any = None) -> dict[str, dict[str, Any]]:
        """Rows of ``entity`` by id (as returned by :meth:`id_key`): ``{id: {field: value, ...}}``.

        With a principal and a scoped entity, rows outside the scope are simply
        absent. Raises StoreUnavailable when the database cannot answer.
        """
        lk = self._lookups[entity]
        bound = sorted({v for v in (self._coerce(i, lk.id_kind) for i in ids) if self._storable(v)}, key=str)
        if not bound:
            return {}
        principal_value = None
        scoped = lk.scope_col is not None and principal is not None
        if scoped:
            principal_value = self._coerce(principal, lk.scope_kind or str)
            if not self._storable(principal_value):
                return {}
        out: dict[str, dict[str, Any]] = {}
        names = lk.names
        try:
            with self.engine.connect() as conn:
                for k in range(0, len(bound), self.batch_size):
                    chunk = bound[k : k + self.batch_size]
                    sql, order = lk.statement(len(chunk), scoped, self.engine.dialect)
                    values = {f"id{i}": v for i, v in enumerate(chunk)}
                    if scoped:
                        values["principal"] = principal_value
                    params: Any = tuple(values[n] for n in order) if order is not None else values
                    for row in conn.exec_driver_sql(sql, params).fetchall():
                        rec = dict(zip(names, row))
                        key = str(rec[ID])
                        if key in out:
                            raise _Garbage("id is not unique")
                        out[key] = rec
        except sa_exc.SQLAlchemyError as exc:
            raise unavailable(exc, f"entity '{entity}'") from None
        except _Garbage as exc:
            err = StoreUnavailable(f"the system of record could not be reached: {_CAUSE_TEXT['garbage']} ({exc})",
                                   location=f"entity '{entity}'")
            err.cause = "garbage"  # type: ignore[attr-defined]
            raise err from None
        return out

    def scoped(self, entity: str) -> bool:
        return self._lookups[entity].scope_col is not None

    def ping(self) -> bool:
        try:
            with self.engine.connect() as conn:
                conn.execute(sa.text("SELECT 1"))
            return True
        except sa_exc.SQLAlchemyError:
            return False

    def close(self) -> None:
        self.engine.dispose()

    def __enter__(self) -> "RecordStore":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


__all__ = ["RecordStore", "make_engine", "classify_error", "UPDATED_AT", "ID"]
