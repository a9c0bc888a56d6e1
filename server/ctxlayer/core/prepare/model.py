"""The data of a live conversation between turns: the policy, the summary chunks, the state one
turn hands to the next, and what a turn returns.

Pure data: nothing here counts, decides or reads anything. A state is never changed after it
is returned; the next turn builds a new one that may share its (never mutated) lists.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field

import msgspec

from ctxlayer.core.compress.facts import Facts, Named
from ctxlayer.core.compress.ledger import Ledger
from ctxlayer.core.tokens import OPENAI_FORMAT, MessageFormat
from ctxlayer.protocol import AuditEntry, Message

#: what a rewrite shows of a message: its new text, or (its text, each tool call's arguments)
#: when the calls were outlined too (plain strings and tuples: hashable as cache keys, and a
#: snapshot written before arguments were outlined still reads)
Shown = str | tuple[str, tuple[str, ...]]
#: a message shown other than whole: (what is shown, its tokens, the audit entry saying why)
Rewrite = tuple[Shown, int, AuditEntry]


def shown_of(original: Message, short: Message) -> Shown:
    """What ``short`` (``original`` shortened) shows: its text, its calls' arguments too when
    they differ."""
    calls = short.tool_calls or []
    if calls == (original.tool_calls or []):
        return short.content
    return short.content, tuple(c.arguments for c in calls)


def common_prefix(before: list[Message], now: list[Message]) -> int:
    """How many leading messages two turns share (C-speed when the turn only appends)."""
    p = len(before)
    if len(now) >= p and now[:p] == before:
        return p
    k, m = 0, min(p, len(now))
    while k < m and now[k] == before[k]:
        k += 1
    return k


def alike_prefix(before: list[Message], now: list[Message], common: int) -> int:
    """How many leading messages two turns share once those that differ only in what their
    non-text parts cost count as shared (``common``: those identical): a thinking block an
    earlier turn costed whole costs its text once a new turn began (the provider no longer
    reads it), and the message shows the same as before. Parts added, removed or of another
    kind are a change: with a screenshot taken out of a question it was cut beside, the
    question counted alike kept that cut, 52 of its 1,663 characters sent in 63 tokens of a
    1,200-token budget."""
    k, m = common, min(len(before), len(now))
    while k < m and _same_parts(before[k].parts, now[k].parts) \
            and msgspec.structs.replace(before[k], parts_tokens=now[k].parts_tokens,
                                        parts=now[k].parts) == now[k]:
        k += 1
    return k


def _same_parts(before: list[str] | None, now: list[str] | None) -> bool:
    """Whether two lists of parts' labels ("image 1000x800 (1067 tokens)", "thinking (212
    tokens)") name the same parts, whatever each is said to cost."""
    if (before or []) == (now or []):
        return True
    if len(before or []) != len(now or []):
        return False
    return all(_PART_COST.sub("", b) == _PART_COST.sub("", n)
               for b, n in zip(before or [], now or [], strict=True))


#: the cost a part's label ends with (`formats.media.label`)
_PART_COST = re.compile(r" \(\d+ tokens?\)$")


def summarized_audit(chunks: Iterable[Chunk], verbatim: Iterable[int]) -> list[AuditEntry]:
    """The entries of the messages the summary chunks stand for, but those still shown whole
    (``verbatim``): of a turn's state, or of the window kept of it (persist.py)."""
    shown = set(verbatim)
    return [e for c in chunks for e in c.audit if e.index is None or e.index not in shown]


def shortened_audit(rewrites: dict[int, Rewrite]) -> list[AuditEntry]:
    """The entries of the messages shown shortened, in conversation order."""
    return [rw[2] for _, rw in sorted(rewrites.items())]


def shown_text(shown: Shown) -> str:
    return shown if isinstance(shown, str) else shown[0]


def apply_shown(m: Message, shown: Shown) -> Message:
    """Message ``m`` as a rewrite shows it."""
    if isinstance(shown, str):
        return msgspec.structs.replace(m, content=shown)
    text, arguments = shown
    calls = [msgspec.structs.replace(c, arguments=a)
             for c, a in zip(m.tool_calls or (), arguments, strict=True)]
    return msgspec.structs.replace(m, content=text, tool_calls=calls)


class PreparePolicy(msgspec.Struct, frozen=True, kw_only=True):
    """How a live conversation is compacted.

    A conversation runs untouched until the next request would pass the budget; then one step
    outlines the oldest long messages not yet outlined, enough to bring the request down to
    ``target`` of the budget, and only when that is not enough summarizes the oldest verbatim
    messages down to ``summary_target``, so the prefix the provider cached holds for the next
    several turns.
    """

    target: float = 0.8  # an outline step brings the request down to this share
    # a message an earlier step outlined (only as far as it needed) and still long is outlined
    # again down to this share at once, not a little at each step: each time moves the prefix
    # from that message on
    again_target: float = 0.65
    summary_target: float = 0.75  # a summary step (rarer, it moves more of the prefix) to this
    # a conversation that grows fast has each step go further down: when its last four turns
    # added more than ``pace_from`` of the budget a turn, both targets are lowered by the excess
    # (by at most ``pace_most``), or the next request passes the budget again at once and
    # nearly every turn moves the prefix. On the dev replay (cuts 0.6 / 0.7 / 0.8) the bill fell
    # by 0.4-0.6 points at a 10% budget (55.5% to 54.9% at 0.8) and 0.3-0.6 at 25%, the six
    # cut and budget cells kept 8 of 4,293 facts fewer, budget use stayed 89-91% (lowest
    # 56-66%); the prepare benchmark's chats (1.1% and 6.5% of the budget a turn) were unchanged.
    # Lowering both targets for every chat (to 0.70 / 0.62) billed 0.5-0.8 and 2-3 points less,
    # but that benchmark's slow chat then used 79.7% of its budget (86.1%)
    pace_from: float = 0.08
    pace_most: float = 0.1
    # nor does it take a group that would leave the request under this share (when it fits):
    # a file the user added is not summarized to make room nobody uses
    summary_floor: float = 0.5
    # the newest user message, once older than the last turn, is shortened to this share
    question_share: float = 0.25
    # when even the newest exchange is over the budget, an assistant message of it over this
    # share is shortened (down to it, as far as needed) before the summaries of everything
    # before it are squeezed for its room: beside summaries of up to 0.6 of the room, a third
    # still leaves the task and the newest output theirs. On the dev replay's six cut and
    # budget cells 0.25 / 0.33 / 0.45 kept 31 / 81 / 49 more facts than never shortening it
    # (of 4,232). Not when a third is under ``prose_min`` tokens
    prose_share: float = 0.33
    prose_min: int = 100
    # once the budget grew (a bigger model, a budget set higher), the window a smaller budget
    # shortened is made again at the new one when the result it carries takes under this share
    # of it (or the whole history goes within ``target``): carried, a chat once fitted into 600
    # tokens sent 527 of 20,000 on every later turn, its log still cut to 507. That moves the
    # cached prefix once; a budget that only wobbles (calibration, tool definitions) keeps it
    refit_below: float = 0.5
    # the newest question cut at a smaller budget is cut afresh once the budget grew past this
    # share of it: a budget that only wobbles (a calibration from the provider's usage, the
    # tool definitions counted anew) keeps its cut, which an agent's task carries before every
    # summary: cut afresh on each wobble, the whole cached prefix after the system prompt moves
    recut_growth: float = 0.05
    # a long tool output or assistant message is outlined to this share of the budget
    outline_share: float = 0.04
    outline_min: int = 160
    outline_max: int = 4000
    # the parts of one summary chunk, as shares of the room the system prompt and the question
    # leave of the budget: an agent's chat needs the ledger (the files, commands, errors, tests
    # and lines it worked with) more than the action log or decided / open sentences. With a
    # ledger of 0.08, replayed to 60% and 70% of each dev transcript (the bench stops at 80%),
    # prepare kept 7-9 points fewer facts than ctx/assemble at a 10% budget; with 0.25, 1-3
    summary_share: float = 0.02  # decided / open
    summary_max_tokens: int = 1500
    ledger_share: float = 0.25  # the facts ledger
    ledger_max_tokens: int = 2000
    actions_share: float = 0.03  # the action log (one line per tool call, newest first)
    actions_max_tokens: int = 1500
    # every chunk together (of that room); past it, merged. About half of the budget, as a
    # session's summary takes: at 10% of a chat's tokens the chunks held a quarter of the
    # request and kept 7 points fewer of the facts the rest needed than ctx/assemble
    summaries_share: float = 0.7
    # a merge of every chunk is made to at most this share of ``summaries_share``, leaving room
    # for the next steps' chunks: made to all of it, the next chunk passed the share at once,
    # and every step merged every chunk again, rewriting the request from the first chunk on
    # (at a 10% budget two thirds of the dev replay's rewrites). With 0.8 and the share at 0.7
    # (0.6 and 1.0 before) the bill at 10% fell from 63.8 / 62.8 / 61.0% to 60.5 / 58.7 /
    # 57.8% (replayed to 60 / 70 / 80% of each chat) and at 25% by 0.2-1.1 points, keeping
    # 4,302 of the 4,313 facts over the six cut and budget cells
    merge_share: float = 0.8
    # once the chunks pass their share, the fewest newest are merged into one that bring them
    # down to room for this many more chunks as big as the newest (what a step of this
    # conversation makes, sized by its growth and budget: `merging.merge_goal`), else as few as
    # bring them under the share. Only the newest two, a merge freed a few tokens while the
    # step had counted on a merge of every chunk, the request stayed at its budget and the next
    # turn merged again. On the dev replay at 25% (cut 0.8) the bill fell from 77.8% to 77.4%
    # of sending everything (astroid-1333: 89% to 70%), reuse rose from 84.7% to 85.4%, facts
    # 655 of 680 as before; at 10% nothing changed (609, 54.8%); at cut 0.7, 25%: 79.3% to
    # 78.9%, facts 803 of 839 as before. 3, 6 and 10 billed 77.4% alike (astroid-1333: 74%, 70%,
    # 70%); a goal of 0.7 to 0.9 of the share in its place 77.3-77.5%
    merge_ahead: int = 6
    # a new chunk is made to the room the chunks have left under their share, down to this
    # share of its parts' usual size, rather than at that size passing the share: beside a
    # merge of every chunk (0.8 of the share) a usual chunk at a small budget did not fit, and
    # the step merged every chunk again. With 0.3 (1.0 before) the dev replay's bill fell by
    # 0.8-1.4 points at 25% and 1.8-2.5 at 10% (cuts 0.6 / 0.7 / 0.8), by 1.5-2.6 at 2-15%,
    # and the six cut and budget cells kept 4,283 of 4,302 facts
    chunk_least: float = 0.3
    summaries_min_share: float = 0.45  # what a new or merged chunk may grow to, all chunks
    chars_per_token: int = 3  # a conservative guess for sizing summaries in characters
    facts_scan_factor: int = 20  # facts are read from at most this many times the ledger size
    # once a request passes this share of its budget, the facts of what the next step will
    # summarize are read ahead of need (`warm`), so that step does not read them
    precompact_at: float = 0.7
    # the exact earlier lines the newest message names, brought back with it, take at most
    # this share of the budget
    recall_share: float = 0.03
    fmt: MessageFormat = OPENAI_FORMAT


DEFAULT_POLICY = PreparePolicy()


@dataclass(frozen=True, slots=True)
class Chunk:
    """One summary message standing for some of the oldest messages, unchanged once made."""

    start: int  # the verbatim start it was made from (conversation index)
    upto: int  # conversation messages before this index are no longer shown verbatim
    message: Message
    tokens: int
    summary: str  # its decided/open part
    constraints: tuple[str, ...]
    facts: Ledger | None  # ranked: what the chunk's messages said most, in their own words first
    replaced: int  # messages it stands for
    replaced_tokens: int  # what those messages cost
    audit: tuple[AuditEntry, ...]  # one "summarized" entry per message it stands for
    actions: tuple[str, ...] = ()  # one line per tool call it stands for, oldest first
    # who wrote its decided / open part: "offline", or what the audit says of a model's
    writer: str = "offline"


@dataclass(frozen=True, slots=True)
class Ahead:
    """A decided / open summary a model wrote between turns (`summary_ahead`), for exactly the
    messages at ``covered`` as they were then: the step that summarizes exactly those takes
    it; any other step writes its own offline."""

    covered: tuple[int, ...]
    messages: tuple[Message, ...]  # the client's messages at ``covered``, when it was asked
    text: str | None  # None: the answer was refused (``writer`` says why)
    writer: str  # what the chunk's audit says of who wrote it


@dataclass(frozen=True, slots=True)
class ConversationState:
    """What one turn leaves for the next (see the package docstring for how it is used)."""

    messages: list[Message]  # this turn's input, the engine's view
    tokens: list[int]  # message tokens of each
    cum: list[int]  # prefix sums of tokens (len(messages) + 1 entries)
    head: int  # leading system messages, always shown
    upto: int  # messages[head:upto] are summarized (except those in `verbatim`)
    frontier: int = 0  # messages[upto:frontier] were looked at by an outline step
    chunks: tuple[Chunk, ...] = ()
    verbatim: tuple[int, ...] = ()  # indices below upto still shown whole, in order
    rewrites: dict[int, Rewrite] = field(default_factory=dict)
    restored: dict[str, int] = field(default_factory=dict)  # restored id -> index
    restored_audit: tuple[AuditEntry, ...] = ()
    out_keys: list = field(default_factory=list)  # identity of each message of the result
    out_tokens: list[int] = field(default_factory=list)
    dropped: tuple[AuditEntry, ...] = ()  # what the last-resort fit dropped from the result
    total: int = 0  # tokens of the result
    # facts of messages the next step may summarize, read ahead of need (see `warm`)
    facts: dict[int, Facts] = field(default_factory=dict)
    # `named_facts` an outline read, of messages a later step may outline again or summarize
    named: dict[int, Named] = field(default_factory=dict)
    # a summary of what the next step will summarize, written ahead of need by a model
    ahead: Ahead | None = None
    # the result as sent and the budget it was fitted to: the same request sent again (a
    # retry, a regenerate) gets the same result, not the last-resort fit worked out anew
    # from this turn's rewrites (at a small budget it kept other messages than the first)
    sent: tuple[Message, ...] = ()
    budget: int = 0
    # what the turn that made ``sent`` told its client: the same request sent again is told
    # it again (a client that retries never got the first answer; an editor regenerating
    # the answer shows the notice of the request it sends), not "nothing was cut"
    told: Told | None = None
    # after a restart, taken up from a kept window whose turn had exactly this state's
    # messages (`resuming.resume`): (the budget that turn's result was fitted to, what it told).
    # The same request sent again is told it again once its result proves the one sent then
    # (`engine._told_again`): a restart between a request and its retry is no reason to say
    # nothing was cut
    told_before: tuple[int, Told] | None = None
    # after a restart: how many messages the kept window's turn had (``messages`` holds only
    # those the request agrees with), so a history resent shorter is known as one after a
    # restart too (`engine._regrows`)
    kept_length: int = 0


@dataclass(frozen=True, slots=True)
class Told:
    """What one turn's result said it did, for the same request sent again."""

    dropped: tuple[AuditEntry, ...]
    truncated: tuple[AuditEntry, ...]
    restored: tuple[AuditEntry, ...]
    notice: str | None


@dataclass(frozen=True, slots=True)
class Turn:
    """One turn's result: the messages to send and what was done to get there."""

    messages: list[Message]
    tokens: int
    budget: int
    dropped: list[AuditEntry]  # new this turn: summarized by this turn's step, or cut
    truncated: list[AuditEntry]  # new this turn: shortened
    restored: list[AuditEntry]  # new this turn: shown whole again on request
    compacted: bool  # the result stands older messages in by a summary
    cache_reuse_tokens: int
    breakpoints: list[int]  # indices into `messages` for the codec's cache markers
    notice: str | None
    state: ConversationState
    stepped: bool = False  # this turn moved the window (outlines, a new summary chunk)
    # the previous turn's result again, for the same request sent again: what it says was
    # done was done (and audited) by that turn, not by this one
    again: bool = False
