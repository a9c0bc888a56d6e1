"""Tool calls whose arguments are long, in the trim engine: an agent that wrote a file through a
call (a `write` of 18 KB, 9,600 tokens) has the long string values of its arguments outlined
(`shorten_arguments`: head and tail lines, still a JSON object every provider reads), as a
tool output over its cap is, before the fit drops the call and its results together. The
engine cut no call, so `ctxlayer trim --budget 8000` sent 973 tokens without the call, where
ctx/prepare kept all 16 messages in 5,145 (its `fit_calls`). After the fit the room left goes
back to them (`regrow_calls`), as it does to outlined tool outputs. Must not: touch a call's
text, its name or a pinned call; the codecs write the arguments into the native calls.
"""

from __future__ import annotations

import msgspec

from ctxlayer.core.compress.shorten import VALUE_CAP_MIN, shorten_arguments
from ctxlayer.core.memo import Memo
from ctxlayer.core.trim.work import Work
from ctxlayer.protocol import ToolCall

#: the start of the reason of every outline of a call's arguments (regrow_calls finds them by it)
OUTLINED = "tool call's arguments over "
#: the TrimCache's kind for the tokens of a message's calls' arguments
ARGUMENTS = "arguments"


def _arguments(w: Work, i: int) -> list[int]:
    """Tokens of the arguments of each of message i's calls as they came (their sum is
    `w.arguments[i]`): a warm fact for the outline, held while message i is the one whose
    text it was read with (the cache keeps facts only for the messages a re-trim shares with
    the last one)."""
    facts = w.facts(ARGUMENTS)
    m = w.msgs[i]
    hit = facts[i] if facts is not None else None
    if hit is not None and hit[0] is m.content:
        return hit[1]
    sizes = [w.counter.count(c.arguments) for c in m.tool_calls or ()]
    if facts is not None:
        facts[i] = (m.content, sizes)
    return sizes


def outlinable(w: Work, i: int, cap: int) -> bool:
    """Whether message i makes calls whose arguments, together, are over ``cap`` tokens and
    have not been outlined yet."""
    m = w.msgs[i]
    return bool(m.tool_calls) and w.alive[i] and not m.pinned and i not in w.calls \
        and w.arguments[i] > cap


def _outlined(w: Work, i: int, cap: int, memo: Memo) -> list[ToolCall] | None:
    """Message i's calls as they came, their long arguments outlined to share ``cap`` tokens
    in proportion to their sizes; None when none came out shorter (not a JSON object)."""
    calls = w.msgs[i].tool_calls or []
    sizes = _arguments(w, i)
    total = max(1, sum(sizes))
    out, changed = [], False
    for c, t in zip(calls, sizes, strict=True):
        share = max(VALUE_CAP_MIN, cap * t // total)
        got = None if t <= share else memo.get(("arguments", share), c.arguments,
                                               lambda c=c, s=share: shorten_arguments(
                                                   c.arguments, s, w.counter))
        out.append(c if got is None else msgspec.structs.replace(c, arguments=got))
        changed = changed or got is not None
    return out if changed else None


def outline(w: Work, i: int, cap: int, memo: Memo) -> int:
    """Outline the long arguments of message i's calls to ``cap`` tokens in all; returns the
    tokens saved (0 when they cannot be outlined)."""
    calls = _outlined(w, i, cap, memo)
    if calls is None:
        return 0
    return w.replace_calls(i, calls, "compressed", f"{OUTLINED}{cap} tokens: their long "
                           "string values outlined (still a JSON object), so the call and its "
                           "results are kept rather than dropped together")


def regrow_calls(w: Work, budget: int, cap: int, memo: Memo) -> None:
    """The room the fit left goes back to the calls whose arguments it outlined, newest first:
    each is outlined again from its original arguments at what it has and that room (rounded
    down to a multiple of ``cap``, so a re-trim with a little less room finds the same
    outline), or comes back whole when that holds it."""
    left = budget - w.total
    if left < cap:
        return
    entries = {e.index: k for k, e in enumerate(w.changed) if e.reason.startswith(OUTLINED)}
    for i in sorted(entries, reverse=True):
        if not w.alive[i] or i not in w.calls:
            continue
        count = w.counter.count
        now = sum(count(c.arguments) for c in w.calls[i])
        whole = w.arguments[i]
        if whole <= now + left:
            calls, said = list(w.msgs[i].tool_calls or ()), "kept whole"
        else:
            grown = (now + left) // cap * cap
            calls = _outlined(w, i, grown, memo) if grown > now else None
            said = f"their long string values outlined in {grown} tokens"
            if calls is None or not now < sum(count(c.arguments) for c in calls) <= now + left:
                continue
        left -= w.redo_calls(entries[i], calls, f"{OUTLINED}{cap} tokens: {said}, the room the "
                             "fit left")
        if left < cap:
            return
