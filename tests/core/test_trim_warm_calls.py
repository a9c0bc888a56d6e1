"""The warm path over tool calls long by their arguments (trim/calls.py): what a call's
arguments cost is read once, with the message (`Work.arguments`, kept by the TrimCache for the
messages a re-trim shares with the last one), and a re-trim that takes it over returns exactly
what a cold trim of the same input returns, whatever was appended, edited or cut."""

from __future__ import annotations

import json

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ctxlayer.core.errors import ContextError
from ctxlayer.core.memo import Memo
from ctxlayer.core.tokens import CountCache, WordTokenizer
from ctxlayer.core.trim import TrimCache, TrimOptions, calls, trim
from ctxlayer.protocol import Message, ToolCall

COUNTER = CountCache(WordTokenizer())


def _step(k: int, words: int, output: int, pinned: bool = False) -> list[Message]:
    """A call writing ``words`` words through its arguments, and its result."""
    arguments = json.dumps({"path": f"f{k}.txt", "text": " ".join(f"w{j}" for j in range(words))})
    return [Message(role="assistant", id=f"a{k}", content=f"writing f{k}", pinned=pinned,
                    tool_calls=[ToolCall(id=f"c{k}", name="write", arguments=arguments)]),
            Message(role="tool", id=f"t{k}", tool_call_id=f"c{k}",
                    content=" ".join(f"o{j}" for j in range(output)))]


@st.composite
def _chats(draw) -> list[list[Message]]:
    """A chat of questions, answers and calls long or short by their arguments, and its next
    turns: a question appended, the last message another, an edit, the oldest gone, a step."""
    chat: list[Message] = []
    for k in range(draw(st.integers(1, 10))):
        chat.append(Message(role="user", id=f"u{k}", content=" ".join(
            f"q{j}" for j in range(draw(st.integers(1, 80))))))
        chat += _step(k, draw(st.integers(0, 700)), draw(st.integers(1, 300)),
                      pinned=draw(st.integers(0, 7)) == 0)
    out = [chat]
    for t in range(draw(st.integers(1, 4))):
        how = draw(st.sampled_from(["question", "question", "another", "edit", "cut", "step"]))
        if not chat:
            how = "step"
        if how == "step":
            chat = [*chat, *_step(100 + t, draw(st.integers(0, 700)), draw(st.integers(1, 300)))]
        elif how == "another":
            chat = [*chat[:-1], Message(role="user", id="q", content=f"again {t}")]
        elif how == "edit":
            k = draw(st.integers(0, len(chat) - 1))
            chat = [*chat[:k], *_step(200 + t, draw(st.integers(0, 700)), 5)[:1], *chat[k + 1:]]
        elif how == "cut":
            chat = chat[draw(st.integers(1, len(chat))):]
        else:
            chat = [*chat, Message(role="user", id=f"n{t}", content=f"and now {t}?")]
        out.append(chat)
    return out


def _outcome(msgs, budget, options, **caches):
    try:
        r = trim(msgs, budget, COUNTER, options=options, **caches)
    except ContextError as e:
        return ("error", str(e))
    return (r.messages, r.tokens, r.dropped, r.truncated)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(chats=_chats(), budget=st.integers(1, 4000), cap=st.sampled_from([None, 40, 120]),
       strategy=st.sampled_from(["pipeline", "priority"]), outline=st.booleans())
def test_warm_trims_of_calls_long_by_their_arguments_equal_cold(chats, budget, cap, strategy,
                                                                   outline):
    options = TrimOptions(strategy=strategy, tool_output_cap=cap, outline_calls=outline)
    memo, cache = Memo(), TrimCache()
    for chat in chats:
        assert _outcome(chat, budget, options, memo=memo, cache=cache) == \
            _outcome(chat, budget, options)


def test_a_re_trim_reads_what_the_shared_calls_arguments_cost_from_the_cache(monkeypatch):
    """The calls in reach are each asked what their arguments cost (the estimate of the
    window, the candidates of the shortening): read from `Work.arguments`, counted with the
    message, where a re-trim of 1M tokens asked it of each of its 37 calls twice a turn, a
    lookup in a column of facts each. A call whose arguments are outlined anew reads them."""
    chat = []
    for k in range(6):
        chat += [Message(role="user", id=f"u{k}", content=f"question {k} " * 20),
                 *_step(k, 400, 60)]
    read: list[int] = []
    real = calls._arguments
    monkeypatch.setattr(calls, "_arguments", lambda w, i: read.append(i) or real(w, i))
    memo, cache = Memo(), TrimCache()
    first = trim([*chat, Message(role="user", id="q", content="so?")], 1500, COUNTER,
                 memo=memo, cache=cache)
    assert any(e.reason.startswith(calls.OUTLINED) for e in first.truncated)
    read.clear()
    grown = [*chat, Message(role="user", id="q", content="and now?")]
    warm = trim(grown, 1500, COUNTER, memo=memo, cache=cache)
    assert read == []  # and every outline made again as the last turn made it
    assert any(e.reason.startswith(calls.OUTLINED) for e in warm.truncated)
    assert warm == trim(grown, 1500, COUNTER)
