"""The answer's column fast path: results of one field rendered as columns, beside the readable reference.

``decision._answer_parts`` renders result by result. When every result is of
one (entity, field), :func:`columns` formats the whole column at once
(:meth:`~guard.records.formatting.Formatter.many`) and builds the citations
from the column of row ids. A property test holds the two equal.
"""

from __future__ import annotations

from collections.abc import Sequence
from operator import attrgetter

from guard.records.formatting import formatter
from guard.records.policy import Policy
from guard.records.results import ClaimResult

_COLUMNS = attrgetter("key", "entity", "field", "actual", "row_id", "updated_iso", "updated_at")


def columns(
    results: Sequence[ClaimResult], policy: Policy
) -> tuple[list[str], list[str], list[str | None], list[str | None]] | None:
    """``decision._answer_parts`` for results of one field; None when they are of several."""
    if not results:
        return None
    keys, entities, names, actuals, row_ids, isos, updated = zip(*map(_COLUMNS, results))
    entity, name = entities[0], names[0]
    n = len(results)
    if entities.count(entity) != n or names.count(name) != n:
        return None
    texts = formatter(policy.entities[entity].fields[name], policy).many(actuals)
    cited: list[str | None] = [f"{entity}:{r}#{name}" for r in row_ids]
    stamps: list[str | None] = list(isos)
    if None in stamps:
        stamps = [s if s is not None or u is None else u.isoformat() for s, u in zip(isos, updated)]
    return list(keys), texts, cited, stamps


__all__ = ["columns"]
