"""An outline grows with the room it has: the room the fit left goes back to the tool outputs
it outlined (fit.regrow), with the real tokenizer, both strategies."""

from __future__ import annotations

import pytest

from ctxlayer.core.tokens import conversation_tokens, message_tokens
from ctxlayer.core.trim import TrimOptions, fit, trim
from ctxlayer.protocol import Message, ToolCall
from ctxlayer.tokenizers import counter_for

COUNTER = counter_for("gpt-4o")


def worker_log(lines: int, bad: int) -> str:
    out = [f"2026-12-04 10:{k // 60 % 60:02d}:{k % 60:02d} INFO worker-{k % 7} processed item {k} "
           f"queue={k * 3} took {k % 90} ms" for k in range(lines)]
    out[lines // 3:lines // 3] = ["Traceback (most recent call last):",
                                  '  File "app/worker.py", line 88, in run', "    handle(item)",
                                  f"ValueError: bad item {bad}"]
    return "\n".join([*out, "Traceback (most recent call last):",
                      '  File "app/items.py", line 12, in handle', "    check(item)",
                      f"ValueError: bad item {bad + 1}"])


def chat(older: int = 0) -> list[Message]:
    msgs = [Message(role="user", content=f"note {k}: the queue is sharded by item id", id=f"n{k}")
            for k in range(older)]
    return [*msgs,
            Message(role="user", content="Why does the worker crash?", id="task"),
            Message(role="assistant", content="", id="call",
                    tool_calls=[ToolCall(id="c1", name="logs", arguments="{}")]),
            Message(role="tool", content=worker_log(3000, 17), tool_call_id="c1", id="log"),
            Message(role="user", content="Which items failed, and where?", id="question")]


@pytest.mark.parametrize("strategy", ["pipeline", "priority"])
def test_a_log_over_the_budget_is_outlined_to_the_room_it_has(strategy):
    """A 3,000-line log (about 88k tokens) into 60k: outlined to a 16th of the budget, the
    request used 16% of it; now most of it, both tracebacks quoted."""
    budget = 60_000
    report = trim(chat(), budget, COUNTER, options=TrimOptions(strategy=strategy))
    assert 0.85 * budget <= report.tokens <= budget
    (entry,) = report.truncated
    assert entry.action == "compressed" and entry.message_id == "log"
    log = next(m for m in report.messages if m.id == "log")
    assert entry.tokens_after == message_tokens(log, COUNTER)  # what it costs as sent
    assert report.tokens == conversation_tokens(report.messages, COUNTER)
    for bad in ("bad item 17", "bad item 18", "app/worker.py", "app/items.py"):
        assert bad in log.content
    assert [m.id for m in report.messages] == ["task", "call", "log", "question"]


def test_the_room_given_back_is_only_what_the_fit_left(monkeypatch):
    """Older messages the fit kept beside the outline stay: the regrow takes only the room
    nothing else took."""
    msgs = chat(older=300)
    budget = 30_000
    grown = trim(msgs, budget, COUNTER)
    monkeypatch.setattr(fit, "regrow", lambda w, budget, sh: None)
    usual = trim(msgs, budget, COUNTER)
    assert [m.id for m in grown.messages] == [m.id for m in usual.messages]
    assert usual.tokens < grown.tokens <= budget
    assert len(grown.dropped) == len(usual.dropped)


def test_a_trimmed_request_trimmed_again_is_the_same():
    first = trim(chat(), 60_000, COUNTER)
    again = trim(first.messages, 60_000, COUNTER)
    assert again.messages == first.messages and not again.truncated and not again.dropped
