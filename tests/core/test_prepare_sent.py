"""What a turn that did not move its window sent, kept as the change from the window written
(core/prepare/persist.py `Sent`): the first request after a restart says the cache reuse a
daemon that never stopped says, and never more than the prefix its request shares with the
one sent last.

Before, only the window of the last turn that stepped was kept, and the request after a
restart was compared with that older turn's result: 2,086 tokens of reuse said where it
shared 2,761 with the request sent last (tests/lsp/test_prepare_kill_restart.py runs the real
daemon). Random chats here: appends, edits of earlier messages, a request that goes back to
an older chain; after every turn, a restart is compared with the daemon that went on."""

from __future__ import annotations

import random

import msgspec
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ctxlayer.core.prepare import ConversationState, Turn, persist, prepare_turn, resuming
from ctxlayer.core.prepare.model import DEFAULT_POLICY
from ctxlayer.core.tokens import WordTokenizer
from ctxlayer.protocol import Message

WORDS = WordTokenizer()
SYSTEM = Message(role="system", content="Be precise. " * 5)


def _exchange(t: int, rnd: random.Random) -> list[Message]:
    return [Message(role="user", content=f"question {t} " + "ask " * rnd.randint(1, 30)),
            Message(role="assistant", content=f"answer {t} " + "word " * rnd.randint(5, 300))]


def _shared(turn: Turn, before: list[Message]) -> int:
    """The tokens of the leading messages of ``turn``'s result identical to ``before`` as
    sent (a summary's id names the messages it stands for, and is not sent)."""
    k = 0
    while k < min(len(turn.messages), len(before)) and \
            msgspec.structs.replace(turn.messages[k], id=None) == \
            msgspec.structs.replace(before[k], id=None):
        k += 1
    return sum(turn.state.out_tokens[:k])


class _Daemon:
    """The engine as the state layer keeps it: the window written when a turn moved it (or
    does not show the one written), else what the turn sent as the change from it; written
    before the answer but when the turn only went on from the one before (`persist.extends`):
    a kill may lose those writes, and the state folder holds what ``durable`` says."""

    def __init__(self) -> None:
        self.written: ConversationState | None = None
        self.sent: persist.Sent | None = None
        #: (window, sent) as a kill right after the answer leaves them; None: nothing kept
        self.durable: tuple[ConversationState, persist.Sent | None] | None = None
        self.state: ConversationState | None = None
        self.last: list[Message] = []

    def turn(self, msgs: list[Message], budget: int) -> Turn:
        before = self.state
        turn = prepare_turn(self.state, msgs, budget, WORDS)
        self.state, self.last = turn.state, turn.messages
        moved = turn.stepped or turn.restored or turn.truncated or turn.dropped
        if moved or self.written is None or not persist.carries(self.written, turn.state):
            first = self.written is None
            self.written, self.sent = turn.state, None
            if not first or moved:  # waited for
                self.durable = (self.written, None)
        else:
            hashes = persist.hashed(None, turn.state.messages)
            self.sent = persist.decode_sent(persist.encode_sent(persist.sent(
                self.written, turn.state, hashes, 1, WORDS.name)))
            if before is None or not persist.extends(before, turn.state):  # waited for
                self.durable = (self.written, self.sent)
        return turn

    def restarted(self, kept: tuple[ConversationState, persist.Sent | None] | None
                  ) -> persist.Snapshot | None:
        if kept is None:
            return None
        snap = persist.decode(persist.encode(persist.snapshot(kept[0], WORDS.name)))
        assert snap is not None
        return snap if kept[1] is None else persist.as_sent(snap, kept[1])

    def latest(self) -> tuple[ConversationState, persist.Sent | None]:
        assert self.written is not None
        return self.written, self.sent


def _after_restart(snap: persist.Snapshot | None, msgs: list[Message], budget: int) -> Turn:
    start = resuming.resume(snap, msgs, WORDS, DEFAULT_POLICY) if snap is not None else None
    return prepare_turn(start, msgs, budget, WORDS)


def _next(msgs: list[Message], chains: list[list[Message]], t: int, rnd: random.Random,
          action: str) -> list[Message]:
    if action == "edit" and len(msgs) > 2:
        i = rnd.randrange(1, len(msgs))
        edited = Message(role=msgs[i].role, content=msgs[i].content + " (edited)")
        return [*msgs[:i], edited, *msgs[i + 1:], *_exchange(t, rnd)]
    if action == "back" and chains:
        return [*rnd.choice(chains), *_exchange(t, rnd)]
    return [*msgs, *_exchange(t, rnd)]


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(budget=st.integers(min_value=600, max_value=4000),
       actions=st.lists(st.sampled_from(["append"] * 4 + ["edit", "back"]), min_size=4,
                        max_size=20),
       rnd=st.randoms(use_true_random=False))
def test_the_reuse_after_a_restart_is_the_one_said_without(budget, actions, rnd):
    daemon, chains = _Daemon(), []
    msgs = [SYSTEM, *_exchange(0, rnd)]
    daemon.turn(msgs, budget)
    for t, action in enumerate(actions, start=1):
        chains.append(msgs)
        after = _next(msgs, chains, t, rnd, action)
        went_on = prepare_turn(daemon.state, after, budget, WORDS)
        true = _shared(went_on, daemon.last)
        assert went_on.cache_reuse_tokens <= true
        restarted = _after_restart(daemon.restarted(daemon.latest()), after, budget)
        # the same request as the daemon that went on makes (a history resent shorter is made
        # again after a restart too), or one that says no more reuse
        assert restarted.messages == went_on.messages or \
            restarted.cache_reuse_tokens <= went_on.cache_reuse_tokens
        if restarted.messages == went_on.messages and restarted.cache_reuse_tokens:
            # the same request, compared with the same one sent last
            assert restarted.cache_reuse_tokens == went_on.cache_reuse_tokens
        assert restarted.cache_reuse_tokens <= _shared(restarted, daemon.last)
        # what was not waited for lost to a kill: compared with an older turn's, never more
        # than its own request shares with the one sent last
        lost = _after_restart(daemon.restarted(daemon.durable), after, budget)
        assert lost.cache_reuse_tokens <= _shared(lost, daemon.last)
        msgs = after
        daemon.turn(msgs, budget)


def test_a_restart_after_turns_that_only_appended_says_what_they_sent():
    """The case of the report: a step, then turns under the budget that only appended; the
    request after a restart repeats the last one's prefix, and says so."""
    rnd = random.Random(7)
    daemon, msgs = _Daemon(), [SYSTEM, *_exchange(0, rnd)]
    stepped_at = None
    for t in range(1, 60):
        msgs = [*msgs, *_exchange(t, rnd)]
        turn = daemon.turn(msgs, 3000)
        if turn.stepped:
            stepped_at = t
        elif stepped_at is not None and t - stepped_at >= 2:
            break
    assert stepped_at is not None and daemon.sent is not None
    after = [*msgs, Message(role="user", content="And the tests?")]
    went_on = prepare_turn(daemon.state, after, 3000, WORDS)
    assert not went_on.stepped
    restarted = _after_restart(daemon.restarted(daemon.latest()), after, 3000)
    assert restarted.messages == went_on.messages
    assert restarted.cache_reuse_tokens == went_on.cache_reuse_tokens \
        == _shared(went_on, daemon.last) > 0
    # the window alone (as before): the step's turn, two turns older
    alone = _after_restart(daemon.restarted((daemon.written, None)), after, 3000)
    assert alone.cache_reuse_tokens < restarted.cache_reuse_tokens


def test_what_was_sent_and_the_window_must_fit_together():
    """A record that does not fit the window read with it (another window's, a damaged
    one) leaves the window as it is: a cache, never a reason to fail."""
    rnd = random.Random(3)
    daemon, msgs = _Daemon(), [SYSTEM, *_exchange(0, rnd)]
    for t in range(1, 4):
        msgs = [*msgs, *_exchange(t, rnd)]
        daemon.turn(msgs, 100_000)
    assert daemon.sent is not None
    snap = daemon.restarted((daemon.written, None))
    assert snap is not None
    wrong = persist.Sent(**{**{f: getattr(daemon.sent, f) for f in daemon.sent.__struct_fields__},
                            "since": len(snap.hashes) + 5})
    assert persist.as_sent(snap, wrong) is snap
    assert persist.decode_sent(b"{not json") is None


def test_a_history_resent_shorter_after_a_restart_is_made_as_without_one():
    """A chat at 1,110 tokens whose step outlined an answer, then a request that goes back
    to the history before that step (fitting whole): the daemon that went on sends the answer
    whole (a history resent shorter is fitted anew, `engine._regrows`); after a restart the
    state taken up held only the messages that agree, the request was not known as shorter,
    and the outline was sent again (266 tokens where the 414 of the whole history fit)."""
    rnd = random.Random(5)
    daemon, msgs = _Daemon(), [SYSTEM, *_exchange(0, rnd)]
    before = None  # the history up to the first message a step outlined
    for t in range(1, 40):
        msgs = [*msgs, *_exchange(t, rnd)]
        turn = daemon.turn(msgs, 1110)
        if turn.state.rewrites and not turn.state.chunks:
            first = min(turn.state.rewrites)
            before = msgs[:first + 1 + (msgs[first].role == "user")]
            break
    assert before is not None and sum(WORDS.count(m.content) for m in before) < 900
    after = [*before, Message(role="user", content="Back to this, please.")]
    went_on = prepare_turn(daemon.state, after, 1110, WORDS)
    restarted = _after_restart(daemon.restarted(daemon.latest()), after, 1110)
    assert [m.content for m in went_on.messages] == [m.content for m in after]  # whole
    assert restarted.messages == went_on.messages
