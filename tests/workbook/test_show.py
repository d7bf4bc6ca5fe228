"""What a notebook cell shows of a check's tables (:func:`retrieval_lib.workbook.check.show`).

An empty table was shown as a header row over nothing, and a cell showing five tables (notebook 16) showed five
grids with no name: the reader could not tell which was which, nor that ``changed`` was empty.
"""

from __future__ import annotations

import pandas as pd
import pytest
from IPython.display import Markdown

from retrieval_lib.workbook import check


class _Result:
    def __init__(self, tables):
        self._tables = tables

    def record(self, report, *, show=True):  # pragma: no cover - not used here
        pass

    def tables(self):
        return self._tables


@pytest.fixture
def shown(monkeypatch):
    out = []
    monkeypatch.setattr("IPython.display.display", out.append)
    return out


def _seen(items):
    return [item.data if isinstance(item, Markdown) else ("table", list(item.columns)) for item in items]


def test_several_tables_are_titled_and_an_empty_one_says_none(shown):
    result = _Result({"missing": pd.DataFrame({"page": ["a.md"], "words": [300]}),
                      "changed": pd.DataFrame(columns=["page", "changed_share"]),
                      "thin": pd.DataFrame({"page": ["b.md"]})})
    check.show(result, "missing", "changed", "thin", "not_a_table")
    assert _seen(shown) == ["**missing**", ("table", ["page", "words"]), "**changed**: none",
                            "**thin**", ("table", ["page"])]


def test_one_table_is_shown_alone_and_every_table_when_none_is_named(shown):
    result = _Result({"slices": pd.DataFrame({"slice": ["all"], "recall": [0.99]}),
                      "empty": pd.DataFrame(columns=["x"])})
    check.show(result, "slices")
    assert _seen(shown) == [("table", ["slice", "recall"])]
    shown.clear()
    check.show(result)
    assert _seen(shown) == ["**slices**", ("table", ["slice", "recall"]), "**empty**: none"]
