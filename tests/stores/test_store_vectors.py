"""stores.base.stored_vector / require_vector: the one rule for which vector a point read back carries (an unnamed
vector, a named one: the one chosen, else its only one), used by inspect, the embedding contract, reachability and
the side-by-side causes."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest

from retrieval_lib import VectorStore
from retrieval_lib.errors import ValidationError
from retrieval_lib.stores.base import require_vector, stored_vector


def point(vector, pid=7):
    return SimpleNamespace(id=pid, vector=vector)


def test_an_unnamed_or_only_named_vector_is_the_points_vector():
    assert stored_vector(point([0.5, 1.0])) == [0.5, 1.0]
    assert stored_vector(point((0.5, 1.0))) == [0.5, 1.0]
    assert stored_vector(point(np.array([0.5, 1.0]))) == [0.5, 1.0]
    assert stored_vector(point({"text": [1.0, 2.0]})) == [1.0, 2.0]


def test_of_several_named_vectors_only_the_chosen_one_counts():
    both = point({"text": [1.0, 2.0], "other": [2.0, 1.0]})
    assert stored_vector(both, "other") == [2.0, 1.0]
    assert stored_vector(both) is None  # none chosen: neither is the point's vector
    assert stored_vector(both, "nope") is None


@pytest.mark.parametrize("vector", [None, [], {}, [[1.0, 2.0], [3.0, 4.0]],
                                    SimpleNamespace(indices=[1], values=[0.5])])
def test_no_single_dense_vector_is_none(vector):
    assert stored_vector(point(vector)) is None


def test_a_check_that_needs_every_vector_names_the_point_and_itself():
    assert require_vector(point([1.0]), "reachability") == [1.0]
    with pytest.raises(ValidationError) as err:
        require_vector(point(None, pid=42), "reachability")
    assert err.value.field == "vectors"
    assert err.value.message.startswith("point 42 carries no single dense vector: reachability needs every")


def test_points_read_back_from_a_store_carry_their_vector():
    from qdrant_client import models

    with VectorStore.in_memory() as store:
        store.create_collection("c", 3)
        store.upsert("c", [models.PointStruct(id=1, vector=[1.0, 0.0, 0.0], payload={})])
        (got,) = store.retrieve("c", [1], with_vectors=True)
        without = next(iter(store.scroll("c", with_vectors=False)))
    assert stored_vector(got) == pytest.approx([1.0, 0.0, 0.0])
    assert stored_vector(without) is None
