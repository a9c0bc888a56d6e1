"""A summary a model wrote ahead of need is kept with the conversation's window
(core/prepare/persist.py): the turn after a restart takes it up when it has the messages it
was written for, and a window written before it was kept still reads."""

from __future__ import annotations

import dataclasses
import json

from ctxlayer.core.prepare import persist, prepare_turn, resuming
from ctxlayer.core.prepare.model import DEFAULT_POLICY, Ahead
from ctxlayer.core.tokens import WordTokenizer
from ctxlayer.protocol import Message

WORDS = WordTokenizer()


def _chat() -> list[Message]:
    msgs = [Message(role="system", content="You are a careful coding agent.")]
    for k in range(6):
        msgs += [Message(role="user", content=f"Fix case {k} of the retry queue."),
                 Message(role="assistant", content=f"Case {k} of the retry queue is fixed.")]
    return msgs


def _with_ahead(msgs: list[Message]):
    state = prepare_turn(None, msgs, 10_000, WORDS).state
    ahead = Ahead((1, 2, 3), tuple(msgs[1:4]), "Decided: the retry queue keeps its order.",
                  "by the upstream's 'gpt-4o-mini'")
    return dataclasses.replace(state, ahead=ahead), ahead


def test_the_summary_written_ahead_is_kept_and_taken_up() -> None:
    msgs = _chat()
    state, ahead = _with_ahead(msgs)
    snap = persist.decode(persist.encode(persist.snapshot(state)))
    assert snap is not None
    resumed = resuming.resume(snap, msgs, WORDS, DEFAULT_POLICY)
    assert resumed is not None and resumed.ahead == ahead
    # the client's messages only by their hashes: their text is not kept twice
    assert "Fix case 1" not in json.dumps(json.loads(persist.encode(snap))["ahead"])


def test_a_kept_summary_of_messages_changed_since_is_not_taken_up() -> None:
    msgs = _chat()
    state, _ = _with_ahead(msgs)
    snap = persist.decode(persist.encode(persist.snapshot(state)))
    assert snap is not None
    edited = [*msgs[:2], Message(role="assistant", content="Case 0 is not fixed."), *msgs[3:]]
    resumed = resuming.resume(snap, edited, WORDS, DEFAULT_POLICY)
    assert resumed is not None and resumed.ahead is None


def test_a_window_written_before_the_summary_was_kept_still_reads() -> None:
    msgs = _chat()
    state, _ = _with_ahead(msgs)
    old = json.loads(persist.encode(persist.snapshot(state)))
    del old["ahead"]
    snap = persist.decode(json.dumps(old).encode())
    assert snap is not None and snap.ahead is None
    resumed = resuming.resume(snap, msgs, WORDS, DEFAULT_POLICY)
    assert resumed is not None and resumed.ahead is None
