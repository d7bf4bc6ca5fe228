"""Edit one entry of a YAML file in place, leaving every other byte of the file as it was (comments included).

PyYAML keeps no comments when it writes, so a review that re-dumped a whole drafted file would strip its header and
every note a person added. Instead, :func:`edit_entry` changes the text of the one entry a click is about: a value
replaced where it stands, a key appended after the entry's last line (block style) or before its closing brace (flow
style), a key's line(s) removed. The node positions come from ``yaml.compose``.

Every edit is checked: the new text must load to exactly the data wanted (the old data with that entry changed).
When a surgical edit cannot give that (an exotic layout), the file is written whole by ``yaml.safe_dump`` after its
leading comment lines, and :attr:`Edit.comments_kept` says so.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import yaml

__all__ = ["Edit", "edit_entry", "DROP", "LOADER"]

#: The value that removes a key (``{"status": DROP}``).
DROP: Any = object()
#: libyaml's loader when PyYAML has it (ten times faster; its marks count characters too), else the pure one.
LOADER: Any = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


@dataclass(frozen=True)
class Edit:
    """The file's new text, whether it differs from the old one, and whether the comments outside it survived."""

    text: str
    changed: bool
    comments_kept: bool = True


def _load(text: str) -> Any:
    return yaml.load(text, Loader=LOADER)  # a safe loader (C or pure)


def _reads_as(text: str, want: Any) -> bool:
    """Whether ``text`` loads to ``want`` with the pure loader (the one params.read_yaml uses) and with libyaml:
    they disagree on some plain scalars in flow mappings (libyaml takes ``{q: Qu'est-ce ?, o: x}``, PyYAML
    refuses it), and a file must read the same with either."""
    loaders = {yaml.SafeLoader, LOADER}
    try:
        return all(yaml.load(text, Loader=loader) == want for loader in loaders)  # safe loaders only
    except yaml.YAMLError:
        return False


def _entry_node(root: yaml.Node, section: str, index: int) -> yaml.MappingNode:
    if isinstance(root, yaml.MappingNode):
        for key, value in root.value:
            if key.value == section and isinstance(value, yaml.SequenceNode) and index < len(value.value):
                item = value.value[index]
                if isinstance(item, yaml.MappingNode):
                    return item
    raise LookupError(f"no mapping at {section}[{index}]")


def _last_end(text: str, node: yaml.Node) -> int:
    """Where the last character of ``node`` ends (a block collection: its last leaf; a block scalar: before its
    trailing newline)."""
    if isinstance(node, yaml.MappingNode | yaml.SequenceNode) and not node.flow_style and node.value:
        last = node.value[-1]
        return _last_end(text, last[1] if isinstance(node, yaml.MappingNode) else last)
    end = node.end_mark.index
    while end > node.start_mark.index and text[end - 1] in "\r\n":
        end -= 1
    return end


def _line_start(text: str, at: int) -> int:
    return text.rfind("\n", 0, at) + 1


def _after_line(text: str, at: int) -> int:
    """The index just past the newline of the line holding ``at`` (the end of the text when it has none)."""
    nl = text.find("\n", at)
    return len(text) if nl == -1 else nl + 1


def _renderings(value: Any) -> list[str]:
    """Ways to write a scalar, nicest first: plain, then double-quoted (UTF-8, then ASCII escapes)."""
    if isinstance(value, bool):
        return ["true" if value else "false"]
    if value is None:
        return ["null"]
    if isinstance(value, int | float):
        return [repr(value)]
    s = str(value)
    out = []
    if s and "\n" not in s and s == s.strip():
        out.append(s)
    out += [json.dumps(s, ensure_ascii=False), json.dumps(s, ensure_ascii=True)]
    return out


def _set(text: str, node: yaml.MappingNode, key: str, rendered: str) -> str:
    for k, v in node.value:
        if k.value == key:
            if not isinstance(v, yaml.ScalarNode):
                raise LookupError(f"{key} holds a collection")
            start, end = v.start_mark.index, _last_end(text, v)
            if v.start_mark.index == v.end_mark.index:  # an empty value (``key:``): write after the colon
                return text[:start] + " " + rendered + text[end:]
            return text[:start] + rendered + text[end:]
    if not node.value:
        raise LookupError("an empty mapping")
    if node.flow_style:
        at = _last_end(text, node.value[-1][1])
        return text[:at] + f", {key}: {rendered}" + text[at:]
    indent = " " * node.value[0][0].start_mark.column
    at = _after_line(text, _last_end(text, node.value[-1][1]))
    prefix = "" if at == 0 or text[at - 1] == "\n" else "\n"
    return text[:at] + f"{prefix}{indent}{key}: {rendered}\n" + text[at:]


def _drop(text: str, node: yaml.MappingNode, key: str) -> str:
    pairs = node.value
    for i, (k, v) in enumerate(pairs):
        if k.value != key:
            continue
        if i == 0:
            if len(pairs) == 1:
                raise LookupError("the only key")
            return text[:k.start_mark.index] + text[pairs[1][0].start_mark.index:]
        if node.flow_style:
            return text[:_last_end(text, pairs[i - 1][1])] + text[_last_end(text, v):]
        return text[:_line_start(text, k.start_mark.index)] + text[_after_line(text, _last_end(text, v)):]
    return text


def _surgical(text: str, section: str, index: int, changes: Mapping[str, Any], want: Any) -> str | None:
    """The text with ``changes`` made in place, or None when no in-place edit loads to ``want``."""
    for key, value in changes.items():
        root = yaml.compose(text, Loader=LOADER)
        if root is None:
            return None
        node = _entry_node(root, section, index)
        if value is DROP:
            text = _drop(text, node, key)
            continue
        # the first rendering that reads back in this entry's style (checked on a one-line document: cheap);
        # the whole file is checked once at the end
        rendered = next((r for r in _renderings(value)
                         if _reads_as(f"{{k: {r}}}" if node.flow_style else f"k: {r}\n", {"k": value})), None)
        if rendered is None:
            return None
        text = _set(text, node, key, rendered)
    return text if _reads_as(text, want) else None


def _leading_comments(text: str) -> str:
    lines = []
    for line in text.splitlines(keepends=True):
        if line.strip() and not line.lstrip().startswith("#"):
            break
        lines.append(line)
    return "".join(lines)


def edit_entry(text: str, section: str, index: int, changes: Mapping[str, Any]) -> Edit:
    """Change the mapping at ``data[section][index]`` of the YAML ``text``: each key of ``changes`` set to its
    (scalar) value, or removed when the value is :data:`DROP`.

    Returns:
        an :class:`Edit` (``changed`` False, and the text untouched, when the entry already holds the changes).

    Raises:
        LookupError: ``data[section][index]`` is not a mapping.
    """
    data = _load(text)
    entries = data.get(section) if isinstance(data, dict) else None
    if not isinstance(entries, list) or index >= len(entries) or not isinstance(entries[index], dict):
        raise LookupError(f"no mapping at {section}[{index}]")
    want = copy.deepcopy(data)
    entry = want[section][index]
    for key, value in changes.items():
        if value is DROP:
            entry.pop(key, None)
        else:
            entry[key] = value
    if want == data:
        return Edit(text, changed=False)
    try:
        edited = _surgical(text, section, index, changes, want)
    except LookupError:
        edited = None
    if edited is not None:
        return Edit(edited, changed=True)
    body = yaml.safe_dump(want, sort_keys=False, allow_unicode=True, width=110, default_flow_style=None)
    return Edit(_leading_comments(text) + body, changed=True, comments_kept=False)
