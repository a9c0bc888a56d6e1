"""One turn of a live conversation: recognize what is new, step the window when the request
would pass its budget, fit what still does not fit, and say how much of the previous result's
prefix this one repeats. The semantics are stated in the package docstring.
"""

from __future__ import annotations

import dataclasses
import itertools
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass

import msgspec

from ctxlayer.core.assembly.summary import SUMMARY_INSTRUCTIONS, off_topic, own_words, refusal
from ctxlayer.core.errors import ContextError, require_tokens
from ctxlayer.core.groups import is_result, lead_of
from ctxlayer.core.guessed import Guessed, guessed
from ctxlayer.core.memo import Memo
from ctxlayer.core.prepare import held, summaries
from ctxlayer.core.prepare.aider_files import attached, is_attached
from ctxlayer.core.prepare.attached import at_floors, fit_attached, give_over, grow_back
from ctxlayer.core.prepare.fit import (
    fit_calls,
    fit_prose,
    last_resort,
    outputs_spare,
    question_spare,
    result_index,
)
from ctxlayer.core.prepare.merging import told_shrunk
from ctxlayer.core.prepare.model import (
    DEFAULT_POLICY,
    Ahead,
    ConversationState,
    PreparePolicy,
    Told,
    Turn,
    alike_prefix,
    common_prefix,
    shown_text,
)
from ctxlayer.core.prepare.recall import recall
from ctxlayer.core.prepare.restore import restore
from ctxlayer.core.prepare.rules import carrying
from ctxlayer.core.prepare.told import notice
from ctxlayer.core.prepare.window import Step, Window, newest_user
from ctxlayer.core.tokens import Tokenizer, messages_tokens
from ctxlayer.core.trim.fit import NAMED
from ctxlayer.protocol import AuditEntry, Message


def prepare_turn(previous: ConversationState | None, messages: Sequence[Message], budget: int,
                 counter: Tokenizer, *, policy: PreparePolicy = DEFAULT_POLICY,
                 restored: Collection[str] = (), client_breakpoints: int = 0,
                 memo: Memo | None = None) -> Turn:
    """This turn's request fitted into ``budget``, from the previous turn's state (or None).
    A request over the budget only by costs guessed for parts no one here sees (documents by
    file_id or URL: `guessed.py`) is fitted with room for the guesses, sent, and its notice
    says what was guessed: the provider, which sees the files, decides. Its question and
    pinned content over only by them are no refusal (13 invoices by file_id were refused), and
    a history over only by them goes whole (a follow-up to 70 invoices summarized them away);
    one over by what it shows is fitted (or refused) as any other."""
    def fitted(room: int) -> Turn:
        return _prepare_turn(previous, messages, room, counter, policy=policy,
                             restored=restored, client_breakpoints=client_breakpoints, memo=memo)

    unseen = guessed(messages)
    if not unseen.tokens:
        return fitted(budget)
    try:
        turn = fitted(budget)
    except ContextError as refused:
        if refused.kind != "pinned_over_budget":
            raise
        try:
            return _sent_on_guesses(fitted(budget + unseen.tokens), budget, unseen)
        except ContextError:
            raise refused from None  # over by more than the guesses: the refusal it was
    whole = policy.fmt.reply_priming + turn.state.cum[-1]
    if budget < whole <= budget + unseen.tokens:
        return _sent_on_guesses(fitted(budget + unseen.tokens), budget, unseen)
    return turn


def _sent_on_guesses(turn: Turn, budget: int, unseen: Guessed) -> Turn:
    """``turn`` fitted with room for the guesses, its notice saying so."""
    said = (f"ctxlayer: over the budget of {budget} only by costs guessed for what it cannot "
            f"see ({unseen.said}): sent for the provider to decide")
    if turn.notice:
        said += "; " + turn.notice.removeprefix("ctxlayer: ")
    return dataclasses.replace(turn, notice=said)


def _prepare_turn(previous: ConversationState | None, messages: Sequence[Message], budget: int,
                  counter: Tokenizer, *, policy: PreparePolicy = DEFAULT_POLICY,
                  restored: Collection[str] = (), client_breakpoints: int = 0,
                  memo: Memo | None = None) -> Turn:
    """This turn's request fitted into ``budget``, from the previous turn's state (or None)."""
    require_tokens(budget)
    msgs = list(messages)
    if not msgs:
        raise ContextError("invalid", "a conversation needs at least one message",
                           field="messages")
    if previous is not None and _sent_again(previous, msgs, budget, restored):
        return _as_before(previous, client_breakpoints)
    win, same, common, carry = _recognize(previous, msgs, budget, counter, policy)
    restored_at, restored_audit, newly, again = restore(previous if carry else None, win,
                                                         restored, (budget, counter, policy))
    rules = carrying(msgs) if win.total() > budget else set()
    files = attached(msgs)
    stepped = _step(win, budget, counter, policy, set(restored_at.values()), rules, files)
    recalled = _recall(win, common, budget, counter, policy)
    grown = grow_back(win, files, budget, counter, policy)
    kept, keys, out_tokens, dropped, truncated, total = _fit(
        win, budget, counter, policy, set(restored_at.values()), memo, rules, files)
    kept, keys, out_tokens, total = _loop_held(win, kept, keys, out_tokens, total, counter,
                                               policy)
    made = stepped.chunks if stepped is not None else []
    new_summarized = [e for c in made for e in c.audit]
    # an outline a summary then took is audited as summarized only
    taken = {e.index for e in new_summarized}
    outlined = [e for e in (stepped.outlined if stepped else []) if e.index not in taken]
    new_restored = restored_audit[len(restored_audit) - len(newly):]
    told = Told(dropped=(*new_summarized, *dropped),
                truncated=(*outlined, *grown, *truncated),
                restored=(*new_restored, *again, *recalled),
                # the originals' tokens, as the audit says them (not an outline's)
                notice=notice(sum(c.replaced for c in made),
                              sum(e.tokens_before for e in new_summarized), outlined, dropped,
                              truncated, new_restored, budget, len(recalled),
                              next((c.writer for c in made if c.writer != "offline"),
                                   "offline")))
    state = ConversationState(
        messages=msgs, tokens=win.tokens, cum=win.cum, head=win.head, upto=win.upto,
        frontier=win.frontier, chunks=tuple(win.chunks), verbatim=tuple(win.verbatim),
        rewrites=win.rewrites, restored=restored_at, restored_audit=tuple(restored_audit),
        out_keys=keys, out_tokens=out_tokens, dropped=tuple(dropped), total=total,
        facts={i: f for i, f in win.facts.items() if i >= win.upto},
        named={i: f for i, f in win.named.items() if i >= win.upto},
        # a step took its range (or another): what was written ahead is of no more use
        ahead=win.ahead if not made else None,
        sent=tuple(kept), budget=budget, told=told)
    turn = Turn(
        messages=kept, tokens=total, budget=budget, dropped=list(told.dropped),
        truncated=list(told.truncated), restored=list(told.restored),
        compacted=bool(win.chunks), cache_reuse_tokens=_reuse(previous, keys, same),
        breakpoints=_breakpoints(kept, keys, win.upto) if client_breakpoints == 0 else [],
        notice=told.notice, state=state, stepped=stepped is not None)
    if previous is not None and _regrows(previous, turn, budget, policy):
        refit = _refitted(previous, msgs, budget, counter, policy, restored,
                          client_breakpoints, memo)
        if refit.tokens > turn.tokens:
            return refit
    return _told_again(previous, turn, restored) if previous is not None else turn


def _step(win: Window, budget: int, counter: Tokenizer, policy: PreparePolicy,
          restored: set[int], rules: set[int], files: frozenset[int]) -> Step | None:
    """The window stepped when the request is over ``budget`` (`Window.step`), the files the
    client attached and the messages carrying the user's instruction files (``rules``) kept
    whole, the files then shortened when still over (`fit_attached`). None when nothing was
    done."""
    if win.total() <= budget:
        return None
    msgs = win.messages
    keep = _kept_whole(msgs, win.tokens, newest_user(msgs), restored, budget, files | rules)
    stepped = win.step(budget, counter, paced(policy, msgs, win.cum, win.head, budget), keep,
                       rules)
    cut = fit_attached(win, files, budget, counter, policy)
    if not cut:
        return stepped
    return Step([*stepped.outlined, *cut], stepped.chunks) if stepped else Step(cut, [])


def may_refit(state: ConversationState, budget: int) -> bool:
    """Whether a turn after ``state`` at ``budget`` may make its window again (`_regrows`):
    the budget grew past the one ``state``'s result was fitted to, and that result shortened
    something (summaries, outlines, a cut)."""
    return budget > state.budget and bool(state.chunks or state.rewrites or state.dropped)


def _regrows(previous: ConversationState, turn: Turn, budget: int,
             policy: PreparePolicy) -> bool:
    """Whether ``turn``, carried over from ``previous``'s window, is made again at its
    budget: the budget grew and what a smaller one shortened now has the room. Either the
    whole history goes within `target` of the budget (a model with a bigger window holds it
    all), or the result carried takes under `refit_below` of the budget (a window fitted into
    600 tokens kept on sending 527 of 20,000). A budget that only grew a little keeps the
    cached prefix. One not known (a window kept without its result's budget: 0) is judged by
    the same two tests: refitting only to go whole, a chat fitted into 600 and asked at 20,000
    after a restart sent 538 tokens on every turn, its answers saying nothing was cut."""
    # a history resent shorter (a regenerate or an edit from an earlier question): what the
    # longer one's window shortened may fit now, as at a bigger budget (resent up to a question
    # 7 of 14, the window carried sent 427 of 3,000 tokens where the history fits whole)
    # (after a restart the state taken up holds only the messages that agree: its kept length)
    shorter = len(turn.state.messages) < max(len(previous.messages), previous.kept_length) \
        and bool(
        previous.chunks or previous.rewrites or previous.dropped)
    if not (shorter or may_refit(previous, budget)):
        return False
    if policy.fmt.reply_priming + turn.state.cum[-1] <= int(budget * policy.target):
        return True
    return turn.tokens < budget * policy.refit_below


def _refitted(previous: ConversationState, msgs: list[Message], budget: int,
              counter: Tokenizer, policy: PreparePolicy, restored: Collection[str],
              client_breakpoints: int, memo: Memo | None) -> Turn:
    """The turn made again at ``budget`` as a first turn would make it, from ``previous``'s
    counts and facts but none of its window: what it cuts is told as new (what a smaller
    budget cut, and no turn said since, is said again), its cache reuse said against
    ``previous``'s result."""
    bare = ConversationState(messages=previous.messages, tokens=previous.tokens,
                             cum=previous.cum, head=previous.head, upto=previous.head,
                             frontier=previous.head, facts=previous.facts,
                             named=previous.named, budget=budget)  # at it: not made again
    turn = prepare_turn(bare, msgs, budget, counter, policy=policy, restored=restored,
                        client_breakpoints=client_breakpoints, memo=memo)
    same = common_prefix(previous.messages, msgs)
    return dataclasses.replace(turn, stepped=True,
                               cache_reuse_tokens=_reuse(previous, turn.state.out_keys, same))


#: the share of the budget a client's context just before the question may take and stay
#: whole beside it (`_kept_whole`)
CONTEXT_SHARE = 0.05


def _kept_whole(msgs: Sequence[Message], tokens: Sequence[int], q: int, restored: set[int],
                budget: int, whole: Collection[int] = ()) -> Callable[[int], bool]:
    """What a step keeps whole: the newest question (``q``), pinned and ``restored`` messages,
    ``whole`` (the files the client attached, `attached.py`, and the user turns carrying the
    user's instruction files, `rules.py`), and the user turns just before the question that
    are all a client's context (Codex's `<environment_context>`, `own_words`), while short:
    summarized, the first step took it with the first tool calls, and the question lost its
    place in the prefix."""
    context: set[int] = set()
    k, room = q - 1, int(budget * CONTEXT_SHARE)
    while k >= 0 and msgs[k].role == "user" and msgs[k].kind is None \
            and not is_result(msgs[k]) and tokens[k] <= room \
            and not own_words(msgs[k].content).strip():
        context.add(k)
        room -= tokens[k]
        k -= 1
    return lambda i: i == q or msgs[i].pinned or i in restored or i in context or i in whole


def _loop_held(win: Window, kept: list[Message], keys: list, tokens: list[int], total: int,
               counter: Tokenizer, policy: PreparePolicy
               ) -> tuple[list[Message], list, list[int], int]:
    """The fitted result with the summaries inside the newest tool loop put in the tool
    result before them (`held.folded`): a summary there would open a new turn with a step
    that carries no thinking. Returns (messages, keys, tokens, total)."""
    first = win.held
    at = next((k for k, key in enumerate(keys) if result_index(key) == first), None) \
        if first is not None else None
    out, out_keys, out_tokens = held.folded(kept, keys, tokens, at, counter, policy.fmt)
    if len(out) == len(kept):
        return kept, keys, tokens, total
    return out, out_keys, out_tokens, total - sum(tokens) + sum(out_tokens)


def _sent_again(previous: ConversationState, msgs: list[Message], budget: int,
                restored: Collection[str]) -> bool:
    """Whether this request is the previous one again: the same messages, budget and restored
    ids (a client retrying, or regenerating its last answer)."""
    return bool(previous.sent) and previous.budget == budget \
        and len(previous.messages) == len(msgs) \
        and common_prefix(previous.messages, msgs) == len(msgs) \
        and set(restored) == set(previous.restored)


def _as_before(previous: ConversationState, client_breakpoints: int) -> Turn:
    """The previous turn's result again, and what it said: the request is the one that was
    cut, so its answer says so as the first did (`dropped` and the rest are what that turn
    did to this request). Marked ``again``: nothing new was done, so nothing is audited anew.
    The whole result is the previous one: all of it is reused."""
    kept = list(previous.sent)
    told = previous.told or Told((), (), (), None)
    return Turn(messages=kept, tokens=previous.total, budget=previous.budget,
                dropped=list(told.dropped), truncated=list(told.truncated),
                restored=list(told.restored), compacted=bool(previous.chunks),
                cache_reuse_tokens=sum(previous.out_tokens),
                breakpoints=_breakpoints(kept, previous.out_keys, previous.upto)
                if client_breakpoints == 0 else [],
                notice=told.notice, state=previous, stepped=False, again=True)


def _told_again(previous: ConversationState, turn: Turn, restored: Collection[str]) -> Turn:
    """``turn`` as `_as_before` answers the same request sent again, where ``previous`` was
    taken up after a restart from the window of exactly this request (`told_before`), whose
    result is not kept: its result made again from that window, the same as the one sent
    then (each message's identity and count), is told what that was told, marked ``again``.
    Else ``turn`` as it is: it never tells more than the first answer told."""
    if previous.told_before is None:
        return turn
    budget, told = previous.told_before
    st = turn.state
    if turn.stepped or budget != turn.budget or set(restored) != set(previous.restored) \
            or len(st.messages) != len(previous.messages) \
            or common_prefix(previous.messages, st.messages) != len(st.messages) \
            or st.out_keys != previous.out_keys or st.out_tokens != previous.out_tokens:
        return turn
    return dataclasses.replace(
        turn, dropped=list(told.dropped), truncated=list(told.truncated),
        restored=list(told.restored), notice=told.notice, again=True,
        state=dataclasses.replace(st, told=told))


def _recall(win: Window, common: int, budget: int, counter: Tokenizer,
            policy: PreparePolicy) -> list[AuditEntry]:
    """Bring back, with the newest message, the exact lines of earlier summarized or outlined
    messages it names (recall.py), when that fits the budget."""
    msgs, last = win.messages, len(win.messages) - 1
    if common > last or last in win.rewrites or not (win.chunks or win.rewrites):
        return []
    verbatim = set(win.verbatim)

    def shown(i: int) -> str | None:
        if i in win.rewrites:
            return shown_text(win.rewrites[i][0])
        if win.head <= i < win.upto and i not in verbatim:
            return None
        return msgs[i].content

    # only what a step summarized or outlined (before the frontier) or the last resort
    # shortened may be shown other than whole: those, newest first
    edge = min(win.frontier, last)
    candidates = itertools.chain(
        sorted((i for i in win.rewrites if edge <= i < last), reverse=True),
        range(edge - 1, -1, -1))
    # what names the facts: the newest exchange (on a first request, everything is new)
    start = lead_of(msgs, last)
    got = recall(msgs, shown, candidates, max(common, start), budget, counter,
                 policy.recall_share, policy.fmt)
    if got is None or win.total() + got[1] - win.tokens[last] > budget:
        return []
    win.rewrites[last] = got
    return [got[2]]


def _recognize(previous: ConversationState | None, msgs: list[Message], budget: int,
               counter: Tokenizer, policy: PreparePolicy) -> tuple[Window, int, int, bool]:
    """The turn's window: the messages the previous turn had are reused with their counts
    (only the rest is counted), and its window carries over when nothing it summarized
    changed. The newest question's cut (the last resort's) carries over only while the budget
    does not grow: past the one it was cut in (by more than `recut_growth`: a budget that
    wobbles with the calibration or the tools' count keeps it), it is decided afresh from the
    room this turn has (carried, a question cut beside a screenshot stayed at 52 of its 1,663 characters
    once the budget rose from 1,200 to 2,000, 1,135 tokens sent where 1,749 fit it whole).
    At the same budget it stays, as a cut of an older message does: an agent's task cut
    afresh on every request of its loop moved the cached prefix each time (the dev replay's
    reuse fell from 85.4% to 75.0% at 25%, its bill rose from 77.4% to 109.3%). Returns
    (window, messages the very same, messages in common once those shown alike count,
    carried over)."""
    fmt = policy.fmt
    same = common_prefix(previous.messages, msgs) if previous is not None else 0
    if previous is not None and same:
        tokens, cum = previous.tokens[:same], previous.cum[:same + 1]
    else:
        tokens, cum = [], [0]
    for t in messages_tokens(msgs[same:], counter, fmt):  # only the new text is counted
        tokens.append(t)
        cum.append(cum[-1] + t)
    # messages costed anew but shown as before (a turn's thinking no longer read) are shared
    common = alike_prefix(previous.messages, msgs, same) if previous is not None else 0
    head = 0
    while head < len(msgs) and msgs[head].role == "system":
        head += 1
    if previous is None or previous.head != head:
        return Window(msgs, tokens, cum, head, head, [], [], {}, fmt.reply_priming), same, common, False
    changed = _files_changed(previous, msgs, common)
    if (common < previous.upto and changed is None) or _question_summarized(previous, msgs):
        return Window(msgs, tokens, cum, head, head, [], [], {}, fmt.reply_priming), same, common, False
    # the window carries over: what it keeps of a message is kept while that message is the
    # same (files written anew in place: all but them, up to the first other change)
    gone, same_to = changed if changed is not None else (frozenset(), common)
    q = newest_user(msgs) if budget > previous.budget * (1 + policy.recut_growth) else -1

    def kept(i: int) -> bool:
        return i < same_to and i not in gone

    return Window(msgs, tokens, cum, head, previous.upto, list(previous.chunks),
                  list(previous.verbatim),
                  {i: r if i < same else (r[0], r[1] + tokens[i] - previous.tokens[i], r[2])
                   for i, r in previous.rewrites.items()
                   if kept(i) and not (i == q and r[2].action == "truncated")},
                  fmt.reply_priming, min(previous.frontier, same_to),
                  {i: f for i, f in previous.facts.items() if kept(i)},
                  previous.ahead, {i: f for i, f in previous.named.items() if kept(i)}
                  ), same, common, True


def _question_summarized(previous: ConversationState, msgs: list[Message]) -> bool:
    """Whether the window ``previous`` summarized the newest user message of ``msgs`` (or
    every message): a history resent up to a question a later step took into a summary (a
    regenerate or an edit from there) ends where that summary ends, and carried over the
    request was the system prompt and the summary, the question gone."""
    q = newest_user(msgs)
    return len(msgs) <= previous.upto or (
        previous.head <= q < previous.upto and q not in previous.verbatim)


def _files_changed(previous: ConversationState, msgs: list[Message], common: int
                   ) -> tuple[frozenset[int], int] | None:
    """The attached files' messages (`attached.py`) the client wrote anew in place before the
    previous window's verbatim messages, when they are all that changed before those and the
    window shows each whole, beside its summaries (aider sends a file's new contents, edited
    outside it, where the old ones were), and where the messages stop being the same as
    before; None otherwise. The window then carries over, the new contents shown: made again,
    its summaries were written anew, and a question the first ones kept was lost."""
    before, upto = previous.messages, previous.upto
    n = min(len(before), len(msgs))
    if common >= upto or n < upto:
        return None
    shown = set(previous.verbatim)
    out: set[int] = set()
    i = common
    while i < n and (i < upto or msgs[i] == before[i]):  # the tail: as when appended to
        if msgs[i] != before[i]:
            if i not in shown or not (is_attached(msgs[i]) and is_attached(before[i])):
                return None
            out.add(i)
        i += 1
    return frozenset(out), i


def _fit(win: Window, budget: int, counter: Tokenizer, policy: PreparePolicy,
         restored: set[int], memo: Memo | None, rules: set[int] = frozenset(),
         files: frozenset[int] = frozenset()):
    """The result of the window, fitted when even the last group alone is over the budget
    (the attached ``files`` give what is left over once the summaries shrank, `give_over`;
    then the trim engine, with the summaries shrunk into one before they give way; the
    restored messages, those carrying the user's instruction files, ``rules``, and the
    attached files held). Returns (messages, keys, tokens, dropped, truncated, total)."""
    kept, keys, out_tokens = _assemble(win, restored)
    total = win.total()
    if total <= budget:
        return kept, keys, out_tokens, [], [], total
    called = fit_calls(win, kept, keys, out_tokens, budget, counter, policy)
    called += fit_prose(win, kept, keys, out_tokens, budget, counter, policy)
    called += give_over(win, files, budget, counter, policy)
    kept, keys, out_tokens = _assemble(win, restored)
    total = win.total()
    if total <= budget:
        return kept, keys, out_tokens, [], called, total
    floors = at_floors(win, files, counter, policy)
    rules = rules | files
    memo = memo if memo is not None else Memo()  # the attempts shorten the same texts
    for i, named in win.named.items():  # what the step's outlines read, the attempts need not
        memo.get(NAMED, win.messages[i].content, lambda named=named: named)
    first = win.held  # pinned as the question is: it opens the loop
    pinned = restored | {first} if first is not None else restored
    fitted = last_resort(win, kept, keys, out_tokens, budget, counter, policy, pinned, memo,
                          may_shrink=True, rules=rules, floors=floors, opening=first)
    if fitted is None:  # the summaries would have given way: one smaller chunk instead
        spare = outputs_spare(win, kept, keys, out_tokens, budget, counter, policy)
        asked = question_spare(win, kept, keys, out_tokens, budget, counter, policy,
                               restored | rules)
        before = list(win.chunks)
        win.fit_summaries(budget, counter, policy, spare + asked)
        if asked:  # no merge got them small enough for the question's share: cut
            win.cut_summaries(budget, counter, policy, spare + asked)
        called += told_shrunk(before, win.chunks)
        total = win.total()
        kept, keys, out_tokens = _assemble(win, restored)
        if total <= budget:  # the calls and replies cut above stay cut: still told
            return kept, keys, out_tokens, [], called, total
        fitted = last_resort(win, kept, keys, out_tokens, budget, counter, policy, pinned,
                              memo, rules=rules, floors=floors, opening=first)
    assert fitted is not None
    # what the attempts read of the client's outputs, the next turn's step need not read again
    for i in range(win.upto, len(win.messages)):
        m = win.messages[i]
        if is_result(m) and i not in win.named and i not in win.facts:
            read = memo.peek(NAMED, m.content)
            if read is not None:
                win.named[i] = read
    kept, keys, out_tokens, dropped, truncated = fitted
    return (kept, keys, out_tokens, dropped, called + truncated,
            policy.fmt.reply_priming + sum(out_tokens))


def near_budget(state: ConversationState, budget: int,
                policy: PreparePolicy = DEFAULT_POLICY, turns: int = 4) -> bool:
    """Whether the next step is near enough to prepare for: the result passed ``precompact_at``
    of ``budget``, or one more request as big as the biggest of the last ``turns`` would pass
    the budget (a turn that adds a long log jumps from well under the share to over the
    budget, and its step read every fact on the request path). A request starts at an
    assistant message: each brings one reply and what followed it."""
    if state.total >= policy.precompact_at * budget:
        return True
    added = recent_turns(state.messages, state.cum, state.head, turns)
    return state.total + max(added, default=0) > budget


def recent_turns(msgs: Sequence[Message], cum: Sequence[int], head: int,
                 turns: int = 4) -> list[int]:
    """The tokens each of the last ``turns`` turns added, newest first. A turn starts at an
    assistant message: its reply and what followed it."""
    out, end = [], len(msgs)
    for k in range(end - 1, head - 1, -1):
        if msgs[k].role == "assistant":
            out.append(cum[end] - cum[k])
            end = k
            if len(out) == turns:
                break
    return out


def paced(policy: PreparePolicy, msgs: Sequence[Message], cum: Sequence[int], head: int,
          budget: int) -> PreparePolicy:
    """``policy`` for a step of a conversation at its pace: the step's targets lowered by what
    its last turns added a turn beyond ``pace_from`` of the budget, by at most ``pace_most``."""
    added = recent_turns(msgs, cum, head)
    pace = sum(added) / len(added) / budget if added else 0.0
    cut = min(policy.pace_most, pace - policy.pace_from)
    if cut <= 0:
        return policy
    return msgspec.structs.replace(policy, target=policy.target - cut,
                                   summary_target=policy.summary_target - cut)


def warm(state: ConversationState, budget: int, policy: PreparePolicy = DEFAULT_POLICY,
         max_chars: int = 200_000) -> ConversationState | None:
    """The same state with the facts of the messages its next step may summarize read ahead
    of need (at most ``max_chars`` characters a call, oldest first), once the step is near
    (`near_budget`); None when there is nothing to read. Pure, and meant to run between
    requests: the step then finds the facts read. The newest exchange too: no step summarizes
    it while it is the newest, but the next request makes it older, and a long output in that
    request has its step summarize all before it (most of the slowest requests of the replay
    read it on their path)."""
    if not near_budget(state, budget, policy):
        return None
    todo = [i for i in range(state.upto, len(state.messages)) if i not in state.facts]
    if not todo:
        return None
    read = summaries.warm(state.messages, todo, state.facts, max_chars, state.named)
    return dataclasses.replace(state, facts={**state.facts, **read})


@dataclass(frozen=True, slots=True)
class SummaryAsk:
    """What a model is asked to summarize ahead of need: the messages the next step will
    take (``covered``; ``shown`` as the result shows them), in at most ``max_tokens``."""

    covered: tuple[int, ...]
    messages: tuple[Message, ...]  # the client's, at ``covered``: what the answer is keyed by
    shown: list[Message]
    instructions: str
    max_tokens: int
    #: how many of the oldest messages ``shown`` gives as their offline summary, to fit the
    #: summarizing model's ``window`` (`summaries.fit_shown`)
    left_out: int = 0
    window: int | None = None


#: the share of the summarizing model's window its transcript is fitted to: the messages
#: were counted with the chat model's tokenizer, and another model's may count more
SUMMARIZER_WINDOW_SHARE = 0.85


def summary_ahead(state: ConversationState, budget: int,
                  policy: PreparePolicy = DEFAULT_POLICY,
                  window: int | None = None) -> SummaryAsk | None:
    """What a model should summarize for the next step, once it is near (`near_budget`): the
    messages that step is expected to take when the conversation grows as its last turn did
    (`Window.planned`); None when there is nothing
    to take, or a summary of exactly those is in the state already. ``max_tokens``: the size of
    the decided / open part that summary stands in. ``window``: the summarizing model's (less
    what its request asks beyond ``max_tokens``), when it may be smaller than the chat's:
    what is shown to it is fitted to it, its answer and its instructions."""
    if not near_budget(state, budget, policy):
        return None
    msgs = state.messages
    win = Window(msgs, state.tokens, state.cum, state.head, state.upto, list(state.chunks),
                 list(state.verbatim), dict(state.rewrites), policy.fmt.reply_priming,
                 state.frontier)
    q = newest_user(msgs)
    at = set(state.restored.values())
    covered = tuple(win.planned(budget, paced(policy, msgs, state.cum, state.head, budget),
                                _kept_whole(msgs, state.tokens, q, at, budget,
                                            attached(msgs) | carrying(msgs))))
    if not covered:
        return None
    originals = tuple(msgs[i] for i in covered)
    a = state.ahead
    if a is not None and a.covered == covered and a.messages == originals:
        return None
    size = summaries.sizes(policy, win.room(budget, q)).summary
    out = max(32, size // policy.chars_per_token)
    shown, left_out = [summaries.as_read(win.shown(i), msgs[i]) for i in covered], 0
    if window is not None:
        room = (int(window * SUMMARIZER_WINDOW_SHARE) - out
                - len(SUMMARY_INSTRUCTIONS) // policy.chars_per_token)
        shown, left_out = summaries.fit_shown(shown, [win.shown_tokens(i) for i in covered],
                                              room, policy)
    return SummaryAsk(covered, originals, shown, SUMMARY_INSTRUCTIONS, out, left_out,
                      window if left_out else None)


def take_summary(state: ConversationState, ask: SummaryAsk, text: str | None, writer: str,
                 failed: str | None = None) -> ConversationState | None:
    """``state`` keeping a model's answer to ``ask`` (``writer`` names the model) for the step
    that takes exactly those messages, checked as a client's ctx/summarize answer is: an empty
    or off-topic one is refused, and so is one that opens as a refusal ("I'm sorry, but I
    can't..."). A refused or ``failed`` one is kept as such, so the chunk's audit says why
    the offline summary stands in, and it is not asked again. None when ``state`` no longer
    has those messages there."""
    msgs = state.messages
    if any(i >= len(msgs) or msgs[i] != m for i, m in zip(ask.covered, ask.messages,
                                                          strict=True)):
        return None
    why = f"failed: {failed}" if failed is not None else None
    if why is None and text is not None and not isinstance(text, str):
        why = f"was refused: a {type(text).__name__}, not text"
    elif why is None and (text is None or not text.strip()):
        why = "was refused: empty"
    elif why is None and (opening := refusal(text or "")) is not None:
        # it names the topic, so the off-topic check lets it by
        why = f"was refused: a refusal (it opens {opening!r})"
    elif why is None and (overlap := off_topic(text or "", ask.shown)) is not None:
        why = (f"was refused: off-topic (only {overlap:.0%} of its words occur in the text "
               "it replaces)")
    if ask.left_out:  # what it was shown is said, whoever wrote the chunk in the end
        writer = (f"{writer} (shown the oldest {ask.left_out} of the {len(ask.covered)} "
                  f"messages as their offline summary, to fit its window of {ask.window} "
                  "tokens)")
    ahead = Ahead(ask.covered, ask.messages, None if why else text,
                  f"offline (the summary {writer} {why})" if why else writer)
    return dataclasses.replace(state, ahead=ahead)


# --- helpers --------------------------------------------------------------------------------


def _key(win: Window, i: int):
    rw = win.rewrites.get(i)
    return i if rw is None else (i, rw[0])


def _assemble(win: Window, restored: Collection[int]) -> tuple[list[Message], list, list[int]]:
    """The result's messages, their identities (for cache reuse) and tokens; ``restored``: the
    indices of the restored messages."""
    msgs, toks, h, upto = win.messages, win.tokens, win.head, win.upto
    n = len(msgs)
    shown = _order(win, restored)
    kept = [*msgs[:h], *(x[1].message if isinstance(x, tuple) else win.shown(x) for x in shown),
            *msgs[upto:]]
    keys: list = [*range(h), *(("s", x[1].message.content) if isinstance(x, tuple)
                               else _key(win, x) for x in shown), *range(upto, n)]
    out = [*toks[:h], *(x[1].tokens if isinstance(x, tuple) else win.shown_tokens(x)
                        for x in shown), *toks[upto:]]
    offset = h + len(shown) - upto
    for i, rw in win.rewrites.items():
        k = i if i < h else (i + offset if i >= upto else None)
        if k is not None:
            kept[k], keys[k], out[k] = win.shown(i), (i, rw[0]), rw[1]
    return kept, keys, out


def _order(win: Window, restored: Collection[int]) -> list:
    """The messages shown whole among the summarized ones (indices) and the chunks (("s",
    chunk)), in the order the result shows them. One a step kept whole (the question an agent
    was given, a pinned one) goes before the first chunk that stands for messages after it:
    the model reads its task before the work done on it, also when the client put context
    before the task (Codex's `<environment_context>`: the first chunk took it with the work,
    and the task came after two chunks of its own tool calls). A step appends its chunk after
    the messages already shown, so the prefix holds and the question never moves. A restored
    message (and its group) comes after the chunks, in order with those no chunk was made
    after (the last resort is told which is the question: `fit.py`)."""
    back = {k for i in restored for k in win.groups.of(i)} if restored else set()
    waiting = [i for i in win.verbatim if i not in back]
    shown: list = []
    k = 0
    for c in win.chunks:
        # its audit is in conversation order: the last entry is the newest it stands for
        newest = c.audit[-1].index if c.audit else None
        while k < len(waiting) and newest is not None and waiting[k] < newest:
            shown.append(waiting[k])
            k += 1
        shown.append(("s", c))
    return [*shown, *sorted([*waiting[k:], *back.intersection(win.verbatim)])]


def _reuse(previous: ConversationState | None, keys: list, common: int) -> int:
    """Tokens at the start of this result identical to the previous result: up to the first
    message that is not the very same, since one costed anew but shown alike (an earlier
    turn's reasoning, no longer rendered once the user writes again) changes the prompt the
    provider renders from there on (``common``: the leading messages the very same). Counted
    as the whole previous result, a Codex turn after 17,795 tokens said 17.8k reused of a
    request of 15,647."""
    if previous is None:
        return 0
    pk = previous.out_keys
    if common == len(previous.messages) and len(keys) >= len(pk) and keys[:len(pk)] == pk:
        return sum(previous.out_tokens)
    k, m = 0, min(len(pk), len(keys))
    while k < m and pk[k] == keys[k]:
        i = result_index(pk[k])
        if i is not None and i >= common:
            break
        k += 1
    return sum(previous.out_tokens[:k])


def _breakpoints(kept: list[Message], keys: list, upto: int) -> list[int]:
    """Cache breakpoints: the end of the system prompt, the end of what only a step changes
    (summaries and messages shown whole after them), the end of the result."""
    points = []
    sys_end = 0
    while sys_end < len(kept) and kept[sys_end].role == "system":
        sys_end += 1
    if sys_end:
        points.append(sys_end - 1)
    stable = sys_end
    while stable < len(keys) and (result_index(keys[stable]) is None or result_index(keys[stable]) < upto):
        stable += 1
    if stable > sys_end:
        points.append(stable - 1)
    points.append(len(kept) - 1)
    return sorted(set(points))[:4]
