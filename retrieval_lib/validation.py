"""Input validation for searches: the rules every entry point (library, CLI, HTTP) applies first.

Bad input is refused before a model loads or a connection opens, with a
:class:`~retrieval_lib.errors.ValidationError` naming the field and what to do.
"""

from __future__ import annotations

import math
from numbers import Integral, Real
from typing import Any

from retrieval_lib.errors import ValidationError

__all__ = ["MAX_TOP_K", "validate_query", "validate_params", "validate_filter", "whole_number", "number_in"]

#: Largest ``top_k`` served; larger requests are capped with a warning (seed 003 FR-012).
MAX_TOP_K = 20


def validate_query(query: Any, max_chars: int) -> str:
    """Return the query stripped of surrounding white space.

    Raises:
        ValidationError: not a string, not valid Unicode (a lone surrogate),
            empty or white space only, or longer than ``max_chars`` characters.
    """
    if not isinstance(query, str):
        raise ValidationError(f"query must be text, not {type(query).__name__}", field="query")
    _require_encodable(query, "query")
    text = query.strip()
    if not text:
        raise ValidationError("query cannot be empty: type a question, e.g. \"What is ROS 2?\"", field="query")
    if len(text) > max_chars:
        raise ValidationError(
            f"query is {len(text)} characters; the limit is {max_chars} (shorten it, or raise QUERY_MAX_CHARS)",
            field="query",
        )
    return text


def validate_params(top_k: Any, similarity_threshold: Any) -> tuple[int, float, list[str]]:
    """Check ``top_k`` and ``similarity_threshold``; returns (top_k, threshold, warnings).

    ``top_k`` above :data:`MAX_TOP_K` is capped with a warning (seed 003 FR-012).

    Raises:
        ValidationError: ``top_k`` not a whole number >= 1, or the threshold not
            a number within [0, 1].
    """
    warnings: list[str] = []
    if isinstance(top_k, bool) or not isinstance(top_k, Integral):
        raise ValidationError(f"top_k must be a whole number from 1 to {MAX_TOP_K}, not {type(top_k).__name__}",
                              field="top_k")
    top_k = int(top_k)
    if top_k < 1:
        raise ValidationError(f"top_k must be at least 1 (got {top_k})", field="top_k")
    if top_k > MAX_TOP_K:
        warnings.append(f"top_k {top_k} capped at {MAX_TOP_K}")
        top_k = MAX_TOP_K
    if isinstance(similarity_threshold, bool) or not isinstance(similarity_threshold, Real):
        raise ValidationError("similarity_threshold must be a number from 0 to 1", field="similarity_threshold")
    threshold = float(similarity_threshold)
    if math.isnan(threshold) or not 0.0 <= threshold <= 1.0:
        raise ValidationError(f"similarity_threshold must be within [0, 1] (got {threshold})",
                              field="similarity_threshold")
    return top_k, threshold, warnings


def whole_number(value: Any, field: str, *, low: int = 0, high: int | None = None, unit: str = "") -> int:
    """``value`` as an ``int`` when it is a whole number (numpy's included, a bool not) from ``low`` (to ``high``).

    Args:
        field: the argument's name, as its caller knows it (the error names it).
        unit: what is counted, for the message ("points": "a whole number of points >= 1").

    Raises:
        ValidationError: e.g. ``top_k must be a whole number from 1 to 100 (got 0)``, with ``field`` set.
    """
    number = int(value) if isinstance(value, Integral) and not isinstance(value, bool) else None
    if number is None or number < low or (high is not None and number > high):
        bounds = f">= {low}" if high is None else f"from {low} to {high}"
        raise ValidationError(f"{field} must be a whole number{f' of {unit}' if unit else ''} {bounds} "
                              f"(got {value!r})", field=field)
    return number


def number_in(value: Any, field: str, low: float | None = None, high: float | None = None, *,
              above: bool = False) -> float:
    """``value`` as a ``float`` when it is a number (a bool and NaN not) within [``low``, ``high``] (a bound left
    None is open); ``above``: strictly greater than ``low`` (``timeout_s`` > 0).

    Raises:
        ValidationError: e.g. ``min_recall must be a number from 0 to 1 (got 1.5)``, with ``field`` set.
    """
    number = not isinstance(value, bool) and isinstance(value, Real) and not math.isnan(value)
    if not number or (low is not None and (value <= low if above else value < low)) or \
            (high is not None and value > high):
        bounds = ([f"{'>' if above else '>='} {low:g}"] if low is not None else []) + \
            ([f"<= {high:g}"] if high is not None else [])
        said = f"from {low:g} to {high:g}" if len(bounds) == 2 and not above else " and ".join(bounds)
        raise ValidationError(f"{field} must be a number {said}".rstrip() + f" (got {value!r})", field=field)
    return float(value)


def _require_encodable(value: str, name: str) -> None:
    """Reject lone surrogates (e.g. non-UTF-8 bytes in argv, decoded with surrogateescape).

    They are not text: the tokenizer raises TypeError on them, the Cohere SDK
    UnicodeEncodeError, and printing them as JSON fails, so none of that may run.
    """
    try:
        value.encode("utf-8")
    except UnicodeEncodeError as err:
        raise ValidationError(
            f"{name} is not valid Unicode text (a lone surrogate at position {err.start}, e.g. bytes that are not "
            "UTF-8): pass UTF-8 text",
            field=name,
        ) from None


def validate_filter(value: Any, name: str) -> str | None:
    if value is None:
        return None
    if not isinstance(value, str) or not value.strip():
        raise ValidationError(f"{name} must be a non-empty string or None", field=name)
    _require_encodable(value, name)
    return value.strip()
