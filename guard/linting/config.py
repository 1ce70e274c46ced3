"""``guard lint`` settings from a ``[tool.guard]`` table in ``pyproject.toml`` or a ``.guard.yaml``.

The file is found by walking up from the linted path (or the working directory) to the filesystem root; in
each directory ``.guard.yaml`` wins over ``pyproject.toml``, and a ``pyproject.toml`` without a
``[tool.guard]`` table is passed over, as ruff does. Keys are spelt with dashes (``grammar-dir``); an unknown
key is a :class:`~guard.errors.ConfigError` that names it and the key it was probably meant to be. Paths in
the file are relative to the directory that holds it. Command-line options override the file.
"""

from __future__ import annotations

import difflib
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from guard.errors import ConfigError

GUARD_YAML = ".guard.yaml"
PYPROJECT = "pyproject.toml"


class LintSettings(BaseModel):
    """The keys a configuration file may set; every one is optional."""

    model_config = ConfigDict(extra="forbid", frozen=True, alias_generator=lambda s: s.replace("_", "-"))

    domain: str | None = None
    grammar_dir: str | None = None
    model: str | None = None
    slot_types: dict[str, str] = Field(default_factory=dict)
    max_prose_per_slot: float | None = Field(default=None, gt=0)
    max_words_without_slot: int | None = Field(default=None, gt=0)
    freetext: bool | None = None
    ratio: bool | None = None
    select: list[str] = Field(default_factory=list)
    ignore: list[str] = Field(default_factory=list)
    per_file_ignores: dict[str, list[str]] = Field(default_factory=dict)
    exclude: list[str] = Field(default_factory=list)
    respect_gitignore: bool = True
    paths: list[str] = Field(default_factory=list)
    fail_on: Literal["warning", "error"] | None = None
    format: Literal["text", "json", "sarif", "github"] | None = None
    help_uri: str | None = None

    @field_validator("help_uri")
    @classmethod
    def _absolute(cls, value: str | None) -> str | None:
        if value is not None:
            check_help_uri(value)
        return value

    @field_validator("select", "ignore", mode="before")
    @classmethod
    def _codes(cls, value: Any) -> Any:
        return [value] if isinstance(value, str) else value


def check_help_uri(value: str) -> str:
    """A help-uri must be an absolute URI (SARIF's ``helpUri``); ``{code}`` stands for the finding code."""
    from urllib.parse import urlsplit

    parts = urlsplit(value.replace("{code}", "S201"))
    if not parts.scheme or not (parts.netloc or parts.scheme in ("file", "urn")) or any(c.isspace() for c in value):
        example = "https://example.org/guard/{code}.md"
        raise ValueError(f"help-uri must be an absolute URI such as {example}, not {value!r}")
    return value


KEYS = tuple(f.alias or name for name, f in LintSettings.model_fields.items())


@dataclass(frozen=True)
class LintConfig:
    """Settings read from one file (or none), with the directory its relative paths start from."""

    settings: LintSettings = field(default_factory=LintSettings)
    root: Path = field(default_factory=Path.cwd)
    source: Path | None = None

    def path(self, value: str | None) -> Path | None:
        """A path from the file, relative to the file's directory."""
        return None if value is None else self.root / value


def did_you_mean(word: str, choices: Any) -> str:
    """`` (did you mean 'x'?)`` when a choice is close to ``word``, else nothing."""
    close = difflib.get_close_matches(word, list(choices), n=1, cutoff=0.6)
    return f" (did you mean {close[0]!r}?)" if close else ""


def parse_settings(data: Any, source: str) -> LintSettings:
    """Validate a mapping of settings; the first wrong key is named in a ConfigError."""
    if data is None:
        data = {}
    if not isinstance(data, Mapping):
        kind = type(data).__name__
        raise ConfigError(f"{source}: guard's settings must be a table of keys, not {kind}", location=source)
    try:
        return LintSettings.model_validate(dict(data))
    except ValidationError as exc:
        err = exc.errors()[0]
        key = ".".join(str(p) for p in err["loc"]) or "?"
        if err["type"] == "extra_forbidden":
            top = str(err["loc"][0])
            hint = did_you_mean(top, KEYS) or f"; keys are {', '.join(KEYS)}"
            message = f"{source}: unknown key {top!r}{hint}"
        else:
            message = f"{source}: {key}: {err['msg']}"
        raise ConfigError(message, location=f"{source}:{key}") from None


def _read_yaml(path: Path) -> Any:
    import yaml

    try:
        return yaml.safe_load(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, yaml.YAMLError) as exc:
        raise ConfigError(f"cannot read {path}: {exc}", location=str(path)) from None


def _read_pyproject(path: Path) -> tuple[bool, Any]:
    import tomllib

    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        raise ConfigError(f"cannot read {path}: {exc}", location=str(path)) from None
    tool = data.get("tool")
    if not isinstance(tool, dict) or "guard" not in tool:
        return False, None
    return True, tool["guard"]


def load_config(path: Path) -> LintConfig:
    """Settings from one named file: a ``.guard.yaml`` (any YAML name) or a ``pyproject.toml``."""
    path = Path(path)
    if not path.is_file():
        raise ConfigError(f"no configuration file {path}", location=str(path))
    if path.name == PYPROJECT:
        found, data = _read_pyproject(path)
        if not found:
            raise ConfigError(f"{path} has no [tool.guard] table", location=str(path))
        where = f"{path} [tool.guard]"
    else:
        data = _read_yaml(path)
        where = str(path)
    return LintConfig(parse_settings(data, where), path.resolve().parent, path)


def find_config(start: Path | None = None) -> LintConfig:
    """The nearest configuration above ``start`` (default: the working directory), or empty settings."""
    here = Path(start if start is not None else Path.cwd()).resolve()
    if not here.is_dir():
        here = here.parent
    for d in (here, *here.parents):
        if (d / GUARD_YAML).is_file():
            return load_config(d / GUARD_YAML)
        py = d / PYPROJECT
        if py.is_file() and _read_pyproject(py)[0]:
            return load_config(py)
    return LintConfig(root=Path.cwd().resolve())


__all__ = ["LintSettings", "LintConfig", "KEYS", "load_config", "find_config", "parse_settings", "did_you_mean"]
