"""Keeping a fitted Anthropic request valid, the least lossy way, every change audited: the
first message is from the user (leading assistant turns are dropped; a request with no user
turn at all is refused, require_user_turn), roles alternate
(neighbours of the same role are merged, nothing lost), every tool_result answers a tool_use
of the message just before it and every tool_use keeps its result (a lone half is removed),
tool_result blocks come first in their message; and cache_control breakpoints, at most 4
(a request-level cache_control, automatic caching, is one of them and the client's choice).

System messages between turns (the mid-conversation-system beta) are set aside while the
turns are repaired, then put back after the user message they followed (the provider wants
one right after a user message, followed by an assistant turn or nothing, never two in a row):
unchanged when that user message is still there, else after the next user message kept (the
move audited), two that meet merged into one (audited); an empty one is left out (audited).

Works on native dicts only; it never copies a client dict it does not change.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from typing import Any

from ctxlayer.core.formats.common import NOT_CACHEABLE, Encoded, audit, bad, calls_tokens
from ctxlayer.core.text import call_line, one_line
from ctxlayer.protocol import Message

MAX_BREAKPOINTS = 4
#: why a system message with nothing in it goes: inside the messages (Claude Code's after its
#: `/compact`) or a session's, appended blank in another format
EMPTY_SYSTEM = "an empty system message: the provider refuses one"
_EPHEMERAL = {"type": "ephemeral"}

Entry = tuple[dict, list[int]]  # a native message and the kept engine indices it holds


def _blocks(msg: dict) -> list:
    content = msg.get("content")
    if isinstance(content, str):
        return [{"type": "text", "text": content}] if content else []
    return list(content or [])


def _ids(msg: dict, kind: str, key: str) -> list:
    return [b.get(key) for b in _blocks(msg) if isinstance(b, dict) and b.get("type") == kind]


def _summary(msg: dict) -> str:
    """The message as an audit line names it: each block by what it holds ("user: 'again'",
    "assistant: 'let me look' + read(a.py)", "user: result of t1"), not its type alone (a
    merged turn read "user: text")."""
    pieces = []
    for b in _blocks(msg):
        if not isinstance(b, dict):
            continue
        kind = b.get("type", "?")
        if kind == "text":
            pieces.append(f"'{one_line(str(b.get('text', '')), 60)}'")
        elif kind == "tool_use":
            pieces.append(call_line(str(b.get("name", "")), json.dumps(b.get("input", {}))))
        elif kind == "tool_result":
            pieces.append(f"result of {b.get('tool_use_id')}")
        else:
            pieces.append(str(kind))
    return f"{msg.get('role')}: {' + '.join(pieces) or 'empty'}"


def _text_tokens(msg: dict, counter: Any) -> int:
    if counter is None:
        return 0
    return sum(counter.count(b.get("text", "")) for b in _blocks(msg) if isinstance(b, dict)
               and b.get("type") == "text")


def _result_tokens(block: dict, counter: Any) -> int:
    """The text of a tool_result block, as counted (a string, or its text blocks)."""
    if counter is None:
        return 0
    content = block.get("content")
    if isinstance(content, str):
        return counter.count(content)
    return sum(counter.count(b.get("text", "")) for b in content or ()
               if isinstance(b, dict) and b.get("type") == "text")


def _first_id(ks: list[int], kept: Sequence[Message]) -> str | None:
    return kept[ks[0]].id if ks else None


def require_user_turn(raw: list, out: list[Entry]) -> None:
    """A request with turns but no user message (a system prompt and an assistant prefill) is
    refused, naming the field. Dropping its leading assistant turns, as the repair does for
    one that starts with them, would send `messages: []` with a 200 from us and a refusal from
    Anthropic; sending it unchanged would hand the user the provider's refusal after a round
    trip. Nothing in it can be repaired: the user must add the question. ``out`` is what goes
    out: a session's user turns stored in another format are there, not in ``raw`` (its
    Anthropic-format messages alone: a session whose Anthropic-format messages were assistant
    turns was refused though it had user turns)."""
    turns = [m for m in raw if isinstance(m, dict) and m.get("role") != "system"]
    if any(msg.get("role") == "user" for msg, _ in out):
        return
    if turns and not any(m.get("role") == "user" for m in turns):
        raise bad("messages", "an Anthropic request needs a user message first, and this one "
                  "has only assistant turns (Anthropic refuses it too); add the user's message "
                  "before them")


def require_a_turn(out: list[Entry]) -> None:
    """A request with no turn to send (`messages: []` beside a system prompt) is refused,
    naming the field: forwarded, it came back as the provider's refusal after a round trip."""
    if not any(msg.get("role") != "system" for msg, _ in out):
        raise bad("messages", "an Anthropic request needs at least one message (Anthropic "
                  "refuses an empty list too); add the user's message")


def repair(out: list[Entry], kept: Sequence[Message], result: Encoded, counter: Any,
           opened: bool = False) -> list[Entry]:
    """``opened``: messages the provider does not read (those before its compaction) go
    ahead of these, so the request starts with them, and these may start with its turn."""
    turns = [e for e in out if e[0].get("role") != "system"]
    asides: list[tuple[int, Entry]] = []
    for n, (msg, ks) in enumerate(out):
        if msg.get("role") != "system":
            continue
        if _empty(msg):  # Claude Code sends one after its `/compact`: content []
            result.audit.append(audit("dropped", EMPTY_SYSTEM, _summary(msg), 0, 0,
                                      _first_id(ks, kept)))
            continue
        asides.append((n, (msg, ks)))
    if not asides:
        return _repair_turns(turns, kept, result, counter, opened)
    # each system message remembers the kept indices of the turn it followed
    after: list[tuple[list[int], Entry]] = []
    for n, entry in asides:
        before = [k for m, ks in out[:n] if m.get("role") != "system" for k in ks]
        after.append((before, entry))
    return _put_back(_repair_turns(turns, kept, result, counter, opened), after, kept, result)


def _put_back(turns: list[Entry], asides: list[tuple[list[int], Entry]],
              kept: Sequence[Message], result: Encoded) -> list[Entry]:
    """The system messages back in place: after the first user message kept at or after the
    turn they followed."""
    slots: dict[int, list[Entry]] = {}
    if not turns:  # nothing left to follow (never with the question kept): said, not lost
        for _, entry in asides:
            result.audit.append(audit("dropped", "a system message needs a user message before "
                                      "it, and none was kept", _summary(entry[0]),
                                      message_id=_first_id(entry[1], kept)))
        return []
    for before, entry in asides:
        want = max(before) if before else -1
        # the repaired turn holding the last kept index at or before `want`, else the first
        at = -1
        for n, (_, ks) in enumerate(turns):
            if ks and min(ks) <= want:
                at = n
        n = max(at, 0)
        while n < len(turns) and turns[n][0].get("role") != "user":
            n += 1
        if n == len(turns):  # no user turn after it: after the last user turn
            n = max((j for j, (m, _) in enumerate(turns) if m.get("role") == "user"),
                    default=0)
        moved = not (at >= 0 and n == at and turns[at][1] and want in turns[at][1]
                     and turns[at][0].get("role") == "user")
        if moved:
            result.audit.append(audit(
                "compressed", "a system message must follow a user message: moved after the "
                "next user message kept", _summary(entry[0]), message_id=_first_id(entry[1],
                                                                                    kept)))
        slots.setdefault(n, []).append(entry)
    out: list[Entry] = []
    for n, turn in enumerate(turns):
        out.append(turn)
        here = slots.get(n)
        if not here:
            continue
        first = here[0]
        for extra in here[1:]:  # two system messages in a row: one
            result.audit.append(audit(
                "compressed", "system messages may not be adjacent: merged into the one before",
                _summary(extra[0]), message_id=_first_id(extra[1], kept)))
            first = ({**first[0], "content": _blocks(first[0]) + _blocks(extra[0])},
                     first[1] + extra[1])
        out.append(first)
    return out


def _repair_turns(out: list[Entry], kept: Sequence[Message], result: Encoded, counter: Any,
                  opened: bool = False) -> list[Entry]:
    for _ in range(8):  # each pass only removes or merges, so this settles in a few passes
        changed = False
        while out and out[0][0].get("role") != "user" and not opened:
            msg, ks = out.pop(0)
            result.audit.append(audit(
                "dropped", "the request must start with a user message: leading assistant "
                "turn dropped", _summary(msg), _text_tokens(msg, counter), 0,
                _first_id(ks, kept)))
            changed = True
        out, emptied = _drop_empty(out, kept, result)
        changed = changed or emptied
        merged: list[Entry] = []
        for msg, ks in out:
            if merged and merged[-1][0].get("role") == msg.get("role"):
                prev, pks = merged[-1]
                merged[-1] = ({**prev, "content": _blocks(prev) + _blocks(msg)}, pks + ks)
                result.audit.append(audit(
                    "compressed", f"roles must alternate: merged into the {msg.get('role')} "
                    "message before it", _summary(msg), _text_tokens(msg, counter),
                    _text_tokens(msg, counter), _first_id(ks, kept)))
                changed = True
            else:
                merged.append((msg, ks))
        out = merged
        out, lone = _drop_lone_halves(out, kept, result, counter)
        if not (changed or lone):
            break
    return [(_results_first(msg), ks) for msg, ks in out]


def _empty(msg: dict) -> bool:
    content = msg.get("content")
    return not content.strip() if isinstance(content, str) else not content


def _without_blank_text(msg: dict) -> dict:
    """The message without text blocks of whitespace alone, which Anthropic refuses anywhere:
    an earlier turn that was only reasoning (`<think> end`, stripped to nothing) left one,
    and merged into the next assistant turn it made the request invalid."""
    content = msg.get("content")
    if not isinstance(content, list) or not any(_blank_text(b) for b in content):
        return msg
    kept: list = []
    for b in content:
        if not _blank_text(b):
            kept.append(b)
        elif "cache_control" in b and kept and isinstance(kept[-1], dict) and \
                "cache_control" not in kept[-1] and \
                kept[-1].get("type") not in ("thinking", "redacted_thinking"):
            # the client's breakpoint after the block before it: it stays where it was
            kept[-1] = {**kept[-1], "cache_control": b["cache_control"]}
    return {**msg, "content": kept}


def _blank_text(block: Any) -> bool:
    return isinstance(block, dict) and block.get("type") == "text" and \
        isinstance(block.get("text"), str) and not block["text"].strip()


def _drop_empty(out: list[Entry], kept: Sequence[Message], result: Encoded
                ) -> tuple[list[Entry], bool]:
    """Messages with nothing Anthropic can carry (an OpenAI assistant turn that was only a
    refusal, written from its empty text; a turn that was only reasoning, stripped) are left
    out: Anthropic refuses an empty message before the last. What they held is named by the
    audit of what the format does not carry. Text blocks of whitespace alone are left out of
    every turn but the last (the provider refuses them; a cache breakpoint on one moves to the
    block before it); the last goes as the client sent it, a blank question never dropped to
    send the answer before it as a prefill to go on from."""
    fixed: list[Entry] = []
    for n, (msg, ks) in enumerate(out):
        last = n == len(out) - 1
        if not last:  # the last turn goes as the client sent it: a blank question is its own
            msg = _without_blank_text(msg)  # to answer for, never dropped to make a prefill
        if not _empty(msg) or last:
            fixed.append((msg, ks))
            continue
        result.audit.append(audit("dropped", "an empty message: Anthropic refuses one before "
                                  "the last", _summary(msg), 0, 0, _first_id(ks, kept)))
    return fixed, len(fixed) < len(out)


def _drop_lone_halves(out: list[Entry], kept: Sequence[Message], result: Encoded, counter: Any
                      ) -> tuple[list[Entry], bool]:
    changed = False
    fixed: list[Entry] = []
    for n, (msg, ks) in enumerate(out):
        prev = out[n - 1][0] if n else {}
        nxt = out[n + 1][0] if n + 1 < len(out) else {}
        if msg.get("role") == "user":
            asked = set(_ids(prev, "tool_use", "id")) if prev.get("role") == "assistant" \
                else set()
            drop_kind, key, allowed = "tool_result", "tool_use_id", asked
            why = "tool_result without its tool_use in the message before it"
        else:
            answered = set(_ids(nxt, "tool_result", "tool_use_id"))
            drop_kind, key, allowed = "tool_use", "id", answered
            why = "tool_use without its tool_result in the next message"
        blocks = _blocks(msg)
        lone = [b for b in blocks if isinstance(b, dict) and b.get("type") == drop_kind
                and b.get(key) not in allowed]
        if not lone:
            fixed.append((msg, ks))
            continue
        changed = True
        mine = [kept[k] for k in ks]
        for b in lone:
            # a call costs its name and arguments; a lone result its text
            cost = calls_tokens(mine, {b.get(key)}, counter) if drop_kind == "tool_use" \
                else _result_tokens(b, counter)
            result.audit.append(audit("dropped", f"{why}: the provider refuses it",
                                      f"{msg.get('role')}: {drop_kind} {b.get(key)}", cost, 0,
                                      message_id=_first_id(ks, kept)))
        rest = [b for b in blocks if not any(b is x for x in lone)]
        if rest:
            fixed.append(({**msg, "content": rest}, ks))
        else:
            result.audit.append(audit("dropped", "nothing left once its lone tool blocks went",
                                      _summary(msg), message_id=_first_id(ks, kept)))
    return fixed, changed


def _results_first(msg: dict) -> dict:
    content = msg.get("content")
    if msg.get("role") != "user" or not isinstance(content, list):
        return msg
    results = [b for b in content if isinstance(b, dict) and b.get("type") == "tool_result"]
    if not results or content[: len(results)] == results:
        return msg
    return {**msg, "content": results + [b for b in content if not (
        isinstance(b, dict) and b.get("type") == "tool_result")]}


# --- cache breakpoints ----------------------------------------------------------------------


def _has_cc(block: Any) -> bool:
    return isinstance(block, dict) and block.get("cache_control") is not None


def _count_own(system: Any, messages: list[dict], tools: Any) -> int:
    n = sum(_has_cc(b) for b in system) if isinstance(system, list) else 0
    n += sum(_has_cc(t) for t in tools) if isinstance(tools, list) else 0
    for m in messages:
        for b in _blocks(m) if isinstance(m.get("content"), list) else ():
            n += _has_cc(b)
            inner = _inner(b)
            if inner is not None:
                n += sum(_has_cc(p) for p in inner[1])
    return n


def _inner(block: Any) -> tuple[str, list] | None:
    """The blocks a block holds whose cache_control the provider counts too, and where they
    are: a tool_result's `content`, a document's `source.content` (a custom document: its
    marks were missed, and the provider refused a request with six)."""
    if not isinstance(block, dict):
        return None
    if isinstance(block.get("content"), list):
        return "content", block["content"]
    source = block.get("source")
    if isinstance(source, dict) and isinstance(source.get("content"), list):
        return "source", source["content"]
    return None


def _with_inner(block: dict, where: str, parts: list) -> dict:
    if where == "content":
        return {**block, "content": parts}
    return {**block, "source": {**block["source"], "content": parts}}


def _mark_last(blocks: list) -> list | None:
    for k in range(len(blocks) - 1, -1, -1):
        b = blocks[k]
        if isinstance(b, dict) and b.get("type") not in NOT_CACHEABLE:
            return [*blocks[:k], {**b, "cache_control": dict(_EPHEMERAL)}, *blocks[k + 1:]]
    return None


def _uncached(block: dict) -> dict:
    return {k: v for k, v in block.items() if k != "cache_control"}


#: where a client's breakpoint is: ("tools" | "system", index, None, None), or ("messages",
#: message, block, part of a tool_result's content or None for the block itself)
Mark = tuple[str, int, int | None, int | None]


def _own_marks(system: Any, messages: list[dict], tools: Any) -> list[Mark]:
    """The client's breakpoints in the order the provider reads the prompt: tools, system,
    messages (a tool_result's parts before the block itself)."""
    marks: list[Mark] = []
    for where, blocks in (("tools", tools), ("system", system)):
        if isinstance(blocks, list):
            marks += [(where, n, None, None) for n, b in enumerate(blocks) if _has_cc(b)]
    for n, m in enumerate(messages):
        content = m.get("content")
        for j, b in enumerate(content if isinstance(content, list) else ()):
            inner = _inner(b)
            if inner is not None:
                marks += [("messages", n, j, p) for p, part in enumerate(inner[1])
                          if _has_cc(part)]
            if _has_cc(b):
                marks.append(("messages", n, j, None))
    return marks


def _change_mark(system: Any, messages: list[dict], tools: Any, mark: Mark,
                 change: Callable[[dict], dict]) -> tuple[Any, Any, str, int | None]:
    """The system and the tools with ``change`` made to the block ``mark`` names (the messages
    changed in place), the block's name for the audit, and the message it is in (None for a
    tool or a system block)."""
    where, n, j, part = mark
    if where == "tools":
        tools = [*tools[:n], change(tools[n]), *tools[n + 1:]]
        return system, tools, f"tool {tools[n].get('name', '?')}: its cache_control", None
    if where == "system":
        system = [*system[:n], change(system[n]), *system[n + 1:]]
        return system, tools, f"system block {n + 1}: its cache_control", None
    assert j is not None
    content = list(messages[n]["content"])
    block = content[j]
    if part is None:
        content[j] = change(block)
    else:
        where_in, inner = _inner(block)  # type: ignore[misc]
        parts = list(inner)
        parts[part] = change(parts[part])
        content[j] = _with_inner(block, where_in, parts)
    messages[n] = {**messages[n], "content": content}
    return system, tools, f"{_summary(messages[n])}: the cache_control of block {j + 1}", n


def _audit_mark(result: Encoded, reason: str, name: str, n: int | None, out: list[Entry],
                kept: Sequence[Message]) -> None:
    result.audit.append(audit("compressed", reason, name, message_id=None if n is None
                              else _first_id(out[n][1], kept)))


def cap_own_breakpoints(system: Any, messages: list[dict], tools: Any, out: list[Entry],
                        kept: Sequence[Message], result: Encoded, automatic: bool = False
                        ) -> tuple[Any, list[dict], Any]:
    """The provider refuses a request with more than MAX_BREAKPOINTS cache_control blocks
    (system and tools count too, and the one a request-level cache_control places:
    `automatic`). A client's latest ones mark the longest cached prefixes, so those are kept;
    each one before them is removed, audited (the block itself is kept)."""
    room = MAX_BREAKPOINTS - automatic
    marks = _own_marks(system, messages, tools)
    reason = (f"cache_control on more than {MAX_BREAKPOINTS} blocks: the provider refuses "
              f"that; the client's last {MAX_BREAKPOINTS} are kept" if not automatic else
              f"cache_control on more than {room} blocks beside the request's own "
              f"(automatic caching places one more): the provider refuses over "
              f"{MAX_BREAKPOINTS}; the client's last {room} are kept")
    for mark in marks[:max(0, len(marks) - room)]:
        system, tools, name, n = _change_mark(system, messages, tools, mark, _uncached)
        _audit_mark(result, reason, name, n, out, kept)
    return system, messages, tools


#: why a 1-hour breakpoint after a 5-minute one is sent as a 5-minute one
TTL_ORDER = ("a 1-hour cache_control after a 5-minute one: the provider refuses a longer "
             "lifetime after a shorter; sent as 5-minute")


def order_ttls(system: Any, messages: list[dict], tools: Any, out: list[Entry],
               kept: Sequence[Message], result: Encoded) -> tuple[Any, list[dict], Any]:
    """The provider reads the breakpoints in prompt order and refuses a 1-hour one after a
    5-minute one: each such is sent as 5-minute (its ttl left out), audited. A session's
    system blocks, kept as they came, go after its own layers in the order appended: a "1h"
    block appended after a plain one came to follow it."""
    seen_short = False
    for mark in _own_marks(system, messages, tools):
        block = _block_at(system, messages, tools, mark)
        if _ttl(block) != "1h":
            seen_short = True
        elif seen_short:
            system, tools, name, n = _change_mark(system, messages, tools, mark, _five_minutes)
            _audit_mark(result, TTL_ORDER, name, n, out, kept)
    return system, messages, tools


def _ttl(block: dict) -> str:
    cc = block.get("cache_control")
    return str(cc.get("ttl", "5m")) if isinstance(cc, dict) else "5m"


def _five_minutes(block: dict) -> dict:
    cc = {k: v for k, v in block["cache_control"].items() if k != "ttl"}
    return {**block, "cache_control": cc}


def _block_at(system: Any, messages: list[dict], tools: Any, mark: Mark) -> dict:
    where, n, j, part = mark
    if where in ("tools", "system"):
        return (tools if where == "tools" else system)[n]
    block = messages[n]["content"][j]
    return block if part is None else _inner(block)[1][part]  # type: ignore[index]


def place_breakpoints(system: Any, out: list[Entry], system_kept: list[int],
                      wanted: Sequence[int], tools: Any, kept: Sequence[Message],
                      result: Encoded, *, automatic: bool = False
                      ) -> tuple[Any, list[dict], Any]:
    """cache_control on the last block of the wanted messages (indices into the kept ones),
    only when the client set none itself, and never more than MAX_BREAKPOINTS in all: of the
    client's own, its last MAX_BREAKPOINTS (cap_own_breakpoints). `automatic`: the request
    has a cache_control of its own at its top (Anthropic's automatic caching, which places
    a breakpoint itself and counts among the four): the client's choice, as a marked block
    is, so none is added. Returns the system, the messages and the tools."""
    messages = [msg for msg, _ in out]
    system, messages, tools = cap_own_breakpoints(system, messages, tools, out, kept, result,
                                                  automatic)
    system, messages, tools = order_ttls(system, messages, tools, out, kept, result)
    own = _count_own(system, messages, tools) + automatic
    if own == 0 and wanted:
        where = {k: n for n, (_, ks) in enumerate(out) for k in ks}
        placed: set[Any] = set()
        for k in wanted:
            if len(placed) >= MAX_BREAKPOINTS:
                break
            if k in system_kept and system is not None:
                if "system" in placed:
                    continue
                blocks = [{"type": "text", "text": system}] if isinstance(system, str) \
                    else system
                marked = _mark_last(blocks)
                if marked is not None:
                    system = marked
                    placed.add("system")
            elif k in where and where[k] not in placed:
                n = where[k]
                marked = _mark_last(_blocks(messages[n]))
                if marked is not None:
                    messages[n] = {**messages[n], "content": marked}
                    placed.add(n)
    result.breakpoints = [n for n, m in enumerate(messages)
                          if _count_own(None, [m], None)]
    result.system_breakpoints = sum(_has_cc(b) for b in system) if isinstance(system, list) \
        else 0
    if automatic:  # where the provider places the request's own: reported as one placed
        at = _automatic_at(messages)
        if at is None:
            if system is not None and _mark_last(_blocks({"content": system})) is not None:
                result.system_breakpoints += 1
        elif at not in result.breakpoints:
            result.breakpoints = sorted([*result.breakpoints, at])
    return system, messages, tools


def _automatic_at(messages: list[dict]) -> int | None:
    """The message whose block the provider marks for a request-level cache_control
    (automatic caching: the request's last cacheable block), None when no message has one
    (then the system's last block is the last cacheable one)."""
    for n in range(len(messages) - 1, -1, -1):
        if _mark_last(_blocks(messages[n])) is not None:
            return n
    return None
