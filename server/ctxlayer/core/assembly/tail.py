"""The history window of one assembly: the verbatim tail cleaned up and fitted into its room.

In order:
1. the trim engine's clean-up stages, as ``ctx/trim`` runs them (core/trim/stages.py): a tool
   result whose call is not in the window is dropped, ephemeral messages past their TTL are
   dropped, reasoning blocks of earlier assistant turns are stripped, later copies of the same
   tool output become references;
2. a window without a summary starts with a user turn (providers such as Anthropic reject
   anything else): leading assistant and tool messages are dropped, system messages kept;
3. while over the room, oldest first: tool outputs become their outline, then other messages
   are shortened (head and tail kept), and only then are the oldest whole turns dropped (a tool
   call and its results together). The newest user message is never dropped: at worst it is
   shortened to the room left. With no user message in the window (an agent's steps after a
   summary), the newest exchange is no oldest turn: it is shortened (its thinking never),
   and goes only when over the room even so, said as the newest exchange. Messages kept
   whole (system, pinned: `history.kept_whole`) and the newest tool loop's first step, which
   carries its thinking (`Window.held`, loop.py), are neither shortened nor dropped here; only
   the last resort shortens them, rather than fail.
Every change is audited. Pure: the counter is injected.
"""

from __future__ import annotations

from collections.abc import Sequence

import msgspec

from ctxlayer.core.assembly.history import kept_whole
from ctxlayer.core.compress.shorten import shorten_message
from ctxlayer.core.groups import ToolGroups
from ctxlayer.core.memo import Memo
from ctxlayer.core.text import describe
from ctxlayer.core.tokens import OPENAI_FORMAT, Tokenizer
from ctxlayer.core.trim import stages as trim_stages
from ctxlayer.core.trim.work import Work
from ctxlayer.protocol import AuditEntry, Message

#: a message is shortened to this share of its tokens (and never below MIN_SHORT tokens)
SHORTEN_TO = 0.25
MIN_SHORT = 24
#: the fewest tokens the last resort cuts the newest question to
QUESTION_LEAST = 8
#: of the room, what a newest question over the room keeps at least beside the turns after it
#: (when half of itself is more): half of a question twice the room was still over it, the
#: reply after it went, and the question was cut to the room all the same
QUESTION_FLOOR = 0.75


class Window(msgspec.Struct, kw_only=True):
    messages: list[Message]
    keys: list[str]  # fingerprint keys, one per message
    tokens: list[int]
    dropped: list[AuditEntry]
    truncated: list[AuditEntry]
    #: ids of messages the fit treats as kept whole besides `kept_whole` ones: the first step
    #: of the newest tool loop, which carries the turn's thinking (loop.py)
    held: frozenset[str] = frozenset()


def _kept(win: Window, m: Message) -> bool:
    """Whether the fit keeps `m` whole: kept whole in the history, or held (`Window.held`)."""
    return kept_whole(m) or (m.id is not None and m.id in win.held)


def _is_result(msg: Message) -> bool:
    return msg.role == "tool" or msg.tool_call_id is not None


def clean(messages: Sequence[Message], keys: Sequence[str], counter: Tokenizer,
          dedup_min_tokens: int, memo: Memo | None = None) -> Window:
    """Step 1 on the verbatim tail."""
    memo = memo if memo is not None else Memo()
    w = Work(list(messages), counter, OPENAI_FORMAT, memo)
    w.link_tool_results()
    trim_stages.prune_ephemeral(w)
    trim_stages.strip_old_reasoning(w, memo)
    trim_stages.dedup(w, dedup_min_tokens, memo)
    out_msgs: list[Message] = []
    out_keys: list[str] = []
    out_tokens: list[int] = []
    for i, msg in enumerate(w.msgs):
        if not w.alive[i]:
            continue
        content = w.content[i]
        if content is msg.content:
            out_msgs.append(msg)
            out_keys.append(keys[i])
        else:
            out_msgs.append(msgspec.structs.replace(msg, content=content))
            out_keys.append(keys[i] + "c")
        out_tokens.append(w.tokens[i])
    return Window(messages=out_msgs, keys=out_keys, tokens=out_tokens, dropped=list(w.dropped),
                  truncated=list(w.changed))


def shortened_least(msg: Message, tokens: int) -> int:
    """The fewest tokens step 3 shortens a message that is no tool output to (its own share,
    SHORTEN_TO of its words; its non-text parts are never shortened): what a compaction plans
    the tail's oldest message at (compaction.py `_planned`)."""
    words = tokens - (msg.parts_tokens or 0)
    if words < 2 * MIN_SHORT:
        return tokens
    return tokens - words + max(MIN_SHORT, int(words * SHORTEN_TO))


def _groups(msgs: list[Message]) -> list[list[int]]:
    """Indices in turn order, a tool call together with its results (core/groups.py)."""
    return ToolGroups(msgs).in_order()


def _drop(win: Window, idx: set[int] | dict[int, str], reason: str = "") -> None:
    """Drop the messages `idx`, each said with `reason` (or its own, `idx` by index)."""
    for i in sorted(idx):
        m = win.messages[i]
        why = idx[i] if isinstance(idx, dict) else reason
        win.dropped.append(AuditEntry(action="dropped", reason=why, summary=describe(m),
                                      tokens_before=win.tokens[i], tokens_after=0,
                                      message_id=m.id))
    keep = [i for i in range(len(win.messages)) if i not in idx]
    win.messages = [win.messages[i] for i in keep]
    win.keys = [win.keys[i] for i in keep]
    win.tokens = [win.tokens[i] for i in keep]


def start_with_user(win: Window) -> None:
    """Step 2: drop the turns that come before the first user turn. A message kept whole
    there stays: a system message is no turn but the client's instruction (its own system
    prompt, OpenAI's `developer` message), which each format places where it may stand
    (Anthropic's in its `system`); it was dropped from every assembly, however much room
    there was. So does a pinned one: a provider's compaction (a Responses `compaction` item
    heads the history Codex sends back, and the provider takes it first; ctx/trim kept it
    where an assembly dropped it) or what the client pinned; a format that wants a user
    turn first repairs the request when it is written (the encoder's last resort)."""
    first = next((i for i, m in enumerate(win.messages)
                  if m.role == "user" and not _is_result(m)), len(win.messages))
    turns = {i for i in range(first) if not _kept(win, win.messages[i])}
    if turns:
        _drop(win, turns, "the history must start with a user turn")


def _shorten(win: Window, i: int, cap: int, counter: Tokenizer, why: str, least: int = 0
             ) -> int:
    """Message i shortened to about ``cap`` tokens, its text and calls to no fewer than
    ``least`` (`shorten_message`), audited; returns the tokens saved."""
    m = win.messages[i]
    got = shorten_message(m, win.tokens[i], cap, counter, least=least)
    if got is None:
        return 0
    new, after = got
    win.truncated.append(AuditEntry(
        action="compressed" if _is_result(m) else "truncated", reason=why,
        summary=describe(m), tokens_before=win.tokens[i], tokens_after=after, message_id=m.id))
    saved = win.tokens[i] - after
    win.messages[i], win.tokens[i] = new, after
    win.keys[i] = win.keys[i] + f"s{after}"
    return saved


def fit(win: Window, room: int, counter: Tokenizer, *, require_user: bool,
        tool_cap: int = MIN_SHORT) -> None:
    """Steps 2 and 3: the window within ``room`` tokens; a tool output is outlined to
    ``tool_cap`` tokens (or less when that is not enough), other messages to a share of
    themselves."""
    if require_user:
        start_with_user(win)
    total = sum(win.tokens)
    if total <= room:
        return
    last_user = _newest_question(win)
    # tool outputs, then any other message, oldest first, each to a share of itself
    for tools_only in (True, False):
        for i in range(len(win.messages)):
            if total <= room:
                return
            m = win.messages[i]
            if i == last_user or _kept(win, m) or _is_result(m) != tools_only:
                continue
            # its words: its non-text parts (an image, thinking) are never shortened, and
            # a share of them taken from its text had left the text nothing
            words = win.tokens[i] - (m.parts_tokens or 0)
            if words < 2 * MIN_SHORT:
                continue
            least = max(MIN_SHORT, tool_cap if tools_only else int(words * SHORTEN_TO))
            cap = max(least, win.tokens[i] - (total - room))
            if cap >= win.tokens[i]:
                continue
            total -= _shorten(win, i, cap, counter,
                              "tool output outlined to fit the history share" if tools_only
                              else "shortened to fit the history share (oldest first)", least)
    dropped = len(win.dropped)
    total = _drop_whole_turns(win, total, room, last_user, counter)
    if len(win.dropped) > dropped and require_user:
        start_with_user(win)
        total = sum(win.tokens)
    if total > room:
        total = _last_resort(win, room, total, counter)
    if total > room and last_user is None:
        _drop_newest(win, total, room)


def _drop_whole_turns(win: Window, total: int, room: int, last_user: int | None,
                      counter: Tokenizer) -> int:
    """The oldest turns, whole, while over the room; returns the total left. The turns after
    the newest question (an agent's work on it, its reply) are the newest, not the oldest:
    the question first gives up to half of itself for them (a question over the room down to
    QUESTION_FLOOR of the room), then they go, oldest first, said as what they are (a 12-token reply after a long question went as "oldest turns")."""
    older: list[list[int]] = []
    newer: list[list[int]] = []
    for group in _groups(win.messages):
        if last_user in group or any(_kept(win, win.messages[i]) for i in group):
            continue
        (older if last_user is None or group[0] < last_user else newer).append(group)
    if last_user is None and older:
        # no question in the window (an agent's steps after a summary): the newest exchange
        # is what the model answers, not an oldest turn; the last resort shortens it, and only
        # then does it go (`_drop_newest`). Dropped here as "oldest", the request was the
        # summary alone, the step it had just taken nowhere
        newer = [older.pop()]
    gone: dict[int, str] = {}
    for group in older:
        if total <= room:
            break
        gone.update(dict.fromkeys(group, "oldest turns dropped: the history share is full"))
        total -= sum(win.tokens[i] for i in group)
    if total > room and newer and last_user is not None:
        q = win.tokens[last_user]
        cap = max(min(q // 2, int(room * QUESTION_FLOOR)), q - (total - room))
        if cap < q:
            total -= _shorten(win, last_user, cap, counter, "shortened to keep the turns after "
                              "it: the newest question is never dropped")
    for group in newer if last_user is not None else ():
        if total <= room:
            break
        gone.update(dict.fromkeys(group, "dropped: no room beside the newest question, which "
                                  "is never dropped"))
        total -= sum(win.tokens[i] for i in group)
    if gone:
        _drop(win, gone)
    return total


def newest_least(win: Window) -> int:
    """About the fewest tokens the newest exchange (from the newest question, else the newest
    call with its results) comes to once the window shortens it: each message's non-text
    parts (thinking, an image: never shortened) and a little of its words."""
    q = _newest_question(win)
    start = q if q is not None else next(
        (g[0] for g in reversed(_groups(win.messages))), len(win.messages))
    return sum(min(win.tokens[i], (win.messages[i].parts_tokens or 0) + 2 * MIN_SHORT)
               for i in range(start, len(win.messages)))


def question_spare(win: Window, counter: Tokenizer) -> int:
    """The tokens the window's newest question would give cut to QUESTION_LEAST, the least
    the last resort cuts it to, where that left it whole: what a refusal takes off, so that
    it names the request with the question cut (at a budget of 150 it named 31,173 tokens,
    the question whole; cut, 170)."""
    q = _newest_question(win)
    if q is None or win.tokens[q] <= QUESTION_LEAST or any(
            e.message_id == win.messages[q].id for e in win.truncated):
        return 0
    got = shorten_message(win.messages[q], win.tokens[q], QUESTION_LEAST, counter)
    return 0 if got is None else max(0, win.tokens[q] - got[1])


def _newest_question(win: Window) -> int | None:
    """The index of the newest user message that is not a tool result."""
    return next((i for i in range(len(win.messages) - 1, -1, -1)
                 if win.messages[i].role == "user" and not _is_result(win.messages[i])), None)


def _drop_newest(win: Window, total: int, room: int) -> None:
    """The newest exchange over the room even shortened (its thinking is never shortened):
    it goes, said as what it is and what kept it over."""
    gone: dict[int, str] = {}
    for group in reversed(_groups(win.messages)):
        if total <= room:
            break
        if any(_kept(win, win.messages[i]) for i in group):
            continue
        parts = sum(win.messages[i].parts_tokens or 0 for i in group)
        kept = f" (its non-text parts, {parts} tokens, are never shortened)" if parts else ""
        gone.update(dict.fromkeys(group, f"the newest exchange: over the {room} tokens the "
                                  f"history share leaves beside the summary even shortened{kept}"))
        total -= sum(win.tokens[i] for i in group)
    if gone:
        # what the window shortened of it before is not sent: the drop says it all
        ids = {win.messages[i].id for i in gone} - {None}
        win.truncated = [e for e in win.truncated if e.message_id not in ids]
        _drop(win, gone)


def _last_resort(win: Window, room: int, total: int, counter: Tokenizer) -> int:
    """What is left is the newest question, what followed it and what is kept whole (restored,
    pinned): those give way first, each to what the rest leaves it but at least MIN_SHORT,
    then the question, to the room left. One at a time was not enough: a restored message
    beside a long newest question, neither alone able to make the room, failed the session's
    every assembly. A question the room leaves less than QUESTION_LEAST stays whole: the
    request is over and refused, counting it cut (`question_spare`). Cut here, its few tokens
    made the working notes' retry keep notes beside it rather than give it their room."""
    q = _newest_question(win)  # found again: drops moved the indices
    for i in [*(i for i in range(len(win.messages)) if i != q), *([q] if q is not None else [])]:
        if total <= room:
            return total
        left = room - (total - win.tokens[i])
        cap = left if i == q else max(MIN_SHORT, left)
        if cap >= QUESTION_LEAST and cap < win.tokens[i]:
            total -= _shorten(win, i, cap, counter,
                              "shortened to fit: the newest question is never dropped"
                              if i == q else "shortened to fit beside the newest question, "
                              "which is never dropped" if q is not None else "shortened to fit: "
                              "the newest exchange is kept beside the summary")
    return total
