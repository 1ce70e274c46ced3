"""The slot-ratio monitor: how much prose surrounds the verified slots.

A template with a great deal of prose and one slot is a model routing round
the mechanism: the prose is where unverified facts live. Two measures, with
thresholds per domain: prose words per slot over the whole template (R401),
and sentences of many words with no slot at all (R402).

Sentences the shape stage approved as one of the library's phrase classes that state no fact
(:data:`NO_FACT_KINDS`: "Thank you for your order.", "Hi {name},", "Kind regards,", "Let me know if there's
anything else I can do.", "You can track it in your account.", "Please see the details below.") are not prose here: the
library's compiler refuses every claim-bearing word in them, so they cannot carry an unverified fact, and a
template made only of them is not routing round the slots. A procedure ("Refunds go back to the original
payment method.") states a rule of the organisation, so it still counts.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Collection, Mapping
from dataclasses import dataclass

import regex
from pydantic import BaseModel, ConfigDict, Field

from guard.findings import Finding
from guard.linting.registry import Check, Mode, Stage, StageSetup, register
from guard.linting.runner import LintContext
from guard.payload.slots import scan_template

_WORD = regex.compile(r"[\p{L}\p{N}]+(?:['\u2019\-][\p{L}\p{N}]+)*")

NO_FACT_KINDS = frozenset(
    {"courtesy", "greet_line", "sign_off_line", "signature_line", "ack", "contact", "instruction", "discourse"}
)
"""Kinds of approved sentence (``SentenceResult.shape``) whose words are not counted as prose."""


class RatioThresholds(BaseModel):
    """Per-domain limits; a template over either is a finding."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    max_prose_per_slot: float = Field(default=8.0, gt=0)
    max_words_without_slot: int = Field(default=12, ge=1)


@dataclass(frozen=True)
class RatioReport:
    """How much prose surrounds the slots, over the template and per sentence."""

    prose_words: int
    slots: int
    prose_per_slot: float
    sentences_without_slot: int
    sentence_words: tuple[tuple[int, int], ...]  # (prose words, slots) per sentence

    @property
    def coverage(self) -> float:
        """Share of sentences that carry at least one slot."""
        n = len(self.sentence_words)
        return sum(1 for _, s in self.sentence_words if s) / n if n else 0.0

    def to_dict(self) -> dict[str, object]:
        """As plain JSON values."""
        ratio = self.prose_per_slot if self.prose_per_slot != float("inf") else None
        return {
            "prose_words": self.prose_words,
            "slots": self.slots,
            "prose_per_slot": ratio,
            "sentences_without_slot": self.sentences_without_slot,
            "coverage": round(self.coverage, 4),
        }


def measure(template: str, exempt: Collection[int] = (), stated: Mapping[int, int] | None = None) -> RatioReport:
    """Prose words, slots and their ratio (``inf`` prose per slot when there is prose and no slot); the words of
    the sentences whose indices are in ``exempt`` are not counted. ``stated`` counts, per sentence, the states
    said in prose that the shape stage bound to a witness ("Your order has been cancelled."): each is a fact the
    gate verifies through its witness claim (or refuses, S205/S208), so it counts as a slot does."""
    from guard.shapes.text import split_sentences

    slots, _ = scan_template(template)
    per_sentence = []
    total_words = 0
    i, n_slots, n_stated = 0, len(slots), 0
    # sentences and slots both come in template order: one walk pairs them (linear, not sentences x slots)
    for sent in split_sentences(template):
        while i < n_slots and slots[i].start < sent.start:
            i += 1
        pieces, at, inside = [], sent.start, 0
        while i < n_slots and slots[i].end <= sent.end:
            pieces.append(template[at : slots[i].start])
            at = slots[i].end
            inside += 1
            i += 1
        pieces.append(template[at : sent.end])
        words = 0 if sent.index in exempt else len(_WORD.findall(" ".join(pieces)))
        total_words += words
        witnessed = stated.get(sent.index, 0) if stated else 0
        per_sentence.append((words, inside + witnessed))
        n_stated += witnessed
    n = len(slots) + n_stated
    ratio = total_words / n if n else (float("inf") if total_words else 0.0)
    return RatioReport(total_words, n, ratio, sum(1 for _, s in per_sentence if not s), tuple(per_sentence))


def ratio_findings(
    template: str,
    thresholds: RatioThresholds | None = None,
    exempt: Collection[int] = (),
    stated: Mapping[int, int] | None = None,
) -> tuple[RatioReport, list[Finding]]:
    """The measures and the R4xx findings over ``thresholds``; sentences in ``exempt`` count no prose, and the
    witnessed states in ``stated`` count as slots (:func:`measure`)."""
    from guard.shapes.text import split_sentences

    t = thresholds or RatioThresholds()
    report = measure(template, exempt, stated)
    findings: list[Finding] = []
    if report.prose_per_slot > t.max_prose_per_slot:
        shown = "no slot" if report.slots == 0 else f"{report.prose_per_slot:.1f} prose words per slot"
        findings.append(
            Finding.make(
                "R401",
                f"{report.prose_words} words of prose around {report.slots} slot(s) ({shown}); the limit is "
                f"{t.max_prose_per_slot:g} per slot: state facts through slots",
                start=0,
                end=len(template),
                data=report.to_dict(),
            )
        )
    for sent, (words, slots) in zip(split_sentences(template), report.sentence_words):
        if slots == 0 and words > t.max_words_without_slot:
            findings.append(
                Finding.make(
                    "R402",
                    f"sentence {sent.index + 1} has {words} words and no slot; the limit is {t.max_words_without_slot}",
                    sentence=sent.index,
                    start=sent.start,
                    end=sent.end,
                    data={"words": words},
                )
            )
    return report, findings


def ratio_stage(thresholds: RatioThresholds | None = None) -> Check:
    """A lint check that also leaves its measures in ``ctx.extra['ratio']`` (the decision event reports them)."""

    def check(ctx: LintContext) -> list[Finding]:
        bindings = ctx.extra.get("bindings")
        stated = Counter(need.sentence for need in bindings.needs) if bindings is not None else None
        report, findings = ratio_findings(ctx.template, thresholds, no_fact_sentences(ctx.sentences), stated)
        ctx.extra["ratio"] = report
        return findings

    return check


def no_fact_sentences(sentences: Collection[object]) -> frozenset[int]:
    """Indices of the sentences the shape stage approved as a kind in :data:`NO_FACT_KINDS`."""
    return frozenset(int(getattr(s, "index", -1)) for s in sentences if getattr(s, "shape", None) in NO_FACT_KINDS)


def build(setup: StageSetup) -> Check:
    """The ratio check with the domain's thresholds."""
    options = setup.options
    return ratio_stage(options if isinstance(options, RatioThresholds) else None)


STAGE = register(
    Stage(
        "ratio",
        build,
        codes=("R401", "R402"),
        refusal="it has too much text around its verified facts",
        default_mode=Mode.REPORT,
        options=RatioThresholds,
    )
)

__all__ = [
    "NO_FACT_KINDS",
    "no_fact_sentences",
    "RatioThresholds",
    "RatioReport",
    "measure",
    "ratio_findings",
    "ratio_stage",
    "build",
    "STAGE",
]
