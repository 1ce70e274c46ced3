"""Approved sentence shapes: grammar libraries, the shape validator and exports for constrained decoding."""

from guard.shapes.export import export, to_lark, to_regex
from guard.shapes.library import Grammar, Shape, list_domains, load_grammar
from guard.shapes.shapes import shape_text
from guard.shapes.text import split_sentences
from guard.shapes.validate import SentenceResult, ShapeReport, validate_template

__all__ = [
    "Grammar",
    "Shape",
    "load_grammar",
    "list_domains",
    "validate_template",
    "SentenceResult",
    "ShapeReport",
    "split_sentences",
    "shape_text",
    "export",
    "to_lark",
    "to_regex",
]
