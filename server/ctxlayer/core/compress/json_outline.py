"""JSON outlines: a large JSON tool output becomes its key paths, counts and examples.

Owns `outline_json` and `JsonOutline` (the same outline rendered at several sizes). It must
stay pure, never raise, and stay near-linear in the input: the document is decoded once
(msgspec), then a bounded walk merges the items of each list into one shape (a few dozen items
sampled evenly, a global visit budget), so a 10 MB response costs about the decode. It never
returns more than `cap_chars` characters.

Accepted input: one JSON object or array, optionally after ONE short prefix line (under 200
characters, e.g. `HTTP/1.1 200 OK` or a `$ curl ...` echo) that is then shown as the first line.
A bare scalar, JSON lines, or anything that does not decode is "not JSON": the result is None.

Outline shape (one line per key, indented by depth; `[]` stands for "each item"):

    JSON object, 2 keys, 812,345 chars
      data: list[5000] of object
        []: object, 4 keys (64 of 5000 items sampled)
          id: int, e.g. 1
          email: str|null (in 60/64), e.g. "user1@example.com"
      meta: object, 1 key
        total: int, e.g. 5000

When the outline is over the cap, the deepest levels go first: lines are admitted breadth-first,
and every parent that lost children says so ("... 37 more keys").
"""

from __future__ import annotations

import json

import msgspec

from ctxlayer.core.text import counted

__all__ = ["JsonOutline", "outline_json"]

#: Items of one list merged into its item shape (spread evenly over the list, first and last in).
SAMPLE_ITEMS = 64
#: Values visited in the whole walk; past it, nodes keep their type and size but no children.
VISIT_BUDGET = 60_000
#: Distinct keys remembered per object shape (maps keyed by ids would otherwise grow without end).
MAX_KEYS = 400
#: Nesting depth walked; deeper values are summarized by type and size only.
MAX_DEPTH = 40
SCALAR_CHARS = 80
PREFIX_LINE_MAX = 200

_TYPE_NAMES = {
    dict: "object",
    list: "list",
    str: "str",
    int: "int",
    float: "float",
    bool: "bool",
    type(None): "null",
}


class _Shape:
    """The merged shape of every value seen at one path."""

    __slots__ = (
        "example",
        "item",
        "kcount_max",
        "kcount_min",
        "keys",
        "len_max",
        "len_min",
        "more_keys",
        "objects",
        "sampled",
        "seen",
        "types",
    )

    def __init__(self) -> None:
        self.types: dict[str, int] = {}
        self.seen = 0
        self.keys: dict[str, _Shape] = {}
        self.more_keys = 0  # distinct keys past MAX_KEYS
        self.item: _Shape | None = None
        self.len_min = -1
        self.len_max = -1
        self.sampled = 0  # list items merged into `item`
        self.kcount_min = -1
        self.kcount_max = -1
        self.example: str | None = None
        self.objects = 0


class _Walk:
    __slots__ = ("budget",)

    def __init__(self) -> None:
        self.budget = VISIT_BUDGET

    def merge(self, shape: _Shape, value: object, depth: int) -> None:
        self.budget -= 1
        shape.seen += 1
        name = _TYPE_NAMES.get(type(value), type(value).__name__)
        shape.types[name] = shape.types.get(name, 0) + 1
        if isinstance(value, dict):
            shape.objects += 1
            n = len(value)
            shape.kcount_min = n if shape.kcount_min < 0 else min(shape.kcount_min, n)
            shape.kcount_max = max(shape.kcount_max, n)
            if depth >= MAX_DEPTH or self.budget <= 0:
                return
            keys = shape.keys
            for k, v in value.items():
                child = keys.get(k)
                if child is None:
                    if len(keys) >= MAX_KEYS:
                        shape.more_keys += 1
                        continue
                    child = keys[k] = _Shape()
                self.merge(child, v, depth + 1)
                if self.budget <= 0:
                    return
        elif isinstance(value, list):
            n = len(value)
            shape.len_min = n if shape.len_min < 0 else min(shape.len_min, n)
            shape.len_max = max(shape.len_max, n)
            if n == 0 or depth >= MAX_DEPTH or self.budget <= 0:
                return
            if shape.item is None:
                shape.item = _Shape()
            if n <= SAMPLE_ITEMS:
                picks = range(n)
            else:
                picks = sorted({i * (n - 1) // (SAMPLE_ITEMS - 1) for i in range(SAMPLE_ITEMS)})
            for i in picks:
                self.merge(shape.item, value[i], depth + 1)
                shape.sampled += 1
                if self.budget <= 0:
                    return
        elif shape.example is None and value is not None:
            shape.example = _scalar(value)


def _scalar(value: object) -> str:
    if isinstance(value, str):
        cut = value[:SCALAR_CHARS]
        text = json.dumps(cut, ensure_ascii=False)
        return text + ("…" if len(value) > SCALAR_CHARS else "")
    if isinstance(value, bool):
        return "true" if value else "false"
    text = repr(value)
    return text if len(text) <= SCALAR_CHARS else text[:SCALAR_CHARS] + "…"


def _range(lo: int, hi: int) -> str:
    return f"{lo:,}" if lo == hi else f"{lo:,}..{hi:,}"


def _describe(shape: _Shape, parent_seen: int) -> str:
    """One line's text (without key and indentation) for a merged shape."""
    types = "|".join(sorted(shape.types, key=lambda t: -shape.types[t]))
    parts = [types]
    if "object" in shape.types and shape.kcount_max >= 0:
        parts[0] = f"{types}, {_range(shape.kcount_min, shape.kcount_max)} keys"
        if shape.kcount_max == 1 and shape.kcount_min == 1:
            parts[0] = f"{types}, 1 key"
    if "list" in shape.types and shape.len_max >= 0:
        head = f"list[{_range(shape.len_min, shape.len_max)}]"
        if shape.item is not None and shape.item.types:
            item_types = "|".join(sorted(shape.item.types, key=lambda t: -shape.item.types[t]))
            head += f" of {item_types}"
        others = [t for t in shape.types if t != "list"]
        parts[0] = head + ("|" + "|".join(others) if others else "")
    if 0 < shape.seen < parent_seen:
        parts[0] += f" (in {shape.seen:,}/{parent_seen:,})"
    if shape.example is not None:
        parts.append(f"e.g. {shape.example}")
    return ", ".join(parts)


class _Line:
    __slots__ = ("children", "depth", "hidden", "noun", "text")

    def __init__(self, text: str, depth: int, noun: str) -> None:
        self.text = text
        self.depth = depth
        self.children: list[_Line] = []
        self.hidden = 0  # children known but never turned into lines (past MAX_KEYS)
        self.noun = noun  # what the children are: "keys" or "item shape"


def _build(shape: _Shape, label: str, depth: int, parent_seen: int) -> _Line:
    line = _Line(("  " * depth) + label + _describe(shape, parent_seen), depth, "keys")
    if shape.keys:
        for key, child in shape.keys.items():
            line.children.append(_build(child, _key(key) + ": ", depth + 1, shape.objects))
        line.hidden = shape.more_keys
    item = shape.item
    if item is not None and (item.keys or item.item is not None):
        # Items that are objects or lists get their own merged-shape line.
        sampled = ""
        if shape.len_max > shape.sampled and shape.seen == 1:
            sampled = f" ({shape.sampled:,} of {shape.len_max:,} items sampled)"
        sub = _build(item, "[]: ", depth + 1, item.seen)
        sub.text += sampled
        line.children.append(sub)
    return line


def _key(key: str) -> str:
    if key and len(key) <= 60 and all(c.isalnum() or c in "_-$@." for c in key):
        return key
    return json.dumps(key[:60], ensure_ascii=False) + ("…" if len(key) > 60 else "")


def _render(root: _Line, cap: int) -> str:
    """Admit lines breadth-first while they fit (with room for elision notes), render depth-first."""
    admitted: set[int] = {id(root)}
    used = len(root.text) + 1
    # Every admitted line reserves the longest note it could need; a note is never longer.
    reserved = _worst_note(root)
    level = [root]
    full = used + reserved > cap
    while level and not full:
        nxt: list[_Line] = []
        for parent in level:
            for child in parent.children:
                cost = len(child.text) + 1
                extra = _worst_note(child)
                if used + reserved + cost + extra > cap:
                    full = True
                    break
                admitted.add(id(child))
                used += cost
                reserved += extra
                nxt.append(child)
            if full:
                break
        level = nxt
    out: list[str] = []
    _emit(root, admitted, out)
    text = "\n".join(out)
    if len(text) > cap:  # defensive: the reservation above should make this unreachable
        cut = text.rfind("\n", 0, cap)
        text = text[:cut] if cut > 0 else text[:cap]
    return text


def _note(line: _Line, keys_missing: int, item_missing: bool) -> str:
    """The elision note under a line that lost children ("" when none were lost)."""
    pad = "  " * (line.depth + 1)
    if keys_missing and item_missing:
        return f"{pad}... {counted(keys_missing, 'more key')}, item shape elided"
    if keys_missing:
        return f"{pad}... {counted(keys_missing, 'more key')}"
    if item_missing:
        return f"{pad}... item shape elided"
    return ""


def _worst_note(line: _Line) -> int:
    """Room the note under `line` can take at most (+1 for its newline)."""
    keys = line.hidden + sum(1 for c in line.children if not c.text.lstrip().startswith("[]"))
    item = any(c.text.lstrip().startswith("[]") for c in line.children)
    note = _note(line, keys, item)
    return len(note) + 1 if note else 0


def _emit(line: _Line, admitted: set[int], out: list[str]) -> None:
    out.append(line.text)
    keys_missing = line.hidden
    item_missing = False
    for child in line.children:
        if id(child) in admitted:
            _emit(child, admitted, out)
        elif child.text.lstrip().startswith("[]"):
            item_missing = True
        else:
            keys_missing += 1
    note = _note(line, keys_missing, item_missing)
    if note:
        out.append(note)


def _decode(text: str) -> tuple[object, str] | None:
    """The decoded document and the prefix line before it ("" when none), or None."""
    body = text.lstrip()
    prefix = ""
    if not body or body[0] not in "[{":
        nl = body.find("\n", 0, PREFIX_LINE_MAX + 1)
        if nl < 0:
            return None
        prefix = body[:nl].strip()
        body = body[nl + 1 :].lstrip()
        if not body or body[0] not in "[{":
            return None
    try:
        value = msgspec.json.decode(body)
    except Exception:
        return None
    if not isinstance(value, (dict, list)):
        return None
    return value, prefix


class JsonOutline:
    """A JSON document decoded, walked and shaped once, rendered at any size: the tool-output
    outline tries several sizes until one fits its tokens, and each try then costs only the
    render (the decode and the walk are most of an outline's time)."""

    __slots__ = ("root",)

    def __init__(self, root: _Line) -> None:
        self.root = root

    @classmethod
    def of(cls, text: str) -> JsonOutline | None:
        """The outline of the JSON in `text`, or None if it is not JSON."""
        if not isinstance(text, str):
            return None
        decoded = _decode(text)
        if decoded is None:
            return None
        value, prefix = decoded
        shape = _Shape()
        _Walk().merge(shape, value, 0)
        root = _build(shape, "JSON ", 0, 1)
        root.text += f", {len(text):,} chars"
        if prefix:
            head = prefix if len(prefix) <= SCALAR_CHARS else prefix[:SCALAR_CHARS] + "…"
            root.text = f"{head}\n{root.text}"
        return cls(root)

    def render(self, cap_chars: int) -> str:
        """The outline in at most `cap_chars` characters."""
        return "" if cap_chars <= 0 else _render(self.root, cap_chars)


def outline_json(text: str, cap_chars: int = 2000) -> str | None:
    """An outline of the JSON in `text` in at most `cap_chars` characters, or None if not JSON."""
    outline = JsonOutline.of(text)
    return None if outline is None else outline.render(cap_chars)
