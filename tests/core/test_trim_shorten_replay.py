"""A re-trim makes again, inline, the changes the last turn's shortening made to the messages
it shares with it (`fit.shorten_longest` reads the warm fact of `Shortener.shorten` itself):
two Python calls a message were a third of `reduce` on a warm re-trim of 1M tokens, which
shortens the same 99 messages every turn."""

from __future__ import annotations

import sys

import pytest

from ctxlayer.core.memo import Memo
from ctxlayer.core.tokens import CountCache, WordTokenizer
from ctxlayer.core.trim import TrimCache, TrimOptions, trim
from ctxlayer.protocol import Message, ToolCall

COUNTER = CountCache(WordTokenizer())


def _chat(steps: int) -> list[Message]:
    chat = [Message(role="system", id="s", content="be brief")]
    for k in range(steps):
        chat += [Message(role="user", id=f"u{k}", content=f"question {k}: run the tests"),
                 Message(role="assistant", id=f"c{k}", content="calling", tool_calls=[
                     ToolCall(id=f"x{k}", name="run", arguments=f'{{"k": {k}}}')]),
                 Message(role="tool", id=f"t{k}", tool_call_id=f"x{k}",
                         content="\n".join(f"log {j} of {k} ok" for j in range(200)))]
    return chat


def _calls_in(function, run) -> list[str]:
    """The Python functions called (directly or not) while ``function`` runs in ``run()``."""
    made: list[str] = []
    depth = 0

    def profile(frame, event, arg):
        nonlocal depth
        if event == "call":
            if depth:
                made.append(frame.f_code.co_name)
            if depth or frame.f_code.co_name == function:
                depth += 1
        elif event == "return" and depth:
            depth -= 1

    sys.setprofile(profile)
    try:
        run()
    finally:
        sys.setprofile(None)
    return made


@pytest.mark.parametrize("steps", [12, 36])
def test_a_re_trim_shortens_the_shared_messages_without_a_call_each(steps):
    chat = _chat(steps)
    budget, options = 160 * steps, TrimOptions(tool_output_cap=100)
    memo, cache = Memo(), TrimCache()
    first = trim([*chat, Message(role="user", id="q1", content="so?")], budget, COUNTER,
                 options=options, memo=memo, cache=cache)
    shortened = sum(e.reason.startswith(("over budget: middle", "tool output over"))
                    for e in first.truncated)
    assert shortened >= steps - 2  # the premise: most tool outputs outlined every turn
    grown = [*chat, Message(role="user", id="q2", content="and now?")]
    warm = None

    def again():
        nonlocal warm
        warm = trim(grown, budget, COUNTER, options=options, memo=memo, cache=cache)

    made = _calls_in("shorten_longest", again)
    assert warm == trim(grown, budget, COUNTER, options=options)  # a cold trim's very result
    # the new and changed messages only (the question before, now history): a few calls,
    # however many messages were shortened again
    assert made.count("shorten") + made.count("redo_change") <= 4, sorted(set(made))
    calls = [f for f in made if f != "<genexpr>"]  # the candidates' filter resumed
    assert len(calls) < 20, sorted(set(calls))
