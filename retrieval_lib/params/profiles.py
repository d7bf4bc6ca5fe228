"""Profiles: the notebooks' parameters (:class:`NotebookParameters`), each default written once in
:data:`DEFAULT_PROFILE`, and :func:`load_profile`."""

from __future__ import annotations

import functools
import json
import os
import re
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import BaseModel, create_model
from pydantic import ValidationError as PydanticError
from pydantic.fields import FieldInfo

from retrieval_lib.config import PROJECT_ROOT, Settings, dotenv_file, load_settings, secret_values
from retrieval_lib.errors import ParamsError
from retrieval_lib.params._schema import (
    AtLeastOne,
    Cosine,
    Count,
    Grade,
    Model,
    Name,
    NonNegative,
    Number,
    PayloadFields,
    Percent,
    Positive,
    Share,
    Text,
    TopK,
    Whole,
    params_error,
    read_yaml,
    resolve_path,
)

__all__ = ["NotebookParameters", "Profile", "load_profile", "RESERVED_KEYS", "DEFAULT_PROFILE", "PATH_PARAMETERS",
           "anchored"]

#: The profile whose values are every parameter's default (and what the notebooks' parameters cells hold).
DEFAULT_PROFILE = PROJECT_ROOT / "params" / "demo.yaml"
_SECRET_WORDS = ("api_key", "apikey", "api-key", "secret", "password", "credential")
#: A key whose last word is "token" (``token``, ``access_token``, ``hf-token``) names a secret; ``token_count`` or
#: ``max_tokens`` counts tokens (a payload role, a chunk size) and does not.
_TOKEN_KEY = re.compile(r"(?:^|[_\-])token$")
_ENV_REFERENCE = re.compile(r"\$\{[A-Za-z_][A-Za-z0-9_]*\}")


class NotebookParameters(Model):
    """Every parameter a notebook of the workbook declares, and its type (``run_dir`` aside: the runner sets it).

    Each one's default is the value of :data:`DEFAULT_PROFILE` (params/demo.yaml, where the figures behind each
    threshold are written beside it); a profile names only what it changes. ``tests/params/test_params.py`` holds these
    fields, the default profile's keys, the registry's parameter lists and the notebooks' parameters cells equal:
    a new parameter is a field here, its value (and why) in params/demo.yaml, its name in the notebook's registry
    record, and the same literal in the notebook's parameters cell.
    """

    # 01 query
    queries: list[Text]
    top_k: TopK
    similarity_threshold: Number
    source_prefix: str | None
    section: str | None
    no_match_threshold: Number
    # 02 score distributions
    query_sets: str
    candidate_threshold: Number
    min_separation: Number
    # 03 source coverage
    golden_set: str | None
    coverage_top_k: TopK
    min_reachable_share: Share
    headings_per_file: Count
    primary_query: str | None
    primary_prefix: str | None
    topics: str | None
    min_primary_share: Share
    # 04 consistency, and other languages
    consistency_queries: list[Text]
    repeats: AtLeastOne
    score_tolerance: NonNegative
    language_queries: str | None
    min_cross_lingual_jaccard: Share | None
    # 05 golden set (and 07): a percentage
    min_metadata_completeness: Percent
    # 06 latency
    latency_rounds: AtLeastOne
    latency_p95_target_ms: Positive
    concurrent_queries: Count
    concurrency: AtLeastOne
    concurrent_timeout_s: Positive
    # 07 collection health
    min_points: Count
    max_duplicate_share: Share
    # 08 retrieval API
    api_url: str | None
    api_repeats: AtLeastOne
    api_concurrency: list[AtLeastOne]
    api_latency_rounds: AtLeastOne
    api_max_overhead_ms: NonNegative
    metadata_table: str
    # 09 embedding contract
    contract_sample: AtLeastOne
    contract_seed: Whole
    contract_min_cosine: Cosine
    max_self_retrieval_drop: Share
    # 10 reachability
    reach_top_k: AtLeastOne
    reach_max_full: AtLeastOne
    reach_sample_size: AtLeastOne
    reach_seed: Whole
    reach_reverse_depth: AtLeastOne
    max_antihub_share: Share
    max_nk_skewness: Number
    offtopic_max_z: Positive
    max_offtopic_files: Count
    # 11 ANN recall
    ann_top_k: AtLeastOne
    ann_queries: AtLeastOne
    ann_slice_queries: Count
    ann_hnsw_ef: AtLeastOne | None
    ann_seed: Whole
    ann_min_recall: Share
    ann_min_recall_p5: Share
    # 12 chunk quality
    fragment_min_length: Count
    fragment_max_heading_share: Share
    max_unseen_share: Share
    max_fragment_share: Share
    max_fragment_win_rate: Share
    # 13 judgments
    judgments: str | None
    agreement_files: list[str]
    judged_query_set: str
    judged_top_k: TopK
    min_relevant_grade: Grade
    min_precision_at_3: Share
    min_judged_coverage: Share
    judge: str | None
    # 14 compare
    baseline_run: str | None
    candidate_run: str | None
    compare_alpha: Share
    compare_min_effect: NonNegative
    # 16 book
    book_docs: str | None
    book_sitemap: str | None
    book_base_url: str | None
    book_route_base: str | None
    changed_max_share: Share
    thin_min_coverage: Share
    max_missing_pages: Count
    max_gone_sources: Count
    near_duplicate_cosine: Cosine
    near_duplicate_top_k: AtLeastOne
    max_near_duplicate_share: Share


class _ProfileKeys(Model):
    """The keys the runner itself reads (never passed to a notebook as such): the profile's name; the collection it
    validates with that collection's ``payload_fields`` (role -> payload key), which reach the notebooks' kernels as
    QDRANT_COLLECTION_NAME and PAYLOAD_FIELDS; and the ``retriever`` that answers the questions (docs/retrievers.md,
    validated where it is opened), which reaches them as RETRIEVER_SPEC (header values stay ``${ENV}`` references)."""

    profile: Name
    collection: str | None
    payload_fields: PayloadFields | None
    retriever: dict[str, Any] | None


#: Profile keys the runner itself uses (see :class:`_ProfileKeys`).
RESERVED_KEYS = frozenset(_ProfileKeys.model_fields)
#: The parameters that name a file or a folder (``agreement_files``: a list of them). A relative one is read as
#: :func:`~retrieval_lib.params.resolve_path` reads any path: from the working folder when it is there, else from
#: the project root (where ``params/...`` are).
PATH_PARAMETERS = frozenset({"query_sets", "golden_set", "topics", "language_queries", "judgments", "agreement_files",
                             "book_docs", "book_sitemap", "baseline_run", "candidate_run"})


def anchored(values: Mapping[str, Any], folder: Path) -> dict[str, Any]:
    """``values`` with each relative path parameter that names something in ``folder`` (the folder a command runs
    in) made absolute, so that a process started elsewhere (a notebook's kernel starts in the project folder) reads
    the same file. Paths that are not there are left as they are, to be read from the project root."""
    def one(value: Any) -> Any:
        if isinstance(value, str) and value and not Path(value).is_absolute() and (folder / value).exists():
            return str((folder / value).resolve())
        return value

    return {key: ([one(v) for v in value] if isinstance(value, list) else one(value))
            if key in PATH_PARAMETERS else value for key, value in values.items()}


@functools.cache
def _profile_model(declared: frozenset[str] | None) -> type[BaseModel]:
    """The model a profile is checked against: the reserved keys and every parameter of :class:`NotebookParameters`
    (``declared`` None), or the parameters ``declared`` (a folder of other notebooks: those the model does not know
    are taken as they are); every key optional, since a profile names only what it changes."""
    known = {**_ProfileKeys.model_fields, **NotebookParameters.model_fields}
    names = set(known) if declared is None else set(declared) | RESERVED_KEYS
    fields: dict[str, Any] = {name: (known[name].annotation, FieldInfo.merge_field_infos(known[name], default=None))
                              if name in known else (Any, None) for name in sorted(names)}
    return create_model("Profile", __config__=Model.model_config, **fields)


@dataclass(frozen=True)
class Profile:
    """A validated profile: its parameters (what its file and the files it extends say), its file, and its name."""

    values: dict[str, Any]
    path: Path

    @property
    def name(self) -> str:
        return str(self.values.get("profile") or self.path.stem)

    def environment(self) -> dict[str, str]:
        """The variables a run sets for its notebooks' kernels from this profile: the collection it names and
        that collection's payload fields (none when the profile names neither)."""
        env: dict[str, str] = {}
        if self.values.get("collection"):
            env["QDRANT_COLLECTION_NAME"] = str(self.values["collection"])
        if self.values.get("payload_fields"):
            env["PAYLOAD_FIELDS"] = json.dumps(self.values["payload_fields"])
        if self.values.get("retriever"):
            env["RETRIEVER_SPEC"] = json.dumps(self.values["retriever"])
        return env

    def settings(self) -> Settings:
        """The settings under this profile, as a run gives its notebooks: :meth:`environment` over the process's
        environment and ``.env``."""
        return load_settings(env={**os.environ, **self.environment()}, dotenv_path=dotenv_file())

    def with_defaults(self) -> dict[str, Any]:
        """Every notebook parameter: this profile's value where it names one, else the default profile's (what
        the notebook's own parameters cell would give)."""
        return {**_defaults(), **self.values}


@functools.cache
def _defaults() -> dict[str, Any]:
    return dict(load_profile(DEFAULT_PROFILE, secrets=set()).values)


def _walk(data: Any, prefix: str = "") -> Iterator[tuple[str, Any]]:
    if isinstance(data, dict):
        for k, v in data.items():
            yield f"{prefix}{k}", v
            yield from _walk(v, f"{prefix}{k}.")
    elif isinstance(data, list):
        for i, v in enumerate(data):
            yield from _walk(v, f"{prefix}[{i}].") if isinstance(v, (dict, list)) else iter([(f"{prefix}[{i}]", v)])


def _refuse_secrets(values: Mapping[str, Any], path: Path, secrets: set[str]) -> None:
    for key, value in _walk(values):
        leaf = key.rsplit(".", 1)[-1].lower()
        # a retriever's header or env value written as a ${ENV_NAME} reference names a secret, never holds one
        reference = isinstance(value, str) and _ENV_REFERENCE.search(value) is not None
        if (any(word in leaf for word in _SECRET_WORDS) or _TOKEN_KEY.search(leaf)) and not reference:
            raise ParamsError(
                f"{path.name} has a parameter {key!r} that looks like a secret; papermill would write it into the "
                "executed notebook. Put secrets in the environment or .env instead",
                path=str(path), key=key,
            )
        if isinstance(value, str) and value.strip() and value.strip() in secrets:
            raise ParamsError(
                f"{path.name} parameter {key!r} holds an API key; put secrets in the environment or .env instead",
                path=str(path), key=key,
            )


def load_profile(path: str | os.PathLike[str], *, declared: Iterable[str] | None = None,
                 secrets: set[str] | None = None) -> Profile:
    """Read a profile (and those it ``extends``), refuse secrets, unknown keys and values of the wrong type.

    Args:
        path: the YAML profile.
        declared: the parameter names the notebooks of the run declare (a folder of other notebooks); None: the
            workbook's own (:class:`NotebookParameters`).
        secrets: values that must never appear; default: the API keys that
            :func:`~retrieval_lib.config.load_settings` sees (environment and ``.env``).

    Raises:
        ParamsError: missing or invalid file, a secret, an unknown key (named with its closest declared names), or
            a value of the wrong type (named with its key, in the file that gives it).
    """
    values, p, origin = _read_extended(path, ())
    _refuse_secrets(values, p, secret_values() if secrets is None else secrets)
    model = _profile_model(None if declared is None else frozenset(declared))
    try:
        model.model_validate(values)
    except PydanticError as err:
        errors = err.errors()
        key = str(next((e for e in errors if e["type"] == "extra_forbidden"), errors[0])["loc"][0])
        raise params_error(err, model, origin.get(key, p), noun="parameter",
                            hint="params/demo.yaml gives every parameter with its meaning") from None
    return Profile(values=values, path=p)


def check_parameters(values: Mapping[str, Any], *, where: str) -> None:
    """Refuse a notebook parameter of the wrong type or range, as in a profile (``where``: what gave the values,
    e.g. "the command line").

    Raises:
        ParamsError: the first wrong value, named with its key and what it must be.
    """
    try:
        fields = NotebookParameters.model_fields  # the rest as the default profile gives it
        NotebookParameters.model_validate({**{k: v for k, v in _defaults().items() if k in fields}, **values})
    except PydanticError as err:
        raise params_error(err, NotebookParameters, Path(where), noun="parameter",
                           hint="params/demo.yaml gives every parameter with its meaning") from None


def _read_extended(path: str | os.PathLike[str],
                   seen: tuple[Path, ...]) -> tuple[dict[str, Any], Path, dict[str, Path]]:
    """A profile's values over those of the profile its ``extends`` key names (a path like ``golden_set``'s:
    relative to the project root), recursively, and the file each value comes from; ``extends`` itself never
    reaches a notebook.

    Raises:
        ParamsError: the file cannot be read, or profiles extend each other in a circle.
    """
    values, p = read_yaml(path, what="parameter file")
    base = values.pop("extends", None)
    own = dict.fromkeys(values, p)
    if base is None:
        return values, p, own
    if not isinstance(base, str) or not base.strip():
        raise ParamsError(f"{p.name}: 'extends' must name a profile file (got {base!r})", path=str(p), key="extends")
    if p in seen:
        raise ParamsError(f"{p.name}: profiles extend each other in a circle ({' -> '.join(x.name for x in seen)})",
                          path=str(p), key="extends")
    inherited, _, origin = _read_extended(resolve_path(base), (*seen, p))
    return {**inherited, **values}, p, {**origin, **own}


