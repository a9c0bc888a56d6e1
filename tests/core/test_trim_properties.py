"""Properties of the trim engine over generated conversations (hypothesis): the result fits the
budget and its token count is exact; pinned messages survive verbatim; a tool call and its
results are whole or absent; order is kept; the newest user message is always there; trimming a
trimmed result changes nothing."""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ctxlayer.core.errors import ContextError
from ctxlayer.core.tokens import WordTokenizer, conversation_tokens
from ctxlayer.core.trim import TrimOptions, trim
from ctxlayer.protocol import Message, ToolCall

WORDS = WordTokenizer()


@st.composite
def contents(draw) -> str:
    kind = draw(st.sampled_from(["prose", "code", "json", "think", "dup"]))
    n = draw(st.integers(0, 60))
    if kind == "code":
        body = "\n".join(f"line{k} = {k}" for k in range(n * 3))
        return f"text\n```py\n{body}\n```\nafter"
    if kind == "json":
        return "[" + ", ".join(f'{{"k": {k}, "v": "w{k}"}}' for k in range(n * 4)) + "]"
    if kind == "think":
        return f"<think>{' '.join('t' for _ in range(n))}</think> answer {n}"
    if kind == "dup":
        return " ".join(f"same{k}" for k in range(40))
    return " ".join(f"w{k}" for k in range(n))


@st.composite
def conversations(draw) -> list[Message]:
    msgs: list[Message] = []
    if draw(st.booleans()):
        msgs.append(Message(role="system", id="sys", pinned=True,
                            content=" ".join("s" for _ in range(draw(st.integers(1, 20))))))
    call = 0
    for turn in range(draw(st.integers(0, 14))):
        msgs.append(Message(role="user", id=f"u{turn}", content=draw(contents()),
                            pinned=draw(st.integers(0, 9)) == 0))
        shape = draw(st.sampled_from(["reply", "tools", "ephemeral", "orphan"]))
        if shape == "tools":
            ids = [f"c{call + k}" for k in range(draw(st.integers(1, 3)))]
            call += len(ids)
            msgs.append(Message(role="assistant", id=f"a{turn}", content="calling",
                                tool_calls=[ToolCall(id=i, name="sh", arguments="ls") for i in ids]))
            for i in ids:
                msgs.append(Message(role="tool", id=f"t{i}", tool_call_id=i, content=draw(contents())))
        elif shape == "ephemeral":
            msgs.append(Message(role="assistant", id=f"e{turn}", content=draw(contents()),
                                ephemeral_ttl=draw(st.integers(0, 3))))
        elif shape == "orphan":
            msgs.append(Message(role="tool", id=f"o{turn}", tool_call_id=f"missing{turn}",
                                content="lost"))
        msgs.append(Message(role="assistant", id=f"r{turn}", content=draw(contents())))
    return msgs


def _groups_whole(original: list[Message], kept: list[Message]) -> None:
    kept_ids = {m.id for m in kept}
    for m in original:
        if m.tool_calls:
            members = [m.id] + [t.id for t in original if t.tool_call_id in
                                {c.id for c in m.tool_calls}]
            present = [i in kept_ids for i in members]
            assert all(present) or not any(present), f"group of {m.id} split: {present}"
    calls = {c.id for m in kept for c in (m.tool_calls or ())}
    assert all(m.tool_call_id in calls for m in kept if m.tool_call_id), "orphan kept"


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(msgs=conversations(), budget=st.integers(1, 1500),
       strategy=st.sampled_from(["pipeline", "priority"]), user_first=st.booleans())
def test_trim_properties(msgs, budget, strategy, user_first):
    options = TrimOptions(strategy=strategy, recent=4, user_first=user_first)
    try:
        report = trim(msgs, budget, WORDS, options=options)
    except ContextError as exc:
        assert exc.kind == "pinned_over_budget"
        fixed = [m for m in msgs if m.pinned or m.role == "system"]
        question = [m for m in msgs if m.role == "user"][-1:]
        assert conversation_tokens([*fixed, *question], WORDS) > budget
        return
    kept = report.messages
    # fits, and the reported count is the real one
    assert report.tokens == conversation_tokens(kept, WORDS) <= budget
    # pinned kept verbatim
    by_id = {m.id: m for m in kept}
    for m in msgs:
        if m.pinned:
            assert by_id[m.id].content == m.content
    # order kept: kept ids are a subsequence of the input's
    order = [m.id for m in msgs]
    positions = [order.index(m.id) for m in kept]
    assert positions == sorted(positions)
    _groups_whole(msgs, kept)
    # the question is never dropped (shortened at most)
    question = next((m for m in reversed(msgs) if m.role == "user"), None)
    if question is not None:
        assert question.id in by_id, "the newest user message was dropped"
    # a kept reference to an identical output points at a kept message, by the call id the
    # model sees (the reference names no message id: the model sees none)
    for m in kept:
        if m.content.startswith("[identical to "):
            call = m.content.rsplit("(call ", 1)[1].removesuffix(")]")
            assert any(k.tool_call_id == call and not k.content.startswith("[identical")
                       for k in kept), f"{m.id} refers to dropped {call}"
    # a format that starts with a user turn: the fit kept none before the first user message
    # (but a pinned one, which it never drops)
    lead = next((m for m in kept if m.role != "system"), None)
    if user_first and lead is not None:
        assert lead.role == "user" or lead.pinned, f"{lead.id} leads"
    # every message that went missing is accounted for
    missing = set(order) - set(by_id)
    assert missing <= {e.message_id for e in report.dropped}
    # idempotent
    again = trim(kept, budget, WORDS, options=options)
    assert again.messages == kept
    assert again.dropped == [] and again.truncated == []
