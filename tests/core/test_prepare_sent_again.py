"""The same request sent again (a client retrying, an editor regenerating the last answer) is
told what the first answer told: the request it sends is the one that was cut.

Before: the engine gave the previous result again with `notice` None and empty `dropped` /
`truncated`, so a retry of a request that summarized 15 messages read "nothing was cut"."""

from __future__ import annotations

from ctxlayer.core.prepare import prepare_turn, told_anew
from ctxlayer.core.tokens import WordTokenizer
from ctxlayer.protocol import Message


def chat(n: int = 20) -> list[Message]:
    return [Message(role="system", id="sys", content="be careful " * 10),
            *(Message(role="user" if i % 2 == 0 else "assistant", id=f"m{i}",
                      content=f"MSG{i} " + "lorem ipsum dolor " * 40) for i in range(n))]


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
