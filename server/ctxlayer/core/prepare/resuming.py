"""Taking a kept window up again (persist.py keeps its bytes): the state the first request
after a restart starts from, so that request starts with the same prefix as before.

A window is taken up when the request starts with the messages its summaries stand for, as
far as they agree (an outline of a message changed since is dropped; an attached file's
message the window showed whole, written anew in place, need not agree: aider sends a file's
new contents where the old ones were), else its window starts afresh: what an unrestarted
turn would take over of its previous window. Either way the turn says its cache reuse against
the result kept, as far as the messages agree (an edit of a named chat's first question
reuses its system prompt, as without the restart). The messages' counts are taken over when
the same counter made them; under another counter the messages are counted again. A rewrite
keeps the tokens it was counted at. A message that differs from the window's only in what
its parts cost agrees with it by its `shapes` hash: it is counted again, its outline's count
moved alike. The summary kept ahead is taken up when the messages it was written for are
there, and what the window's turn told is told again to that very request only.
Of several kept windows (a family's, the forks a new chat may start from) the one a request
agrees with the furthest is taken up (`resume_best`); a window read only for what judging
that needs (`persist.KeptWindow`: its hashes) is decoded whole once it is the one.
Pure: no I/O (the state reads the bytes).
"""

from __future__ import annotations

from collections.abc import Sequence

from ctxlayer.core.prepare.aider_files import is_attached
from ctxlayer.core.prepare.model import (
    Ahead,
    ConversationState,
    PreparePolicy,
    Told,
    alike_prefix,
    common_prefix,
)
from ctxlayer.core.prepare.persist import (
    Agreeing,
    KeptAhead,
    KeptWindow,
    Snapshot,
    asked_hashes,
    counted_by,
    message_hash,
    shape_hash,
)
from ctxlayer.core.tokens import Tokenizer, message_tokens
from ctxlayer.protocol import Message


def resume_best(snaps: Sequence[Snapshot | KeptWindow], messages: list[Message],
                counter: Tokenizer, policy: PreparePolicy,
                beyond: ConversationState | None = None, least: int | None = None,
                times: int = 1) -> tuple[int, ConversationState] | None:
    """(which snapshot, the state `resume` makes of it) for the snapshot that agrees with
    ``messages`` the furthest (of a family's kept windows: a chat's, its sub-agents', its
    forks'), the first of them on a tie; with ``beyond`` (the state of the live chat this
    request edits), only one that agrees with them further than ``times`` as far as that
    state does (twice for a request that extends it: `identity.far_past`; as far as a
    kept window's agreement is measured, `_carried`), and so message for message: in
    memory that window's chain would be a chat of the family, and the request goes on in
    it only so (`identity.best_match`; aider's /clear after a restart took the window of
    the chat's chain from before the restart, which agreed further only by its files
    message written anew in the same place, and the chat went on under that fork's id).
    None when
    none can be taken up. Never one that agrees with them on its system prompt alone: that
    is another chat of the same client (its turn goes on under the window's id, and wrote
    its window over that chat's); ``least``: the fewest that must agree instead (0 for the
    conversation the client named, which this request is a turn of however little of it
    agrees: an edit of its first question; 1 for a new chat that starts from another's window,
    a fork). One that agrees with them short of what its summaries stand for is taken up as
    an edit (`resume`'s ``edit``): an unrestarted chat edited so compares its result with the
    one before (its system prompt reused), under its id. Each message hashed once. A
    `KeptWindow` is judged by what it was read for (`KeptWindow.agreeing`) and decoded whole
    only when it is the one: one that does not decode whole is passed over, as if never
    read (the next that agrees as far, or less far, is taken)."""
    hashes: list[str] = []
    most = times * _carried(beyond, messages) if beyond is not None else -1
    # and message for message, as the chat's chains are compared in memory
    plain = times * common_prefix(beyond.messages, messages) if beyond is not None else -1
    reached: list[tuple[int, int]] = []  # (-how far, which) of those that may be taken up
    for n, snap in enumerate(snaps):
        seen = snap.agreeing if isinstance(snap, KeptWindow) else snap
        same = _agreement(seen, messages, hashes)
        k, _ = _reach(seen, messages, same)
        if k > most and same > plain and k >= (seen.head + 1 if least is None else least):
            reached.append((-k, n))
    for _, n in sorted(reached):  # the furthest first, the first of them on a tie
        snap = snaps[n]
        whole = snap.whole() if isinstance(snap, KeptWindow) else snap
        if whole is not None:
            state = resume(whole, messages, counter, policy, hashes, edit=True)
            return (n, state) if state is not None else None
    return None


def goes_on(windows: Sequence[Snapshot | KeptWindow], messages: list[Message],
            system: bool = False) -> int | None:
    """Which of ``windows`` (the most recent first) ``messages`` go on from however little of
    it they agree with: they carry its turn's last user message (`Snapshot.asked`), answered,
    the rule an unrestarted chat goes on by (`identity.goes_on`: its first question edited in
    place, aider's files message written anew); with ``system``, only a window whose system
    prompt is theirs. None when none does. A fork (a chat that shares another's opening and
    goes its own way) carries none of that chat's last question, and its window is not
    taken. Of several, the one they agree with the furthest (`_reach`), the most recent of
    those: the chain an edit left behind carries its own last question too (aider's chat
    before its files moved after an edit), and, kept as the edit came, it may be the more
    recent window; in memory that chain is left behind, never the chat going on (after a
    restart the chat went on under the fork's id, its window summarized afresh)."""
    answered = asked_hashes(messages)
    if not answered:  # a first request: nothing of a chat it could go on from
        return None
    head = next((i for i, m in enumerate(messages) if m.role != "system"), len(messages))
    opening = [message_hash(m) for m in messages[:head]] if system else []
    hashes: list[str] = []
    best: tuple[int, int] | None = None  # (how far, which)
    for n, window in enumerate(windows):
        seen = window.agreeing if isinstance(window, KeptWindow) else window
        if seen.asked in answered and (not system or seen.hashes[:seen.head] == opening):
            k, _ = _reach(seen, messages, _agreement(seen, messages, hashes))
            if best is None or k > best[0]:
                best = (k, n)
    return None if best is None else best[1]


def opens_as(windows: Sequence[Snapshot | KeptWindow], messages: list[Message]) -> int | None:
    """Which of ``windows`` (the most recent first) has ``messages``' system prompt, the
    first listed (a chain an edit left behind, kept as the edit came, may be more recent
    than its chat's window); None when none has: the chat a history its client's compaction
    wrote goes on in (`identity.compacted`), as in memory the most recent chat with its
    system prompt (aider's restored history opens with its summary, where the chat's turns
    were)."""
    head = next((i for i, m in enumerate(messages) if m.role != "system"), len(messages))
    opening = [message_hash(m) for m in messages[:head]]
    for n, window in enumerate(windows):
        if isinstance(window, KeptWindow) and not window.listed:
            continue
        seen = window.agreeing if isinstance(window, KeptWindow) else window
        if seen.head == head and seen.hashes[:seen.head] == opening:
            return n
    return None


def _carried(state: ConversationState, messages: list[Message]) -> int:
    """How far ``messages`` agree with the live chat's ``state``, measured as `_reach`
    measures a kept window's agreement or further: past the messages that differ only in
    what their parts cost, and past every attached file's message the client wrote anew in
    place (a file's new contents where the old ones were: the same chat, summarized or
    not). Measured only to the first change, an aider chat whose files message changed (an
    /add) right after a restart took the window of its own chain before its /clear or its
    rewind, which reached past the files message: a conversation of its own, its later turns
    sent as a summary, where the chat in memory went on in its own window."""
    before = state.messages
    k, n = alike_prefix(before, messages, common_prefix(before, messages)), \
        min(len(before), len(messages))
    while k < n and is_attached(before[k]) and is_attached(messages[k]):
        k = alike_prefix(before, messages, k + 1)
    return k


def _holds(snap: Snapshot, k: int) -> bool:
    """Whether a window can be taken up by a turn whose first ``k`` messages agree with it:
    every message its summaries stand for is among them."""
    return k >= snap.upto and k >= snap.head


def _agreement(snap: Snapshot | Agreeing, messages: list[Message], hashes: list[str]) -> int:
    """How many leading messages agree with the snapshot's; ``hashes`` holds the messages'
    hashes taken so far, and grows as far as this look needs."""
    k, n = 0, min(len(snap.hashes), len(messages))
    while k < n:
        if k == len(hashes):
            hashes.append(message_hash(messages[k]))
        if hashes[k] != snap.hashes[k]:
            break
        k += 1
    return k


def _alike(snap: Snapshot | Agreeing, messages: list[Message], k: int) -> int:
    """How far the messages agree with the snapshot's past the first ``k`` (equal), counting
    those that differ only in what their parts cost."""
    n = min(len(snap.shapes), len(messages))
    while k < n and (snap.shapes[k] or snap.hashes[k]) == (shape_hash(messages[k]) or
                                                           message_hash(messages[k])):
        k += 1
    return k


def _reach(snap: Snapshot | Agreeing, messages: list[Message], same: int) -> tuple[int, frozenset[int]]:
    """How far ``messages`` agree with the snapshot's past the first ``same`` (equal), as
    `_alike`, and past the attached files' messages its window showed whole among the
    summarized ones that the client wrote anew in place (those returned beside), as an
    unrestarted turn carries its window over them (`engine._files_changed`). Before, a restart
    between a file's edit and aider's next request started the chat afresh, its summaries
    written anew."""
    k, files, changed = _alike(snap, messages, same), set(snap.attached), set()
    while k < min(snap.upto, len(messages)) and k in files and is_attached(messages[k]):
        changed.add(k)
        k = _alike(snap, messages, k + 1)
    return k, frozenset(changed)


def _tuples(key):
    """A result key as JSON gave it back (lists) as the engine makes it (tuples, at any
    depth: a rewrite of a call's arguments is a tuple within the key)."""
    return tuple(_tuples(k) for k in key) if isinstance(key, list) else key


def resume(snap: Snapshot, messages: list[Message], counter: Tokenizer,
           policy: PreparePolicy, hashes: list[str] | None = None, edit: bool = False
           ) -> ConversationState | None:
    """The state a turn takes as its previous one, when ``messages`` start with the messages
    the snapshot's summaries stand in for (up to its ``upto``; the attached files shown whole
    among them may be written anew, `_reach`); None otherwise, but with ``edit``: then the
    state of the messages that agree, whose window the turn does not carry over (it starts
    afresh, as an unrestarted turn after such an edit) but whose result it says its cache
    reuse against. The previous
    result is known as far as the two agree, and a message outlined there that changed since
    is no longer (as an unrestarted turn takes over its previous window: the same request
    after an edit got another result once the daemon had restarted). ``hashes``: the leading
    messages' `message_hash`, as far as an earlier look took them (extended here)."""
    same = _agreement(snap, messages, [] if hashes is None else hashes)
    k, changed = _reach(snap, messages, same)
    if not edit and not _holds(snap, k):
        return None
    shown = messages[:k]
    kept = bool(snap.counted_with) and snap.counted_with == counted_by(counter.name, policy.fmt) \
        and len(snap.tokens) >= k
    if kept:  # the same messages (by hash), counted by the same counter; the alike counted
        # again, and the files written anew (the messages after them agree by hash unless
        # their shapes do: an aider chat's whole history comes after its files)
        tokens = snap.tokens[:same] + [
            snap.tokens[i] if i not in changed and i < len(snap.shapes) and not snap.shapes[i]
            else message_tokens(m, counter, policy.fmt) for i, m in enumerate(shown[same:], same)]
    else:
        tokens = [message_tokens(m, counter, policy.fmt) for m in shown]
    # an outline of a message costed anew moves with it (where the old count is known)
    rewrites = {i: rw if i < same else (rw[0], rw[1] + tokens[i] - snap.tokens[i], rw[2])
                for i, rw in snap.rewrites.items()
                if i < (k if kept else same) and i not in changed}
    # the result is known as far as it stood for messages that still agree: up to the first
    # file written anew
    known = min(changed, default=k)
    cum = [0]
    for t in tokens:
        cum.append(cum[-1] + t)
    keys: list = []
    for key in snap.out_keys:  # as far as the result stood for messages that still agree
        key = _tuples(key)
        i = key if isinstance(key, int) else (key[0] if isinstance(key[0], int) else None)
        if i is not None and i >= known:
            break
        keys.append(key)
    return ConversationState(
        messages=list(shown), tokens=tokens, cum=cum, head=snap.head, upto=snap.upto,
        frontier=min(snap.frontier, k), chunks=tuple(snap.chunks),
        verbatim=tuple(snap.verbatim),
        rewrites=rewrites,
        restored=dict(snap.restored), restored_audit=tuple(snap.restored_audit),
        out_keys=keys, out_tokens=list(snap.out_tokens[:len(keys)]),
        # the budget its result was fitted to: taken up as 0, a result under half of its
        # budget was made again at the same budget, the retry after a restart sent a body
        # the provider had not cached (`engine._regrows`)
        budget=snap.told.budget if snap.told is not None else 0,
        ahead=_taken_ahead(snap.ahead, shown), told_before=_told_before(snap, messages, same),
        kept_length=len(snap.hashes))


def _told_before(snap: Snapshot, messages: list[Message], same: int) -> tuple[int, Told] | None:
    """What the snapshot's turn told, when ``messages`` are exactly that turn's (``same``:
    how many agree by hash): only its own request may be told it again."""
    t = snap.told
    if t is None or same != len(messages) or same != len(snap.hashes):
        return None
    return t.budget, Told(tuple(t.dropped), tuple(t.truncated), tuple(t.restored), t.notice)


def _taken_ahead(kept: KeptAhead | None, messages: list[Message]) -> Ahead | None:
    """The summary kept ahead, when ``messages`` hold the ones it was written for there."""
    if kept is None or len(kept.covered) != len(kept.hashes):
        return None
    if any(i >= len(messages) or message_hash(messages[i]) != h
           for i, h in zip(kept.covered, kept.hashes, strict=True)):
        return None
    return Ahead(tuple(kept.covered), tuple(messages[i] for i in kept.covered), kept.text,
                 kept.writer)
