"""The OpenAI codec: what it reads (every part counted, errors naming the field), what it
writes back (the client's own dicts), and properties over generated payloads: under an ample
budget a payload comes back equal; under any budget it comes back valid (rules.py and the
official SDK types agree) with the question in it."""

from __future__ import annotations

import copy

import msgspec
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from payloads import b64, openai_payloads, png
from providers.rules import openai_problems
from sdk import openai_sdk_accepts

from ctxlayer.core.errors import ContextError
from ctxlayer.core.formats import decode, encode
from ctxlayer.core.tokens import OPENAI_FORMAT, WordTokenizer, conversation_tokens
from ctxlayer.core.trim import TrimOptions, trim
from ctxlayer.core.trim.fit import MIN_QUESTION

WORDS = WordTokenizer()
AS_SENT = TrimOptions(rewrite_when_fits=False)  # provider payloads: a fit changes nothing


def assert_too_small(body: dict, budget: int) -> None:
    """pinned_over_budget only when the pinned messages, the question's parts and the fewest
    tokens a shortened question keeps are over the budget."""
    msgs = decode("openai", body, WORDS).messages
    fixed = [m for m in msgs if m.pinned or m.role == "system"]
    question = [m for m in msgs if m.role == "user"][-1]
    # the question's own framing as the format counts it (a hard-coded 3 went stale when a
    # message came to cost 4: a budget of 30 the engine rightly refused was said to fit)
    floor = conversation_tokens(fixed, WORDS) + OPENAI_FORMAT.per_message + \
        (question.parts_tokens or 0) + MIN_QUESTION
    assert floor > budget, (floor, budget)
CALL = {"id": "c1", "type": "function", "function": {"name": "ls", "arguments": '{"p": 1}'}}


def roundtrip(payload: dict, budget: int, strategy: str = "pipeline"):
    d = decode("openai", payload, WORDS)
    report = trim(d.messages, budget, WORDS, options=TrimOptions(strategy=strategy, rewrite_when_fits=False))
    return d, report, encode(d, report.messages)


def test_every_role_and_part_is_read_and_counted():
    payload = {"model": "gpt-4o", "messages": [
        {"role": "developer", "content": [{"type": "text", "text": "be brief"}]},
        {"role": "user", "name": "ann", "content": [
            {"type": "text", "text": "what is this"},
            {"type": "image_url", "image_url": {"url": f"data:image/png;base64,{b64(png(1024, 1024))}",
                                                "detail": "high"}},
            {"type": "image_url", "image_url": {"url": "https://e/x.png", "detail": "low"}}]},
        {"role": "assistant", "content": None, "tool_calls": [CALL]},
        {"role": "tool", "tool_call_id": "c1", "content": [{"type": "text", "text": "a b c"}]},
        {"role": "assistant", "content": None, "refusal": "no way"},
    ]}
    d = decode("openai", payload, WORDS)
    assert [m.role for m in d.messages] == ["system", "user", "assistant", "tool", "assistant"]
    assert d.messages[1].content == "what is this"
    # a 1024px square at high detail, a low one, and the name (its word and one to mark it)
    assert d.messages[1].parts_tokens == 765 + 85 + 2
    assert d.messages[2].tool_calls[0].arguments == '{"p": 1}'
    assert d.messages[3].tool_call_id == "c1" and d.messages[3].content == "a b c"
    assert d.messages[4].parts_tokens == 2  # the refusal counts
    assert conversation_tokens(d.messages, WORDS) > 850


def test_ids_are_stable_across_turns_and_never_sent():
    base = {"messages": [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "yo"}]}
    longer = {"messages": [*base["messages"], {"role": "user", "content": "more"}]}
    a, b = decode("openai", base, WORDS), decode("openai", longer, WORDS)
    assert [m.id for m in a.messages] == [m.id for m in b.messages][:2]
    own = decode("openai", {"messages": [{"role": "user", "content": "x",
                                          "ctxlayer": {"id": "mine"}}]}, WORDS)
    assert own.messages[0].id == "mine"
    assert encode(own, own.messages).payload["messages"] == [{"role": "user", "content": "x"}]


@pytest.mark.parametrize("messages,field", [
    ([{"content": "x"}], "messages[0].role"),
    ([{"role": "robot", "content": "x"}], "messages[0].role"),
    ([{"role": "tool", "content": "x"}], "messages[0].tool_call_id"),
    ([{"role": "user", "content": 5}], "messages[0].content"),
    ([{"role": "user", "content": [{"text": "x"}]}], "messages[0].content[0].type"),
    ([{"role": "user", "content": [{"type": "text", "text": 1}]}], "messages[0].content[0].text"),
    ([{"role": "user", "content": [{"type": "image_url"}]}], "messages[0].content[0].image_url"),
    ([{"role": "assistant", "tool_calls": [{"id": "c", "function": {}}]}],
     "messages[0].tool_calls[0].function.name"),
    ([{"role": "user", "content": "x", "tool_calls": []}], "messages[0].tool_calls"),
    ("nope", "messages"),
])
def test_what_cannot_be_read_names_the_field(messages, field):
    with pytest.raises(ContextError) as err:
        decode("openai", {"messages": messages}, WORDS)
    assert err.value.kind == "invalid" and err.value.field == field


def test_the_long_question_is_kept_shortened_with_its_image():
    question = {"role": "user", "content": [
        {"type": "text", "text": "Summarize this: " + " ".join(["w"] * 20_000) + " END"},
        {"type": "image_url", "image_url": {"url": "https://e/x.png", "detail": "low"}}],
        "name": "ann"}
    payload = {"model": "m", "messages": [
        {"role": "system", "content": "sys"}, {"role": "user", "content": "what is 2+2"},
        {"role": "assistant", "content": "4"}, question]}
    for strategy in ("pipeline", "priority"):
        _, report, out = roundtrip(payload, 8000, strategy)
        msgs = out.payload["messages"]
        assert msgs[:3] == payload["messages"][:3]
        assert msgs[3]["name"] == "ann" and msgs[3]["content"][1] == question["content"][1]
        assert msgs[3]["content"][0]["text"].endswith("END")
        assert report.tokens <= 8000
        assert openai_problems(out.payload) == []


def test_encode_repairs_a_call_left_without_its_result():
    payload = {"messages": [
        {"role": "user", "content": "go"},
        {"role": "assistant", "content": "two calls", "tool_calls": [
            CALL, {**CALL, "id": "c2"}]},
        {"role": "tool", "tool_call_id": "c1", "content": "r1"},
        {"role": "tool", "tool_call_id": "c2", "content": "r2"},
        {"role": "tool", "tool_call_id": "zz", "content": "lost"},
        {"role": "user", "content": "next"}]}
    d = decode("openai", payload, WORDS)
    kept = [m for m in d.messages if m.content not in ("r2", "lost")]
    out = encode(d, kept)
    assert openai_problems(out.payload) == []
    assert out.payload["messages"][1]["tool_calls"] == [CALL]
    assert [e.action for e in out.audit] == ["dropped"]
    d2 = decode("openai", payload, WORDS)
    out2 = encode(d2, [m for m in d2.messages])
    assert any("without its call" in e.reason for e in out2.audit)


LEGACY = [
    {"role": "user", "content": "what is in a.py"},
    {"role": "assistant", "content": None,
     "function_call": {"name": "read", "arguments": '{"path": "a.py"}'}},
    {"role": "function", "name": "read", "content": "x = 1"},
    {"role": "assistant", "content": "a.py sets x"},
    {"role": "user", "content": "and then?"}]


def test_deprecated_function_calling_is_read_as_a_call_and_its_result():
    """`function_call` and the `function` message after it (still taken by the API) pair up
    as a call and its result; a `function` message with no call before it is refused."""
    payload = {"model": "gpt-4o", "messages": copy.deepcopy(LEGACY),
               "functions": [{"name": "read", "parameters": {"type": "object"}}]}
    openai_sdk_accepts(payload)
    assert openai_problems(payload) == []
    d = decode("openai", payload, WORDS)
    call, answer = d.messages[1], d.messages[2]
    assert [(c.name, c.arguments) for c in call.tool_calls] == [("read", '{"path": "a.py"}')]
    assert answer.role == "tool" and answer.tool_call_id == call.tool_calls[0].id
    assert encode(d, d.messages).payload == payload
    with pytest.raises(ContextError) as err:
        decode("openai", {"messages": [LEGACY[0], LEGACY[2]]}, WORDS)
    assert err.value.field == "messages[1]"


def test_encode_repairs_a_function_call_left_without_its_result():
    d = decode("openai", {"messages": copy.deepcopy(LEGACY)}, WORDS)
    alone = encode(d, [m for k, m in enumerate(d.messages) if k != 2])  # the result lost
    assert openai_problems(alone.payload) == []
    assert [m.get("content") for m in alone.payload["messages"]] == \
        ["what is in a.py", "a.py sets x", "and then?"]
    assert "function_call lost its function result" in alone.audit[0].reason
    lone = encode(d, [m for k, m in enumerate(d.messages) if k != 1])  # the call lost
    assert openai_problems(lone.payload) == []
    assert "function result without the function_call" in lone.audit[0].reason


def test_outlined_function_call_arguments_are_what_is_sent():
    d = decode("openai", {"messages": copy.deepcopy(LEGACY)}, WORDS)
    call = d.messages[1]
    short = msgspec.structs.replace(call, tool_calls=[msgspec.structs.replace(
        call.tool_calls[0], arguments='{"path": "a"}')])
    out = encode(d, [short if m is call else m for m in d.messages]).payload["messages"]
    assert out[1]["function_call"] == {"name": "read", "arguments": '{"path": "a"}'}


def test_a_request_that_fits_comes_back_as_sent_even_with_repeated_outputs():
    out = " ".join(f"line{k}" for k in range(80))
    msgs = [{"role": "user", "content": "go"}]
    for k in (1, 2):
        msgs += [{"role": "assistant", "content": None, "tool_calls": [{**CALL, "id": f"c{k}"}]},
                 {"role": "tool", "tool_call_id": f"c{k}", "content": out}]
    msgs.append({"role": "user", "content": "again?"})
    payload = {"messages": msgs}
    assert roundtrip(payload, 100_000)[2].payload == payload


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(payload=openai_payloads())
def test_an_ample_budget_gives_the_payload_back_equal(payload):
    original = copy.deepcopy(payload)
    _, report, out = roundtrip(payload, 10_000_000)
    assert out.payload == original and out.audit == []
    assert payload == original  # nothing the client sent was changed in place


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(payload=openai_payloads(), budget=st.integers(30, 3000),
       strategy=st.sampled_from(["pipeline", "priority"]))
def test_any_budget_gives_a_valid_payload_with_the_question(payload, budget, strategy):
    assert openai_problems(payload) == []  # the generator draws valid payloads
    openai_sdk_accepts(payload)
    try:
        _, report, out = roundtrip(payload, budget, strategy)
    except ContextError as exc:
        assert exc.kind == "pinned_over_budget"
        assert_too_small(payload, budget)
        return
    assert report.tokens <= budget
    assert openai_problems(out.payload) == [], out.payload
    openai_sdk_accepts(out.payload)
    assert {k: v for k, v in out.payload.items() if k != "messages"} == \
        {k: v for k, v in payload.items() if k != "messages"}
    question, last = payload["messages"][-1], out.payload["messages"][-1]
    assert {k: v for k, v in last.items() if k != "content"} == \
        {k: v for k, v in question.items() if k != "content"}
    if isinstance(question["content"], list):  # the non-text parts are all there
        assert [p for p in last["content"] if p["type"] != "text"] == \
            [p for p in question["content"] if p["type"] != "text"]


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(payload=openai_payloads(), cut=st.integers(0, 30), edit=st.booleans())
def test_decoding_with_the_previous_turn_gives_the_same_result(payload, cut, edit):
    earlier = {**payload, "messages": copy.deepcopy(payload["messages"][:cut])}
    if edit and earlier["messages"]:
        earlier["messages"][-1] = {"role": "user", "content": "an edited turn"}
    previous = decode("openai", earlier, WORDS)
    fresh, again = decode("openai", payload, WORDS), decode("openai", payload, WORDS,
                                                            previous=previous)
    assert again.messages == fresh.messages and again.index == fresh.index
    assert again.derived_ids == fresh.derived_ids and again.sources == fresh.sources
    assert encode(again, again.messages).payload == payload
