"""A chat that takes over another chat's window (a fork, `told_anew`) is told in its notice
what that window cut, not only in its `truncated` and `dropped` lists.

Before: a chat taking over a window that outlined a 117,860-token log listed the outline in
`truncated` while its notice was None (its own turn cut nothing anew)."""

from __future__ import annotations

from test_prepare_budget_grew import job

from ctxlayer.core.prepare import prepare_turn, told_anew
from ctxlayer.core.tokens import WordTokenizer
from ctxlayer.protocol import Message


def test_a_chat_taking_over_a_window_that_shortened_a_log_is_told_so_in_its_notice():
    counter = WordTokenizer()
    other = prepare_turn(None, job(), 600, counter)
    msgs = [*job(), Message(role="assistant", id="n", content="noted"),
            Message(role="user", id="x", content="next")]
    fork = told_anew(prepare_turn(other.state, msgs, 600, counter))
    assert [e.message_id for e in fork.truncated] == ["t"]
    assert fork.notice is not None and "shortened 1 message" in fork.notice


def test_a_chat_taking_over_a_window_that_summarized_is_told_how_many_messages():
    msgs = [Message(role="user" if i % 2 == 0 else "assistant", id=f"m{i}",
                    content=f"MSG{i} " + "lorem ipsum dolor " * 40) for i in range(21)]
    other = prepare_turn(None, msgs, 1200, WordTokenizer())
    assert other.dropped
    more = [*msgs, Message(role="assistant", id="r", content="ok"),
            Message(role="user", id="q", content="and?")]
    fork = told_anew(prepare_turn(other.state, more, 1200, WordTokenizer()))
    summarized = [e for e in fork.dropped if e.action == "summarized"]
    assert summarized and fork.notice is not None
    assert f"summarized {len(summarized)} older messages" in fork.notice, fork.notice
