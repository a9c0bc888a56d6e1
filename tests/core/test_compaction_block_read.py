"""What the Anthropic codec makes of the provider's compaction block (the compact_* edit): the
provider drops every block before it, so those are not the engine's to fit (they cost nothing
and go on as they came); the block is the conversation's head, after the system prompt, so
what the engine adds (a summary) is written after it, where the provider reads it."""

from __future__ import annotations

from ctxlayer.core.formats import decode, encode
from ctxlayer.core.tokens import WordTokenizer
from ctxlayer.protocol import Message

COMPACTION = {"type": "compaction", "content": "steps 0-1 summarized by the provider",
              "signature": "c2VhbGVk"}


def _chat(turns: int, compact_at: int | None) -> list[dict]:
    msgs: list[dict] = []
    for k in range(turns):
        msgs.append({"role": "user", "content": f"question {k} about src/m{k}.py"})
        answer = [{"type": "text", "text": f"answer {k}"}]
        if k == compact_at:
            answer = [COMPACTION, *answer]
        msgs.append({"role": "assistant", "content": answer})
    msgs.append({"role": "user", "content": "and now?"})
    return msgs


def _payload(msgs: list[dict]) -> dict:
    return {"model": "claude-opus-5-5", "system": "be brief", "messages": msgs}


def test_blocks_before_the_compaction_are_not_the_engines():
    decoded = decode("anthropic", _payload(_chat(4, compact_at=1)), WordTokenizer())
    roles = [(m.role, m.content) for m in decoded.messages]
    assert roles == [("system", "be brief"), ("system", ""), ("assistant", "answer 1"),
                     ("user", "question 2 about src/m2.py"), ("assistant", "answer 2"),
                     ("user", "question 3 about src/m3.py"), ("assistant", "answer 3"),
                     ("user", "and now?")]
    head = decoded.messages[1]
    assert head.pinned and head.parts_tokens == 6 and head.parts == ["compaction (6 tokens)"]
    # everything kept: the request as it came
    assert encode(decoded, decoded.messages).payload == _payload(_chat(4, compact_at=1))


def test_a_summary_goes_after_the_compaction_and_the_rest_as_it_came():
    msgs = _chat(4, compact_at=1)
    decoded = decode("anthropic", _payload(msgs), WordTokenizer())
    summary = Message(role="user", content="[Summary of 3 earlier messages] src/m2.py")
    kept = [*decoded.messages[:2], summary, *decoded.messages[6:]]
    out = encode(decoded, kept).payload["messages"]
    assert out[:3] == msgs[:3]  # before the compaction: as the client sent it
    assert out[3] == {"role": "assistant", "content": [COMPACTION]}
    assert out[4] == {"role": "user", "content": summary.content}
    assert out[5:] == msgs[7:]


def test_warm_and_cold_decodes_agree_as_a_compaction_comes_and_moves():
    """Turn by turn, decoded against the previous turn or from scratch: the same messages,
    through the turn the provider compacts at and the one it compacts at again."""
    previous = None
    for turns in range(1, 9):
        compact_at = None if turns < 3 else 2 if turns < 6 else 5
        msgs = _chat(turns, compact_at)
        if compact_at == 5:  # the client sends only the last block's summary
            msgs[5] = {"role": "assistant", "content": [{"type": "text", "text": "answer 2"}]}
        cold = decode("anthropic", _payload(msgs), WordTokenizer())
        warm = decode("anthropic", _payload(msgs), WordTokenizer(), previous=previous)
        assert warm.messages == cold.messages, turns
        assert encode(warm, warm.messages).payload == _payload(msgs)
        previous = warm
