"""The Anthropic Messages format: `system` (a string or text blocks) and `messages` of content
blocks, read for the engine and written back as the very blocks the client sent.

For the engine, each system block is a leading pinned system message, and a user message is
split: each `tool_result` block becomes its own tool message (so a call and its results are
kept or dropped together, one result at a time), the rest stays one user message. Writing
back merges the pieces into their native message again; repairs (see anthropic_repair.py)
keep the result valid. A `role: "system"` message between turns (the mid-conversation-system
beta Claude Code sends) is a pinned system message that stays where it was: written back as
the very dict the client sent, never moved into the top-level `system`. The provider's own
compaction (a `compaction` block, the compact_* edit) drops every block before it: those are
not the engine's (they cost nothing and are written back as they came, ahead of the rest),
and the block is a pinned system message of the engine's, so that what the engine adds (a
summary) is written after it, where the provider reads it. A call written from another
format (a session's OpenAI messages) whose id Anthropic refuses ("functions.read:0") goes with
one it takes, the same in its result and every turn (`_CallIds`), said in the audit.

Owns this format's reading and writing; it never decides what to keep.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterator, Sequence
from typing import Any

import msgspec

from ctxlayer.core.formats import media
from ctxlayer.core.formats.anthropic_repair import (
    EMPTY_SYSTEM,
    place_breakpoints,
    repair,
    require_a_turn,
    require_user_turn,
)
from ctxlayer.core.formats.anthropic_thinking import every_turn_read, last_turn_start
from ctxlayer.core.formats.common import (
    Decoded,
    Encoded,
    SentTokens,
    audit,
    bad,
    client_id,
    derive_id,
    expect_dict,
    expect_str,
    messages_of,
    new_arguments,
    parts_gone,
    reusable_prefix,
    share_text,
)
from ctxlayer.core.formats.newest_turn import check_anthropic
from ctxlayer.core.guessed import BY_FILE_ID, BY_URL
from ctxlayer.core.text import one_line
from ctxlayer.core.tokens import Tokenizer, deferred_tools
from ctxlayer.protocol import AuditEntry, Message, ToolCall

_json = msgspec.json.Encoder()


def _is_text(block: Any) -> bool:
    return isinstance(block, dict) and block.get("type") == "text"


def _source_tokens(block: dict, where: str, counter: Tokenizer, large: bool = False
                   ) -> tuple[int, tuple[int, int] | None]:
    """(tokens, the image's size when known) of an image or document block (``large``: the
    model sees images at the larger native resolution, `media.anthropic_image_tokens`)."""
    src = expect_dict(block.get("source"), f"{where}.source")
    kind = src.get("type")
    if block["type"] == "image":
        data = src.get("data") if kind == "base64" else None
        size = media.size_of_base64(data) if isinstance(data, str) else None
        return media.anthropic_image_tokens(size, large), size
    if kind == "text":  # a text document: its text
        return counter.count(expect_str(src.get("data"), f"{where}.source.data")), None
    if kind == "content":
        content = src.get("content")
        if isinstance(content, str):
            return counter.count(content), None
        return sum(_block(expect_dict(b, f"{where}.source.content[{k}]"),
                          f"{where}.source.content[{k}]", counter, large)[0]
                   for k, b in enumerate(content or [])), None
    data = src.get("data") if kind == "base64" else None
    return media.pdf_tokens(data if isinstance(data, str) else None), None


def _unseen(block: dict) -> str:
    """How an image or a document the gateway cannot see was sent (its cost guessed), else "".
    Its source was checked a dict by `_source_tokens`."""
    return {"file": BY_FILE_ID, "url": BY_URL}.get(block["source"].get("type"), "")


def _block(block: dict, where: str, counter: Tokenizer, large: bool = False
           ) -> tuple[int, str]:
    """(tokens, label) of a block the engine never shortens; the label names it for audit
    lines."""
    kind = block.get("type")
    if kind == "text":
        tokens = counter.count(expect_str(block.get("text"), f"{where}.text"))
    elif kind in ("image", "document"):
        tokens, size = _source_tokens(block, where, counter, large)
        title = block.get("title") if kind == "document" else None
        return tokens, media.label(kind, tokens, size, title if isinstance(title, str) else "",
                                   _unseen(block))
    elif kind in ("thinking", "redacted_thinking"):
        return _thinking(block, where, counter, read=True)
    elif kind == "compaction":  # the provider's summary, and what it keeps sealed beside it
        text, sealed = block.get("content"), block.get("encrypted_content")
        tokens = (counter.count(text) if isinstance(text, str) else 0) + (
            media.encrypted_tokens(sealed, counter) if isinstance(sealed, str) else 0)
    else:
        tokens = counter.count(_json.encode(block).decode())
    return tokens, media.label(str(kind), tokens)


def _thinking(block: dict, where: str, counter: Tokenizer, read: bool) -> tuple[int, str]:
    """A thinking block's cost and label: where the provider reads it again (every turn's
    thinking, or the turn under way: anthropic_thinking.py), the larger of its text and what
    its signature seals (the whole thinking: with `display: "omitted"` the text is empty, a
    summary is shorter), else its text; redacted thinking, all sealed, what its data holds
    where it is read, else nothing."""
    if block["type"] == "redacted_thinking":
        data = expect_str(block.get("data"), f"{where}.data")
        tokens = media.encrypted_tokens(data, counter) + 1 if read else 0
        return tokens, media.label("redacted thinking", tokens)
    tokens = counter.count(expect_str(block.get("thinking"), f"{where}.thinking"))
    sig = block.get("signature")
    if read and isinstance(sig, str):
        tokens = max(tokens, media.encrypted_tokens(sig, counter))
    return tokens, media.label("thinking", tokens)


def _references(value: Any) -> Iterator[str]:
    """The tool names the `tool_reference` blocks in `value` name (a tool search's results, a
    tool_result's content), at any depth."""
    if isinstance(value, dict):
        if value.get("type") == "tool_reference" and isinstance(value.get("tool_name"), str):
            yield value["tool_name"]
        for v in value.values():
            if isinstance(v, (dict, list)):
                yield from _references(v)
    elif isinstance(value, list):
        for v in value:
            yield from _references(v)


def _result_content(block: dict, where: str, counter: Tokenizer, large: bool = False
                    ) -> tuple[str, int, list[str]]:
    content = block.get("content")
    if content is None or isinstance(content, str):
        return content or "", 0, []
    if not isinstance(content, list):
        raise bad(f"{where}.content", "expected a string or a list of blocks")
    return _texts_and_parts(content, where, counter, large)


def _texts_and_parts(content: list, where: str, counter: Tokenizer, large: bool = False
                     ) -> tuple[str, int, list[str]]:
    """A list of blocks as the engine reads it: the text blocks' text, and the tokens and
    labels of the others (never shortened: the provider says what it thinks of them; they are
    counted and passed on)."""
    texts, parts, labels = [], 0, []
    for k, b in enumerate(content):
        f = f"{where}.content[{k}]"
        b = expect_dict(b, f)
        expect_str(b.get("type"), f"{f}.type", "the block's type")
        if b["type"] == "text":
            texts.append(expect_str(b.get("text"), f"{f}.text"))
        else:
            tokens, name = _block(b, f, counter, large)
            parts += tokens
            labels.append(name)
    return "\n".join(texts), parts, labels


class _Reader:
    def __init__(self, payload: dict, counter: Tokenizer) -> None:
        self.counter = counter
        #: images costed at the larger native resolution of the newest Claude models
        self.large = media.sees_large_images(payload.get("model"))
        #: thinking read again: every turn's, else only the turn under way, after the last
        #: user message that is not all tool results (anthropic_thinking.py)
        self.raw = messages_of(payload)
        self.every_turn = every_turn_read(payload)
        #: the message asking this turn's question: its documents stay parts of it (kept whole
        #: with the question); those attached earlier are pieces of their own, shortened
        self.question_at = last_turn_start(self.raw)
        self.turn_start = -1 if self.every_turn else self.question_at
        self.msgs: list[Message] = []
        self.sources: list[tuple] = []
        self.index: dict[str, int] = {}
        self.derived: set[str] = set()
        self.pieces: dict[int, list[int]] = {}
        #: the tools deferred to a tool search, loaded where a `tool_reference` names them
        self.deferred = deferred_tools(payload.get("tools"), counter)
        #: (message, block) of the provider's last compaction: it reads nothing before it
        self.unread: tuple[int, int] | None = None

    def add(self, msg: Message, source: tuple, own_id: str | None, where: str) -> None:
        if self.deferred and source[0] == "msg":
            msg = self._with_loaded(msg, source)
        mid = own_id if own_id is not None else msg.id
        if own_id is None:
            self.derived.add(mid)  # type: ignore[arg-type]
        if mid in self.index:
            raise bad(f"{where}.id", f"the same id as an earlier message ({mid})")
        self.index[mid] = len(self.msgs)  # type: ignore[index]
        if source[0] == "msg":
            self.pieces.setdefault(source[1], []).append(len(self.msgs))
        self.msgs.append(msg if own_id is None else msgspec.structs.replace(msg, id=mid))
        self.sources.append(source)

    def _with_loaded(self, msg: Message, source: tuple) -> Message:
        """`msg` with the definitions its blocks' tool references load costed beside it."""
        content = self.raw[source[1]].get("content")
        if not isinstance(content, list) or source[2] is None:
            return msg
        # references come in results (a tool_result's content, a tool search's result)
        names = [n for k in source[2] if isinstance(content[k], dict) and
                 str(content[k].get("type", "")).endswith(("tool_result", "tool_reference"))
                 for n in _references(content[k])]
        tokens = sum(self.deferred.get(n, 0) for n in names)
        if not tokens:
            return msg
        return msgspec.structs.replace(
            msg, parts_tokens=(msg.parts_tokens or 0) + tokens,
            parts=[*(msg.parts or ()), media.label(f"{len(names)} tools loaded", tokens)])

    def system(self, system: Any) -> None:
        if system is None:
            return
        if isinstance(system, str):
            if system:
                self.add(Message(role="system", content=system, pinned=True,
                                 id=derive_id("an", "s", system)), ("system", None), None,
                         "system")
            return
        if not isinstance(system, list):
            raise bad("system", "expected a string or a list of text blocks")
        for k, block in enumerate(system):
            f = f"system[{k}]"
            block = expect_dict(block, f)
            if block.get("type") != "text":
                raise bad(f"{f}.type", f"system blocks are text blocks, got {block.get('type')!r}")
            text = expect_str(block.get("text"), f"{f}.text")
            self.add(Message(role="system", content=text, pinned=True,
                             id=derive_id("an", f"s{k}", text)), ("system", k), None, f)

    def message(self, i: int, native: Any) -> None:
        where = f"messages[{i}]"
        if self.unread is not None and i < self.unread[0]:
            self.pieces[i] = []  # before the provider's compaction: sent on, never read
            return
        native = expect_dict(native, where)
        role = native.get("role")
        if role not in ("user", "assistant", "system"):
            raise bad(f"{where}.role", f"expected user, assistant or system, got {role!r}")
        own = client_id(native)
        content = native.get("content")
        if role == "system":
            self._system_turn(i, content, own, where)
            return
        if isinstance(content, str):
            self.add(Message(role=role, content=content, id=derive_id("an", str(i), role,
                                                                      content)),
                     ("msg", i, None), own, where)
            return
        if not isinstance(content, list):
            raise bad(f"{where}.content", "expected a string or a list of blocks")
        blocks = content
        # checked at once; each field named only for the error (a 5 MB chat has 3,600 blocks)
        if not all(isinstance(b, dict) and isinstance(b.get("type"), str) for b in blocks):
            for k, b in enumerate(blocks):
                expect_dict(b, f"{where}.content[{k}]")
            for k, b in enumerate(blocks):
                expect_str(b.get("type"), f"{where}.content[{k}].type", "the block's type")
        if role == "assistant":
            self._assistant(i, blocks, own, where)
        else:
            self._user(i, blocks, own, where)

    def _system_turn(self, i: int, content: Any, own: str | None, where: str) -> None:
        """A system message between turns (the mid-conversation-system beta): pinned, so it
        is kept whole where it stands, counted like the top-level system prompt."""
        labels: list[str] = []
        if isinstance(content, str):
            text, parts = content, 0
        elif isinstance(content, list):
            text, parts, labels = _texts_and_parts(content, where, self.counter, self.large)
        else:
            raise bad(f"{where}.content", "expected a string or a list of blocks")
        self.add(Message(role="system", content=text, pinned=True, parts_tokens=parts or None,
                         parts=labels or None, id=derive_id("an", str(i), "system", text)),
                 ("msg", i, None if isinstance(content, str) else tuple(range(len(content)))),
                 own, where)

    def _assistant(self, i: int, blocks: list[dict], own: str | None, where: str) -> None:
        start = 0
        if self.unread is not None and self.unread[0] == i:
            start = self._compaction(i, blocks, where)
            if start == len(blocks):
                return
        texts, parts, calls, labels = [], 0, [], []
        for k in range(start, len(blocks)):
            b = blocks[k]
            kind = b["type"]
            if kind == "text":
                text = b.get("text")
                texts.append(text if isinstance(text, str)
                             else expect_str(text, f"{where}.content[{k}].text"))
            elif kind == "tool_use":
                cid, name = b.get("id"), b.get("name")
                if not (isinstance(cid, str) and isinstance(name, str)):
                    f = f"{where}.content[{k}]"
                    expect_str(cid, f"{f}.id", "the tool_use id")
                    expect_str(name, f"{f}.name", "the tool's name")
                calls.append(ToolCall(id=cid, name=name,
                                      arguments=_json.encode(b.get("input", {})).decode()))
            else:
                f = f"{where}.content[{k}]"
                tokens, name = (_thinking(b, f, self.counter, i > self.turn_start)
                                if kind in ("thinking", "redacted_thinking")
                                else _block(b, f, self.counter, self.large))
                parts += tokens
                labels.append(name)
        text = "\n".join(texts)
        # the provider's own compaction (the compact_* edit): it reads nothing before it, and
        # no summary of ours can stand in for it, so it stays whole where it is
        compacted = any(blocks[k]["type"] == "compaction" for k in range(start, len(blocks)))
        self.add(Message(role="assistant", content=text, tool_calls=calls or None,
                         parts_tokens=parts or None, parts=labels or None, pinned=compacted,
                         id=derive_id("an", str(i), "assistant", text, *(c.id for c in calls))),
                 ("msg", i, tuple(range(start, len(blocks)))), own, where)

    def _compaction(self, i: int, blocks: list[dict], where: str) -> int:
        """The provider's last compaction block, as the conversation's head: a pinned system
        message of the engine's (so the summaries of ours come after it, where the provider
        reads them) written back where it came, with the blocks before it in its message
        (unread, costing nothing). Returns where the rest of the message starts."""
        k = self.unread[1]  # type: ignore[index]
        tokens, label = _block(blocks[k], f"{where}.content[{k}]", self.counter, self.large)
        self.add(Message(role="system", content="", pinned=True, parts_tokens=tokens,
                         parts=[label], id=derive_id("an", str(i), "compaction", label)),
                 ("msg", i, tuple(range(k + 1))), None, where)
        return k + 1

    def _user(self, i: int, blocks: list[dict], own: str | None, where: str) -> None:
        split = i != self.question_at
        rest = [k for k, b in enumerate(blocks) if b["type"] != "tool_result"
                and not (split and _text_document(b))]
        rest_at = rest[0] if rest else None
        for k, b in enumerate(blocks):
            if split and _text_document(b):
                # a file the user attached as text earlier in the chat: a piece of its own, read
                # as a tool output is (outlined to the room it has, its lines quoted as they
                # are, never taken for the user's words), where as a part of its message it
                # went whole or was summarized with it
                data = b["source"]["data"]
                self.add(Message(role="user", content=data, kind="toolOutput",
                                 id=derive_id("an", f"{i}.{k}", "document", data)),
                         ("msg", i, (k,)), None, f"{where}.content[{k}]")
            elif k == rest_at:
                texts, parts, labels = [], 0, []
                for j in rest:
                    if blocks[j]["type"] == "text":
                        texts.append(expect_str(blocks[j].get("text"),
                                                f"{where}.content[{j}].text"))
                    else:
                        tokens, name = _block(blocks[j], f"{where}.content[{j}]",
                                              self.counter, self.large)
                        parts += tokens
                        labels.append(name)
                text = "\n".join(texts)
                self.add(Message(role="user", content=text, parts_tokens=parts or None,
                                 parts=labels or None,
                                 id=derive_id("an", str(i), "user", text)),
                         ("msg", i, tuple(rest)), own, where)
            elif b["type"] == "tool_result":
                cid, content = b.get("tool_use_id"), b.get("content")
                if isinstance(cid, str) and (content is None or isinstance(content, str)):
                    text, parts, labels = content or "", 0, []  # the usual: plain text
                else:
                    f = f"{where}.content[{k}]"
                    cid = expect_str(cid, f"{f}.tool_use_id",
                                     "the id of the tool_use it answers")
                    text, parts, labels = _result_content(b, f, self.counter, self.large)
                self.add(Message(role="tool", content=text, tool_call_id=cid,
                                 parts_tokens=parts or None, parts=labels or None,
                                 id=derive_id("an", f"{i}.{k}", "tool", cid, text)),
                         ("msg", i, (k,)), None, f"{where}.content[{k}]")


def last_compaction(raw: list, start: int = 0, earlier: tuple[int, int] | None = None
                    ) -> tuple[int, int] | None:
    """(message, block) of the last `compaction` block holding a summary (the compact_* edit's
    beta): the provider drops every block before it, so those are sent as they came and
    cost nothing. Looked for from message `start` on, else `earlier` (found before it)."""
    for i in range(len(raw) - 1, start - 1, -1):
        m = raw[i]
        content = m.get("content") if isinstance(m, dict) and m.get("role") == "assistant" \
            else None
        if isinstance(content, list):
            for k in range(len(content) - 1, -1, -1):
                b = content[k]
                if isinstance(b, dict) and b.get("type") == "compaction" and b.get("content"):
                    return i, k
    return earlier


def decode(payload: dict, counter: Tokenizer, previous: Decoded | None = None,
           whole: bool = False) -> Decoded:
    r = _Reader(payload, counter)
    raw = r.raw
    same = reusable_prefix(previous, "anthropic", raw, counter)
    earlier = previous.extra.get("unread") if previous is not None else None
    r.unread = None if whole else last_compaction(
        raw, same, earlier if earlier and earlier[0] < same else None)
    if previous is not None and previous.extra.get("turn_start") != r.turn_start:
        # a new turn began: the thinking of the one before it is no longer read again; or a
        # rewind made an earlier turn the one under way: its thinking is read again
        same = min(same, min(previous.extra.get("turn_start", -1), r.turn_start) + 1)
    if previous is not None and previous.extra.get("question_at", -1) != r.question_at:
        # both messages are read again: the one that asked the last question (its documents
        # were parts of the question then, pieces of their own now) and, after a rewind, the
        # earlier one that asks it now (its documents, pieces before, are parts of it again)
        same = min(same, max(min(previous.extra.get("question_at", -1), r.question_at), 0))
    if previous is not None and same and payload.get("system") == previous.payload.get(
            "system") and previous.extra.get("every_turn") == r.every_turn and \
            previous.extra.get("deferred", {}) == r.deferred and \
            previous.extra.get("large", False) == r.large and \
            previous.extra.get("unread") == r.unread:
        pieces = previous.extra["pieces"]
        upto = sum(1 for s in previous.sources if s[0] == "system") + \
            sum(len(pieces[i]) for i in range(same))
        r.msgs, r.sources = previous.messages[:upto], previous.sources[:upto]
        r.index = {m.id: k for k, m in enumerate(r.msgs)}  # type: ignore[misc]
        r.derived = {m.id for m in r.msgs if m.id in previous.derived_ids}  # type: ignore[misc]
        r.pieces = {i: pieces[i] for i in range(same)}
    else:
        same = 0
        r.system(payload.get("system"))
    for i in range(same, len(raw)):
        r.message(i, raw[i])
    if not whole:  # a session's append goes on from what it holds (newest_turn.py)
        check_anthropic(raw)
    return Decoded(fmt="anthropic", messages=r.msgs, payload=payload, sources=r.sources,
                   index=r.index, derived_ids=r.derived, counter=counter,
                   extra={"pieces": r.pieces, "every_turn": r.every_turn,
                          "turn_start": r.turn_start, "question_at": r.question_at,
                          "deferred": r.deferred, "large": r.large,
                          "unread": r.unread})


def sent_tokens(decoded: Decoded, tokens: Sequence[int], counter: Tokenizer) -> SentTokens:
    """What each message sent costs: the sum of the engine messages read from it (each
    tool_result and each document attached earlier is one of its own), nothing for one before
    the provider's compaction (never read); the `system` blocks apart (none given: None)."""
    out = [0] * len(decoded.payload.get("messages") or ())
    system = None if decoded.payload.get("system") is None else 0
    for source, n in zip(decoded.sources, tokens, strict=True):
        if source[0] == "system":
            system = (system or 0) + n
        else:
            out[source[1]] += n
    return SentTokens(out, system)


# --- writing back ---------------------------------------------------------------------------


def _text_document(block: dict) -> bool:
    """A `document` block whose source is plain text the engine can shorten (a PDF, an
    image or a list of content blocks is a part: counted and passed on)."""
    if block["type"] != "document":
        return False
    source = block.get("source")
    return isinstance(source, dict) and source.get("type") == "text" and \
        isinstance(source.get("data"), str)


def _shortened_block(block: dict, m: Message, notes: list[AuditEntry]) -> dict:
    """`block` with `m`'s shortened text; a text block of a result's that it left with
    nothing is named in `notes`."""
    text = m.content
    if block.get("type") == "document":
        return {**block, "source": {**block["source"], "data": text}}
    if block.get("type") == "tool_result":
        content = block.get("content")
        if isinstance(content, list):
            parts, gone = share_text(content, text, _is_text)
            notes += parts_gone(content, gone, m, f"result of {block.get('tool_use_id')}")
            return {**block, "content": parts}
        return {**block, "content": text}
    return {**block, "text": text}


def _strip_own(native: dict) -> dict:
    return {k: v for k, v in native.items() if k != "ctxlayer"} if "ctxlayer" in native \
        else native


def _blank_system(decoded: Decoded, kept: Sequence[Message]) -> set[int]:
    """The kept system messages this request did not bring (a session's, appended blank in
    another format: OpenAI's `""`, Responses' `instructions: " "`) with nothing in them:
    Anthropic refuses a system block of whitespace. The request's own go as they came."""
    return {k for k, m in enumerate(kept) if m.role == "system" and not m.content.strip()
            and not m.parts_tokens and (m.id is None or m.id not in decoded.index)}


def _system(decoded: Decoded, kept: list[tuple[int | None, Message]]) -> Any:
    original = decoded.payload.get("system")
    if not kept:
        return None
    if isinstance(original, str) and len(kept) == 1 and kept[0][0] is not None:
        return kept[0][1].content
    blocks = []
    for pos, m in kept:
        if pos is None or not isinstance(original, list):
            blocks.append({"type": "text", "text": m.content})
            continue
        block = original[decoded.sources[pos][1]]
        blocks.append(block if m.content == decoded.messages[pos].content
                      else {**block, "text": m.content})
    return blocks


def _native(decoded: Decoded, i: int, pieces: list[tuple[int, Message]],
            notes: list[AuditEntry]) -> dict:
    """Native message i from its kept pieces: the original dict when all of them are kept
    unchanged, else its blocks of the kept pieces with shortened text put back (a text block
    that kept none of it named in `notes`)."""
    native = decoded.payload["messages"][i]
    changed = [(pos, m) for pos, m in pieces if m.content != decoded.messages[pos].content
               or new_arguments(decoded.messages[pos], m) is not None]
    if len(pieces) == len(decoded.extra["pieces"][i]) and not changed:
        return _strip_own(native)
    content = native["content"]
    if isinstance(content, str):
        return {**_strip_own(native), "content": pieces[0][1].content}
    blocks: list[tuple[int, dict]] = []
    for pos, m in pieces:
        ks = decoded.sources[pos][2]
        own = _with_inputs([content[k] for k in ks], new_arguments(decoded.messages[pos], m))
        if m.content != decoded.messages[pos].content:
            # a result, or a document that is a piece of its own (a question's documents are
            # parts of it, never rewritten)
            lone = own[0].get("type") if len(own) == 1 else None
            if lone == "tool_result" or (lone == "document" and
                                         decoded.messages[pos].kind == "toolOutput"):
                own = [_shortened_block(own[0], m, notes)]
            else:
                own, gone = share_text(own, m.content, _is_text)
                notes += parts_gone(content, [ks[k] for k in gone], m, f"{native['role']} turn")
        blocks += [(ks[0] if ks else 0, b) for b in own]
    blocks.sort(key=lambda kb: kb[0])
    return {**_strip_own(native), "content": [b for _, b in blocks]}


def _with_inputs(blocks: list[dict], arguments: list[str | None] | None) -> list[dict]:
    """An assistant turn's blocks with the outlined arguments of its calls as the `input` of
    their `tool_use` blocks (an object, as the reader made the arguments from); every other
    block (text, thinking and its signature) as it came."""
    if arguments is None:
        return blocks
    todo = iter(arguments)
    out = []
    for b in blocks:
        if b.get("type") == "tool_use":
            a = _object(next(todo, None))
            if a is not None:
                b = {**b, "input": a}
        out.append(b)
    return out


def _object(arguments: str | None) -> dict | None:
    """Outlined arguments as the object `input` must be (the outline is always one; anything
    else leaves the block as the client sent it)."""
    if arguments is None:
        return None
    try:
        value = msgspec.json.decode(arguments)
    except (msgspec.DecodeError, RecursionError):
        return None
    return value if isinstance(value, dict) else None


def _tool_input(m: Message, call: ToolCall, result: Encoded) -> dict:
    """A call's arguments as the object a `tool_use` block's `input` must be. Arguments that
    are not one (a model's broken JSON, a list, a bare string, kept in another format that
    takes any text) go whole as `{"arguments": <the text>}`, said in the audit: the provider
    refuses any other `input`. A custom tool's call (its input free text, which Anthropic has
    no tool for) goes as `{"input": <the text>}`, whatever the text, said so too."""
    text = call.arguments or ""
    if call.custom:
        result.audit.append(audit(
            "compressed", "a custom tool's call (its input free text): Anthropic has no custom "
            'tools, so it is sent as a tool_use whose input is {"input": <the text>}',
            f"{call.name}({one_line(text, 60)})", message_id=m.id))
        return {"input": text}
    if not text.strip():
        return {}
    try:
        value = msgspec.json.decode(text)
    except (msgspec.DecodeError, RecursionError):  # nested past a decoder: as text, too
        value = None
    if isinstance(value, dict):
        return value
    result.audit.append(audit(
        "compressed", "tool call arguments that are not a JSON object: sent whole as "
        '{"arguments": <the text>}, the object Anthropic\'s tool input must be',
        f"{call.name}({one_line(text, 60)})", message_id=m.id))
    return {"arguments": text}


#: the ids Anthropic takes for a tool_use and a tool_result's tool_use_id: it answers 400
#: ("String should match pattern") to any other
_CALL_ID = re.compile(r"[a-zA-Z0-9_-]+")
_NOT_IN_CALL_ID = re.compile(r"[^a-zA-Z0-9_-]")


class _CallIds:
    """The ids of calls kept in another format, as Anthropic takes them. One it takes goes as
    it is; another ("functions.read:0", a Kimi model's; "function_call@1", a legacy OpenAI
    call's) becomes its characters Anthropic takes, the others as `_`, then a hash of the
    whole id: a function of the id alone, so that a call and its result get the same one,
    every turn the same (the cached prefix holds), and two ids that differ only in the
    characters replaced stay two. Longer where another id of the conversation is that one."""

    def __init__(self, kept: Sequence[Message], result: Encoded) -> None:
        self.kept, self.result = kept, result
        self.taken: set[str] | None = None  # every id of the conversation, once one is made
        self.made: dict[str, str] = {}

    def __call__(self, call_id: str, m: Message | None = None, name: str = "") -> str:
        if _CALL_ID.fullmatch(call_id):  # "" too is made one: a tool_use needs an id
            return call_id
        made = self.made.get(call_id)
        if made is not None:
            return made
        if self.taken is None:
            self.taken = {i for k in self.kept for i in (
                k.tool_call_id, *(c.id for c in k.tool_calls or ())) if i}
        digest = hashlib.sha256(call_id.encode("utf-8", "surrogatepass")).hexdigest()
        base = _NOT_IN_CALL_ID.sub("_", call_id)
        made = next((f"{base}_{digest[:n]}" for n in (12, 24) if f"{base}_{digest[:n]}"
                     not in self.taken), f"{base}_{digest}")
        self.made[call_id] = made
        self.taken.add(made)
        if m is not None:  # said once, at the call
            self.result.audit.append(audit(
                "compressed", "a call id Anthropic does not take (letters, digits, _ and - "
                "only): written in the call and its result as another", f"{name}: {call_id} "
                f"-> {made}", message_id=m.id))
        return made


def _synthesized(m: Message, result: Encoded, ids: _CallIds) -> dict:
    """A message the engine added (a summary, a document), or one kept in another format: a
    plain text turn, its calls as `tool_use` blocks, their ids ones Anthropic takes."""
    if m.role == "tool":
        return {"role": "user", "content": [{"type": "tool_result",
                                             "tool_use_id": ids(m.tool_call_id or ""),
                                             "content": m.content}]}
    if m.role == "assistant" and m.tool_calls:
        blocks: list[dict] = [{"type": "text", "text": m.content}] if m.content.strip() else []
        for c in m.tool_calls:
            blocks.append({"type": "tool_use", "id": ids(c.id, m, c.name), "name": c.name,
                           "input": _tool_input(m, c, result)})
        return {"role": "assistant", "content": blocks}
    return {"role": "user" if m.role == "user" else "assistant", "content": m.content}


def _in_messages(decoded: Decoded, m: Message) -> bool:
    """Whether a system message is one of the request's messages (between turns)."""
    pos = decoded.index.get(m.id) if m.id is not None else None
    return pos is not None and decoded.sources[pos][0] == "msg"


def user_first(decoded: Decoded) -> bool:
    """Whether the request must start with a user turn: unless messages before the provider's
    compaction lead it (they go on ahead as they came, and the turns after it may start with
    the assistant's). `encode` repairs by the same rule."""
    unread = decoded.extra.get("unread")
    return not unread or unread[0] == 0


def encode(decoded: Decoded, kept: Sequence[Message], *, cache_breakpoints: Sequence[int] = ()
           ) -> Encoded:
    system: list[tuple[int | None, Message]] = []
    # (native index or None for an added message, [(engine pos, message)], kept indices)
    groups: list[tuple[int | None, list[tuple[int, Message]], list[int]]] = []
    blank = _blank_system(decoded, kept)
    for k, m in enumerate(kept):
        if k in blank:
            continue
        pos = decoded.index.get(m.id) if m.id is not None else None
        if m.role == "system" and (pos is None or decoded.sources[pos][0] == "system"):
            system.append((pos, m))
            continue
        if pos is None:
            groups.append((None, [(-1, m)], [k]))
            continue
        i = decoded.sources[pos][1]
        if groups and groups[-1][0] == i:
            groups[-1][1].append((pos, m))
            groups[-1][2].append(k)
        else:
            groups.append((i, [(pos, m)], [k]))
    result = Encoded(payload={})
    result.audit += [audit("dropped", EMPTY_SYSTEM, "system: (empty)", 0, 0, kept[k].id)
                     for k in sorted(blank)]
    ids = _CallIds(kept, result)
    out = [(_synthesized(ps[0][1], result, ids) if i is None
            else _native(decoded, i, ps, result.audit), ks) for i, ps, ks in groups]
    unread = decoded.extra.get("unread")
    # what the provider drops before its compaction goes on as it came, ahead of the rest
    head = [(_strip_own(m), []) for m in decoded.payload["messages"][:unread[0]]] \
        if unread else []
    if user_first(decoded):
        require_user_turn(decoded.payload["messages"], out)
        require_a_turn(out)
    out = head + repair(out, kept, result, decoded.counter, opened=not user_first(decoded))
    sys_value = _system(decoded, system)
    sys_kept = [k for k, m in enumerate(kept) if m.role == "system" and k not in blank
                and not _in_messages(decoded, m)]
    sys_value, messages, tools = place_breakpoints(
        sys_value, out, sys_kept, cache_breakpoints, decoded.payload.get("tools"), kept, result,
        automatic=decoded.payload.get("cache_control") is not None)
    payload = {k: v for k, v in decoded.payload.items() if k not in ("system", "messages")}
    if tools is not decoded.payload.get("tools"):  # a client's breakpoint too many removed
        payload["tools"] = tools
    if sys_value is not None:
        payload["system"] = sys_value
    payload["messages"] = messages
    # keep the client's key order: system and messages where they were
    order = list(decoded.payload)
    result.payload = {k: payload[k] for k in order if k in payload} | \
        {k: v for k, v in payload.items() if k not in order}
    return result


def after_history(messages: list, texts: Sequence[str]) -> list:
    """The conversation with `texts` (a system prompt's dynamic section) after its history.

    The top-level `system` comes before every message, so text there that changes each turn
    would make the provider read the whole history again. Anthropic-format clients put such
    text (a reminder) in the last user turn; so does this: as text blocks after what the user
    wrote, because the user's own blocks are sent next turn just as now (the turn goes out
    without them then) and so stay in the cached prefix with the rest of the history. A
    conversation ending with the assistant's turn gets a user turn of them. New dicts: a
    stored message's own dict is never changed."""
    blocks = [{"type": "text", "text": t} for t in texts if t]
    if not blocks:
        return messages
    last = messages[-1] if messages else None
    if not isinstance(last, dict) or last.get("role") != "user":
        return [*messages, {"role": "user", "content": blocks}]
    content = last.get("content")
    if isinstance(content, str):
        # an empty text block is refused by the provider: "" is no block at all
        own = [{"type": "text", "text": content}] if content else []
    else:
        own = list(content or [])
    return [*messages[:-1], {**last, "content": [*own, *blocks]}]
