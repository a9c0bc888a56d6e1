"""A merge of every summary chunk leaves room for the next steps' chunks (`merge_share`): made
to the whole share, the next chunk passed it at once and every step merged every chunk again,
rewriting the request from the first chunk on."""

from __future__ import annotations

import random

import msgspec

from ctxlayer.core.prepare import prepare_turn
from ctxlayer.core.prepare.model import DEFAULT_POLICY, PreparePolicy
from ctxlayer.core.tokens import OPENAI_FORMAT, message_tokens
from ctxlayer.protocol import Message, ToolCall
from ctxlayer.tokenizers import counter_for

VOCAB = ("cache", "token", "budget", "parser", "router", "queue", "store", "index")
BUDGET = 2500


def _run(policy: PreparePolicy, turns: int = 80) -> tuple[int, list[tuple[int, int]]]:
    """An agent running tests module by module; returns (the summary steps it made, (tokens,
    room) of the one chunk each merge of every chunk left)."""
    counter = counter_for("gpt-4o")
    r = random.Random(7)
    task = Message(role="user", id="task", content="Fix the failing tests in src/app.py "
                   + " ".join(r.choice(VOCAB) for _ in range(60)))
    sent = [Message(role="system", id="sys", content="You are an agent."), task]
    state, steps, merged = None, 0, []
    for t in range(turns):
        call = ToolCall(id=f"c{t}", name="bash",
                        arguments=f'{{"cmd": "pytest tests/test_m{t}.py -k case_{t}"}}')
        out = "\n".join(f"tests/test_m{t}.py::test_{j} FAILED src/m{t}/p{j}.py:{10 * j + t}: "
                        f"KeyError('k{t}_{j}')" for j in range(r.randint(3, 12)))
        say = f"Checking module {t}. " + " ".join(r.choice(VOCAB) for _ in range(r.randint(10, 60)))
        sent = [*sent, Message(role="assistant", id=f"a{t}", content=say, tool_calls=[call]),
                Message(role="tool", id=f"r{t}", tool_call_id=f"c{t}", content=out)]
        before = state.chunks if state is not None else ()
        turn = prepare_turn(state, sent, BUDGET, counter, policy=policy)
        assert turn.tokens <= BUDGET
        assert turn.messages[-1].id == f"r{t}" and "task" in {m.id for m in turn.messages}
        state = turn.state
        if any(e.action == "summarized" for e in turn.dropped):
            steps += 1
            if before and len(state.chunks) == 1 and state.chunks[0] is not before[0]:
                q = next(m for m in turn.messages if m.id == "task")  # as shown
                room = max(BUDGET - OPENAI_FORMAT.reply_priming
                           - message_tokens(sent[0], counter) - message_tokens(q, counter),
                           BUDGET // 4)
                merged.append((state.chunks[0].tokens, room))
    return steps, merged


def test_a_merge_of_every_chunk_leaves_room_for_the_next_chunks():
    steps, merged = _run(DEFAULT_POLICY)
    assert merged, "no merge of every chunk: the test did not reach its case"
    most = DEFAULT_POLICY.merge_share * DEFAULT_POLICY.summaries_share
    assert all(tokens <= most * room * 1.1 for tokens, room in merged), merged
    # merged to the whole share, the same chat steps more often: each step merges again
    whole, _ = _run(msgspec.structs.replace(DEFAULT_POLICY, merge_share=1.0))
    assert steps * 5 <= whole * 4, (steps, whole)
