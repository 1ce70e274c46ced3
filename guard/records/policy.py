"""The policy: which entities and fields may be read, and how each is compared and shown.

The whitelist lives here, in a file the application owns, never in the prompt.
Table and column names used in SQL come only from a loaded policy; strings from
the payload are only ever looked up in it.
"""

from __future__ import annotations

import re
import warnings
from datetime import timedelta
from decimal import Decimal
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

import yaml
from babel import Locale, UnknownLocaleError
from babel.numbers import get_currency_precision, list_currencies
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from guard._files import read_utf8
from guard.errors import OptionError, PolicyError, Problem
from guard.payload import NAME, ClaimType
from guard.timeutil import parse_duration

_SQL_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_$]{0,62}$")
_CAMEL = re.compile(r"(?<=[a-z0-9])(?=[A-Z])")

#: Words of three letters or fewer that read as themselves in a customer's sentence. Any other short word in
#: the name of an entity or field without a ``label`` is taken for an abbreviation (``pid``, ``qty``, ``eta``)
#: and named in a PolicyWarning at load, since the refusal would show it to the customer as it is.
PLAIN_SHORT_WORDS = frozenset(
    (  # noqa: SIM905 (a word list reads best as words)
        "a an and at by for in of on or per to up via id ip age day due end fee tax vat tip top net new old raw "
        "max min key pin zip url sku set log box bag car bed kit fit g kg lb oz mm cm m km ml l"
    ).split()
)


def readable_name(name: str) -> str:
    """A key or value as words for a customer's sentence: ``shipped_at`` and ``shippedAt`` both read
    ``shipped at``; acronyms keep their capitals (``order_ID`` reads ``order ID``)."""
    words = _CAMEL.sub(" ", name).replace("_", " ").split()
    return " ".join(w if len(w) > 1 and w.isupper() else w.lower() for w in words)


def _abbreviations(name: str) -> list[str]:
    return [w for w in readable_name(name).split() if len(w) <= 3 and w.lower() not in PLAIN_SHORT_WORDS]


class PolicyWarning(UserWarning):
    """The policy loads, but reads more than its author probably meant (a table read in and out of scope)."""


_MAX_SECONDS = 86_400_000_000
"""The largest timestamp tolerance, in seconds: a million days, within what a timedelta can hold."""

_OPTIONS = ("currency", "tolerance", "unit", "aliases")
_EXAMPLES = {"currency": "currency: GBP"}


class FieldPolicy(BaseModel):
    """One readable field: its type, how it is compared, and how a person calls it."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    type: ClaimType
    column: str | None = None
    label: str | None = None
    freshness: timedelta | None = None
    currency: str | None = None
    tolerance: Decimal | None = None
    unit: str | None = None
    aliases: dict[str, list[str]] = Field(default_factory=dict)

    @field_validator("freshness", mode="before")
    @classmethod
    def _duration(cls, v: Any) -> Any:
        try:
            return None if v is None else parse_duration(v, what="freshness")
        except OptionError as exc:
            raise ValueError(exc.message) from None

    @field_validator("tolerance", mode="before")
    @classmethod
    def _tolerance(cls, v: Any) -> Any:
        if v is None:
            return None
        if isinstance(v, bool) or not isinstance(v, (int, float, str, Decimal)):
            raise ValueError("tolerance must be a number")
        try:
            d = Decimal(v.strip() if isinstance(v, str) else str(v))
        except ArithmeticError:
            raise ValueError(f"tolerance must be a number, not {str(v)[:40]!r}") from None
        if not d.is_finite() or d < 0:
            raise ValueError("tolerance must be a finite number >= 0")
        return d

    @field_validator("currency")
    @classmethod
    def _currency(cls, v: str | None) -> str | None:
        if v is None:
            return v
        if v.upper() != v or v not in list_currencies():
            raise ValueError(f"'{v}' is not an ISO 4217 currency code (e.g. GBP, JPY, BHD)")
        return v

    @field_validator("column")
    @classmethod
    def _column(cls, v: str | None) -> str | None:
        if v is not None and not _SQL_NAME.match(v):
            raise ValueError(f"'{v}' is not a plain column name")
        return v

    @model_validator(mode="after")
    def _by_type(self) -> FieldPolicy:
        """The options the field's claim type takes (from its spec in :mod:`guard.records.types`)."""
        from guard.records.types import TYPES

        spec = TYPES[self.type]
        if self.type is ClaimType.TIMESTAMP and self.tolerance is not None and self.tolerance > _MAX_SECONDS:
            raise ValueError(
                f"a timestamp's tolerance is in seconds and must be at most {_MAX_SECONDS} (a million days)"
            )
        for option in sorted(spec.required):
            if not getattr(self, option):
                raise ValueError(f"a {self.type.value} field needs a {option} (e.g. {_EXAMPLES[option]})")
        for option in _OPTIONS:
            if getattr(self, option) not in (None, {}) and option not in spec.options:
                takes = " and ".join(s.type.value for s in TYPES.values() if option in s.options)
                verb = "apply" if option.endswith("s") else "applies"
                raise ValueError(f"{option} {verb} only to {takes} fields")
        seen: dict[str, str] = {}
        for canon, alts in self.aliases.items():
            for a in [canon, *alts]:
                k = a.casefold()
                if k in seen and seen[k] != canon:
                    raise ValueError(f"alias '{a}' maps to both '{seen[k]}' and '{canon}'")
                seen[k] = canon
        return self

    @property
    def exponent(self) -> int:
        """Minor-unit digits of the currency (2 for GBP, 0 for JPY, 3 for BHD)."""
        return get_currency_precision(self.currency) if self.currency else 0

    def canonical_enum(self, value: str) -> str:
        """Case-folded value mapped through the alias table."""
        k = value.strip().casefold()
        for canon, alts in self.aliases.items():
            if k == canon.casefold() or k in (a.casefold() for a in alts):
                return canon.casefold()
        return k


class EntityPolicy(BaseModel):
    """One readable entity: its table, id, update time, row scope and readable fields."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    table: str
    id: str = "id"
    updated_at: str | None = None
    scope: str | None = None
    label: str | None = None
    fields: dict[str, FieldPolicy]

    @field_validator("table", "id", "updated_at", "scope")
    @classmethod
    def _sql_name(cls, v: str | None) -> str | None:
        if v is not None and not _SQL_NAME.match(v):
            raise ValueError(f"'{v}' is not a plain table or column name")
        return v

    @model_validator(mode="after")
    def _fields(self) -> EntityPolicy:
        if not self.fields:
            raise ValueError("an entity needs at least one readable field")
        for name in self.fields:
            if not NAME.fullmatch(name):
                raise ValueError(f"field name '{name}' must be letters, digits and underscores")
        return self

    def column(self, field: str) -> str:
        """The database column behind a field."""
        return self.fields[field].column or field


class Policy(BaseModel):
    """The application's whitelist. Build from YAML with :func:`load_policy` or directly in Python."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    timezone: str = "UTC"
    locale: str = "en_GB"
    db_timezone: str = "UTC"
    entities: dict[str, EntityPolicy]

    @field_validator("timezone", "db_timezone")
    @classmethod
    def _tz(cls, v: str) -> str:
        try:
            ZoneInfo(v)
        except (ZoneInfoNotFoundError, ValueError, OSError):
            raise ValueError(f"'{v}' is not an IANA time zone (e.g. Europe/London)") from None
        return v

    @field_validator("locale")
    @classmethod
    def _locale(cls, v: str) -> str:
        try:
            Locale.parse(v)
        except (UnknownLocaleError, ValueError, TypeError):
            raise ValueError(f"'{v}' is not a locale Babel knows (e.g. en_GB)") from None
        return v

    @model_validator(mode="after")
    def _names(self) -> Policy:
        if not self.entities:
            raise ValueError("a policy needs at least one entity")
        for name in self.entities:
            if not NAME.fullmatch(name):
                raise ValueError(f"entity name '{name}' must be letters, digits and underscores")
        for message in [*self.shared_tables(), *self.unreadable_names()]:
            warnings.warn(message, PolicyWarning, stacklevel=2)
        return self

    def unreadable_names(self) -> list[str]:
        """Entities and fields without a ``label`` whose name reads as an abbreviation in a refusal."""
        unclear = []
        for name, ent in self.entities.items():
            if ent.label is None and _abbreviations(name):
                unclear.append(f"entity '{name}' (reads '{readable_name(name)}')")
            for field, fp in ent.fields.items():
                if fp.label is None and _abbreviations(field):
                    unclear.append(f"field '{name}.{field}' (reads '{readable_name(field)}')")
        if not unclear:
            return []
        return [
            f"{', '.join(unclear)} without a label: refusals name {'it' if len(unclear) == 1 else 'them'} to the "
            'customer as written; give each a label (label: "parcel weight")'
        ]

    def shared_tables(self) -> list[str]:
        """Tables read by entities with different row scopes: what one entity scopes, the other reads freely."""
        readers: dict[str, list[tuple[str, str | None]]] = {}
        for name, ent in self.entities.items():
            readers.setdefault(ent.table, []).append((name, ent.scope))
        out = []
        for table, users in readers.items():
            if len({scope for _, scope in users}) > 1:
                who = ", ".join(f"'{n}' ({f'scoped by {s}' if s else 'unscoped'})" for n, s in users)
                out.append(
                    f"table '{table}' is read by entities {who}: rows one of them scopes to a customer "
                    "are readable through another"
                )
        return out

    @property
    def tz(self) -> ZoneInfo:
        """The time zone that decides what calendar day a time is."""
        return ZoneInfo(self.timezone)

    @property
    def db_tz(self) -> ZoneInfo:
        """The time zone of naive times stored in the database."""
        return ZoneInfo(self.db_timezone)

    def field(self, entity: str, field: str) -> FieldPolicy | None:
        """The field's policy, or None when the pair is not whitelisted."""
        e = self.entities.get(entity)
        if e is None:
            return None
        return e.fields.get(field)


def _did_you_mean(loc: tuple[Any, ...]) -> str:
    """`` (did you mean 'fields'?)`` for a misspelt key, from the keys of the table it sits in."""
    import difflib

    model: type[BaseModel] = Policy
    if len(loc) == 3 and loc[0] == "entities":
        model = EntityPolicy
    elif len(loc) == 5 and loc[0] == "entities":
        model = FieldPolicy
    close = difflib.get_close_matches(str(loc[-1]), list(model.model_fields), n=1, cutoff=0.6)
    return f" (did you mean {close[0]!r}?)" if close else ""


def _problems(exc: ValidationError) -> list[Problem]:
    out = []
    for e in exc.errors(include_url=False):
        loc = ".".join(str(p) for p in e["loc"] if not str(p).startswith(("function-", "constrained")))
        msg = e["msg"].removeprefix("Value error, ")
        if e["type"] == "extra_forbidden":
            msg = "unknown key" + _did_you_mean(e["loc"])
        out.append(Problem("policy", msg, loc))
    return out


def load_policy(source: str | Path | dict[str, Any] | Policy) -> Policy:
    """Read a policy from a YAML file, YAML text or a mapping; every problem in one PolicyError.

    Checking the policy against the database happens when a
    :class:`guard.records.store.RecordStore` is opened with it.
    """
    if isinstance(source, Policy):
        return source
    where = "policy"
    if isinstance(source, Path) or (
        isinstance(source, str) and "\n" not in source and source.endswith((".yaml", ".yml"))
    ):
        path = Path(source)
        where = str(path)
        source = read_utf8(path, "the policy file", PolicyError)
    if isinstance(source, str):
        try:
            data = yaml.safe_load(source)
        except yaml.YAMLError as exc:
            mark = getattr(exc, "problem_mark", None)
            loc = f"{where}:{mark.line + 1}:{mark.column + 1}" if mark else where
            raise PolicyError(f"the policy is not valid YAML: {getattr(exc, 'problem', exc)}", location=loc) from None
        except RecursionError:
            raise PolicyError("the policy is nested too deeply to be a policy", location=where) from None
    else:
        data = source
    if not isinstance(data, dict):
        raise PolicyError("the policy must be a mapping with timezone, locale and entities", location=where)
    try:
        return Policy.model_validate(data)
    except ValidationError as exc:
        raise PolicyError("the policy is invalid", problems=_problems(exc), location=where) from None


__all__ = ["PolicyWarning", "readable_name", "FieldPolicy", "EntityPolicy", "Policy", "load_policy", "parse_duration"]
