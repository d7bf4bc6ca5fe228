"""retrieval_lib.validation's two argument rules, ``whole_number`` and ``number_in``: what they accept, and an error
that names the field and what it must be."""

from __future__ import annotations

import math

import numpy as np
import pytest

from retrieval_lib.errors import ValidationError
from retrieval_lib.validation import number_in, whole_number


def refused(check, *args, **kwargs) -> ValidationError:
    with pytest.raises(ValidationError) as err:
        check(*args, **kwargs)
    return err.value


def test_a_whole_number_is_returned_as_an_int_numpys_included():
    assert whole_number(3, "top_k", low=1) == 3
    found = whole_number(np.int64(7), "sample_size", low=2)
    assert found == 7 and type(found) is int
    assert whole_number(0, "min_points") == 0 and whole_number(100, "top_k", low=1, high=100) == 100


@pytest.mark.parametrize("value", [0, -3, 2.5, 1.0, True, "2", None, math.nan])
def test_anything_else_is_refused_naming_the_field_and_the_rule(value):
    err = refused(whole_number, value, "sample", low=1, unit="points")
    assert err.field == "sample"
    assert err.message == f"sample must be a whole number of points >= 1 (got {value!r})"


def test_a_bounded_whole_number_says_both_bounds():
    err = refused(whole_number, 101, "top_k", low=1, high=100)
    assert (err.field, err.message) == ("top_k", "top_k must be a whole number from 1 to 100 (got 101)")


def test_a_number_in_range_is_returned_as_a_float():
    assert number_in(1, "min_recall", 0, 1) == 1.0 and number_in(np.float32(0.25), "share", 0, 1) == 0.25
    assert number_in(-1, "min_cosine", -1, 1) == -1.0 and number_in(0.001, "timeout_s", 0, above=True) == 0.001


@pytest.mark.parametrize("value, low, high, above, said", [
    (1.5, 0, 1, False, "min_recall must be a number from 0 to 1 (got 1.5)"),
    (math.nan, 0, 1, False, "min_recall must be a number from 0 to 1 (got nan)"),
    (True, 0, 1, False, "min_recall must be a number from 0 to 1 (got True)"),
    ("0.5", 0, 1, False, "min_recall must be a number from 0 to 1 (got '0.5')"),
    (0, 0, None, True, "min_recall must be a number > 0 (got 0)"),
    (0, 0, 1, True, "min_recall must be a number > 0 and <= 1 (got 0)"),
    (-1, 0, None, False, "min_recall must be a number >= 0 (got -1)"),
])
def test_a_number_out_of_range_is_refused_naming_the_range(value, low, high, above, said):
    err = refused(number_in, value, "min_recall", low, high, above=above)
    assert (err.field, err.message) == ("min_recall", said)
