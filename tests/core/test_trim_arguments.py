"""The trim engine (ctx/trim, `ctxlayer trim`) outlines a tool call long by its arguments (an
agent that wrote a file through a call) instead of dropping it with its results, as ctx/prepare
does; each provider format then sends the outlined arguments, still a JSON object, and the
request costs what the engine counted."""

from __future__ import annotations

import json

import pytest
from providers.rules import anthropic_problems, openai_problems
from test_prepare_arguments import anthropic_request, openai_request, write_arguments

from ctxlayer.core.formats import decode, encode, trim_options
from ctxlayer.core.tokens import WordTokenizer, conversation_tokens, message_tokens
from ctxlayer.core.trim import TrimOptions, trim
from ctxlayer.protocol import Message, ToolCall

WORDS = WordTokenizer()


def chat() -> list[Message]:
    """Six short exchanges, then the call writing a file (about 1,100 words of arguments),
    its result and the next question."""
    out = [Message(role="system", id="sys", content="You are a careful coding agent.")]
    for k in range(6):
        out += [Message(role="user", id=f"q{k}", content=f"question {k}"),
                Message(role="assistant", id=f"a{k}", content=f"answer {k} " + "explained. " * 20)]
    out += [Message(role="user", id="ask", content="Write the steps module."),
            Message(role="assistant", id="write", content="Writing it.", tool_calls=[
                ToolCall(id="call_w", name="str_replace_editor", arguments=write_arguments())]),
            Message(role="tool", id="written", tool_call_id="call_w", content="File created."),
            Message(role="user", id="run", content="Now run the tests.")]
    return out


@pytest.mark.parametrize("strategy", ["pipeline", "priority"])
def test_a_call_long_by_its_arguments_is_outlined_not_dropped(strategy):
    msgs = chat()
    budget = 800
    assert WORDS.count(msgs[14].tool_calls[0].arguments) > budget
    report = trim(msgs, budget, WORDS, options=TrimOptions(strategy=strategy))
    assert report.tokens == conversation_tokens(report.messages, WORDS) <= budget
    ids = [m.id for m in report.messages]
    assert ids[-4:] == ["ask", "write", "written", "run"], ids  # the call and its result kept
    assert budget - report.tokens < 256  # the room the outline leaves, to a cap, goes back
    call = report.messages[-3].tool_calls[0]
    value = json.loads(call.arguments)  # still a JSON object, short values whole
    assert value["command"] == "create" and value["path"] == "src/pipeline/steps.py"
    assert value["file_text"].startswith("def step_0(queue):")
    assert call.id == "call_w" and report.messages[-3].content == "Writing it."
    entry, = [e for e in report.truncated if e.message_id == "write"]
    assert entry.action == "compressed" and "arguments" in entry.reason
    assert entry.tokens_after == message_tokens(report.messages[-3], WORDS)
    assert not any(e.message_id in ("write", "written") for e in report.dropped)


def test_arguments_that_are_no_json_object_leave_the_call_to_be_dropped():
    msgs = chat()
    plain = " ".join(["x=1"] * 1200)  # a tool's own input, not JSON: not outlined
    msgs[14] = Message(role="assistant", id="write", content="Writing it.", tool_calls=[
        ToolCall(id="call_w", name="shell", arguments=plain)])
    report = trim(msgs, 800, WORDS)
    assert report.tokens == conversation_tokens(report.messages, WORDS) <= 800
    assert "write" not in [m.id for m in report.messages]
    assert {e.message_id for e in report.dropped} >= {"write", "written"}


def sent(fmt: str, body: dict, budget: int):
    """(the request the engine's result is written back as, its audit): read again, it costs
    what the engine counted."""
    d = decode(fmt, body, WORDS)
    report = trim(d.messages, budget, WORDS, options=trim_options(fmt, d))
    out = encode(d, report.messages).payload
    again = decode(fmt, out, WORDS)
    assert conversation_tokens(again.messages, WORDS, trim_options(fmt, d).fmt) \
        == report.tokens <= budget
    return out, report


def test_openai_sends_the_outlined_arguments_of_a_trimmed_request():
    body = openai_request()
    out, report = sent("openai", body, 1000)
    assert not report.dropped
    call = out["messages"][2]["tool_calls"][0]
    args = json.loads(call["function"]["arguments"])
    assert args["path"] == "src/pipeline/steps.py"
    assert call["function"]["arguments"] != write_arguments()
    assert openai_problems(out) == []
    assert out["messages"][3:] == body["messages"][3:]


def test_anthropic_sends_the_outlined_arguments_of_a_trimmed_request_as_an_object():
    body = anthropic_request()
    out, report = sent("anthropic", body, 1000)
    assert not report.dropped
    blocks = out["messages"][1]["content"]
    assert blocks[:2] == body["messages"][1]["content"][:2]  # thinking, signature, text
    assert isinstance(blocks[2]["input"], dict)
    assert blocks[2]["input"]["path"] == "src/pipeline/steps.py"
    assert blocks[2]["input"] != body["messages"][1]["content"][2]["input"]
    assert anthropic_problems(out) == []
