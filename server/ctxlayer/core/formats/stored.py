"""Provider messages kept in a session as they came, and written back from there.

A session stores the engine's view of each message (text, tool calls, counts) and, beside
it, the provider message it came from (`raw`). So thinking blocks with their signatures,
redacted thinking, images, documents, audio and part types this version does not know go
back out byte for byte when the session is assembled in the format they came in.

- `raws(decoded)`: what to keep beside each engine message of an append, one dict (or None)
  each: ``{"format", "message"}`` for OpenAI; ``{"format", "items"}`` for the Responses API
  (a run of the model's items is one engine message: its reasoning, calls and messages); for
  Anthropic, where one native message may be several engine messages (each tool_result its
  own), ``{"format", "blocks", "piece": [j, n]}`` with the whole native ``message`` on the
  first piece only (never copied n times); an Anthropic `system` block (a session takes the
  request's `system` as system messages) ``{"format", "system"}``: the block as it came, its
  cache_control and citations with it. A `system` string, the Responses instructions and a
  string input are text only: nothing is stored for them.
- `rebuild(fmt, assembled, stored, counter)`: a Decoded made of the stored natives of the
  assembled messages, so that the format's own encoder writes them back (shortened text put
  into their text parts, pieces left out removed, repairs audited) exactly as ctx/prepare
  does. A message stored in another format, or in none, is written from its text and tool
  calls (a user message's images rewritten in the target's shape: every format carries
  them), and what the target format does not get of it is named in one audit entry: its
  parts and fields, and the keys of the parts it does carry that the writer leaves behind
  (a user's `name`, a text's citations or cache_control, a tool result's is_error).

Reasoning: nothing here strips thinking blocks. In a provider format the trim engine sends
what fits as it came (`trim_options`: no rewrite when it fits) and never shortens a non-text
part, so the thinking of the last assistant turn of a tool loop, which Anthropic requires
unchanged, is always there; the history window strips only `<think>` text of earlier turns.

Pure: no I/O.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import msgspec

from ctxlayer.core.formats import media
from ctxlayer.core.formats.common import Decoded, audit
from ctxlayer.core.text import describe
from ctxlayer.protocol import AuditEntry, Message

#: the internal ids of a rebuild (never leave it: encode's audit entries are mapped back)
_KEY = "ctx:stored:"

#: the fields of an OpenAI message another format's writer carries: its text, its calls (a
#: legacy function_call too), the call a result answers, its ids
_OPENAI_FIELDS = frozenset({"role", "content", "tool_calls", "function_call", "tool_call_id",
                            "id", "ctxlayer"})
#: the roles whose `name` is the tool's, which the call it answers carries; a user's or an
#: assistant's `name` says who spoke, and no other format has a place for that
_NAMED_BY_THEIR_CALL = frozenset({"tool", "function"})
_ANTHROPIC_CARRIED = frozenset({"text", "tool_use", "tool_result"})
#: the Responses items another format carries (as text, tool calls and their results)
_RESPONSES_CARRIED = frozenset({"message", "function_call", "function_call_output",
                                "custom_tool_call", "custom_tool_call_output"})
_TEXT_PARTS = frozenset({"text", "input_text", "output_text"})
_IMAGE_PARTS = frozenset({"image", "image_url", "input_image"})
#: the keys of a carried block, part or item that the writers carry (or that mean nothing
#: outside their provider: an item's id and status); any other key that holds something (a
#: text's citations or cache_control, a tool result's is_error) is lost on the way
_KEYS_CARRIED = {
    **{kind: frozenset({"type", "text"}) for kind in _TEXT_PARTS},
    "tool_use": frozenset({"type", "id", "name", "input"}),
    "tool_result": frozenset({"type", "tool_use_id", "content"}),
    "image": frozenset({"type", "source"}),
    "image_url": frozenset({"type", "image_url"}),
    "input_image": frozenset({"type", "image_url", "detail"}),
    "message": frozenset({"type", "role", "content", "id", "status"}),
    "function_call": frozenset({"type", "id", "call_id", "name", "arguments", "status"}),
    "function_call_output": frozenset({"type", "id", "call_id", "output", "status"}),
    "custom_tool_call": frozenset({"type", "id", "call_id", "name", "input", "status"}),
    "custom_tool_call_output": frozenset({"type", "id", "call_id", "output", "status"}),
}


@dataclass(slots=True, frozen=True)
class Stored:
    """One assembled message's stored form: the message as appended, its raw piece, and for
    an Anthropic piece the first piece of its native message (which holds the message) and
    that native message's key (the first piece's seq)."""

    message: Message
    raw: dict
    group: dict | None = None
    group_key: int | None = None


def raws(decoded: Decoded) -> list[dict | None]:
    """What to store beside each engine message of `decoded` (see the module docstring)."""
    if decoded.fmt == "openai":
        native = decoded.payload["messages"]
        return [{"format": "openai", "message": native[s]} for s in decoded.sources]
    if decoded.fmt == "responses":
        items = decoded.payload.get("input")
        return [{"format": "responses", "items": [items[k] for k in s]}
                if isinstance(s, list) else None for s in decoded.sources]
    if decoded.fmt != "anthropic":
        return [None] * len(decoded.messages)
    out: list[dict | None] = []
    seen: dict[int, int] = {}  # native index -> pieces stored so far
    system = decoded.payload.get("system")
    for source in decoded.sources:
        if source[0] == "system" and source[1] is not None and isinstance(system, list):
            out.append({"format": "anthropic", "system": system[source[1]]})
            continue
        if source[0] != "msg":
            out.append(None)
            continue
        i, ks = source[1], source[2]
        j = seen.get(i, 0)
        seen[i] = j + 1
        raw: dict = {"format": "anthropic", "blocks": list(ks) if ks is not None else None,
                     "piece": [j, len(decoded.extra["pieces"][i])]}
        if j == 0:
            raw["message"] = decoded.payload["messages"][i]
        out.append(raw)
    return out


#: the formats a message is stored in (`raws`), each of which carries a user's images
PROVIDER_FORMATS = ("openai", "anthropic", "responses")


class Builder:
    """The Decoded of a rebuild, grown one assembled message at a time."""

    def __init__(self, fmt: str) -> None:
        self.fmt = fmt
        self.msgs: list[Message] = []
        self.sources: list[Any] = []
        self.index: dict[str, int] = {}
        self.natives: list[dict] = []
        self.system: list[dict] = []  # an Anthropic request's system blocks
        self.pieces: dict[int, list[int]] = {}
        self.groups: dict[int, int] = {}  # group key -> native index

    def items(self, key: str, items: list[dict], message: Message) -> None:
        """The Responses items of one engine message."""
        start = len(self.natives)
        self.natives += items
        self.index[key] = len(self.msgs)
        self.sources.append(list(range(start, len(self.natives))))
        self.msgs.append(msgspec.structs.replace(message, id=key))

    def single(self, key: str, native: dict, message: Message) -> None:
        """A native message that is one engine message."""
        if self.fmt == "responses":
            self.items(key, [native], message)
            return
        i = len(self.natives)
        self.natives.append(native)
        self.index[key] = len(self.msgs)
        if self.fmt == "openai":
            self.sources.append(i)
        else:
            content = native.get("content")
            self.pieces[i] = [len(self.msgs)]
            self.sources.append(("msg", i, tuple(range(len(content)))
                                 if isinstance(content, list) else ()))
        self.msgs.append(msgspec.structs.replace(message, id=key))

    def system_block(self, key: str, block: dict, message: Message) -> None:
        """An Anthropic system block, which the encoder writes into the request's `system`
        as it came (its text put in when the engine changed it)."""
        self.index[key] = len(self.msgs)
        self.sources.append(("system", len(self.system)))
        self.system.append(block)
        self.msgs.append(msgspec.structs.replace(message, id=key))

    def piece(self, key: str, s: Stored) -> None:
        """One piece of an Anthropic native message: every piece gets its place, kept or not,
        so the encoder knows when all are there (then the native dict goes out unchanged)."""
        raw = s.raw
        i = self.groups.get(s.group_key) if s.group_key is not None else None
        if i is None:
            i = len(self.natives)
            self.natives.append((s.group if s.group is not None else raw)["message"])
            if s.group_key is not None:
                self.groups[s.group_key] = i
            n = raw["piece"][1]
            self.pieces[i] = [len(self.msgs) + p for p in range(n)]
            for _ in range(n):
                self.msgs.append(Message(role="user", content=""))
                self.sources.append(("msg", i, ()))
        pos = self.pieces[i][raw["piece"][0]]
        self.msgs[pos] = msgspec.structs.replace(s.message, id=key)
        blocks = raw.get("blocks")
        self.sources[pos] = ("msg", i, tuple(blocks) if blocks is not None else ())
        self.index[key] = pos

    def decoded(self, counter: Any) -> Decoded:
        where = "input" if self.fmt == "responses" else "messages"
        payload: dict = {"system": self.system} if self.system else {}
        payload[where] = self.natives
        return Decoded(fmt=self.fmt, messages=self.msgs,  # type: ignore[arg-type]
                       payload=payload, sources=self.sources,
                       index=self.index, counter=counter, extra={"pieces": self.pieces})


def rebuild(fmt: str, assembled: list[Message], stored: list[Stored | None], counter: Any
            ) -> tuple[Decoded, list[Message], dict[str, str | None], list[AuditEntry]]:
    """(the Decoded to encode `kept` with, `kept`: the assembled messages with the stored ones
    re-keyed, {internal id: session id} to map encode's audit back, entries naming what
    messages stored in another format lose)."""
    b = Builder(fmt)
    kept: list[Message] = []
    back: dict[str, str | None] = {}
    lost: list[AuditEntry] = []
    for k, (m, s) in enumerate(zip(assembled, stored, strict=True)):
        key = f"{_KEY}{k}"
        written = add_stored(b, key, s, fmt)
        if written is None:
            if s is not None and s.raw.get("format") != fmt:  # (a blank block: the encoder's)
                lost += _lost(s, fmt, m, counter, k)
            kept.append(m)
            continue
        if written == "images":
            lost += _lost(s, fmt, m, counter, k, images=True)
        back[key] = m.id
        kept.append(msgspec.structs.replace(m, id=key))
    return b.decoded(counter), kept, back, lost


def add_stored(b: Builder, key: str, s: Stored | None, fmt: str) -> str | None:
    """Write the stored message ``s`` into ``b`` under ``key`` as ``fmt`` has it: "whole" as it
    came (it came in ``fmt``), "images" a user message of another provider format rewritten
    with its text and images in ``fmt``'s shape; None when neither (the caller writes it from
    its text). One place for the rebuild of an assembly and the pricing of its parts."""
    if s is None:
        return None
    # a blank system block is written from its text: the encoder leaves it out, said (the
    # provider refuses one)
    if s.raw.get("format") == fmt and at_hand(s) and \
            ("system" not in s.raw or s.message.content.strip()):
        if "piece" in s.raw:
            b.piece(key, s)
        elif "system" in s.raw:
            b.system_block(key, s.raw["system"], s.message)
        elif "items" in s.raw:
            b.items(key, s.raw["items"], s.message)
        else:
            b.single(key, s.raw["message"], s.message)
        return "whole"
    if fmt in PROVIDER_FORMATS and \
            (converted := with_images(s, fmt)) is not None:
        b.single(key, converted, s.message)  # its images go along, in the target's shape
        return "images"
    return None


def with_images(s: Stored, fmt: str) -> dict | None:
    """A user message stored in another provider format, rewritten in `fmt` with its text
    and its images (every format carries them); None when it has no image to carry."""
    if s.message.role != "user":
        return None
    raw = s.raw
    if raw.get("format") == "openai":
        content = raw["message"].get("content")
    elif raw.get("format") == "responses":
        first = raw["items"][0] if raw.get("items") else {}
        content = first.get("content") if isinstance(first, dict) else None
    else:
        content = piece_blocks(raw, s.group) if at_hand(s) else None
    if not isinstance(content, list):
        return None
    out, images = [], 0
    for part in content:
        if not isinstance(part, dict):
            continue
        if part.get("type") in _TEXT_PARTS and isinstance(part.get("text"), str):
            kind = "input_text" if fmt == "responses" else "text"
            out.append({"type": kind, "text": part["text"]})
            continue
        url = _image_url(part)
        if url is not None:
            out.append(_image_part(fmt, url, _image_detail(part)))
            images += 1
    return {"role": "user", "content": out} if images else None


def _image_url(part: dict) -> str | None:
    """The image a part holds, as a URL (base64 as a data URL); None when it is no image, or
    one only its provider can read (a file id)."""
    kind = part.get("type")
    if kind == "image":  # Anthropic's
        src = part.get("source") if isinstance(part.get("source"), dict) else {}
        if src.get("type") == "base64":
            return f"data:{src.get('media_type')};base64,{src.get('data')}"
        return src["url"] if src.get("type") == "url" and isinstance(src.get("url"), str) \
            else None
    if kind == "image_url":  # Chat Completions'
        img = part.get("image_url") if isinstance(part.get("image_url"), dict) else {}
        return img["url"] if isinstance(img.get("url"), str) else None
    if kind == "input_image":  # the Responses API's
        return part["image_url"] if isinstance(part.get("image_url"), str) else None
    return None


def _image_detail(part: dict) -> str | None:
    """The detail an OpenAI or Responses image part asks for ("low", "high"), if any."""
    holder = part.get("image_url") if part.get("type") == "image_url" else part
    detail = holder.get("detail") if isinstance(holder, dict) else None
    return detail if isinstance(detail, str) else None


def _image_part(fmt: str, url: str, detail: str | None = None) -> dict:
    """An image part of `fmt` showing `url`, at the detail the client asked for where `fmt`
    has one (it decides what the image costs and how sharply the model sees it); Anthropic
    has none, it reads every image at its own size."""
    if fmt == "openai":
        return {"type": "image_url", "image_url": {"url": url, **(
            {"detail": detail} if detail is not None else {})}}
    if fmt == "responses":
        return {"type": "input_image", "image_url": url, "detail": detail or "auto"}
    data = media.split_data_url(url)
    source = {"type": "base64", "media_type": data[0], "data": data[1]} if data else \
        {"type": "url", "url": url}
    return {"type": "image", "source": source}


def mapped_back(entries: list[AuditEntry], back: dict[str, str | None]) -> list[AuditEntry]:
    """Encode's audit entries with the session's own message ids."""
    return [msgspec.structs.replace(e, message_id=back[e.message_id])
            if e.message_id in back else e for e in entries]


def not_carried(raw: dict, fmt: str, images: bool = False) -> list[str]:
    """What a stored message holds that format `fmt` does not get when the message is written
    from its text and tool calls: part types, fields the engine does not read, and keys of
    the parts it does carry that the writers leave behind ("text citations", "tool_result
    is_error"). `images`: the message's images go along (those with a URL to show)."""
    native = raw.get("message")
    if raw.get("format") == "openai" and isinstance(native, dict):
        return _openai_not_carried(native, images)
    if raw.get("format") == "responses":
        return _responses_not_carried(raw.get("items") or [], images)
    if raw.get("format") != "anthropic":
        return []
    if isinstance(raw.get("system"), dict):  # a system block: what else it carries
        return _parts_not_carried([raw["system"]], _ANTHROPIC_CARRIED, False)
    content = raw.get("content_of_piece")
    return _parts_not_carried(content, _ANTHROPIC_CARRIED, images) \
        if isinstance(content, list) else []


def _openai_not_carried(native: dict, images: bool) -> list[str]:
    """The parts and fields of an OpenAI message another format does not get."""
    content = native.get("content")
    kinds = _parts_not_carried(content, frozenset({"text"}), images) \
        if isinstance(content, list) else []
    for k, v in native.items():
        if k in _OPENAI_FIELDS or not says_something(v):
            continue  # a null refusal or empty annotations, as the API echoes them, lose nothing
        if k == "name" and native.get("role") in _NAMED_BY_THEIR_CALL:
            continue
        kinds.append(f"{k} field")
    return kinds


def _responses_not_carried(items: list, images: bool) -> list[str]:
    """The Responses items another format does not get (reasoning, compaction, hosted tools'
    calls...), and the parts of its messages and outputs that are not text."""
    kinds: list[str] = []
    for item in items:
        if not isinstance(item, dict):
            continue
        kind = item.get("type", "message")
        if kind not in _RESPONSES_CARRIED:
            kinds.append(str(kind))
            continue
        kinds += _keys_not_carried({"type": kind, **item})
        value = item.get("content", item.get("output"))
        if isinstance(value, list):
            kinds += _parts_not_carried(value, _TEXT_PARTS, images)
    return kinds


def _parts_not_carried(parts: list, carried: frozenset[str], images: bool) -> list[str]:
    """The parts of a content list another format does not get: their types where it gets
    none of them, else the keys it leaves behind (a tool result's own parts too)."""
    kinds: list[str] = []
    for p in parts:
        if not isinstance(p, dict):
            continue
        kind = p.get("type")
        if images and kind in _IMAGE_PARTS and _image_url(p) is not None:
            kinds += _keys_not_carried(p)
        elif kind not in carried:
            kinds.append(str(kind) if kind is not None else "?")
        else:
            kinds += _keys_not_carried(p)
            if kind == "tool_result" and isinstance(p.get("content"), list):
                kinds += _parts_not_carried(p["content"], frozenset({"text"}), False)
    return kinds


def _keys_not_carried(part: dict) -> list[str]:
    """"<type> <key>" for each key of a carried part that holds something the writers do
    not write."""
    kind = str(part.get("type"))
    carried = _KEYS_CARRIED.get(kind, frozenset({"type"}))
    return [f"{kind} {k}" for k, v in part.items() if k not in carried and says_something(v)]


def says_something(value: Any) -> bool:
    """Whether a field says something: null, false and empty ones are its absence."""
    return value is not None and value is not False and value != "" and value != [] \
        and value != {}


def piece_blocks(raw: dict, group: dict | None) -> list | None:
    """The native blocks of an Anthropic piece (None for a string content)."""
    native = (group or raw).get("message")
    content = native.get("content") if isinstance(native, dict) else None
    if not isinstance(content, list):
        return None
    ks = raw.get("blocks")
    return [content[k] for k in ks if k < len(content)] if ks is not None else content


def at_hand(s: Stored) -> bool:
    """An Anthropic piece can be written back only with its native message at hand."""
    if "piece" not in s.raw:
        return True
    return isinstance((s.group if s.group is not None else s.raw).get("message"), dict)


def _lost(s: Stored, fmt: str, m: Message, counter: Any, k: int, images: bool = False
          ) -> list[AuditEntry]:
    raw = s.raw
    if raw.get("format") == "anthropic":
        raw = {**raw, "content_of_piece": piece_blocks(raw, s.group)}
    kinds = not_carried(raw, fmt, images)
    if not kinds:
        return []
    text = counter.count(m.content) if counter is not None else 0
    # what it had: the assembly priced `m` as `fmt` carries it, without these parts; what it
    # keeps: its text, and the images a user message takes along (`images`), as priced (they
    # were left out of the figure: 3 tokens said for a message sent with a 1,105-token image)
    parts = s.message.parts_tokens or 0
    kept = text + (m.parts_tokens or 0 if images else 0)
    names = ", ".join(dict.fromkeys(kinds))
    return [audit("truncated", f"written as {fmt}, not carried across formats: the "
                  f"{raw.get('format')} message's {names}", describe(m),
                  text + parts, kept, message_id=m.id, index=k)]
