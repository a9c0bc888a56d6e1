"""The page's drop order is the trim engine's: at the real budget, `would_drop` (which the
page's script mirrors) marks exactly the messages that `core.trim` dropped."""

from __future__ import annotations

import random

import pytest

from ctxlayer.core.tokens import CountCache, WordTokenizer
from ctxlayer.inspector import inspect_conversation, would_drop
from ctxlayer.protocol import Message, ToolCall


def conversation(seed: int) -> list[Message]:
    rng = random.Random(seed)
    msgs = [Message(role="system", content="system prompt " * rng.randint(5, 40), id="sys")]
    for i in range(rng.randint(5, 30)):
        words = " ".join(f"w{seed}-{i}-{k}" for k in range(rng.randint(3, 120)))
        if rng.random() < 0.15:
            msgs.append(Message(role="assistant", content="", id=f"call{i}",
                                tool_calls=[ToolCall(id=f"t{i}", name="grep", arguments="{}")]))
            msgs.append(Message(role="tool", content=words, id=f"res{i}", tool_call_id=f"t{i}"))
        else:
            role = "user" if i % 2 == 0 else "assistant"
            msgs.append(Message(role=role, content=words, id=f"m{i}",
                                pinned=rng.random() < 0.05))
    return msgs


@pytest.mark.parametrize("seed", range(25))
def test_would_drop_matches_the_trim_engine(seed):
    msgs = conversation(seed)
    counter = CountCache(WordTokenizer())
    total = sum(len(m.content.split()) + 3 for m in msgs)
    fixed = sum(len(m.content.split()) + 3 for m in msgs if m.pinned or m.role == "system")
    budget = random.Random(seed).randint(fixed + 10, max(fixed + 11, total))
    data = inspect_conversation(msgs, budget, counter, model="test", window=total * 2)
    engine = {m.index for m in data.messages if m.state == "dropped"}
    assert would_drop(data.messages, budget, overhead=data.overhead) == engine
    # nothing here can be cut but the newest question, which is shortened rather than dropped
    question = max(m.index for m in data.messages if m.role == "user" and m.kind != "doc")
    assert all(m.state != "truncated" or m.index == question for m in data.messages)
    assert question not in engine
