"""Payload roles: what the workbook reads from a point, mapped onto the keys a team's pipeline wrote.

A *role* is one thing the workbook reads (the chunk's text, its source file, its section ...). Its name is the
field of the workbook's own record (:data:`ROLES`, the same names as :data:`~retrieval_lib.models.PAYLOAD_FIELDS`).
A :class:`PayloadRoles` maps each role to payload keys:

- a key may be a dotted path into a nested payload (``metadata.file_path``);
- a role may list keys in order: the first one that holds a value wins, **per point**, so a collection that mixes
  two schemas still reads;
- ``source_file`` may come from the URL's path when a collection has no file key (``derive_source_file``).

:meth:`PayloadRoles.read` turns one payload into the workbook's record; every reader (search, scans, checks, the
service's join, the report) sees only records, never a team's key names. Our own ingest's schema is simply
:data:`DEFAULT_ROLES`, the identity mapping.

Values are coerced to what a role holds (text, integer, list of text for nothing): a value of the wrong type is
left out of the record and counted in :attr:`ReadStats`, never raised, so bad data in a collection is reported,
not fatal.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from itertools import repeat
from typing import Any
from urllib.parse import urlsplit

__all__ = ["ROLES", "ROLE_MEANINGS", "INT_ROLES", "PayloadRoles", "DEFAULT_ROLES", "lookup", "source_file_from_url",
           "ReadStats"]

#: Every role, in the order a person reads them. The names are the workbook's own record fields.
ROLES: tuple[str, ...] = (
    "content", "source_file", "source_url", "title", "section_title", "chunk_sequence", "total_chunks",
    "content_hash", "model_version", "processing_timestamp", "token_count", "chunk_id",
)
#: Roles whose value is an integer.
INT_ROLES = frozenset({"chunk_sequence", "total_chunks", "token_count"})
#: What each role means, for ``inspect`` and the notebooks' tables.
ROLE_MEANINGS: dict[str, str] = {
    "content": "the chunk's text (what was embedded)",
    "source_file": "the file or page the chunk came from",
    "source_url": "the page's URL on the site",
    "title": "the page's title",
    "section_title": "the heading of the chunk's section",
    "chunk_sequence": "the chunk's position within its page",
    "total_chunks": "how many chunks its page has",
    "content_hash": "a hash of the chunk's text",
    "model_version": "the embedding model's name",
    "processing_timestamp": "when the chunk was written",
    "token_count": "the chunk's length in tokens",
    "chunk_id": "the chunk's own id (the point id when absent)",
}
# a text role that is longer than this is cut in the record (a 1 MB payload must not travel whole into a table)
MAX_TEXT_CHARS = 200_000


def lookup(payload: Mapping[str, Any] | None, path: str) -> Any:
    """The value at ``path`` in ``payload``: a top-level key, or a dotted path into nested dicts.

    A top-level key that itself contains a dot (``"a.b"``) wins over the nested path. Missing: None.
    """
    if not isinstance(payload, Mapping):
        return None
    if path in payload:
        return payload[path]
    value: Any = payload
    for part in path.split("."):
        if not isinstance(value, Mapping) or part not in value:
            return None
        value = value[part]
    return value


def source_file_from_url(url: str) -> str | None:
    """The page path of a URL, without the leading slash and a trailing slash (``/docs/a/b/`` -> ``docs/a/b``)."""
    try:
        path = urlsplit(url).path if "://" in url else url.split("?")[0].split("#")[0]
    except ValueError:
        return None
    path = path.strip("/")
    return path or None


@dataclass
class ReadStats:
    """What reading payloads met: per role, values of the wrong type, and texts cut for length."""

    wrong_type: dict[str, int] = field(default_factory=dict)
    truncated: dict[str, int] = field(default_factory=dict)

    def count(self, bucket: dict[str, int], role: str) -> None:
        bucket[role] = bucket.get(role, 0) + 1


def _as_text(value: Any) -> str | None:
    if isinstance(value, str):
        return value
    return str(value) if isinstance(value, int | float) and not isinstance(value, bool) else None


def _as_int(value: Any) -> int | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, str) and value.strip().lstrip("-").isdigit():
        return int(value.strip())
    return None


_NONE = type(None)


def _taken_as_is(raw: list[Any], role: str) -> bool:
    """Whether every value of a column is one :meth:`PayloadRoles.value` returns unchanged or None for (an integer
    or None for an integer role; text of 1 to :data:`MAX_TEXT_CHARS` characters or None for the others): checked
    with loops in C (a type set, a filter, the lengths), the common case of a whole-collection scan."""
    kinds = set(map(type, raw))
    if role in INT_ROLES:
        return kinds <= {int, _NONE}
    if not kinds <= {str, _NONE}:
        return False
    texts = list(filter(None, raw))  # the non-empty texts: an empty one is None in the record
    return len(texts) + raw.count(None) == len(raw) and max(map(len, texts), default=0) <= MAX_TEXT_CHARS


@dataclass(frozen=True)
class PayloadRoles:
    """The mapping from roles to payload keys, and where it came from.

    Attributes:
        fields: role -> payload keys in the order they are tried (dotted paths into nested payloads).
        derive_source_file: when no file key holds a value, take ``source_file`` from the URL's path.
        origin: ``"default"`` (our own ingest's schema), ``"inferred"`` (from a sample) or ``"profile"``.
        evidence: role -> why that key was chosen (``inspect`` shows it).
    """

    fields: Mapping[str, tuple[str, ...]]
    derive_source_file: bool = False
    origin: str = "default"
    evidence: Mapping[str, str] = field(default_factory=dict)

    # ------------------------------------------------------------------ reading
    def keys_of(self, role: str) -> tuple[str, ...]:
        return tuple(self.fields.get(role, ()))

    def has(self, role: str) -> bool:
        """Whether the collection holds this role at all (a key is mapped, or the source file comes from URLs)."""
        return bool(self.keys_of(role)) or (role == "source_file" and self.derive_source_file
                                             and bool(self.keys_of("source_url")))

    def value(self, payload: Mapping[str, Any] | None, role: str, stats: ReadStats | None = None) -> Any:
        """This role's value in ``payload`` (the first key holding one), coerced to the role's type; None if none.

        Lists are read where a role holds text: a list of headings gives its last one (the most specific). A
        value of the wrong type is skipped (and counted in ``stats``).
        """
        for key in self.keys_of(role):
            raw = lookup(payload, key)
            if raw is None or raw == "":
                continue
            if role in INT_ROLES:
                got: Any = _as_int(raw)
            else:
                if isinstance(raw, list | tuple) and role in ("section_title", "title", "source_file"):
                    texts = [t for t in (_as_text(x) for x in raw) if t]
                    raw = texts[-1] if texts else None
                got = _as_text(raw)
                if got is not None and len(got) > MAX_TEXT_CHARS:
                    got = got[:MAX_TEXT_CHARS]
                    if stats is not None:
                        stats.count(stats.truncated, role)
            if got is None:
                if stats is not None and raw is not None:
                    stats.count(stats.wrong_type, role)
                continue
            return got
        if role == "source_file" and self.derive_source_file:
            url = self.value(payload, "source_url", stats)
            return source_file_from_url(url) if url else None
        return None

    def read(self, payload: Mapping[str, Any] | None, point_id: Any = None,
             stats: ReadStats | None = None, only: Sequence[str] | None = None) -> dict[str, Any]:
        """The workbook's record of one point: every role's value (None where the point has none), or the roles
        in ``only`` (what a scan asked for).

        ``chunk_id`` falls back to the point id, which every point has.
        """
        wanted = ROLES if only is None else [r for r in ROLES if r in only]
        record = {role: self.value(payload, role, stats) for role in wanted}
        if record.get("chunk_id", 0) is None and point_id is not None:
            record["chunk_id"] = str(point_id)
        return record

    def column(self, role: str, payloads: Sequence[Mapping[str, Any] | None],
               stats: ReadStats | None = None) -> list[Any]:
        """``[self.value(p, role, stats) for p in payloads]``, read a column at a time.

        Where one plain top-level key holds the role (our own schema, and most teams'), a value that
        :meth:`value` would return unchanged (text within :data:`MAX_TEXT_CHARS`, an integer) is taken as it is
        and a missing one is None; every other value goes through :meth:`value`, so the rules stay in one place
        and the result is the same, only cheaper (a whole-collection scan reads 100k points this way).
        """
        keys = self.keys_of(role)
        derived = role == "source_file" and self.derive_source_file
        if len(keys) != 1 or "." in keys[0] or derived:
            return [self.value(p, role, stats) for p in payloads]
        key, value = keys[0], self.value
        try:  # every payload a dict (as a store returns them): one loop in C, not one in Python
            raw = list(map(dict.get, payloads, repeat(key)))  # type: ignore[arg-type]
        except TypeError:  # a payload that is not a dict (None, another mapping)
            raw = [p.get(key) if p.__class__ is dict else lookup(p, key) for p in payloads]
        if _taken_as_is(raw, role):
            return raw
        if role in INT_ROLES:
            return [v if v.__class__ is int else None if v is None else value(p, role, stats)
                    for v, p in zip(raw, payloads)]
        return [v if v.__class__ is str and 0 < len(v) <= MAX_TEXT_CHARS else None if v is None
                else value(p, role, stats) for v, p in zip(raw, payloads)]

    def columns(self, payloads: Sequence[Mapping[str, Any] | None], point_ids: Sequence[Any],
                roles: Sequence[str], stats: ReadStats | None = None) -> dict[str, list[Any]]:
        """The records of ``payloads`` as columns: ``roles`` -> :meth:`column`, the same values :meth:`read` gives
        (``chunk_id`` falls back to the point id)."""
        out = {role: self.column(role, payloads, stats) for role in roles}
        if "chunk_id" in out:
            out["chunk_id"] = [v if v is not None else str(i) for v, i in zip(out["chunk_id"], point_ids)]
        return out

    def top_keys(self, roles: Iterable[str]) -> list[str]:
        """The top-level payload keys to fetch so that ``roles`` can be read (for ``with_payload=[...]``)."""
        out: dict[str, None] = {}
        for role in roles:
            wanted = list(self.keys_of(role))
            if role == "source_file" and self.derive_source_file:
                wanted += self.keys_of("source_url")
            for key in wanted:
                out[key.split(".", 1)[0]] = None
        return list(out)

    def filter_key(self, role: str) -> str | None:
        """The one payload key a server-side filter or facet on ``role`` can use, or None when the role has
        several keys (a mixed collection) or none (absent, or derived from URLs): then it is read by a scan."""
        keys = self.keys_of(role)
        return keys[0] if len(keys) == 1 else None

    # ------------------------------------------------------------------ describing
    def as_profile(self) -> dict[str, Any]:
        """``payload_fields`` as a profile writes it: role -> key, or a list of keys where there are fallbacks."""
        out: dict[str, Any] = {}
        for role in ROLES:
            keys = self.keys_of(role)
            if keys:
                out[role] = keys[0] if len(keys) == 1 else list(keys)
        if self.derive_source_file and not self.keys_of("source_file"):
            out["source_file"] = "url:" + (self.keys_of("source_url") or ("?",))[0]
        return out

    @classmethod
    def from_profile(cls, payload_fields: Mapping[str, Any], *, origin: str = "profile") -> PayloadRoles:
        """A mapping from a profile's ``payload_fields`` (role -> key, list of keys, or ``url:KEY``).

        Raises:
            ValueError: an unknown role, or a key that is not a non-empty string.
        """
        fields: dict[str, tuple[str, ...]] = {}
        derive = False
        for role, keys in payload_fields.items():
            if role not in ROLES:
                raise ValueError(f"unknown role {role!r} (roles: {', '.join(ROLES)})")
            listed: Sequence[Any] = [keys] if isinstance(keys, str) else keys
            if not isinstance(listed, list | tuple) or not listed or not all(
                    isinstance(k, str) and k.strip() for k in listed):
                raise ValueError(f"role {role!r} needs a payload key or a list of keys (got {keys!r})")
            if role == "source_file" and len(listed) == 1 and listed[0].startswith("url:"):
                derive = True
                fields.setdefault("source_url", (listed[0][4:],))
                continue
            fields[role] = tuple(k.strip() for k in listed)
        return cls(fields, derive_source_file=derive, origin=origin)

    def describe(self) -> str:
        """One line: where the mapping came from and what it maps."""
        mapped = ", ".join(f"{r}={'/'.join(self.keys_of(r))}" for r in ROLES if self.keys_of(r))
        derived = "; source_file from the URL" if self.derive_source_file and not self.keys_of("source_file") else ""
        return f"payload fields ({self.origin}): {mapped}{derived}"


#: Our own ingest's schema: every role under its own name.
DEFAULT_ROLES = PayloadRoles({role: (role,) for role in ROLES}, origin="default")
