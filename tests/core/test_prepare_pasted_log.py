"""A log the user pasted, bigger than the budget, after a long first question: the log is the
long user message a summary would have taken to leave the request nearly empty, so it is the
one shortened (head and tail, every distinct error line kept), not summarized with the
question. Only the oldest long user message was looked at: the question, whose summary alone
left the request full, so nothing was shortened and one summary took both (167 of 5,000
tokens sent, the log's Details its last 15 INFO lines, its error lines lost)."""

from __future__ import annotations

from ctxlayer.core.prepare import prepare_turn
from ctxlayer.core.prepare.window import KEPT_SHORT
from ctxlayer.core.tokens import WordTokenizer, conversation_tokens
from ctxlayer.protocol import Message

#: the log's errors, each of its own kind: the outline keeps every distinct one
ERRORS = {300: "2026-01-01 ERROR step 300 failed: disk full at /var/lib/db (errno 28)",
          500: "2026-01-01 ERROR step 500 failed: connection refused by db.internal:5432",
          900: "2026-01-01 ERROR step 900 failed: permission denied on /etc/app.conf"}
BUDGET = 5000


def _log(lines: int) -> str:
    return "\n".join(ERRORS.get(k, f"2026-01-01 INFO step {k} ok") for k in range(lines))


def _chat(first_question: str, log: str) -> list[Message]:
    return [Message(role="system", id="sys", content="be nice"),
            Message(role="user", id="q0", content=first_question),
            Message(role="assistant", id="a0", content="a0"),
            Message(role="user", id="log", content="here is the log\n" + log),
            Message(role="assistant", id="ok", content="ok"),
            Message(role="user", id="ask", content="what failed?")]


def test_a_pasted_log_after_a_long_question_is_shortened_not_summarized():
    question = "q0 " + "please look at this. " * 150  # 601 tokens: over the outline's cap
    sent = _chat(question, _log(1200))
    counter = WordTokenizer()
    assert conversation_tokens(sent, counter) > BUDGET
    turn = prepare_turn(None, sent, BUDGET, counter)
    assert turn.tokens <= BUDGET
    assert [m.id for m in turn.messages] == ["sys", "q0", "a0", "log", "ok", "ask"]
    assert turn.messages[1].content == question  # the question, whole
    log = turn.messages[3].content
    assert log.startswith("here is the log\n2026-01-01 INFO step 0 ok")
    assert [e for e in ERRORS.values() if e not in log] == []
    assert "INFO step 1199 ok" in log  # its tail
    assert [(e.message_id, e.reason) for e in turn.truncated] == [("log", KEPT_SHORT)]
    assert not turn.dropped
    assert turn.tokens >= BUDGET // 2, turn.tokens  # the budget used, not left empty


def test_the_errors_of_a_shortened_log_stay_once_a_summary_takes_it():
    """The chat goes on (word counts: each turn a 250-word answer and a short question): at
    turn 9 a summary takes the log shortened at the first, and its errors are in that
    summary's ledger verbatim. Before, the summary's Details were the log's last INFO lines
    and its ledger the paths alone: the ERROR lines were gone from turn 9 on."""
    question = "q0 " + "please look at this. " * 150
    sent = _chat(question, _log(1200))
    counter = WordTokenizer()
    words = "cache token budget parser router queue store index".split()
    state, summarized = None, 0
    for t in range(15):
        turn = prepare_turn(state, sent, BUDGET, counter)
        state = turn.state
        assert turn.tokens <= BUDGET
        shown = "\n".join(m.content for m in turn.messages)
        assert [e for e in ERRORS.values() if e not in shown] == [], t
        summarized += "log" not in [m.id for m in turn.messages]
        sent = [*sent,
                Message(role="assistant", id=f"r{t}",
                        content=" ".join(words[(t + k) % 8] for k in range(250))),
                Message(role="user", id=f"u{t}", content=f"and step {t}? " + " ".join(words))]
    assert summarized  # the log was summarized in the end: the ledger kept its errors
