"""Costs guessed for parts the engine cannot see: a document, file or image sent by a Files API
id or a URL, whose pages or pixels no one here can count. The codecs name such a part in its label ("document
invoice 3 by file_id, unseen (3000 tokens)", `unseen_label`); the fit reads the labels back
(`guessed`) so that a request over its budget only by what was guessed is sent, never refused:
the provider, which sees the files, decides, and its usage report calibrates. Pure text.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass

from ctxlayer.core.text import tokens_said
from ctxlayer.protocol import Message

#: how an unseen part was sent, as its label says it
BY_FILE_ID, BY_URL = "by file_id", "by URL"
_UNSEEN = re.compile(r"^(\w+)\b.* (by file_id|by URL), unseen \((\d+) tokens?\)$")


def unseen_label(what: str, how: str, tokens: int) -> str:
    """The label of a part costed unseen: ``what`` the part as a label names it ("document
    invoice 3"), ``how`` how it was sent ("by file_id", "by URL")."""
    return f"{what} {how}, unseen ({tokens_said(tokens)})"


@dataclass(frozen=True, slots=True)
class Guessed:
    """What a request's unseen parts were counted at: their tokens, and the words saying so
    ("13 documents by file_id counted at 3000 tokens each, unseen")."""

    tokens: int
    said: str


def guessed(messages: Iterable[Message]) -> Guessed:
    """The unseen parts of ``messages``, by their labels."""
    kinds: Counter[tuple[str, str, int]] = Counter()
    for m in messages:
        for label in m.parts or ():
            hit = _UNSEEN.match(label)
            if hit:
                kinds[(hit[1], hit[2], int(hit[3]))] += 1
    said = [f"{n} {kind}{'s' if n > 1 else ''} {how} counted at {tokens} tokens"
            f"{' each' if n > 1 else ''}, unseen" for (kind, how, tokens), n in kinds.items()]
    return Guessed(sum(tokens * n for (_, _, tokens), n in kinds.items()), "; ".join(said))
