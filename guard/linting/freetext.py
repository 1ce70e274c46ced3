"""The free-text lint stage: classifier labels on each sentence become T3xx findings with evidence."""

from __future__ import annotations

from collections.abc import Collection
from typing import Any

from guard.findings import Finding
from guard.linting.registry import Check, Mode, Stage, StageSetup, register
from guard.linting.runner import LintContext

CODES = {"comparative": "T301", "quantity": "T302", "causal": "T303", "temporal": "T304"}
WHAT = {
    "comparative": "a comparison",
    "quantity": "a quantity",
    "causal": "a causal claim",
    "temporal": "a date or time",
}


def load_classifier(path: Any = None) -> Any:
    """The shipped classifier (or one at ``path``); raises ModelError with the reason when it cannot load."""
    from guard.freetext import load

    return load(path)


def freetext_findings(template: str, classifier: Any, vouched: Collection[int] = ()) -> list[Finding]:
    """T3xx findings for each sentence the classifier labels, with the evidence it used.

    ``vouched`` are the indices of sentences the domain's sentence library approved: a closed language whose
    compiler refuses every claim-bearing word, so the classifier (whose errors are false alarms there) judges
    only the text the library does not vouch for.
    """
    from guard.shapes.text import split_sentences

    sentences = [s for s in split_sentences(template) if s.index not in vouched]
    if not sentences:
        return []
    findings: list[Finding] = []
    predictions = classifier.predict([s.text for s in sentences])
    for sent, pred in zip(sentences, predictions):
        for label in pred.labels:
            code = CODES.get(label)
            if code is None:
                continue
            spans = pred.spans.get(label) or []
            if spans:
                start, end = sent.start + spans[0].start, sent.start + spans[0].end
                evidence = ", ".join(f"'{s.text}'" for s in spans[:3])
                msg = (
                    f"sentence {sent.index + 1} states {WHAT[label]} in free text ({evidence}); put the fact in a slot"
                )
            else:
                start, end = sent.start, sent.end
                msg = f"sentence {sent.index + 1} states {WHAT[label]} in free text; put the fact in a slot"
            findings.append(
                Finding.make(
                    code,
                    msg,
                    sentence=sent.index,
                    start=start,
                    end=end,
                    data={
                        "label": label,
                        "score": round(float(pred.scores.get(label, 0.0)), 4),
                        "spans": [
                            {"start": sent.start + s.start, "end": sent.start + s.end, "text": s.text} for s in spans
                        ],
                    },
                )
            )
    return findings


def freetext_stage(classifier: Any) -> Check:
    """A lint check bound to a loaded classifier."""

    def check(ctx: LintContext) -> list[Finding]:
        vouched = {s.index for s in ctx.sentences if s.ok}
        return freetext_findings(ctx.template, classifier, vouched)

    return check


def build(setup: StageSetup) -> Check:
    """Loads the classifier now (the shipped one unless the setup brings one): a missing model fails at start-up."""
    return freetext_stage(setup.classifier if setup.classifier is not None else load_classifier())


STAGE = register(
    Stage(
        "freetext",
        build,
        codes=tuple(CODES.values()),
        refusal="sentence {n} makes a claim outside the verified facts",
        default_mode=Mode.ENFORCE,
    )
)

__all__ = ["load_classifier", "freetext_findings", "freetext_stage", "build", "CODES", "STAGE"]
