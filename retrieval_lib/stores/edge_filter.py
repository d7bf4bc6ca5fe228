"""qdrant-client filters as qdrant-edge filters: every caller builds qdrant-client models; the edge store translates."""

from __future__ import annotations

from typing import Any

from retrieval_lib.errors import ValidationError

__all__ = ["edge_filter"]


def _point_id(point_id: Any) -> Any:
    """Ids as qdrant-client gives them: unsigned integers stay integers, UUIDs become strings."""
    return point_id if isinstance(point_id, int) else str(point_id)


def _listed(value: Any) -> list[Any] | None:
    if value is None:
        return None
    return list(value) if isinstance(value, list | tuple) else [value]


def _match(match: Any) -> Any:
    import qdrant_edge as qe
    from qdrant_client import models

    if isinstance(match, models.MatchValue):
        return qe.MatchValue(match.value)
    if isinstance(match, models.MatchAny):
        return qe.MatchAny([*match.any])
    if isinstance(match, models.MatchExcept):
        return qe.MatchExcept([*match.except_])
    if isinstance(match, models.MatchText):
        return qe.MatchText(match.text)
    if isinstance(match, models.MatchPrefix):
        return qe.MatchPrefix(match.prefix)
    raise ValidationError(f"the edge engine cannot translate the filter match {type(match).__name__}",
                          field="query_filter")


def _condition(cond: Any) -> Any:
    import qdrant_edge as qe
    from qdrant_client import models

    if isinstance(cond, models.Filter):
        return edge_filter(cond)
    if isinstance(cond, models.FieldCondition):
        if cond.match is not None:
            return qe.FieldCondition(key=cond.key, match=_match(cond.match))
        if isinstance(cond.range, models.Range):
            r = cond.range
            return qe.FieldCondition(key=cond.key, range=qe.RangeFloat(gte=r.gte, gt=r.gt, lte=r.lte, lt=r.lt))
        if cond.is_empty is not None or cond.is_null is not None:
            return qe.FieldCondition(key=cond.key, is_empty=cond.is_empty, is_null=cond.is_null)
    if isinstance(cond, models.HasIdCondition):
        return qe.HasIdCondition({_point_id(i) for i in cond.has_id})
    if isinstance(cond, models.IsEmptyCondition):
        return qe.IsEmptyCondition(cond.is_empty.key)
    if isinstance(cond, models.IsNullCondition):
        return qe.IsNullCondition(cond.is_null.key)
    raise ValidationError(f"the edge engine cannot translate the filter condition {type(cond).__name__}",
                          field="query_filter")


def edge_filter(query_filter: Any) -> Any:
    """A qdrant-client ``Filter`` as a qdrant-edge ``Filter`` (an edge Filter or None passes through).

    Raises:
        ValidationError: a condition the edge engine cannot express (named).
    """
    import qdrant_edge as qe
    from qdrant_client import models

    if query_filter is None or isinstance(query_filter, qe.Filter):
        return query_filter
    if not isinstance(query_filter, models.Filter):
        raise ValidationError(f"query_filter must be a qdrant-client Filter, not {type(query_filter).__name__}",
                              field="query_filter")
    if query_filter.min_should is not None:
        raise ValidationError("the edge engine's translation does not support min_should", field="query_filter")

    def conds(value: Any) -> list[Any] | None:
        listed = _listed(value)
        return None if listed is None else [_condition(c) for c in listed]

    return qe.Filter(must=conds(query_filter.must), should=conds(query_filter.should),
                     must_not=conds(query_filter.must_not))
