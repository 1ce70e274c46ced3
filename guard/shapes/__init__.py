"""Approved sentences: lexicon libraries compiled to strict LALR(1) grammars, the sentence check that binds
slots to fields and prose states to their witnesses, and exports for constrained decoding."""

from guard.shapes.check import Bindings, Need, SentenceResult, ShapeReport, SlotUse, bind, check_template
from guard.shapes.export import export, to_lark, to_regex
from guard.shapes.sentences import Library, list_domains, load_domain, load_library
from guard.shapes.text import split_sentences

__all__ = [
    "Library",
    "load_domain",
    "load_library",
    "list_domains",
    "check_template",
    "bind",
    "Bindings",
    "Need",
    "SlotUse",
    "SentenceResult",
    "ShapeReport",
    "split_sentences",
    "export",
    "to_lark",
    "to_regex",
]
