"""The stages that run before the fit: enrich, prune expired ephemeral messages,
strip old reasoning and deduplicate repeated content. Each records what it did on
the Work.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from operator import attrgetter

import msgspec

from ctxlayer.core.compress.extractive import strip_reasoning
from ctxlayer.core.memo import Memo
from ctxlayer.core.text import call_line, mention, normalized_hash, one_line
from ctxlayer.core.trim.work import Work
from ctxlayer.protocol import Message

_REASONING_TAGS = ("<think", "<reasoning")
_FILES = attrgetter("files")


def enrich(messages: Sequence[Message], attachments: Mapping[str, str]) -> list[Message]:
    """Embed attached files' contents into their messages. A file attached again with the
    same content becomes a reference to its first copy; the caller resolved and read the files
    (paths outside the workspace never reach here)."""
    if not any(map(_FILES, messages)):  # in C: a re-trim of 400 messages asks every turn
        return list(messages)
    seen: dict[str, tuple[str, str]] = {}  # path -> (content, where)
    out = []
    for i, m in enumerate(messages):
        if not m.files:
            out.append(m)
            continue
        blocks = []
        for path in m.files:
            text = attachments.get(path)
            if text is None:
                blocks.append(f"`{path}`: (not available)")
                continue
            lines = text.count("\n") + 1
            prior = seen.get(path)
            if prior is not None and prior[0] == text:
                blocks.append(f"`{path}`: unchanged, lines 1-{lines} as attached in {prior[1]}")
                continue
            seen[path] = (text, mention(messages, i))
            blocks.append(f"```{path}\n{text.rstrip(chr(10))}\n```")
        out.append(msgspec.structs.replace(m, content=m.content + "\n\n" + "\n\n".join(blocks)))
    return out


def _ephemeral(m: Message) -> bool:
    return m.ephemeral_ttl is not None


def _has_reasoning(m: Message) -> bool:
    return m.role == "assistant" and any(tag in m.content for tag in _REASONING_TAGS)


def _output(m: Message) -> bool:
    return not m.pinned and (m.role == "tool" or m.kind in ("toolOutput", "doc"))


def prune_ephemeral(w: Work) -> None:
    """Drop ephemeral messages once `ephemeral_ttl` assistant turns have passed after them."""
    if not w.where("ephemeral", _ephemeral):  # most chats have none: no walk to count turns
        return
    age = 0
    for i in range(len(w.msgs) - 1, -1, -1):
        m = w.msgs[i]
        ttl = m.ephemeral_ttl
        if ttl is not None and w.alive[i] and not m.pinned and age >= ttl and i != w.question:
            w.drop_group(i, f"ephemeral: expired after {age} assistant turns (ttl {ttl})")
        if m.role == "assistant":
            age += 1


def strip_old_reasoning(w: Work, memo: Memo) -> None:
    """Reasoning blocks of earlier assistant turns are removed; the latest turn keeps its own.
    Only the assistant messages that hold a reasoning tag are looked at (found once a message
    on the warm path); the others have nothing to strip. Stripping a message reads only it (its
    text, cost and extra tokens): when those are what they were the last turn, the change made
    then (its text, figures and entry) is made again (`Work.redo_change`), nothing counted (a
    warm turn of a 1M-token chat strips the same 49 messages)."""
    tagged = w.where("reasoning", _has_reasoning)
    if not tagged:
        return
    latest = next((i for i in range(len(w.msgs) - 1, -1, -1) if w.msgs[i].role == "assistant"),
                  None)
    facts, content, alive, tokens, extra = w.facts("strip"), w.content, w.alive, w.tokens, w.extra
    did = w.facts("stripped")  # (its text, tokens and extra tokens then, the change it made)
    for i in tagged:
        m = w.msgs[i]
        if i == latest or m.pinned or not alive[i]:
            continue
        text = content[i]
        done = did[i] if did is not None else None
        if done is not None and done[0] is text and done[1] == tokens[i] \
                and done[2] == extra[i]:
            w.redo_change(i, done[3])
            continue
        hit = facts[i] if facts is not None else None
        if hit is not None and hit[0] is text:  # the warm cache's, read inline
            stripped = hit[1]
        else:
            stripped = memo.get("strip", text, lambda t=text: (
                strip_reasoning(t) if any(tag in t for tag in _REASONING_TAGS) else t))
            if facts is not None:
                facts[i] = (text, stripped)
        if stripped is not text and stripped != text:
            before = tokens[i], extra[i]
            w.replace(i, stripped, "compressed", "reasoning block of an earlier turn stripped")
            if did is not None:
                did[i] = (text, *before, w.change(i))


def reference(w: Work, j: int) -> str:
    """What a copy of output j says in its place: output j as the model sees it, the call
    that made it (its tool, its arguments, the call id the request carries) or its first
    words, never a message id: those of a provider's format are the codec's own, and the
    model read "[identical to tool output oa2.0f88bca738ec above]" of an id in no message."""
    m = w.msgs[j]
    call = next((c for c in w.msgs[w.group[j]].tool_calls or () if c.id == m.tool_call_id),
                None) if m.tool_call_id else None
    if call is not None:
        return f"[identical to the output of {call_line(call.name, call.arguments)} above " \
               f"(call {call.id})]"
    what = "document" if m.kind == "doc" else "tool output"
    return f"[identical to the {what} above that begins: {one_line(w.original[j], 60)}]"


#: words at each end of a text that `_ends` reads: two texts alike but for spacing share them
ENDS_WORDS = 8


def _ends(text: str) -> tuple[str, ...]:
    """The first and last few words of a text: two texts with the same words (what
    `normalized_hash` compares) have the same ends, and reading them splits no more than that.
    Only texts whose ends another shares are hashed whole (a cold trim of a 1M chat hashed
    67 outputs for none: 6 ms, 3% of the trim)."""
    return (*text.split(None, ENDS_WORDS)[:ENDS_WORDS], "",
            *text.rsplit(None, ENDS_WORDS)[-ENDS_WORDS:])


def dedup(w: Work, min_tokens: int, memo: Memo) -> dict[int, int]:
    """Later copies of the same tool output or document (whitespace-normalised) become a
    reference to the first copy. Returns {copy index: original index} so that the fit can
    restore a copy whose original it dropped."""
    firsts: dict[tuple[str, ...], list[int]] = {}  # ends -> the first copy of each text
    refs: dict[int, int] = {}
    facts = w.facts("ends")
    content = w.content

    def whole(k: int) -> str:
        return memo.get("norm", content[k], lambda: normalized_hash(content[k]))

    for i in w.where("outputs", _output):
        if not w.alive[i] or w.tokens[i] - w.extra[i] < min_tokens:
            continue
        text = content[i]
        hit = facts[i] if facts is not None else None
        if hit is not None and hit[0] is text:  # read inline, as strip_old_reasoning does
            ends = hit[1]
        else:
            ends = memo.get("ends", text, lambda t=text: _ends(t))
            if facts is not None:
                facts[i] = (text, ends)
        alike = firsts.setdefault(ends, [])
        key = whole(i) if alike else None
        j = next((k for k in alike if whole(k) == key), None)
        if j is None:
            alike.append(i)
            continue
        w.replace(i, reference(w, j), "deduplicated", f"same content as {mention(w.msgs, j)}")
        refs[i] = j
    return refs
