"""The newest user message is never dropped: a long question is shortened (head and tail, an
outline for a log) beside as much history as fits, in both strategies; only a budget too
small for even that is pinned_over_budget. And the priority strategy fills the budget."""

from __future__ import annotations

import pytest

from ctxlayer.core.errors import ContextError
from ctxlayer.core.tokens import WordTokenizer, conversation_tokens
from ctxlayer.core.trim import TrimOptions, trim
from ctxlayer.protocol import Message

WORDS = WordTokenizer()


def long_question(words: int) -> str:
    body = "\n".join(" ".join(f"w{k}x{j}" for j in range(10)) for k in range(words // 10))
    return "Summarize this:\n" + body + "\nEND OF TEXT"


def chat(question: str) -> list[Message]:
    return [Message(role="system", id="s", content="You are helpful."),
            Message(role="user", id="u1", content="what is 2+2"),
            Message(role="assistant", id="a1", content="4"),
            Message(role="user", id="q", content=question)]


@pytest.mark.parametrize("strategy", ["pipeline", "priority"])
def test_a_long_question_is_shortened_and_history_still_fits(strategy):
    report = trim(chat(long_question(20_000)), 8000, WORDS,
                  options=TrimOptions(strategy=strategy))
    assert [m.id for m in report.messages] == ["s", "u1", "a1", "q"]
    q = report.messages[-1].content
    assert q.startswith("Summarize this:") and q.endswith("END OF TEXT")
    assert "omitted" in q
    assert report.tokens == conversation_tokens(report.messages, WORDS) <= 8000
    # a short history is kept whole and the question takes the rest of the room
    assert WORDS.count(q) >= 7000
    entry = next(e for e in report.truncated if e.message_id == "q")
    assert entry.action == "truncated" and "newest user message" in entry.reason
    assert entry.tokens_before > 20_000 > 8000 >= entry.tokens_after


@pytest.mark.parametrize("strategy", ["pipeline", "priority"])
def test_a_long_question_shares_the_room_with_a_long_history(strategy):
    msgs = chat(long_question(20_000))
    history = [Message(role="user" if k % 2 == 0 else "assistant", id=f"h{k}",
                       content=" ".join(["h"] * 200)) for k in range(100)]
    msgs = [msgs[0], *history, *msgs[1:]]
    report = trim(msgs, 8000, WORDS, options=TrimOptions(strategy=strategy))
    q = report.messages[-1]
    assert q.id == "q" and 3500 <= WORDS.count(q.content) <= 4100
    assert report.tokens > 7500  # the other half went to the newest history
    assert [m.id for m in report.messages][-3:] == ["u1", "a1", "q"]


def test_a_question_that_fits_is_left_whole_and_history_goes():
    msgs = chat(long_question(700))
    report = trim(msgs, 800, WORDS)
    assert report.messages[-1].content == msgs[-1].content
    assert "q" in [m.id for m in report.messages]


def test_a_pasted_log_as_the_question_keeps_its_errors():
    log = "\n".join([f"2024-01-01 12:00:{k % 60:02d} INFO step {k} ok" for k in range(3000)]
                    + ["2024-01-01 12:59:59 ERROR disk full on /var"]
                    + [f"2024-01-01 13:00:{k % 60:02d} INFO retry {k}" for k in range(3000)])
    report = trim(chat(log), 2000, WORDS)
    q = report.messages[-1]
    assert q.id == "q" and "ERROR disk full" in q.content
    assert report.tokens <= 2000


@pytest.mark.parametrize("strategy", ["pipeline", "priority"])
def test_only_a_budget_too_small_for_the_shortened_question_is_an_error(strategy):
    system = Message(role="system", id="s", pinned=True, content=" ".join(["s"] * 90))
    msgs = [system, Message(role="user", id="q", content=long_question(5000))]
    with pytest.raises(ContextError) as err:
        trim(msgs, 100, WORDS, options=TrimOptions(strategy=strategy))
    assert err.value.kind == "pinned_over_budget"
    assert "newest user message" in str(err.value)


def test_an_expired_ephemeral_question_is_still_kept():
    msgs = [Message(role="user", id="q", content="still asking", ephemeral_ttl=0)]
    assert [m.id for m in trim(msgs, 100, WORDS).messages] == ["q"]


def test_priority_fills_the_budget_like_the_pipeline():
    msgs = [Message(role="system", id="s", content="sys")]
    for k in range(40):
        msgs.append(Message(role="user", id=f"u{k}", content=" ".join(["u"] * (50 + k * 7))))
        msgs.append(Message(role="assistant", id=f"a{k}", content=" ".join(["a"] * 30)))
    msgs.append(Message(role="user", id="q", content="and now?"))
    budget = 3000
    pipe = trim(msgs, budget, WORDS, options=TrimOptions(strategy="pipeline"))
    prio = trim(msgs, budget, WORDS, options=TrimOptions(strategy="priority", recent=4))
    assert prio.tokens <= budget and pipe.tokens <= budget
    assert prio.tokens >= 0.95 * pipe.tokens, (prio.tokens, pipe.tokens)
    assert prio.messages[-1].id == "q"


def test_priority_keeps_older_history_when_a_huge_recent_message_goes():
    msgs = [Message(role="system", id="s", content="sys")]
    for k in range(20):
        msgs += [Message(role="user", id=f"u{k}", content=" ".join(["u"] * 40)),
                 Message(role="assistant", id=f"a{k}", content=" ".join(["a"] * 40))]
    msgs += [Message(role="user", id="huge", content=" ".join(["h"] * 5000)),
             Message(role="assistant", id="ok", content="ok"),
             Message(role="user", id="q", content="and now?")]
    pipe = trim(msgs, 1500, WORDS, options=TrimOptions(strategy="pipeline"))
    prio = trim(msgs, 1500, WORDS, options=TrimOptions(strategy="priority", recent=4))
    assert "huge" not in [m.id for m in prio.messages]
    assert prio.tokens >= 0.95 * pipe.tokens, (prio.tokens, pipe.tokens)
    assert [m.id for m in prio.messages][-2:] == ["ok", "q"]


def test_a_task_quoting_a_log_keeps_its_first_lines_before_the_logs_outline():
    """A task that pastes a failing run reads as a log, and a log's outline starts at its
    errors ("[... 33 lines]" first); the task's own first lines (what it asks) come first all
    the same, in the trim engine's fit and in prepare's."""
    from ctxlayer.core.compress.logs import looks_like_log
    from ctxlayer.core.prepare import prepare_turn

    steps = "\n".join(f"{k}. Step {k}: read the module, run the tests, note what fails."
                      for k in range(1, 30))
    frames = "\n".join(f'  File "/repo/pkg/mod{k}.py", line {k * 7}, in call_{k}\n'
                       f"    result = call_{k + 1}(value)" for k in range(12))
    task = ("<uploaded_files>\n/workspace/uploader\n</uploaded_files>\n"
            "Fix the retry logic so that a timeout is retried.\n" + steps
            + "\nTraceback (most recent call last):\n" + frames
            + "\nTimeoutError: gave up after 1 attempt\n" + steps)
    assert looks_like_log(task)
    msgs = [Message(role="system", id="s", content="You are helpful."),
            Message(role="user", id="q", content=task)]
    for q in (trim(msgs, 170, WORDS).messages[-1].content,
              prepare_turn(None, msgs, 170, WORDS).messages[-1].content):
        assert q.startswith("<uploaded_files>\n/workspace/uploader"), q[:200]
        assert "Fix the retry logic" in q and "Traceback" in q
        assert WORDS.count(q) < WORDS.count(task)


def test_a_task_cut_to_a_few_dozen_tokens_keeps_its_first_lines_not_a_log_outline():
    """At a cap of a few dozen tokens a quarter is less than a line: the first lines take up
    to half of it (a task cut to 30 tokens kept only "<uploaded_files>" before its log
    outline, and not the workspace it names)."""
    from ctxlayer.core.compress.shorten import shorten

    frames = "\n".join(f'  File "/repo/pkg/mod{k}.py", line {k * 7}, in call_{k}'
                       for k in range(40))
    task = ("<uploaded_files>\n/workspace/django__django__3.0 is the checkout you work in\n"
            "</uploaded_files>\nI've uploaded a python code repository.\n"
            "Traceback (most recent call last):\n" + frames + "\nKeyError: 'name'")
    out = shorten(task, 30, WORDS, keep_head=True)
    assert out is not None and WORDS.count(out.text) <= 30
    assert out.text.startswith("<uploaded_files>\n/workspace/django__django__3.0 is the "
                               "checkout"), out.text
