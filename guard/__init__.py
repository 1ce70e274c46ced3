"""guard: nobody ships a sentence that was not verified.

The public API is imported lazily so ``import guard`` stays cheap (no spaCy,
SQLAlchemy or Lark until used). A function named like its stage's module
(``lint``, ``decide``, ``verify``, ``audit``) is not re-exported here: importing
the submodule would replace it with the module. Use ``from guard.lint import
lint`` and the like.
"""

from __future__ import annotations

import importlib
from typing import Any

__version__ = "0.1.0"

_EXPORTS = {
    "Payload": "guard.payload",
    "Claim": "guard.payload",
    "ClaimType": "guard.payload",
    "Limits": "guard.payload",
    "load_payload": "guard.payload",
    "Policy": "guard.policy",
    "load_policy": "guard.policy",
    "RecordStore": "guard.store",
    "ClaimResult": "guard.checker",
    "Status": "guard.checker",
    "check": "guard.checker",
    "Decision": "guard.decide",
    "regenerate_loop": "guard.verify",
    "Guard": "guard.gate",
    "load_gate_config": "guard.gate",
    "lint_payload": "guard.lint",
    "LintResult": "guard.lint",
    "load_classifier": "guard.freetext_stage",
    "EventLog": "guard.events",
    "Metrics": "guard.metrics",
    "Finding": "guard.findings",
    "GuardError": "guard.errors",
    "PayloadError": "guard.errors",
    "PolicyError": "guard.errors",
    "StoreUnavailable": "guard.errors",
    "GrammarError": "guard.errors",
    "ModelError": "guard.errors",
    "CorpusError": "guard.errors",
}

__all__ = sorted(_EXPORTS) + ["__version__"]


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'guard' has no attribute {name!r}")
    return getattr(importlib.import_module(module), name)
