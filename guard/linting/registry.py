"""The lint-stage registry: a stage is one object, and lint, the gate, its config and the CLI read it from here.

A stage names itself, the finding codes it may emit (their catalogue entries),
the sentence a refusal gives a customer when it blocks, its default mode, the
options it takes from the gate config, and how to build its check. Adding a
stage is one module that calls :func:`register`::

    from guard.findings import Code, Finding, Severity
    from guard.linting.registry import Mode, Stage, register

    def build(setup):
        def check(ctx):
            return [Finding.make("X901", "no exclamation marks")] if "!" in ctx.template else []
        return check

    register(Stage("shout", build, codes=(Code("X901", "shout.exclamation", "shout", Severity.ERROR,
                                                "exclamation mark"),),
                   refusal="it raises its voice", default_mode=Mode.REPORT))

Stages run in registration order; guard's own are format, shape, freetext, ratio.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from enum import Enum
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel

from guard.errors import ConfigError
from guard.findings import CATALOGUE, Code, Finding

if TYPE_CHECKING:
    from guard.linting.runner import LintContext


class Mode(str, Enum):
    """What the gate does with a stage: nothing, report its findings, or refuse on them."""

    OFF = "off"
    REPORT = "report"
    ENFORCE = "enforce"


Check = Callable[["LintContext"], list[Finding]]
"""A built stage: reads the shared context, returns its findings."""


@dataclass(frozen=True)
class StageSetup:
    """What a stage may need to build its check; given by the gate, :func:`guard.lint` or the CLI."""

    domain: str | None = None
    grammar_dir: Any = None
    classifier: Any = None
    """A loaded classifier, or None for the shipped one."""
    options: BaseModel | None = None
    """This stage's options, an instance of ``Stage.options`` (None for a stage that takes none)."""


@dataclass(frozen=True)
class Stage:
    """One lint stage."""

    name: str
    build: Callable[[StageSetup], Check]
    codes: tuple[Code, ...] | tuple[str, ...] = ()
    """Its finding codes: catalogue entries, or codes already in the catalogue."""
    refusal: str = "its wording could not be checked"
    """Why an enforced stage refused, for a customer; ``{n}`` is the sentence number. A code's own
    ``refusal`` wins."""
    default_mode: Mode = Mode.REPORT
    options: type[BaseModel] | None = None
    """The pydantic model of its gate-config options (``ratio: {max_prose_per_slot: 8}``), if any."""
    required: bool = False
    """A required stage cannot be turned off (format: unsafe slots are never rendered)."""
    needs_domain: bool = False

    @property
    def code_names(self) -> tuple[str, ...]:
        """The codes the stage may emit."""
        return tuple(c if isinstance(c, str) else c.code for c in self.codes)

    def setup_options(self, raw: Mapping[str, Any] | BaseModel | None, where: str) -> BaseModel | None:
        """The stage's options validated by its model; a ConfigError names the key that is wrong."""
        if self.options is None:
            if raw:
                raise ConfigError(f"the {self.name} stage takes no options", location=where)
            return None
        from pydantic import ValidationError

        try:
            model = raw if isinstance(raw, self.options) else self.options.model_validate(raw or {})
        except ValidationError as exc:
            first = exc.errors(include_url=False)[0]
            key = ".".join(str(p) for p in first["loc"])
            raise ConfigError(
                f"{self.name} options: {first['msg']}", location=f"{where}.{key}" if key else where
            ) from None
        return model


_STAGES: dict[str, Stage] = {}


def register(stage: Stage) -> Stage:
    """Add a stage (and its codes to the catalogue); registering the same name again replaces it."""
    if not stage.name.isidentifier():
        raise ConfigError(f"a stage name must be an identifier, not {stage.name!r}", location="stage")
    resolved: list[Code] = []
    for c in stage.codes:
        entry = CATALOGUE[c] if isinstance(c, str) else c
        if not entry.refusal:
            entry = replace(entry, refusal=stage.refusal)
        if entry.stage != stage.name:
            raise ConfigError(
                f"code {entry.code} belongs to stage {entry.stage!r}, not {stage.name!r}", location=entry.code
            )
        resolved.append(entry)
    for entry in resolved:
        CATALOGUE.add(entry)
    stage = replace(stage, codes=tuple(resolved))
    _STAGES[stage.name] = stage
    return stage


def unregister(name: str) -> None:
    """Remove a stage added from Python (tests, plug-ins); guard's own stages stay."""
    stage = _STAGES.pop(name, None)
    if stage is not None:
        for code in stage.code_names:
            CATALOGUE.remove(code)


def _builtin() -> None:
    import guard.linting  # noqa: F401  (registers format, shape, freetext, ratio in that order)


def stages() -> list[Stage]:
    """Every registered stage, in run order."""
    _builtin()
    return list(_STAGES.values())


def stage(name: str) -> Stage:
    """The stage called ``name``; an unknown name is a configuration mistake, never a skipped check."""
    _builtin()
    found = _STAGES.get(name)
    if found is None:
        raise ConfigError(f"unknown lint stage {name!r}; stages are {', '.join(_STAGES)}", location=name)
    return found


def names() -> tuple[str, ...]:
    """The registered stages' names, in run order."""
    _builtin()
    return tuple(_STAGES)


def build(selected: Sequence[str] | Mapping[str, Any], setup: StageSetup) -> list[tuple[str, Check]]:
    """Checks for the named stages, in registration order (``selected`` may map names to their options)."""
    wanted = list(selected)
    for name in wanted:
        stage(name)
    options = selected if isinstance(selected, Mapping) else {}
    out: list[tuple[str, Check]] = []
    for s in stages():
        if s.name in wanted:
            opts = s.setup_options(options.get(s.name), s.name)
            out.append((s.name, s.build(replace(setup, options=opts))))
    return out


__all__ = ["Mode", "Check", "StageSetup", "Stage", "register", "unregister", "stages", "stage", "names", "build"]
