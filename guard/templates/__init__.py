"""Approved sentence shapes: grammar libraries, the shape validator and exports for constrained decoding."""

from guard.templates.export import export, to_lark, to_regex
from guard.templates.library import Grammar, Shape, list_domains, load_grammar
from guard.templates.shapes import shape_text
from guard.templates.text import split_sentences
from guard.templates.validate import SentenceResult, ShapeReport, validate_template

__all__ = ["Grammar", "Shape", "load_grammar", "list_domains", "validate_template", "SentenceResult",
           "ShapeReport", "split_sentences", "shape_text", "export", "to_lark", "to_regex"]
