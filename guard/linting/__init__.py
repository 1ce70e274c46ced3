"""Lint an answer template before any lookup: the stage registry, the runner, one module per stage.

Importing this package registers guard's own stages in run order: format,
shape, freetext, ratio (see :mod:`guard.linting.registry`).
"""

from guard.linting import format, shapes, freetext, ratio  # noqa: F401, I001  (registration order is run order)
from guard.linting.files import (
    SIDECAR_SUFFIX,
    TEMPLATE_SUFFIXES,
    FileLint,
    find_templates,
    lint_file,
    parse_slot_types,
    read_sidecar,
)
from guard.linting.registry import Mode, Stage as StageSpec, StageSetup, register, unregister
from guard.linting.runner import (
    LintContext,
    LintResult,
    Stage,
    base_stages,
    default_stages,
    lint,
    lint_payload,
    run_stages,
)

__all__ = [
    "SIDECAR_SUFFIX",
    "TEMPLATE_SUFFIXES",
    "FileLint",
    "find_templates",
    "lint_file",
    "parse_slot_types",
    "read_sidecar",
    "Mode",
    "StageSpec",
    "StageSetup",
    "register",
    "unregister",
    "LintContext",
    "LintResult",
    "Stage",
    "base_stages",
    "default_stages",
    "lint",
    "lint_payload",
    "run_stages",
]
