"""The same request sent again (a client retrying, an editor regenerating the last answer) is
told what the first answer told: the request it sends is the one that was cut.

Before: the engine gave the previous result again with `notice` None and empty `dropped` /
`truncated`, so a retry of a request that summarized 15 messages read "nothing was cut". And a
window kept across a restart did not keep what its turn told: the same request taken up from
it was told nothing again."""

from __future__ import annotations

import msgspec
import pytest

from ctxlayer.core.prepare import DEFAULT_POLICY, persist, prepare_turn, resuming, told_anew
from ctxlayer.core.tokens import WordTokenizer
from ctxlayer.protocol import Message


def chat(n: int = 20, long_answers: bool = False) -> list[Message]:
    """``long_answers``: each answer ten times as long (the newest one is then shortened)."""
    return [Message(role="system", id="sys", content="be careful " * 10),
            *(Message(role="user" if i % 2 == 0 else "assistant", id=f"m{i}",
                      content=f"MSG{i} " + "lorem ipsum dolor " * (
                          400 if long_answers and i % 2 else 40)) for i in range(n))]


def restarted(snap: persist.Snapshot, msgs: list[Message]):
    """The state a turn after a restart starts from: ``snap`` written and read back."""
    kept = persist.decode(persist.encode(snap))
    assert kept is not None
    return resuming.resume(kept, msgs, WordTokenizer(), DEFAULT_POLICY)


def test_a_cut_request_sent_again_is_told_what_was_cut_again():
    msgs = chat()
    first = prepare_turn(None, msgs, 1200, WordTokenizer())
    assert first.notice is not None and "summarized" in first.notice
    assert first.dropped
    again = prepare_turn(first.state, msgs, 1200, WordTokenizer())
    assert again.again and not first.again
    assert again.messages == first.messages
    assert again.notice == first.notice
    assert again.dropped == first.dropped and again.truncated == first.truncated
    assert again.restored == first.restored
    # the whole result is the one sent before: all of it may come from the provider's cache
    assert again.cache_reuse_tokens == sum(first.state.out_tokens)
    # and a third time, from the state the second handed on
    third = prepare_turn(again.state, msgs, 1200, WordTokenizer())
    assert third.notice == first.notice and third.dropped == first.dropped


def test_a_request_sent_again_after_an_uncut_turn_still_says_nothing():
    msgs = chat(30)
    first = prepare_turn(None, msgs[:25], 1200, WordTokenizer())
    second = prepare_turn(first.state, msgs[:27], 1200, WordTokenizer())
    assert second.notice is None or "summarized" in second.notice
    again = prepare_turn(second.state, msgs[:27], 1200, WordTokenizer())
    # what the turn that made this result said, no more and no less
    assert again.notice == second.notice and again.dropped == second.dropped


def test_a_branch_sent_again_is_told_what_its_first_turn_was_told():
    msgs = chat()
    turn = told_anew(prepare_turn(None, msgs, 1200, WordTokenizer()))
    again = prepare_turn(turn.state, msgs, 1200, WordTokenizer())
    assert again.dropped == turn.dropped and again.truncated == turn.truncated


@pytest.mark.parametrize("long_answers", [False, True])
def test_sent_again_after_a_restart_is_told_what_was_cut(long_answers):
    msgs = chat(long_answers=long_answers)
    first = prepare_turn(None, msgs, 1200, WordTokenizer())
    assert first.dropped and bool(first.truncated) == long_answers
    again = prepare_turn(restarted(persist.snapshot(first.state), msgs), msgs, 1200,
                         WordTokenizer())
    assert again.again and again.messages == first.messages
    assert (again.notice, again.dropped, again.truncated, again.restored) == \
        (first.notice, first.dropped, first.truncated, first.restored)
    # the next retry, with no restart, from the state it handed on
    third = prepare_turn(again.state, msgs, 1200, WordTokenizer())
    assert third.again and third.notice == first.notice


def test_after_a_restart_another_request_is_a_turn_of_its_own():
    """Never told more than the first answer: not at another budget, not with a message
    more, not from a window written before what a turn told was kept (an older row)."""
    msgs = chat()
    first = prepare_turn(None, msgs, 1200, WordTokenizer())
    snap = persist.snapshot(first.state)
    other = prepare_turn(restarted(snap, msgs), msgs, 1300, WordTokenizer())
    assert not other.again and other.notice != first.notice
    more = [*msgs, Message(role="assistant", id="a", content="ok")]
    went_on = prepare_turn(restarted(snap, more), more, 1200, WordTokenizer())
    assert not went_on.again and went_on.notice is None
    older = msgspec.json.decode(persist.encode(snap), type=dict)
    del older["told"]
    kept = persist.decode(msgspec.json.encode(older))
    assert kept is not None and kept.told is None
    plain = prepare_turn(resuming.resume(kept, msgs, WordTokenizer(), DEFAULT_POLICY), msgs,
                         1200, WordTokenizer())
    assert not plain.again and plain.notice is None
