"""Reference detection for zone B: does a later reply mention a working item?

An item's reference keys are taken once, when it enters the zone: paths, identifiers
(snake_case, camelCase, dotted.names, CONSTANTS), error codes, quoted strings, and its
distinctive phrases (three consecutive content words). A reply refers to the item when one
of those keys reappears in it. A reply that only says "ok" refers to nothing, so heat decays.
Must not: decide heat (working.py does) or read anything but its arguments.
"""

from __future__ import annotations

import re

# A path or a file name is looked for from the start of its run of name characters only, the
# run taken whole (a file name's key starts at its first word character, its group): tried
# from every position inside a long run, a 20,000-character "a-a-a-..." took 1.7 s
_PATH = re.compile(
    r"(?<![\w.-])(?:[\w.-]++/)+[\w.-]+|(?<![\w-])-*+(\w[\w-]*+\.(?:py|ts|js|tsx|rs|go|java|c|"
    r"h|cpp|md|toml|json|ya?ml|sql|lua|sh|txt|cfg|ini))\b"
)
_IDENT = re.compile(
    r"\b(?:[A-Za-z_]\w*\.)+[A-Za-z_]\w*\b"  # dotted.name
    r"|\b[a-z]+(?:_[a-z0-9]+)+\b"  # snake_case
    r"|\b_+[A-Za-z]\w*\b"  # _private
    r"|\b[a-z]+(?:[A-Z][a-z0-9]*)+\b"  # camelCase
    r"|\b(?:[A-Z][a-z0-9]+){2,}\b"  # PascalCase with two humps
    r"|\b[A-Z][A-Z0-9]*(?:_[A-Z0-9]+)+\b"  # CONSTANT_CASE
)
_CODE = re.compile(r"\b(?:[A-Z]{1,5}-?\d{2,6}|0x[0-9a-fA-F]{4,}|[A-Z][a-zA-Z]+(?:Error|Exception))\b")
_QUOTED = re.compile(r"`([^`\n]{4,80})`|\"([^\"\n]{6,80})\"")
_WORD = re.compile(r"[A-Za-z][A-Za-z'-]{3,}|[\u4e00-\u9fff]{2,}")
_STOP = frozenset(
    "this that with from have will what when where which there their they them then than "
    "into about would could should been were your just also only some more most very such "
    "each other these those here does done make made like need want sure okay thanks please "
    "file code line function value error".split()
)


def reference_keys(text: str, max_phrases: int = 40) -> tuple[str, ...]:
    """The strings whose reappearance in a reply means the reply refers to ``text``."""
    keys: dict[str, None] = {}
    for pattern in (_PATH, _IDENT, _CODE):
        for m in pattern.finditer(text):
            token = m.group(m.lastindex or 0).strip(".")
            if len(token) >= 4:
                keys[token] = None
    for m in _QUOTED.finditer(text):
        keys[(m.group(1) or m.group(2)).strip()] = None
    words = [w.lower() for w in _WORD.findall(text)]
    phrases = 0
    for i in range(len(words) - 2):
        trio = words[i : i + 3]
        if sum(w not in _STOP for w in trio) == 3:
            keys[" ".join(trio)] = None
            phrases += 1
            if phrases >= max_phrases:
                break
    return tuple(keys)


def normalized_reply(reply: str) -> str:
    """The reply as reference keys are matched against: words joined by single spaces,
    lowercased only for phrase matching (identifiers and paths match case-sensitively)."""
    return " ".join(reply.split())


class Reply:
    """A reply read for reference matching, once: its words joined by single spaces (keys
    match it case-sensitively) and its lowercased words (phrases match those). A turn checks
    every working item against the same reply: normalizing it again per item cost 3.4 s for
    200 items and a 150,000-character reply, under the lock every session waits on."""

    __slots__ = ("flat", "lowered")

    def __init__(self, reply: str) -> None:
        self.flat = normalized_reply(reply)
        self.lowered = " ".join(w.lower() for w in _WORD.findall(reply)) if reply else ""


def is_referenced(keys: tuple[str, ...], reply: str | Reply) -> bool:
    """True when any reference key appears in the reply (a `Reply` when it is read for many
    items)."""
    if not keys or not reply:
        return False
    said = reply if isinstance(reply, Reply) else Reply(reply)
    for key in keys:
        if " " in key and key.islower():
            if key in said.lowered:
                return True
        elif key in said.flat:
            return True
    return False
