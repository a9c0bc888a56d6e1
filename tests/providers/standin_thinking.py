"""Extended thinking as Anthropic serves it, for the stand-in.

A request with `thinking` on (`enabled`, or `adaptive` as Claude Code sends it) is answered
with a thinking block first. Its `signature` carries the whole thinking, sealed (here: base64
of a keyed tag and the text; the provider encrypts it), and its `thinking` shows a summary, or
nothing with `display: "omitted"`. As the provider does, the stand-in then (with thinking on;
without, a block is passed as it came):
- refuses a thinking block whose text or signature was changed;
- refuses a tool loop whose latest assistant message lost the thinking it was answered with,
  and one whose first assistant message (after the last user message that is not all tool
  results: the provider reads the loop as one turn) does not open with a thinking block,
  whoever wrote it (without interleaved thinking only that first step thinks);
- counts the whole thinking of the blocks it reads again, whatever the text shows: every
  turn's where `clear_thinking` says `keep: "all"` (Claude Code's) or, without that edit, the
  model keeps every turn's (Opus 4.5, Sonnet 4.6 and later, as Anthropic's documentation
  says); else only the last turn's (the rest is dropped before reading: it costs nothing).

Owns these rules and the block's shape; the stand-in decides when to answer with one.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import re
from typing import Any

_KEY = b"stand-in thinking"
_TAG = 16


#: (family, first version) that keeps every turn's thinking without a `clear_thinking` edit
_KEEPS_ALL = {"opus": (4, 5), "sonnet": (4, 6), "haiku": (5, 0)}


def every_turn(body: dict) -> bool:
    edits = (body.get("context_management") or {}).get("edits") or []
    for edit in edits:
        if str(edit.get("type", "")).startswith("clear_thinking"):
            return edit.get("keep") == "all"
    model = str(body.get("model", ""))
    if re.search(r"claude-3([-.]\d)?-(opus|sonnet|haiku)", model):
        return False
    found = re.search(r"claude-(opus|sonnet|haiku)-(\d+)(?:[-.](\d{1,2}))?(?!\d)", model)
    if found is None:
        return True
    return (int(found.group(2)), int(found.group(3) or 0)) >= _KEEPS_ALL[found.group(1)]


def stripped(body: dict) -> set[int]:
    """The messages whose thinking the provider drops before reading: where it keeps only the
    last turn's, the assistant messages before the last user message that is not all tool
    results."""
    msgs = body.get("messages") if isinstance(body.get("messages"), list) else []
    if every_turn(body):
        return set()
    turn = max((i for i, m in enumerate(msgs) if isinstance(m, dict) and m.get("role") == "user"
                and not _results_only(m.get("content"))), default=-1)
    return {i for i, m in enumerate(msgs[:turn]) if isinstance(m, dict)
            and m.get("role") == "assistant"}


def _results_only(content: Any) -> bool:
    return isinstance(content, list) and bool(content) and all(
        isinstance(b, dict) and b.get("type") == "tool_result" for b in content)


def thinking_on(body: dict) -> bool:
    thinking = body.get("thinking")
    return isinstance(thinking, dict) and thinking.get("type") in ("enabled", "adaptive")


def _tag(shown: str, full: bytes) -> bytes:
    return hmac.new(_KEY, shown.encode() + b"\0" + full, hashlib.sha256).digest()[:_TAG]


def block(body: dict, words: int, round_: int) -> dict:
    """The thinking block an answer to `body` opens with: `words` words of thinking."""
    full = " ".join(f"step{round_}.{k} checks what the tool said" for k in range(
        max(1, words // 6)))
    shown = "" if body["thinking"].get("display") == "omitted" else \
        f"Thinking about round {round_}."
    sealed = _tag(shown, full.encode()) + full.encode()
    return {"type": "thinking", "thinking": shown,
            "signature": base64.b64encode(sealed).decode()}


def full_text(value: Any) -> str | None:
    """The whole thinking a thinking block carries, or None when its text or signature was
    changed (or it is not one of the stand-in's)."""
    if not isinstance(value, dict) or not isinstance(value.get("signature"), str) or \
            not isinstance(value.get("thinking"), str):
        return None
    try:
        sealed = base64.b64decode(value["signature"], validate=True)
    except (binascii.Error, ValueError):
        return None
    full = sealed[_TAG:]
    if len(sealed) <= _TAG or not hmac.compare_digest(sealed[:_TAG],
                                                      _tag(value["thinking"], full)):
        return None
    try:
        return full.decode()
    except UnicodeDecodeError:
        return None


def problems(body: dict, thought: set[str]) -> list[str]:
    """What the provider refuses about the thinking blocks of `body`; `thought`: the ids of the
    tool calls the stand-in answered with a thinking block first."""
    msgs = body.get("messages") if isinstance(body.get("messages"), list) else []
    out: list[str] = []
    if not thinking_on(body):  # what the provider does with them then is not known: passed
        return out
    for i, m in enumerate(msgs):
        content = m.get("content") if isinstance(m, dict) else None
        for k, b in enumerate(content if isinstance(content, list) else ()):
            if isinstance(b, dict) and b.get("type") == "thinking" and full_text(b) is None:
                out.append(f"messages.{i}.content.{k}: Invalid `signature` in `thinking` block")
    latest = [i for i, m in enumerate(msgs) if isinstance(m, dict) and m.get("role") == "assistant"]
    if not latest:
        return out
    last = msgs[latest[-1]].get("content")
    blocks = [b for b in last if isinstance(b, dict)] if isinstance(last, list) else []
    calls = {b.get("id") for b in blocks if b.get("type") == "tool_use"}
    unopened = {latest[-1]} if calls & thought else set()
    opening = _loop_opening(msgs)
    if opening is not None:
        unopened.add(opening)
    for i in sorted(unopened):
        content = msgs[i].get("content")
        first = _first_block(content if isinstance(content, list) else [{"type": "text"}])
        if first not in _THINKING:
            out.append(_unopened(i, first))
    return out


_THINKING = ("thinking", "redacted_thinking")


def _first_block(blocks: list) -> Any:
    return blocks[0].get("type") if blocks and isinstance(blocks[0], dict) else None


def last_turn_start(msgs: list) -> int:
    """The index of the last user message that is not all tool results (-1: none)."""
    return max((i for i, m in enumerate(msgs) if isinstance(m, dict) and m.get("role") == "user"
                and not _results_only(m.get("content"))), default=-1)


def _loop_opening(msgs: list) -> int | None:
    """The first assistant message of the turn under way (after the last user message that is
    not all tool results) when that turn is a tool loop (tool results follow it): the provider
    reads the loop as one assistant turn, whose thinking must open it."""
    turn = last_turn_start(msgs)
    steps = [i for i in range(turn + 1, len(msgs)) if isinstance(msgs[i], dict)
             and msgs[i].get("role") == "assistant"]
    looped = any(isinstance(m, dict) and m.get("role") == "user" for m in msgs[turn + 1:])
    return steps[0] if steps and looped else None


def _unopened(i: int, first: Any) -> str:
    return (f"messages.{i}.content.0.type: Expected `thinking` or "
            f"`redacted_thinking`, but found `{first}`. When `thinking` is enabled, a "
            "final `assistant` message must start with a thinking block (preceeding the "
            "lastmost set of `tool_use` and `tool_result` blocks). We recommend you "
            "include thinking blocks from previous turns. To avoid this requirement, "
            "disable `thinking`.")
