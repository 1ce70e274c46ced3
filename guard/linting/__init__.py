"""Lint an answer template before any lookup: the stage registry, the runner, one module per stage."""

from guard.linting.files import (SIDECAR_SUFFIX, TEMPLATE_SUFFIXES, FileLint, find_templates, lint_file,
                                 parse_slot_types, read_sidecar)
from guard.linting.runner import (STAGES, LintContext, LintResult, Stage, default_stages, format_stage, lint,
                                  lint_payload, run_stages, shape_stage)

__all__ = ["SIDECAR_SUFFIX", "TEMPLATE_SUFFIXES", "FileLint", "find_templates", "lint_file", "parse_slot_types",
           "read_sidecar", "STAGES", "LintContext", "LintResult", "Stage", "default_stages", "format_stage", "lint",
           "lint_payload", "run_stages", "shape_stage"]
