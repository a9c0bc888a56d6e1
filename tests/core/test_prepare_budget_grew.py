"""A live chat whose budget grows (a bigger model, a budget set higher) is fitted again to the
new budget: outlines grow back and summaries are undone where the room allows, and the answer
says what is still cut. A budget that holds, or grows only a little, keeps the cached prefix.

Before: once a small budget had shortened the window, it was carried over whatever the
budget: a log outlined to 586 tokens at 600 went on at 586 tokens of 2,000 and of 20,000 (3%),
its answers saying nothing was cut; a chat once fitted into 300 sent 135-177 tokens of 4,000
on every later turn, where the same chat at 4,000 from the start sent 2,780-2,822.
"""

from __future__ import annotations

from ctxlayer.core.prepare import prepare_turn
from ctxlayer.core.tokens import WordTokenizer
from ctxlayer.protocol import Message, ToolCall

LOG = "\n".join(f"{i}: INFO processing item {i} ok value={i * 7}" for i in range(8000))


def job() -> list[Message]:
    """A user's ask, one tool call and its huge log."""
    return [Message(role="user", id="u", content="run the job"),
            Message(role="assistant", id="a", content="",
                    tool_calls=[ToolCall(id="c1", name="run", arguments="{}")]),
            Message(role="tool", id="t", tool_call_id="c1", content=LOG)]


def chat(turns: int = 12) -> list[Message]:
    msgs = [Message(role="system", id="sys", content="sys")]
    for t in range(turns):
        msgs += [Message(role="user", id=f"u{t}", content=f"task {t} " + "u " * 200),
                 Message(role="assistant", id=f"a{t}", content=f"done {t} " + "a " * 200)]
    return [*msgs, Message(role="user", id="q", content="final question")]


def more(msgs: list[Message], turn: int) -> list[Message]:
    return [*msgs, Message(role="assistant", id=f"r{turn}", content=f"reply {turn}"),
            Message(role="user", id=f"m{turn}", content=f"more {turn}")]


def test_an_outline_made_for_a_small_budget_grows_back_when_the_budget_grows():
    counter = WordTokenizer()
    turn = prepare_turn(None, job(), 600, counter)
    assert turn.truncated and turn.tokens > 300
    for budget in (2000, 20000):
        turn = prepare_turn(turn.state, job(), budget, counter)
        fresh = prepare_turn(None, job(), budget, counter)
        assert turn.messages == fresh.messages and turn.tokens == fresh.tokens
        assert turn.tokens >= budget // 2, (budget, turn.tokens)
        # the log is still cut, and the answer says so
        assert [e.message_id for e in turn.truncated] == ["t"]
        assert turn.notice is not None and "shortened 1 message" in turn.notice
        assert turn.stepped and not turn.again


def test_a_chat_once_fitted_into_a_tiny_budget_uses_a_bigger_one_as_if_it_had_always_had_it():
    counter = WordTokenizer()
    control, raised = None, prepare_turn(None, chat(), 300, counter).state
    msgs = chat()
    for turn in range(4):
        ours = prepare_turn(raised, msgs, 4000, counter)
        theirs = prepare_turn(control, msgs, 4000, counter)
        assert ours.messages == theirs.messages and ours.tokens == theirs.tokens, turn
        assert ours.tokens >= 2000
        if turn == 0:  # the summaries the refit made are told
            assert ours.dropped and ours.notice and "summarized" in ours.notice
        raised, control, msgs = ours.state, theirs.state, more(msgs, turn)


def test_the_refit_says_what_of_the_previous_result_it_still_reuses():
    counter = WordTokenizer()
    first = prepare_turn(None, chat(), 300, counter)
    raised = prepare_turn(first.state, chat(), 4000, counter)
    # the system message opens both results
    assert 0 < raised.cache_reuse_tokens < first.tokens


def test_a_budget_that_grows_a_little_keeps_the_window_and_its_cached_prefix():
    counter = WordTokenizer()
    first = prepare_turn(None, chat(), 4000, counter)
    assert first.dropped
    msgs = more(chat(), 0)
    grown = prepare_turn(first.state, msgs, 4100, counter)
    assert not grown.stepped and not grown.dropped and grown.notice is None
    assert grown.cache_reuse_tokens == sum(first.state.out_tokens)
