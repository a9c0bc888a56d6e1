"""JSON nested deeper than Python recurses (a tool call's arguments, a tool's input 900 levels
deep) in a chat that must be fitted: the gateway shortens what it can and sends the rest as it
came. A walk that recursed into them was a 500 on every turn of that chat, for good: the
history carrying them is sent again each turn."""

from __future__ import annotations

import json

import httpx2 as httpx
import pytest
from gateway_stack import prose, small_stack

MODEL = "standin-small"  # a 4,096-token window: fitting, outlines and summaries all run


def nested(depth: int) -> str:
    return '{"a": ' + "[" * depth + "1" + "]" * depth + ', "path": "src/a.py"}'


def openai_turns(arguments: str, output: str) -> list[dict]:
    call = {"id": "c1", "type": "function", "function": {"name": "f", "arguments": arguments}}
    return [{"role": "user", "content": "run it"},
            {"role": "assistant", "content": None, "tool_calls": [call]},
            {"role": "tool", "tool_call_id": "c1", "content": output},
            {"role": "user", "content": "what did it say?"}]


def anthropic_turns(tool_input: dict, output: str) -> list[dict]:
    return [{"role": "user", "content": "run it"},
            {"role": "assistant", "content": [{"type": "tool_use", "id": "toolu_1", "name": "f",
                                               "input": tool_input}]},
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_1",
                                          "content": output}]},
            {"role": "assistant", "content": "It ran."},
            {"role": "user", "content": "what did it say?"}]


def responses_turns(arguments: str, output: str) -> list[dict]:
    return [{"role": "user", "content": "run it"},
            {"type": "function_call", "call_id": "call_1", "name": "f", "arguments": arguments},
            {"type": "function_call_output", "call_id": "call_1", "output": output},
            {"role": "user", "content": "what did it say?"}]


@pytest.mark.parametrize("depth", [900, 1500])
def test_deeply_nested_arguments_and_outputs_are_sent_on_every_turn(tmp_path, depth):
    output = '{"k": ' + "[" * depth + "]" * depth + "}\n" + prose("out", 2000)
    with small_stack(tmp_path) as stack:
        url = stack.openai_url
        for turn in range(2):
            history = openai_turns(nested(depth), output) + [
                {"role": "assistant", "content": "ok"}, {"role": "user", "content": "again"}
            ] * turn
            answer = httpx.post(f"{url}/chat/completions", timeout=60, json={
                "model": MODEL, "max_tokens": 100, "messages": history,
                "tools": [{"type": "function", "function": {"name": "f", "parameters": {
                    "type": "object"}}}]})
            assert answer.status_code == 200, answer.text
        answer = httpx.post(f"{url}/responses", timeout=60, json={
            "model": MODEL, "max_output_tokens": 100,
            "input": responses_turns(nested(depth), output)})
        assert answer.status_code == 200, answer.text
        # a JSON body holds at most what a reader follows: Anthropic's input is an object
        tool_input = json.loads(nested(min(depth, 900)))
        answer = httpx.post(f"{stack.anthropic_url}/v1/messages", timeout=60, json={
            "model": MODEL, "max_tokens": 100, "messages": anthropic_turns(tool_input, output)})
        assert answer.status_code == 200, answer.text
        sent = stack.model_requests()
        assert len(sent) == 4 and all(r["problems"] == [] for r in sent)


def test_a_value_walked_past_the_stack_deeper_in_the_gateway_is_a_400(tmp_path, monkeypatch):
    """Read whole at the door, a tool's input 978 levels deep was written again deeper in the
    stack and failed there: a 500 that said "a bug"."""
    from ctxlayer.gateway import chats

    async def too_deep(*args, **kwargs):
        raise RecursionError("maximum recursion depth exceeded")

    monkeypatch.setattr(chats, "prepare", too_deep)
    with small_stack(tmp_path) as stack:
        answer = httpx.post(f"{stack.anthropic_url}/v1/messages", timeout=60, json={
            "model": MODEL, "max_tokens": 10, "messages": [{"role": "user", "content": "q"}]})
        assert answer.status_code == 400
        assert "nested deeper than ctxlayer follows" in answer.json()["error"]["message"]
        assert stack.model_requests() == []
