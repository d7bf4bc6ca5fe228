"""The profile's ``retriever:`` mapping, validated, and what a retriever answers.

A retriever is what answers a question: the collection itself (``kind: collection``, the default), a team's HTTP
endpoint (``kind: http``) or a team's Python function run in a child process (``kind: python``). Whatever the kind,
an answer is an :class:`Answer` of :class:`Hit` s under the workbook's own names.

Secrets: header values and ``env`` values may hold ``${ENV_NAME}`` references. The spec keeps the references (so it
is safe as a papermill parameter or an environment variable); :func:`expand` replaces them only at call time, and
:func:`redact` takes the expanded values back out of any text an error would show.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Any, Literal
from urllib.parse import parse_qsl, urlsplit

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from retrieval_lib.errors import ConfigurationError

__all__ = ["RetrieverSpec", "Hit", "Answer", "HIT_FIELDS", "expand", "redact", "one_line"]

#: The workbook's names for a result's fields (what ``fields`` maps onto).
HIT_FIELDS: tuple[str, ...] = ("content", "source_url", "source_file", "score", "chunk_id", "title")
_REF = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}")
#: Header names that carry credentials: their values must be ``${ENV}`` references, never literals.
_CREDENTIAL_HEADERS = ("authorization", "cookie", "api-key", "apikey", "token", "secret", "password", "x-api-key")
#: Query parameters that carry a key (``?api_key=``, ``?access_token=``, Azure Functions' ``?code=``, a signature).
_CREDENTIAL_PARAMETER = re.compile(r"(?:^|[_\-])(?:key|apikey|token|secret|password|passwd|pwd|code|sig|signature"
                                   r"|auth|credential|credentials)$", re.I)


def env_references(text: str) -> list[str]:
    """The ``${NAME}`` references in ``text``, in order."""
    return _REF.findall(text)


def expand(text: str, environ: Mapping[str, str] | None = None, *,
           where: str = "the retriever") -> tuple[str, list[str]]:
    """``text`` with each ``${NAME}`` replaced by the variable's value, read where settings are read (the ``.env``
    file, the environment over it: :func:`~retrieval_lib.config.read_variables`) unless ``environ`` is given;
    returns (text, the values put in).

    Raises:
        ConfigurationError: a variable is set nowhere (``variable``; its name only). Sent empty, every question
            would come back 401 with nothing to say why.
    """
    from retrieval_lib.config import dotenv_file, read_variables

    env = read_variables() if environ is None else environ
    values: list[str] = []
    unset: list[str] = []

    def sub(match: re.Match[str]) -> str:
        value = env.get(match.group(1), "")
        if value:
            values.append(value)
        else:
            unset.append(match.group(1))
        return value

    expanded = _REF.sub(sub, text)
    if unset:
        raise ConfigurationError(f"{where} names ${{{unset[0]}}}, which is set neither in the environment nor in "
                                 f"{dotenv_file()}: set {unset[0]} there (the profile keeps the reference, never "
                                 "the value)", variable=unset[0])
    return expanded, values


def redact(text: str, secrets: Iterable[str]) -> str:
    """``text`` with every secret value replaced by ``***`` (longest first, so a prefix never leaks a tail)."""
    for value in sorted({s for s in secrets if s and len(s) >= 3}, key=len, reverse=True):
        text = text.replace(value, "***")
    return text


def one_line(text: str, limit: int = 300) -> str:
    """The first non-blank line of ``text``, cut at ``limit`` characters."""
    for line in str(text).splitlines():
        if line.strip():
            line = line.strip()
            return line if len(line) <= limit else line[:limit - 1] + "…"
    return ""


class RetrieverSpec(BaseModel):
    """A profile's ``retriever:`` mapping (docs/retrievers.md).

    ``http``: ``url``, ``method`` (POST or GET), ``body`` (a JSON template: the strings ``"{query}"`` and
    ``"{top_k}"`` are replaced, ``"{top_k}"`` by a number; GET sends its keys as the query string), ``headers``
    (values may hold ``${ENV_NAME}``), ``timeout_s``.
    ``python``: ``function`` (``path/to/file.py:name`` or ``package.module:name``), ``path`` (folders to import
    from), ``python`` (the interpreter; default this one), ``env`` (extra variables, ``${ENV}`` allowed),
    ``top_k_arg`` (default: found by name), ``timeout_s`` (per question), ``startup_timeout_s`` (imports).
    Both: ``results`` (JMESPath to the list of results in an answer) and ``fields`` (workbook name -> JMESPath
    inside one result); absent, they are inferred from the first answer.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    kind: Literal["collection", "http", "python"] = "collection"
    url: str | None = None
    method: Literal["POST", "GET"] = "POST"
    body: dict[str, Any] | None = None
    headers: dict[str, str] = Field(default_factory=dict)
    function: str | None = None
    path: list[str] = Field(default_factory=list)
    python: str | None = None
    env: dict[str, str] = Field(default_factory=dict)
    top_k_arg: str | None = None
    timeout_s: float = Field(default=30.0, gt=0, le=600)
    startup_timeout_s: float = Field(default=120.0, gt=0, le=1800)
    results: str | None = None
    fields: dict[str, str] = Field(default_factory=dict)

    @field_validator("method", mode="before")
    @classmethod
    def _upper(cls, value: Any) -> Any:
        return value.upper() if isinstance(value, str) else value

    @field_validator("fields")
    @classmethod
    def _known_fields(cls, value: dict[str, str]) -> dict[str, str]:
        # `distance` (lower is better) is read into `score` as 1 - distance (retrievers/mapping.py)
        names = (*HIT_FIELDS, "distance")
        unknown = sorted(set(value) - set(names))
        if unknown:
            raise ValueError(f"unknown field name(s) {', '.join(unknown)}: the names are {', '.join(names)}")
        return value

    @field_validator("headers")
    @classmethod
    def _no_literal_credentials(cls, value: dict[str, str]) -> dict[str, str]:
        for name, text in value.items():
            if any(word in name.lower() for word in _CREDENTIAL_HEADERS) and not env_references(str(text)):
                raise ValueError(f"header {name!r} carries a credential: write it as a reference such as "
                                 f"'Bearer ${{MY_API_KEY}}' and set MY_API_KEY in the environment or .env")
        return value

    @field_validator("url")
    @classmethod
    def _no_secret_in_url(cls, value: str | None) -> str | None:
        # httpx logs request URLs: a key expanded into one would reach the logs
        if value is None:
            return value
        if env_references(value):
            raise ValueError("the url may not hold ${ENV} references (request URLs are logged): send the key in a "
                             "header, e.g. headers: {Authorization: 'Bearer ${MY_API_KEY}'}")
        # nor a key written out: a profile is a file people share, and the URL is printed in every answer's line
        parts = urlsplit(value)
        keys = [k for k, _ in parse_qsl(parts.query, keep_blank_values=True) if _CREDENTIAL_PARAMETER.search(k)]
        if parts.password is not None or keys:
            where = f"query parameter {keys[0]!r}" if keys else "a password (user:password@)"
            raise ValueError(f"the url holds {where}, a credential (request URLs are printed and logged): send it in "
                             "a header that reads the environment, e.g. headers: {X-API-Key: '${MY_API_KEY}'}")
        return value

    @model_validator(mode="after")
    def _kind_needs(self) -> RetrieverSpec:
        if self.kind == "http" and not self.url:
            raise ValueError("kind http needs `url` (the endpoint, e.g. http://127.0.0.1:8000/search)")
        if self.kind == "python" and (not self.function or ":" not in self.function):
            raise ValueError("kind python needs `function` as 'path/to/file.py:name' or 'package.module:name'")
        return self

    def public(self) -> dict[str, Any]:
        """The spec as a plain mapping without defaults: what a profile holds (``${ENV}`` references, no values)."""
        return self.model_dump(mode="json", exclude_defaults=True) | {"kind": self.kind}


class Hit(BaseModel):
    """One result of a retriever, under the workbook's names (None: the answer did not carry it)."""

    model_config = ConfigDict(frozen=True)

    rank: int
    content: str | None = None
    source_url: str | None = None
    source_file: str | None = None
    score: float | None = None
    chunk_id: str | None = None
    title: str | None = None


class Answer(BaseModel):
    """A retriever's answer to one question. ``error`` (one line, secrets redacted) is set when it failed: an
    errored question is never an empty answer. ``error_kind`` names the fault: ``unreachable``, ``timeout``,
    ``http 500``, ``not json``, ``no results list``, ``raised ValueError``, ``exited 3``..."""

    query: str
    top_k: int
    hits: list[Hit] = Field(default_factory=list)
    error: str | None = None
    error_kind: str | None = None
    elapsed_ms: float = 0.0

    @property
    def ok(self) -> bool:
        return self.error is None
