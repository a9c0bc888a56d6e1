"""One assembly of a session into a budget: system layers, rules, working zone, history.

Prompt order: the stable system layers, the rules, the working zone, the history (the summary
message first when there is one, then the verbatim tail), and last the system prompt's dynamic
section, so that everything up to the newest history message can stay in the provider's cached
prefix. Layers and their precedence: layers.py.

History: past ``trigger`` of its share it is compacted (compaction.py), then cleaned and fitted
into the share (tail.py). An assembly always answers with the best window it can: the only
error is pinned content that cannot fit (the system layers, the rules, or the newest user
message even shortened), ContextError("pinned_over_budget"). ``measure`` never raises: it
reports ``used`` over ``limit``, because it answers requests (append, setMode) whose change is
already committed.

The summarizer is data: when a compaction needs a summary, the caller declared a client
summarizer and passed no ``summary_text``, the result is ``needs_summary`` (the messages to
summarize); the caller asks its client and calls again with the text, or with ``offline=True``
after a timeout. The core stays pure and synchronous.

Cache awareness: ``cache_boundary`` is the index of the first message after the stable system
layers and the rules; ``cache_reuse_tokens`` is the number of leading tokens identical to the
previous assembly's, compared by a fingerprint of (key, tokens) per message, where a history
message's key is its seq (plus a mark when this assembly shows it shortened).
"""

from __future__ import annotations

import msgspec

from ctxlayer.core.assembly import compaction as cp
from ctxlayer.core.assembly import loop, tail
from ctxlayer.core.assembly.compacted import shown_before, summary_shown
from ctxlayer.core.assembly.history import History, kept_whole
from ctxlayer.core.assembly.layers import AssemblyInput, Fingerprint, Layout, layout
from ctxlayer.core.assembly.restore import Shown, restored_before
from ctxlayer.core.assembly.summary import SUMMARY_INSTRUCTIONS
from ctxlayer.core.errors import ContextError
from ctxlayer.core.groups import ToolGroups
from ctxlayer.core.text import content_hash, describe, one_line
from ctxlayer.core.tokens import Tokenizer, message_tokens
from ctxlayer.core.zones.modes import suggest_mode
from ctxlayer.protocol import (
    AssembleResult,
    AssembleTokens,
    AuditEntry,
    Budget,
    ByLayer,
    Message,
    SummaryShown,
)

__all__ = ["Assembly", "AssemblyInput", "Layout", "SummaryRequest", "assemble",
           "assembled_budget", "layout", "measure"]

#: the cheap stages run only while history is at most this many times its share: beyond, one
#: by one shortening cannot bring it back and the summary must
CHEAP_REACH = 1.25
#: of the history share, what the verbatim tail keeps at least when the summary is over its room
TAIL_SHARE = 0.5


class SummaryRequest(msgspec.Struct, kw_only=True):
    messages: list[Message]
    instructions: str
    max_tokens: int


class Assembly(msgspec.Struct, kw_only=True):
    result: AssembleResult | None = None
    needs_summary: SummaryRequest | None = None
    compaction: cp.Compaction | None = None  # the new state when it changed, else None
    audit: list[AuditEntry] = msgspec.field(default_factory=list)
    fingerprint: Fingerprint = msgspec.field(default_factory=list)
    next_compaction_at: int = 0


def _compact(history: History, work: cp.Compaction, inp: AssemblyInput, share: int,
             counter: Tokenizer) -> tuple[cp.Compaction, list[AuditEntry], bool,
                                          SummaryRequest | None]:
    """Run the compaction stages when history is past its trigger: (state, audit, changed,
    the summary request when the client must summarize first)."""
    policy = inp.policy
    trigger_at, target_at = int(share * policy.trigger), int(share * policy.target)
    audit: list[AuditEntry] = []

    def over(state: cp.Compaction) -> bool:
        # counted as plan_stop counts the tail it keeps: counted whole, a tail just planned
        # to fit passed the trigger again on the next assembly of the unchanged session
        return cp.planned_tokens(history, state, share, policy) > trigger_at

    # the cheap stages run on the history as stored: what they shorten stays shortened, the
    # same text on every later assembly, where the window's outlines move as history grows
    if not (inp.force_compaction or cp.history_tokens(history, work) > trigger_at):
        return work, audit, False, None
    work = msgspec.structs.replace(work, rewrites=dict(work.rewrites))
    start = cp.verbatim_start(history, work)
    audit, changed = _cheap(history, work, inp, share, counter)
    if not (inp.force_compaction or over(work)):
        return work, audit, changed, None
    sz = cp.sizes(policy, share)
    keep = inp.keep_recent
    if keep is None and inp.force_compaction and cp.history_tokens(history, work) <= target_at:
        keep = policy.keep_recent  # asked to compact what fits anyway: the usual recent few
    # the messages kept whole are shown wherever the tail starts: their room is taken first
    kept = frozenset(cp.kept_in(history, 0, len(history)))
    fixed = sum(cp.tokens_of(history, work, i) for i in kept)
    # the summary, its acknowledgement and what is kept whole beside the tail: what the
    # trigger reads of the state this compaction leaves (`over`) besides the tail
    ack = message_tokens(Message(role="assistant", content=cp.ACK_TEXT), counter)
    if keep is not None:
        stop = max(start, len(history) - keep)
        # not between a call and its results (keepRecent 0: everything, nothing to split)
        while start < stop < len(history) and cp.is_tool_result(history.messages[stop]):
            stop -= 1
    else:
        reserve = cp.summary_room(policy, share)
        stop = cp.plan_stop(history, work, target_at - reserve - fixed, share, kept,
                            limit=trigger_at - reserve - fixed - ack)
    if not cp.covered(history, work, stop):
        return work, audit, changed, None  # nothing a summary may replace
    if inp.client_summarizer and inp.summary_text is None and not inp.offline:
        prev = cp.summary_message(work)
        return work, audit, changed, SummaryRequest(
            messages=([prev] if prev else []) + cp.covered_messages(history, work, stop),
            instructions=SUMMARY_INSTRUCTIONS, max_tokens=sz.summary_tokens)
    extracted: dict = {}
    new, summarized = cp.apply_summary(history, work, stop, inp.summary_text, share, policy,
                                       counter, extracted)
    if keep is None and reserve - new.rendered_tokens > target_at // 10:
        # the summary's real size is known now: keep more verbatim when it is well under the
        # estimate (a client summary then also covers a few messages still shown: nothing lost)
        wider = cp.plan_stop(history, work, target_at - new.rendered_tokens - fixed, share,
                             kept, limit=trigger_at - new.rendered_tokens - fixed - ack)
        if start < wider < stop and cp.covered(history, work, wider):
            rejected = [e for e in summarized if e.reason.startswith("client summary")]
            widened, again = cp.apply_summary(history, work, wider,
                                              None if rejected else inp.summary_text, share,
                                              policy, counter, extracted)
            # a summary of fewer messages can come out longer (the newest request it shows
            # is another): kept only when the state stays under the trigger
            if not over(widened):
                new, summarized = widened, rejected + again
    # what the next assembly's cheap stages would shorten of the tail is shortened now: they
    # ran on that unchanged session and answered it compacted again
    after, _ = _cheap(history, new, inp, share, counter)
    return new, audit + summarized + after, True, None


def _cheap(history: History, work: cp.Compaction, inp: AssemblyInput, share: int,
           counter: Tokenizer) -> tuple[list[AuditEntry], bool]:
    """The cheap stages (stages.py) on the messages older than the newest few, while the
    history as stored is past its trigger and within their reach (`CHEAP_REACH`): what they
    did and whether they shortened any message. ``work``'s rewrites are changed in place."""
    policy = inp.policy
    start = cp.verbatim_start(history, work)
    protect = max(start, len(history) - policy.keep_recent)
    stored = cp.history_tokens(history, work)
    if (inp.force_compaction or protect <= start
            or not int(share * policy.trigger) < stored <= share * CHEAP_REACH):
        return [], False
    before = len(work.rewrites)
    audit = cp.run_cheap_stages(history, work, protect, int(share * policy.target), counter,
                                policy, history.latest_user_text())
    return audit, len(work.rewrites) != before


def assemble(history: History, state: cp.Compaction, inp: AssemblyInput,
             counter: Tokenizer) -> Assembly:
    """Assemble the session; see the module docstring. ``state`` is not mutated."""
    lay = layout(inp, counter)
    share = lay.share
    work, changed = state, False
    withdrawn = _withdrawn(history, state, inp, share)
    if withdrawn:
        work, changed = cp.Compaction(restored=list(state.restored)), True
    if work.replaced and work.sized_for != share:
        work = msgspec.structs.replace(work, rewrites=dict(work.rewrites))
        cp.rerender(work, share, inp.policy, counter)
        changed = True
    work, audit, compacted, request = _compact(history, work, inp, share, counter)
    if request is not None:
        return Assembly(needs_summary=request)
    audit = withdrawn + audit
    changed = changed or compacted

    # the history layer: the summary, then the verbatim tail cleaned and fitted
    win = _verbatim(history, work, inp, counter)
    head = _Head(dropped=list(lay.working_dropped), truncated=list(lay.working_truncated))
    whole = _whole(history, work)
    summ = cp.summary_message(work)
    placed = summ is not None and _summary_head(head, summ, win, whole, history, work, inp,
                                                 share, counter)
    if not placed:
        head.add(whole)  # kept whole, summary or not: in their order, before the tail
        tail.fit(win, share - sum(whole.tokens), counter, require_user=True,
                 tool_cap=cp.tail_tool_cap(share))
    # the newest user message stood in a summary that found no room: the request lacks it
    lost = summ is not None and not placed and _question_summarized(history, work)
    truncated = head.truncated + win.truncated
    dropped = head.dropped + win.dropped
    hist_tokens_list = head.tokens + win.tokens
    hist_tokens = sum(hist_tokens_list)
    messages, fingerprint, boundary = _prompt(inp, lay, head.messages + win.messages,
                                              head.keys + win.keys, hist_tokens_list, counter)

    total = lay.system_tokens + lay.rules_tokens + lay.working_tokens + hist_tokens
    if (total > inp.budget or lost) and lay.working_tokens and inp.working_cap != 0:
        # optional working notes give way to the history's least (the newest question): less
        # by what is over, then none, rather than a session that cannot answer
        cap = 0 if inp.working_cap is not None or lost else \
            max(0, lay.working_tokens - (total - inp.budget))
        return assemble(history, state, msgspec.structs.replace(inp, working_cap=cap), counter)
    if total > inp.budget or lost:
        raise _refused(inp, lay, whole, total - tail.question_spare(win, counter), share, lost)
    tokens = AssembleTokens(
        total=total, system=lay.system_tokens - inp.workspace_tokens,
        workspace=inp.workspace_tokens, rules=lay.rules_tokens, working=lay.working_tokens,
        history=hist_tokens,
    )
    result = AssembleResult(
        messages=messages, cache_boundary=boundary, tokens=tokens, budget=inp.budget,
        dropped=dropped, truncated=truncated, compacted=compacted,
        mode_suggestion=suggest_mode(history.latest_user_text(), inp.mode),
        cache_reuse_tokens=_reuse(inp.previous, fingerprint),
        summary=_summary_shown(history, work, head),
    )
    next_at = max(total, total - hist_tokens + int(share * inp.policy.trigger))
    return Assembly(result=result, compaction=work if changed else None,
                    audit=audit + truncated + dropped, fingerprint=fingerprint,
                    next_compaction_at=next_at)


def _summary_shown(history: History, work: cp.Compaction, head: _Head
                   ) -> SummaryShown | None:
    """What the summary this assembly sends replaced (`compacted.summary_shown`); None when
    it sends none (no summary, or no room for it)."""
    sent = next((m for m in head.messages if m.kind == "summary"), None)
    if sent is None or not work.replaced:
        return None
    return summary_shown(history, work, sent.id or cp.summary_id(work))


def _withdrawn(history: History, state: cp.Compaction, inp: AssemblyInput,
               share: int) -> list[AuditEntry]:
    """The entry that withdraws a summary made for a smaller share (`_withdraws`); else none.
    Where the whole history fits, every message is shown as it was sent; where it does not,
    the summary is made again for this share, and the messages it leaves out are shown."""
    if not _withdraws(history, state, inp, share):
        return []
    summ = cp.summary_message(state)
    fits = history.total <= int(share * inp.policy.trigger)
    then = "every message shown as it was sent" if fits else (
        "made again for this share, the messages it has room for shown as they were sent")
    return [AuditEntry(
        action="restored", reason=f"the {'whole ' if fits else ''}history "
        f"({history.total} tokens) {'fits' if fits else 'has more room in'} the history share "
        f"({share} tokens; the summary was made for {state.made_for}): the summary is "
        f"withdrawn, {then}",
        summary=describe(summ) if summ is not None else "summary",
        tokens_before=state.rendered_tokens, tokens_after=history.total,
        message_id=summ.id if summ is not None else None)]


def _withdraws(history: History, state: cp.Compaction, inp: AssemblyInput, share: int) -> bool:
    """Whether the next assembly at `share` withdraws the summary made for a smaller share:
    when the whole history fits under the trigger, or when that share was so much smaller
    that the state, however full, leaves the history less than a compaction at this share
    fills (its trigger under our target). One assembly at a one-off budget of 1,500 left a
    session of 6,000 three messages verbatim (2,329 tokens sent) where its own compaction
    kept eleven (5,563), for good. At the share it was made for, or one a little larger (a
    working item gone), it stays: the history only grows there, and the cached prefix with
    it."""
    if not 0 < state.made_for < share or inp.force_compaction:
        return False
    policy = inp.policy
    return (history.total <= int(share * policy.trigger)
            or state.made_for * policy.trigger < share * policy.target)


def _question_summarized(history: History, work: cp.Compaction) -> bool:
    """Whether the newest user message is one the summary replaced (not in the verbatim tail)."""
    start = cp.verbatim_start(history, work)
    newest = next((i for i in range(len(history) - 1, -1, -1)
                   if history.messages[i].role == "user"), None)
    return newest is not None and newest < start and not kept_whole(history.messages[newest])


class _Head(msgspec.Struct, kw_only=True):
    """The history layer before the verbatim tail (the leading system messages, the summary,
    its acknowledgement, the messages kept whole and the restored ones), with what placing
    them cut or shortened."""

    messages: list[Message] = msgspec.field(default_factory=list)
    keys: list[str] = msgspec.field(default_factory=list)
    tokens: list[int] = msgspec.field(default_factory=list)
    truncated: list[AuditEntry] = msgspec.field(default_factory=list)
    dropped: list[AuditEntry] = msgspec.field(default_factory=list)

    def add(self, part: Shown) -> None:
        self.messages += part.messages
        self.keys += part.keys
        self.tokens += part.tokens


def _whole(history: History, work: cp.Compaction) -> Shown:
    """The messages before the verbatim tail that no summary replaces (`kept_whole`, with their
    tool-call groups): shown as they are, under the keys they had in the tail, so the cached
    prefix holds through the compaction that passes them."""
    at = cp.kept_in(history, 0, cp.verbatim_start(history, work))
    # a tool output there for its pinned call is shown as an earlier stage may have left it
    return Shown(messages=[cp.shown_message(history, work, i) for i in at],
                 keys=[f"h{history.seqs[i]}" + ("r" if history.seqs[i] in work.rewrites else "")
                       for i in at],
                 tokens=[cp.tokens_of(history, work, i) for i in at], truncated=[], at=at)


def _refused(inp: AssemblyInput, lay: Layout, whole: Shown, total: int, share: int, lost: bool
             ) -> ContextError:
    """The refusal of a session whose fixed content is over the budget: what it takes
    (``total``: the newest question as cut, or as far as the last resort cuts it where it
    left it whole, never whole) and what to do."""
    remedy = (f"{'unpin or shorten those, ' if whole.messages else ''}"
              f"{'remove rules or ' if lay.rules_tokens else ''}raise the budget")
    if lost:
        return ContextError(
            "pinned_over_budget",
            f"the system layers and rules leave the history {share} tokens{_taken_by(whole)}: "
            f"no room for the summary that holds the newest user message: {remedy}")
    return ContextError(
        "pinned_over_budget",
        f"the system layers, rules{kept_said(whole)} and the newest user message, even "
        f"shortened, take {total} tokens, over the budget of {inp.budget}: {remedy}")


def _taken_by(whole: Shown) -> str:
    """What the messages kept whole take of the history, for an error that blames the room."""
    n = len(whole.messages)
    return f"; the {n} message{'s' if n > 1 else ''} kept whole (system, pinned) " \
        f"take{'' if n > 1 else 's'} " \
        f"{sum(whole.tokens)}" if n else ""


def kept_said(whole: Shown) -> str:
    """The messages kept whole, named in an error that counts them."""
    n = len(whole.messages)
    return f", the {n} message{'s' if n > 1 else ''} kept whole (system, pinned)" if n else ""


def _split(part: Shown, upto: int) -> tuple[Shown, Shown]:
    """`part` cut at history position `upto`: those before it, the rest."""
    k = next((j for j, i in enumerate(part.at) if i >= upto), len(part.at))

    def cut(lo: int, hi: int) -> Shown:
        return Shown(messages=part.messages[lo:hi], keys=part.keys[lo:hi],
                     tokens=part.tokens[lo:hi], truncated=[], at=part.at[lo:hi])
    return cut(0, k), cut(k, len(part.at))


def _merged(a: Shown, b: Shown) -> Shown:
    """Two parts in history order."""
    rows = sorted(zip(a.at + b.at, a.messages + b.messages, a.keys + b.keys, a.tokens + b.tokens,
                      strict=True), key=lambda r: r[0])
    return Shown(messages=[r[1] for r in rows], keys=[r[2] for r in rows],
                 tokens=[r[3] for r in rows], truncated=[], at=[r[0] for r in rows])


def _verbatim(history: History, work: cp.Compaction, inp: AssemblyInput,
          counter: Tokenizer) -> tail.Window:
    """The verbatim tail after the summary, cleaned (not fitted yet); restored messages of it
    are kept whole, and so is the newest tool loop's first step (brought back to head it when
    the summary replaced it)."""
    start = cp.verbatim_start(history, work)
    # the first step of the newest tool loop, with its thinking, heads the tail when a summary
    # replaced it: without it the turn the provider reads opens with a later step (loop.py)
    at = [*loop.brought_back(history.messages, start, shown_before(history, work)),
          *range(start, len(history))]
    seqs = [history.seqs[i] for i in at]
    shown = [cp.shown_message(history, work, i) for i in at]
    if work.restored:
        whole = set(work.restored)
        shown = [msgspec.structs.replace(m, pinned=True) if s in whole else m
                 for m, s in zip(shown, seqs, strict=True)]
    keys = [f"h{s}" + ("r" if s in work.rewrites else "") for s in seqs]
    win = tail.clean(shown, keys, counter, inp.policy.dedup_min_tokens)
    first = loop.opening_step(history.messages)
    if first is not None and history.messages[first].id is not None:
        win.held = frozenset({history.messages[first].id})
    return win


def _summary_head(head: _Head, summ: Message, win: tail.Window, whole: Shown,
                  history: History, work: cp.Compaction, inp: AssemblyInput, share: int,
                  counter: Tokenizer) -> bool:
    """Put the leading system messages, the summary (fitted to its room), its acknowledgement,
    the messages kept whole and the restored ones in `head` and fit the tail after them;
    False when the summary found no room at all."""
    ack = Message(role="assistant", content=cp.ACK_TEXT, id=f"{summ.id}:ack")
    ack_tokens = message_tokens(ack, counter)
    # the summary leaves the tail its newest turn (up to half the share), and at least
    # TAIL_SHARE of the share when the tail has that much
    tail_room = max(min(_newest_turn_tokens(win), share // 2),
                    min(sum(win.tokens), int(share * TAIL_SHARE)))
    # and at least what the newest exchange comes to shortened (thinking is never shortened):
    # the summary shrinks for it, else an agent's newest step with 3,600 tokens of thinking
    # went and the summary of the steps before it was sent alone; one over the whole share
    # even so takes nothing from it (the window says it goes)
    least = tail.newest_least(win)
    if least < share:
        tail_room = max(tail_room, least)
    back = restored_before(history, work, share, counter)
    fixed = sum(whole.tokens)  # never shortened: the summary and the tail have the rest
    placed = _fitted_summary(head, summ, work, inp, share - fixed, tail_room + ack_tokens, back,
                             counter)
    if placed is None:
        return False
    summ, s_tokens, demoted, back = placed
    s_key = f"s{work.upto_seq}:{content_hash(summ.content)}"
    lead, held = _split(whole, cp.leading_system(history, len(history)))
    head.add(lead)  # where they stood, before the summary: the cached prefix holds
    head.messages.append(summ)
    head.keys.append(s_key)
    head.tokens.append(s_tokens)
    head.truncated += [AuditEntry(
        action="demoted", reason="hard constraints over their share of the history "
        "budget: the oldest moved to the summary's facts ledger",
        summary=one_line(c), tokens_before=counter.count(c),
        tokens_after=counter.count(c), message_id=summ.id) for c in demoted]
    head.truncated += back.truncated
    tail.fit(win, share - fixed - s_tokens - ack_tokens - sum(back.tokens), counter,
             require_user=False, tool_cap=cp.tail_tool_cap(share))
    beside = _merged(held, back)
    after = beside.messages[0] if beside.messages else (win.messages[0] if win.messages
                                                        else None)
    if after is not None and after.role == "user":
        head.messages.append(ack)  # roles alternate: summary (user), ack, the user's turn
        head.keys.append(f"a{work.upto_seq}")
        head.tokens.append(ack_tokens)
    head.add(beside)
    return True


def _fitted_summary(head: _Head, summ: Message, work: cp.Compaction, inp: AssemblyInput,
                    share: int, reserved: int, back: Shown, counter: Tokenizer
                    ) -> tuple[Message, int, list[str], Shown] | None:
    """The summary in its room (`share` less the tail's and the ack's `reserved` tokens and
    the restored messages): as it is, shortened (said in `head.truncated`), or None when
    even shortened it cannot fit (said in `head.dropped`); with the restored messages that
    keep their place beside it."""
    room = max(0, share - reserved - sum(back.tokens))
    s_tokens, demoted = work.rendered_tokens, work.demoted
    fits = s_tokens <= room
    fitted = None if fits else cp.fitted_summary(work, room, inp.policy, counter)
    while fitted is None and not fits and back.messages:
        # the summary stands for everything before the tail: the restored messages give
        # way to it, the oldest first, a call with its results, each said in the audit (all
        # at once, two restored screenshots left a budget of 3,000 with 1,651 sent)
        back, gone = _without_oldest(back)
        head.dropped += [AuditEntry(
            action="dropped", reason="restored, but no room beside the summary in the "
            f"history share ({share} tokens) for this assembly", summary=describe(m),
            tokens_before=t, tokens_after=0, message_id=m.id) for m, t in gone]
        room = max(0, share - reserved - sum(back.tokens))
        fits = s_tokens <= room
        fitted = None if fits else cp.fitted_summary(work, room, inp.policy, counter)
    if not fits and fitted is None and work.request:
        # the summary holds the newest user message: it takes the tail's room before the
        # question would go (the tail then keeps what fits after it)
        room = share
        fitted = cp.fitted_summary(work, room, inp.policy, counter)
    if fits:
        return summ, s_tokens, demoted, back
    if fitted is None:
        head.dropped.append(AuditEntry(
            action="dropped", reason=f"no room for the summary in the history share "
            f"({share} tokens)", summary=describe(summ), tokens_before=s_tokens,
            tokens_after=0, message_id=summ.id))
        return None
    head.truncated.append(AuditEntry(
        action="truncated", reason=f"summary over its room in the history share "
        f"({room} tokens): its parts shortened for this assembly, least important "
        "first", summary=describe(summ), tokens_before=s_tokens,
        tokens_after=fitted[1], message_id=summ.id))
    return (*fitted, back)


def _without_oldest(back: Shown) -> tuple[Shown, list[tuple[Message, int]]]:
    """The restored messages without their oldest group (a call with its results), and
    those left out with their tokens."""
    group = set(ToolGroups(back.messages).in_order()[0])
    keep = [k for k in range(len(back.messages)) if k not in group]
    gone = [(back.messages[k], back.tokens[k]) for k in sorted(group)]
    left_out = {back.at[k] for k in group}  # what was said of them before goes with them
    return Shown(messages=[back.messages[k] for k in keep], keys=[back.keys[k] for k in keep],
                 tokens=[back.tokens[k] for k in keep],
                 truncated=[e for e in back.truncated if e.index not in left_out],
                 at=[back.at[k] for k in keep]), gone


def _prompt(inp: AssemblyInput, lay: Layout, hist_msgs: list[Message], hist_keys: list[str],
            hist_tokens: list[int], counter: Tokenizer
            ) -> tuple[list[Message], Fingerprint, int | None]:
    """The whole prompt in its order, its fingerprint and its cache boundary."""
    stable, dynamic = inp.stable_system, inp.dynamic_system
    messages: list[Message] = list(stable)
    fingerprint: Fingerprint = [(f"y{content_hash(m.content)}", message_tokens(m, counter))
                                for m in stable]
    for msg, tag in ((lay.rules_msg, "r"), (lay.working_msg, "w")):
        if msg is not None:
            messages.append(msg)
            fingerprint.append((f"{tag}{content_hash(msg.content)}", message_tokens(msg, counter)))
    boundary = len(stable) + (lay.rules_msg is not None) or None
    messages += hist_msgs
    fingerprint += list(zip(hist_keys, hist_tokens, strict=True))
    messages += dynamic
    fingerprint += [(f"y{content_hash(m.content)}", message_tokens(m, counter)) for m in dynamic]
    return messages, fingerprint, boundary


def _newest_turn_tokens(win: tail.Window) -> int:
    """Tokens from the newest user message to the end: what the summary must leave room for."""
    for i in range(len(win.messages) - 1, -1, -1):
        m = win.messages[i]
        if m.role == "user" and m.tool_call_id is None:
            return sum(win.tokens[i:])
    return 0


def _reuse(previous: Fingerprint | None, current: Fingerprint) -> int:
    if not previous:
        return 0
    reused = 0
    for a, b in zip(previous, current, strict=False):
        if a != b:
            break
        reused += b[1]
    return reused


def measure(history: History, state: cp.Compaction, inp: AssemblyInput, counter: Tokenizer,
            *, model: str, session_id: str | None, error_band: float | None) -> Budget:
    """The session's budget now, without compacting: what ``ctx/budgetChanged`` carries
    after a change (an append, a rule, a mode). The session as it stands, before an assembly
    fits it: the history as stored, its newest message whole, so ``used`` may be over
    ``limit`` where the next assembly summarizes. Where it only shortens (the history fits
    once its older tool outputs are outlined: `cp.planned_tokens`), the history counts at
    most its share, all the window sends: a session just compacted, measured after a
    restart, said 3827 used of a limit of 3000 where its assembly sent 2977. Its layers add
    up to ``used``.

    ``next_compaction_at`` says where the next assembly compacts, in the same units (tokens of
    the whole prompt); it is ``used`` itself when the next assembly will compact.
    """
    lay = layout(inp, counter, strict=False)
    if _withdraws(history, state, inp, lay.share):  # as the next assembly will find it: whole
        state = cp.Compaction(restored=list(state.restored))
    hist = cp.history_tokens(history, state)
    planned = cp.planned_tokens(history, state, lay.share, inp.policy)
    if planned <= int(lay.share * inp.policy.trigger):
        hist = min(hist, lay.share)
    used = lay.system_tokens + lay.rules_tokens + lay.working_tokens + hist
    return Budget(
        used=used, limit=inp.budget, percent=round(100.0 * used / max(1, inp.budget), 2),
        by_layer=ByLayer(system=lay.system_tokens - inp.workspace_tokens,
                         workspace=inp.workspace_tokens, rules=lay.rules_tokens,
                         working=lay.working_tokens, history=hist),
        model=model, session_id=session_id,
        next_compaction_at=max(used, used - hist + int(lay.share * inp.policy.trigger)),
        error_band=error_band,
    )


def assembled_budget(result: AssembleResult, *, next_compaction_at: int, model: str,
                     session_id: str | None, error_band: float | None) -> Budget:
    """What an assembly sent, as a Budget: its layers as it sent them, adding up to ``used``.
    (``measure`` counts the history as the session holds it, the newest message unshortened:
    an assembly's figures laid over a measure said 1855 used beside 10238 by layer.)"""
    t, limit = result.tokens, result.budget
    return Budget(
        used=t.total, limit=limit, percent=round(100.0 * t.total / max(1, limit), 2),
        by_layer=ByLayer(system=t.system, workspace=t.workspace, rules=t.rules,
                         working=t.working, history=t.history),
        model=model, session_id=session_id, next_compaction_at=next_compaction_at,
        error_band=error_band,
    )
