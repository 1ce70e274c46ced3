"""``serve.yaml``: what the server serves, to whom, within which limits; validated once at start.

Every mistake is a :class:`~guard.errors.ConfigError` whose problems name the key (``keys.shop.policies[1]``),
never a server that starts with a weaker check. Paths are read relative to the config file.

API keys are stored as ``sha256:<hex digest>`` of the key, never the key itself. A key is 32 random bytes
(``guard serve hash-key`` makes one and prints both); for a secret of that entropy a fast hash is as strong as a
slow one, and it keeps the lookup to microseconds per request. A password-style hash (scrypt) would only be
needed for keys people choose.
"""

from __future__ import annotations

import hashlib
import re
import secrets
from pathlib import Path
from typing import Any

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from guard._files import read_utf8
from guard.errors import ConfigError, Problem

HASH_PREFIX = "sha256:"
_HASH = re.compile(r"sha256:[0-9a-f]{64}")
_HEADER = re.compile(r"[A-Za-z0-9-]{1,64}")


def hash_key(key: str) -> str:
    """The stored form of an API key: ``sha256:`` and the hex digest of its UTF-8 bytes."""
    return HASH_PREFIX + hashlib.sha256(key.encode("utf-8")).hexdigest()


def new_key() -> str:
    """A fresh API key: 32 random bytes, URL-safe text."""
    return "gk_" + secrets.token_urlsafe(32)


class PolicyConfig(BaseModel):
    """One policy the server checks claims against: its file, its database and the domains it answers in."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    policy: Path
    """The policy YAML (entities, fields, scope)."""
    db: str = Field(min_length=1)
    """The database URL; the asyncio driver of its backend is used (aiosqlite, psycopg async, aiomysql)."""
    domains: list[str] = Field(min_length=1)
    """Sentence libraries a template may be written in under this policy; the first is the default."""
    statement_timeout: float = Field(default=5.0, gt=0, le=600)
    pool_size: int = Field(default=10, ge=1, le=1000)
    """Database connections kept per worker for this policy; also how many of its runs a worker has in flight
    (more wait for a connection rather than open one for a single request)."""
    coalesce: int = Field(default=2, ge=0, le=1000)
    """0: each run reads its records alone. n: the reads of runs in flight in a worker are merged, one statement
    per entity, fields and principal, with at most n such batches at the database at once (see
    ``guard.records._coalesce``): on PostgreSQL, with 2, the workers' CPU a request at 64 in flight fell by a
    fifth (runs about different customers' orders) to a third (the same order); a slow statement holds up the
    reads behind it once n batches wait on the database."""


class KeyConfig(BaseModel):
    """One caller: its hashed key, what it may reach, how often."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    hash: str
    """``sha256:<hex>`` of the key (``guard serve hash-key``)."""
    policies: list[str] = Field(min_length=1)
    domains: list[str] = Field(min_length=1)
    rate: str | None = None
    """Requests allowed per window (``100/second``, ``5000 per minute``); default: ``limits.rate``."""
    allow_now: bool = False
    """Whether the caller may set ``now`` (replaying old payloads, tests); otherwise freshness is judged now."""

    @field_validator("hash")
    @classmethod
    def _hash(cls, value: str) -> str:
        if not _HASH.fullmatch(value):
            raise ValueError("must be 'sha256:' and 64 lower-case hex digits (see `guard serve hash-key`)")
        return value


class LimitsConfig(BaseModel):
    """Limits per request and per key."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    max_body_bytes: int = Field(default=262_144, ge=1024, le=64 * 1024 * 1024)
    rate: str = "50/second"
    """Requests per key per window unless the key says otherwise."""
    request_timeout: float = Field(default=10.0, gt=0, le=600)
    """Seconds a request may take in all before a 503 ``timeout``."""
    lint_timeout: float = Field(default=5.0, gt=0, le=600)
    """Seconds the lint stage of one request may take (parsing, the grammar, the classifier; ``/v1/lint`` and
    ``/v1/classify`` too)."""
    check_timeout: float = Field(default=5.0, gt=0, le=600)
    """Seconds the check stage may take: the lookups in the system of record, the decision and the rendering
    (each statement is also bounded by the policy's ``statement_timeout``)."""
    max_sentences: int = Field(default=1000, ge=1, le=100_000)
    """Sentences one ``/v1/classify`` request may carry."""


class ProxyConfig(BaseModel):
    """The OpenAI-compatible verifying proxy: where the model is and how hard to try."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    upstream: str = Field(pattern=r"^https?://")
    """Base URL of an OpenAI-compatible API (``http://127.0.0.1:8000/v1`` for vLLM or llama.cpp's server)."""
    api_key_env: str | None = None
    """Name of the environment variable holding the upstream's key (the key itself never sits in the config)."""
    model: str | None = None
    """The model to ask for when the request names none."""
    max_attempts: int = Field(default=3, ge=1, le=10)
    timeout: float = Field(default=30.0, gt=0, le=600)


class ServeConfig(BaseModel):
    """The whole ``serve.yaml``."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    host: str = "127.0.0.1"
    port: int = Field(default=8080, ge=0, le=65535)
    workers: int = Field(default=1, ge=1, le=64)
    policies: dict[str, PolicyConfig] = Field(min_length=1)
    keys: dict[str, KeyConfig] = Field(min_length=1)
    gate_config: Path | None = None
    """Gate config YAML (stages per domain) laid over guard's shipped one."""
    grammar_dir: Path | None = None
    classifier: str = "auto"
    """``auto``: the shipped model; ``none``: no free-text stage and no ``/v1/classify``; else a model path."""
    principal_header: str = "X-Guard-Principal"
    """The header the trusted application sets to the customer it answers; row scope comes only from here."""
    log: Path | None = None
    """Append the gate's events (JSON Lines) here."""
    limits: LimitsConfig = LimitsConfig()
    proxy: ProxyConfig | None = None
    ui: bool = True
    """Serve the playground at ``/ui`` (static pages; every call they make needs an API key)."""

    @field_validator("principal_header")
    @classmethod
    def _header(cls, value: str) -> str:
        if not _HEADER.fullmatch(value) or value.lower() in ("authorization", "content-type", "content-length"):
            raise ValueError("must be a plain header name (letters, digits, '-') other than a standard one")
        return value

    def key_for(self, digest: str) -> tuple[str, KeyConfig] | None:
        """The key entry whose stored hash is ``digest``."""
        for name, key in self.keys.items():
            if secrets.compare_digest(key.hash, digest):
                return name, key
        return None


def _where(loc: tuple[Any, ...]) -> str:
    out = ""
    for part in loc:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out


def _rate_problem(text: str, where: str) -> Problem | None:
    from limits import parse

    try:
        parse(text)
    except ValueError:
        return Problem("config", f"{text!r} is not a rate such as '100/second' or '5000 per minute'", where)
    return None


def _check(cfg: ServeConfig) -> list[Problem]:
    """What one key cannot tell alone: names that must exist elsewhere in the file or on disk."""
    from guard.shapes.sentences import list_domains

    problems: list[Problem] = []
    try:
        known = set(list_domains(cfg.grammar_dir))
    except ConfigError as exc:
        return [Problem("config", exc.message, "grammar_dir")]
    served: set[str] = set()
    for name, pol in cfg.policies.items():
        if not pol.policy.is_file():
            problems.append(Problem("config", f"policy file {pol.policy} does not exist", f"policies.{name}.policy"))
        for i, d in enumerate(pol.domains):
            if d not in known:
                what = f"unknown domain {d!r}; known: {', '.join(sorted(known))}"
                problems.append(Problem("config", what, f"policies.{name}.domains[{i}]"))
            served.add(d)
    seen: dict[str, str] = {}
    for kname, key in cfg.keys.items():
        if key.hash in seen:
            problems.append(Problem("config", f"the same key hash as keys.{seen[key.hash]}", f"keys.{kname}.hash"))
        seen.setdefault(key.hash, kname)
        for i, p in enumerate(key.policies):
            if p not in cfg.policies:
                problems.append(Problem("config", f"no policy named {p!r}", f"keys.{kname}.policies[{i}]"))
        for i, d in enumerate(key.domains):
            if d not in served:
                problems.append(Problem("config", f"no policy serves domain {d!r}", f"keys.{kname}.domains[{i}]"))
        if key.rate is not None:
            problems += filter(None, [_rate_problem(key.rate, f"keys.{kname}.rate")])
    problems += filter(None, [_rate_problem(cfg.limits.rate, "limits.rate")])
    if cfg.gate_config is not None and not cfg.gate_config.is_file():
        problems.append(Problem("config", f"gate config {cfg.gate_config} does not exist", "gate_config"))
    if cfg.classifier not in ("auto", "none") and not Path(cfg.classifier).is_file():
        problems.append(Problem("config", f"model file {cfg.classifier} does not exist", "classifier"))
    return problems


def _relative(data: dict[str, Any], base: Path) -> dict[str, Any]:
    """Paths in the file are relative to the file."""

    def rel(value: Any) -> Any:
        return str(base / value) if isinstance(value, str) and not Path(value).is_absolute() else value

    out = dict(data)
    for key in ("gate_config", "grammar_dir", "log"):
        if out.get(key) is not None:
            out[key] = rel(out[key])
    if isinstance(out.get("classifier"), str) and out["classifier"] not in ("auto", "none"):
        out["classifier"] = rel(out["classifier"])
    if isinstance(out.get("policies"), dict):
        out["policies"] = {
            n: {**p, "policy": rel(p.get("policy"))} if isinstance(p, dict) else p for n, p in out["policies"].items()
        }
    return out


def load_serve_config(source: str | Path | dict[str, Any], *, base: Path | None = None) -> ServeConfig:
    """The server's config from a YAML file or a mapping, checked whole; a ConfigError lists every problem."""
    where = "serve config"
    if isinstance(source, dict):
        data: Any = source
        base = base or Path.cwd()
    else:
        path = Path(source)
        where = str(path)
        text = read_utf8(path, "the serve config", ConfigError)
        try:
            data = yaml.safe_load(text)
        except yaml.YAMLError as exc:
            raise ConfigError(f"the serve config is not valid YAML: {exc}", location=where) from None
        base = base or path.resolve().parent
    if not isinstance(data, dict):
        raise ConfigError("the serve config must be a mapping (policies, keys, limits, ...)", location=where)
    try:
        cfg = ServeConfig.model_validate(_relative(data, base))
    except ValidationError as exc:
        raise ConfigError(
            "the serve config is invalid",
            location=where,
            problems=[Problem("config", e["msg"], _where(tuple(e["loc"]))) for e in exc.errors(include_url=False)],
        ) from None
    problems = _check(cfg)
    if problems:
        raise ConfigError("the serve config is invalid", location=where, problems=problems)
    return cfg


__all__ = [
    "ServeConfig",
    "PolicyConfig",
    "KeyConfig",
    "LimitsConfig",
    "ProxyConfig",
    "load_serve_config",
    "hash_key",
    "new_key",
]
