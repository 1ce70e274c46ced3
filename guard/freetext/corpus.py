"""Reading and validating labelled corpora (``corpora/<domain>.jsonl``).

Every problem is reported with its file and line; a corpus that fails any
rule raises :class:`guard.errors.CorpusError` listing all problems found.
"""

from __future__ import annotations

import hashlib
import json
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from guard.errors import CorpusError, Problem
from guard.textutil import split_lines

LABELS: tuple[str, ...] = ("causal", "comparative", "quantity", "temporal")
SPLITS: tuple[str, ...] = ("train", "dev", "test")
#: guard's own domains; the corpus also holds text beyond them (reviews, science, debates, support chat).
GUARD_DOMAINS = frozenset(
    {
        "orders",
        "billing",
        "banking",
        "travel",
        "telecom",
        "healthcare",
        "saas",
        "insurance",
        "utilities",
        "food_delivery",
    }
)
REGISTERS = frozenset({"formal", "casual", "terse", "apologetic"})
FIELDS = ("text", "labels", "domain", "split", "hard", "register")
_MAX_PROBLEMS = 50


def split_of(text: str) -> str:
    """The split a text belongs to: fixed by a hash of its normalised text, never chosen."""
    h = int(hashlib.sha256(text.strip().lower().encode("utf-8")).hexdigest(), 16) % 20
    return "train" if h < 14 else "dev" if h < 17 else "test"


@dataclass(frozen=True)
class Example:
    text: str
    labels: tuple[str, ...]
    domain: str
    split: str
    hard: bool
    register: str
    source: str = ""

    @property
    def has_slot(self) -> bool:
        return "{" in self.text and "}" in self.text


def corpus_files(path: str | Path) -> list[Path]:
    """The ``*.jsonl`` files of a corpus directory (or the one file given)."""
    p = Path(path)
    if p.is_file():
        return [p]
    if not p.is_dir():
        raise CorpusError(f"corpus not found: {p}", location=str(p))
    files = sorted(p.glob("*.jsonl"))
    if not files:
        raise CorpusError(f"no *.jsonl files in {p}", location=str(p))
    return files


def read_corpus(path: str | Path, *, check_splits: bool = True) -> list[Example]:
    """All examples of a corpus directory or file, validated.

    Checks each line's schema, the label set, the split formula (unless
    ``check_splits`` is false, for corpora with hand-made splits), that the
    domain matches the file name, and that no text occurs twice after
    lower-casing (which also rules out leakage across splits).
    """
    problems: list[Problem] = []
    examples: list[Example] = []
    seen: dict[str, str] = {}
    for f in corpus_files(path):
        try:
            lines = split_lines(f.read_bytes().decode("utf-8-sig"))  # bytes: text mode would split at a bare CR
        except (OSError, UnicodeDecodeError) as exc:
            problems.append(Problem("corpus.unreadable", f"cannot read: {exc}", str(f)))
            continue
        for n, line in enumerate(lines, 1):
            if not line.strip():
                continue
            where = f"{f}:{n}"
            ex = _parse(line, where, f.stem, problems, check_splits)
            if ex is None:
                continue
            key = ex.text.strip().lower()
            if key in seen:
                problems.append(Problem("corpus.duplicate", f"duplicate of {seen[key]} (after lower-casing)", where))
                continue
            seen[key] = where
            examples.append(ex)
    if problems:
        shown = problems[:_MAX_PROBLEMS]
        more = f" (showing {len(shown)} of {len(problems)})" if len(problems) > len(shown) else ""
        raise CorpusError(
            f"corpus {path} has {len(problems)} problem(s){more}", problems=shown, location=str(problems[0].location)
        )
    if not examples:
        raise CorpusError(f"corpus {path} holds no examples", location=str(path))
    return examples


def _parse(line: str, where: str, stem: str, problems: list[Problem], check_splits: bool) -> Example | None:
    def bad(code: str, msg: str) -> None:
        problems.append(Problem(code, msg, where))

    try:
        d = json.loads(line)
    except json.JSONDecodeError as exc:
        bad("corpus.json", f"not valid JSON: {exc.msg} at column {exc.colno}")
        return None
    except (RecursionError, ValueError):  # nested too deeply, an integer beyond int's digit limit
        bad("corpus.json", "not readable JSON: nested too deeply or a number too long")
        return None
    if not isinstance(d, dict):
        bad("corpus.json", "a line must be a JSON object")
        return None
    missing = [k for k in FIELDS if k not in d]
    if missing:
        bad("corpus.fields", f"missing field(s): {', '.join(missing)}")
        return None
    extra = sorted(set(d) - set(FIELDS))
    if extra:
        bad("corpus.fields", f"unknown field(s): {', '.join(extra)}")
    text, labels = d["text"], d["labels"]
    ok = True
    if not isinstance(text, str) or not text.strip():
        bad("corpus.text", "text must be a non-empty string")
        return None
    if not isinstance(labels, list) or not all(isinstance(x, str) for x in labels):
        bad("corpus.labels", "labels must be a list of strings")
        return None
    unknown = [x for x in labels if x not in LABELS]
    if unknown:
        bad("corpus.labels", f"unknown label(s) {unknown}; allowed: {list(LABELS)}")
        ok = False
    if labels != sorted(set(labels)):
        bad("corpus.labels", f"labels must be sorted and unique, got {labels}")
        ok = False
    wrong = [k for k in ("domain", "split", "register") if not isinstance(d[k], str)]
    if wrong:
        bad("corpus.fields", f"{', '.join(wrong)} must be a string")
        return None
    if d["split"] not in SPLITS:
        bad("corpus.split", f"split must be one of {list(SPLITS)}, got {d['split']!r}")
        ok = False
    elif check_splits and d["split"] != split_of(text):
        bad("corpus.split", f"split is {d['split']!r} but the hash formula gives {split_of(text)!r}")
        ok = False
    if not isinstance(d["hard"], bool):
        bad("corpus.hard", "hard must be true or false")
        ok = False
    if d["register"] not in REGISTERS:
        bad("corpus.register", f"register must be one of {sorted(REGISTERS)}, got {d['register']!r}")
        ok = False
    if d["domain"] != stem:
        bad("corpus.domain", f"domain {d['domain']!r} does not match the file name {stem!r}")
        ok = False
    if not ok:
        return None
    return Example(text, tuple(labels), d["domain"], d["split"], d["hard"], d["register"], where)


def corpus_sha256(path: str | Path) -> str:
    """Hash over the corpus files' names and bytes, for the model card."""
    h = hashlib.sha256()
    for f in corpus_files(path):
        h.update(f.name.encode("utf-8") + b"\0")
        h.update(f.read_bytes())
    return h.hexdigest()


def summary(examples: Iterable[Example]) -> dict:
    """Counts per split, label, domain, register, plus slot and hard shares."""
    exs = list(examples)
    n = len(exs)
    by_label = Counter(lab for e in exs for lab in e.labels)
    return {
        "n": n,
        "splits": dict(Counter(e.split for e in exs)),
        "labels": {lab: by_label.get(lab, 0) for lab in LABELS},
        "clean": sum(1 for e in exs if not e.labels),
        "multi_label": sum(1 for e in exs if len(e.labels) > 1),
        "domains": dict(sorted(Counter(e.domain for e in exs).items())),
        "registers": dict(sorted(Counter(e.register for e in exs).items())),
        "with_slots": sum(e.has_slot for e in exs) / n if n else 0.0,
        "hard": sum(e.hard for e in exs) / n if n else 0.0,
        "words": _length_stats([len(e.text.split()) for e in exs]),
        "labels_by_domain": {
            dom: {lab: sum(1 for e in exs if e.domain == dom and lab in e.labels) for lab in LABELS}
            for dom in sorted({e.domain for e in exs})
        },
    }


def _length_stats(lengths: list[int]) -> dict[str, float]:
    """Mean, 90th percentile and maximum words per sentence, and how many have 25 or more."""
    if not lengths:
        return {"mean": 0.0, "p90": 0, "max": 0, "long_25_plus": 0}
    ordered = sorted(lengths)
    return {
        "mean": round(sum(ordered) / len(ordered), 2),
        "p90": ordered[min(len(ordered) - 1, int(0.9 * len(ordered)))],
        "max": ordered[-1],
        "long_25_plus": sum(n >= 25 for n in ordered),
    }


def label_matrix(examples: Iterable[Example], labels: tuple[str, ...] = LABELS):
    """Binary indicator matrix (n, len(labels)) as a numpy array."""
    import numpy as np

    exs = list(examples)
    y = np.zeros((len(exs), len(labels)), dtype=np.int8)
    for i, e in enumerate(exs):
        for j, lab in enumerate(labels):
            if lab in e.labels:
                y[i, j] = 1
    return y


AGREEMENT_FILE = Path("agreement") / "second_annotation.jsonl"


def agreement(corpus: str | Path) -> dict | None:
    """Cohen's kappa per label between the corpus's first labels and a second, blind annotation
    (``<corpus>/agreement/second_annotation.jsonl``: rows with ``first`` and ``second`` label lists), for the
    model card; None when the corpus has no such file."""
    path = Path(corpus) / AGREEMENT_FILE
    if not path.is_file():
        return None
    from sklearn.metrics import cohen_kappa_score

    rows = []
    for n, line in enumerate(split_lines(path.read_text(encoding="utf-8")), 1):
        if not line.strip():
            continue
        try:
            d = json.loads(line)
            first, second = set(d["first"]), set(d["second"])
        except (ValueError, KeyError, TypeError) as exc:
            raise CorpusError(f"{path}:{n}: not an agreement row ({exc})", location=f"{path}:{n}") from None
        rows.append((first, second))
    if not rows:
        raise CorpusError(f"{path} holds no rows", location=str(path))
    labels = {}
    for lab in LABELS:
        a = [lab in f for f, _ in rows]
        b = [lab in s for _, s in rows]
        kappa = cohen_kappa_score(a, b) if len(set(a) | set(b)) > 1 else 1.0
        labels[lab] = {
            "kappa": round(float(kappa), 3),
            "agree": sum(x == y for x, y in zip(a, b)),
            "first": sum(a),
            "second": sum(b),
        }
    return {"path": str(path), "n": len(rows), "identical": sum(f == s for f, s in rows), "labels": labels}
