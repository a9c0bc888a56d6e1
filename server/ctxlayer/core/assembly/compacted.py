"""The compaction state of a session and the token accounting of its history layer.

Owns ``Compaction`` (persisted by the store as one JSON value; see compaction.py for what each
field means) and the small reads every stage shares: where the verbatim part starts, a message
as shown (an earlier stage may have shortened it), and the tokens of the history layer.
Must not: change a state (the stages do) or touch storage.
"""

from __future__ import annotations

from bisect import bisect_left

import msgspec

from ctxlayer.core.assembly.history import History
from ctxlayer.core.compress.facts import Facts
from ctxlayer.core.compress.ledger import Ledger
from ctxlayer.core.groups import ToolGroups
from ctxlayer.protocol import Message, SummaryShown


class Rewrite(msgspec.Struct, kw_only=True):
    content: str
    tokens: int  # message tokens after the rewrite
    #: what the stage did and why (its audit entry's): ctx/why says it for every assembly that
    #: shows the rewrite, not only the one that made it (a state kept before has neither)
    action: str = "compressed"
    reason: str = ""


#: what the assistant answers the summary with: the history after it then reads as a dialogue
ACK_TEXT = "Understood. I will continue from this summary."


class Compaction(msgspec.Struct, kw_only=True):
    upto_seq: int = 0
    replaced: int = 0
    summary: str = ""
    constraints: list[str] = msgspec.field(default_factory=list)
    marked: list[str] = msgspec.field(default_factory=list)
    request: str = ""  # the newest user message replaced, shown verbatim (maybe shortened)
    actions: list[str] = msgspec.field(default_factory=list)
    ledger: Ledger | None = None
    facts: Facts | None = None  # the unranked ledger of states saved before ranking
    rewrites: dict[int, Rewrite] = msgspec.field(default_factory=dict)
    # the rendered summary message and its tokens, kept with the share they were sized for
    rendered: str = ""
    rendered_tokens: int = 0
    #: the tokens of the assistant's acknowledgement after the summary (`ACK_TEXT`): part of
    #: the history layer as sent, so the session's budget says what an assembly sends
    ack_tokens: int = 0
    sized_for: int = 0
    demoted: list[str] = msgspec.field(default_factory=list)  # constraints moved to the ledger
    # seqs brought back whole by ctx/restore (restore.py): never shortened, shown even when
    # the summary replaced them
    restored: list[int] = msgspec.field(default_factory=list)
    #: the non-text parts of the messages replaced, as the summary's text names them ("image
    #: 1024x768 in message ctx:msg:0"): no summary text carries an image, and the model read
    #: of a screenshot it was shown nowhere (only the result's `summary` named it)
    parts: list[str] = msgspec.field(default_factory=list)
    #: the history share the summary stage last ran for (0: a state kept before it was said).
    #: An assembly with more room, where the whole history fits or with much more room,
    #: withdraws the summary (assemble.py `_withdrawn`): one call at a small budget
    #: summarized a session for good
    made_for: int = 0


def summary_id(state: Compaction) -> str:
    return f"ctx:summary:{state.upto_seq}"


def summary_message(state: Compaction) -> Message | None:
    if not state.replaced:
        return None
    return Message(role="user", content=state.rendered, id=summary_id(state), kind="summary")


def verbatim_start(history: History, state: Compaction) -> int:
    return history.index_of_seq(state.upto_seq)


def shown_message(history: History, state: Compaction, index: int) -> Message:
    msg = history.messages[index]
    rw = state.rewrites.get(history.seqs[index])
    return msg if rw is None else msgspec.structs.replace(msg, content=rw.content)


def tokens_of(history: History, state: Compaction, i: int) -> int:
    rw = state.rewrites.get(history.seqs[i])
    return history.tokens[i] if rw is None else rw.tokens


def kept_in(history: History, lo: int, hi: int) -> list[int]:
    """Positions in [lo, hi) of the messages kept whole (`kept_whole`), with the rest of their
    tool-call groups in that range: a call is never shown without its results, nor a result
    without its call (the providers reject either)."""
    idx = history.whole[bisect_left(history.whole, lo):bisect_left(history.whole, hi)]
    msgs = history.messages
    if not any(msgs[i].tool_calls or is_tool_result(msgs[i]) for i in idx):
        return idx
    groups = ToolGroups(msgs[lo:hi])
    return sorted({lo + j for i in idx for j in groups.of(i - lo)})


def leading_system(history: History, stop: int) -> int:
    """How many of the first ``stop`` messages are the history's leading system messages: an
    assembly shows those before the summary, where they stood (and the cached prefix holds)."""
    n = 0
    while n < stop and history.messages[n].role == "system":
        n += 1
    return n


def shown_before(history: History, state: Compaction) -> list[int]:
    """Positions before the verbatim tail an assembly shows whole beside the summary: the
    messages kept whole and those restored, in order."""
    start = verbatim_start(history, state)
    shown = set(kept_in(history, 0, start))
    for seq in state.restored:
        i = history.index_of_seq(seq)
        if i < start and history.seqs[i] == seq:
            shown.add(i)
    return sorted(shown)


def history_tokens(history: History, state: Compaction) -> int:
    """Tokens of the history layer: the messages kept whole and the restored ones the summary
    stands beside, the summary message and its acknowledgement (before a user turn), and
    every verbatim message."""
    start = verbatim_start(history, state)
    total = history.tokens_between(start, len(history)) + state.rendered_tokens
    shown = shown_before(history, state)
    total += sum(tokens_of(history, state, i) for i in shown)
    lead = leading_system(history, start)
    # the first message after the summary: the leading system messages come before it
    after = next((i for i in shown if i >= lead), start if start < len(history) else None)
    # the acknowledgement goes between the summary and a user turn only (roles alternate)
    if state.rendered and after is not None and history.messages[after].role == "user":
        total += state.ack_tokens
    if state.rewrites:
        seqs = history.seqs
        for i in range(start, len(history)):
            rw = state.rewrites.get(seqs[i])
            if rw is not None:
                total += rw.tokens - history.tokens[i]
    return total


def is_tool_result(msg: Message) -> bool:
    return msg.role == "tool" or msg.tool_call_id is not None


def summary_shown(history: History, state: Compaction, message_id: str) -> SummaryShown:
    """What the summary an assembly sends replaced, for its result: how many messages, the
    first and last of those the history still holds before the tail (not shown beside it),
    and their non-text parts, which no summary text carries (a screenshot the summary
    replaced was named nowhere: not in `dropped`, `truncated` nor the summary)."""
    shown = set(shown_before(history, state))
    at = [i for i in range(verbatim_start(history, state)) if i not in shown]
    ids = [history.messages[i].id for i in at if history.messages[i].id]
    parts = [f"{p} in message {m.id}" if m.id else p
             for m in (history.messages[i] for i in at) for p in (m.parts or ())]
    return SummaryShown(message_id=message_id, replaced=state.replaced,
                        first_id=ids[0] if ids else None, last_id=ids[-1] if ids else None,
                        parts=parts)
