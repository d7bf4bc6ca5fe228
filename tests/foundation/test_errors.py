"""The exception tree: one root, declared attributes, safe to print and to pickle."""

from __future__ import annotations

import inspect
import pickle

import pytest

import retrieval_lib
from retrieval_lib import errors

CLASSES = [getattr(errors, name) for name in errors.__all__]


def test_every_error_is_exported_by_name_and_derives_from_the_root():
    for cls in CLASSES:
        assert getattr(errors, cls.__name__) is cls
        assert issubclass(cls, errors.RetrievalError)
    assert retrieval_lib.RetrievalError is errors.RetrievalError


@pytest.mark.parametrize("cls", [c for c in CLASSES if c is not errors.RetrievalError], ids=lambda c: c.__name__)
def test_each_class_declares_its_attributes_and_refuses_unknown_ones(cls):
    params = [p for p in inspect.signature(cls.__init__).parameters.values() if p.kind is p.KEYWORD_ONLY]
    # every declared attribute is a named keyword argument (ParamsError derives ``field`` from ``key``)
    assert set(cls.field_names) - {"field"} <= {p.name for p in params}
    kwargs = {p.name: (p.default if p.default is not p.empty else "x") for p in params}
    if cls is errors.ConfigurationError:
        kwargs = {"variable": "QDRANT_URL"}
    err = cls("what went wrong; what to do", **kwargs)
    assert set(err.fields) == set(cls.field_names)
    assert err.to_dict()["error"] == cls.__name__ and err.to_dict()["exit_code"] == cls.exit_code
    with pytest.raises(TypeError):  # a typo at a raise site fails loudly instead of dropping the field
        cls("message", **kwargs, colection="typo")
    again = pickle.loads(pickle.dumps(err))
    assert type(again) is cls and again.fields == err.fields and str(again) == str(err)


def test_configuration_error_names_exactly_one_source():
    assert errors.ConfigurationError("m", variable="QDRANT_URL").variable == "QDRANT_URL"
    assert errors.ConfigurationError("m", option="--params").option == "--params"
    assert errors.ConfigurationError("m", path="/x/y").path == "/x/y"
    with pytest.raises(TypeError):
        errors.ConfigurationError("m")
    with pytest.raises(TypeError):
        errors.ConfigurationError("m", variable="A", option="--b")


def test_params_error_is_a_validation_error_with_file_and_key():
    err = errors.ParamsError("demo.yaml: unknown parameter 'topk'", path="/p/demo.yaml", key="topk")
    assert isinstance(err, errors.ValidationError) and isinstance(err, ValueError)
    assert (err.field, err.path, err.key, err.exit_code) == ("topk", "/p/demo.yaml", "topk", 2)
    assert errors.ParamsError("not YAML", path="/p/x.yaml", key=None).field == "params"
