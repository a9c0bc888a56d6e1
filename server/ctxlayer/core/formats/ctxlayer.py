"""The ctxlayer format: a list of protocol.Message dicts (camelCase). Strict where the provider
formats are lenient: an unknown field is an error naming it, since it is ours to define.

Owns reading and writing this one format; ids the engine needs are made up for messages
without one and never written back. A message the engine added (a summary, a retrieved
document) is written with its `ctx:` id, kind and priority when the input's messages carry ids
of their own: its client reads Messages, and ids are how it asks ctx/why and ctx/restore about
them. Where none does (a role-and-content body, as `ctxlayer trim` reads one), it is written as
its role and content only: such a body may be sent to a provider as it is, and OpenAI refuses
a message with a field it does not know.
"""

from __future__ import annotations

from collections.abc import Sequence

import msgspec

from ctxlayer.core.formats.common import Decoded, Encoded, bad, derive_id, expect_dict, messages_of
from ctxlayer.core.tokens import Tokenizer
from ctxlayer.protocol import Message

FIELDS = frozenset(f.encode_name for f in msgspec.structs.fields(Message))


def decode(payload: dict, counter: Tokenizer, previous: Decoded | None = None,
           whole: bool = False) -> Decoded:  # whole: no provider compaction here
    raw = messages_of(payload)
    msgs: list[Message] = []
    index: dict[str, int] = {}
    derived: set[str] = set()
    for i, native in enumerate(raw):
        where = f"messages[{i}]"
        native = expect_dict(native, where)
        for key in native:
            if key not in FIELDS:
                raise bad(f"{where}.{key}", f"unknown field (a Message has "
                                            f"{', '.join(sorted(FIELDS))})")
        try:
            m = msgspec.convert(native, Message)
        except msgspec.ValidationError as exc:
            path = str(exc).rsplit("at `$", 1)
            at = where + (path[1].rstrip("`") if len(path) == 2 else "")
            what = str(exc).split(" - at ")[0]
            if what.startswith("Object missing required field `"):
                at, what = f"{at}.{what.split('`')[1]}", "required field is missing"
            raise bad(at, what) from None
        if m.id is None:
            mid = derive_id("cx", str(i), m.role, m.content, m.tool_call_id or "")
            derived.add(mid)
            m = msgspec.structs.replace(m, id=mid)
        elif m.id in index:
            raise bad(f"{where}.id", f"the same id as messages[{index[m.id]}]")
        index[m.id] = i  # type: ignore[index]
        msgs.append(m)
    return Decoded(fmt="ctxlayer", messages=msgs, payload=payload, sources=list(range(len(raw))),
                   index=index, derived_ids=derived, counter=counter)


def encode(decoded: Decoded, kept: Sequence[Message], *, cache_breakpoints: Sequence[int] = ()
           ) -> Encoded:
    own_ids = len(decoded.derived_ids) < len(decoded.index)  # some message came with its id
    out = [_as_written(m, decoded, own_ids) for m in kept]
    return Encoded(payload={**decoded.payload, "messages": msgspec.to_builtins(out)})


def _as_written(m: Message, decoded: Decoded, own_ids: bool) -> Message:
    """A kept message as it goes out: with the fields the input gave it, and a message the
    engine added with its own (`ctx:` id, kind, priority) where the input's messages carry
    ids (``own_ids``), else with none of them."""
    if m.id in decoded.derived_ids:
        return msgspec.structs.replace(m, id=None)
    if m.id not in decoded.index and not own_ids:  # added by the engine, to a plain body
        return Message(role=m.role, content=m.content)
    return m
