"""An agent loop whose size is in a tool call's arguments (it wrote a file through a call)
goes through the real gateway with the official SDKs: the call's arguments are outlined, not
summarized with everything before them, and the strict stand-in receives a valid request
within the window that carries the outlined arguments (a JSON object; Anthropic's `input`)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from gateway_stack import SMALL_WINDOW, Stack, start_stack, stop_stack
from providers.standin import StandinThread
from test_fitting import prose, within_window

from ctxlayer.tokenizers import model_info

#: a Claude model given gpt-4's window by the gateway's `models` setting, so the loop needs fitting
CLAUDE = "claude-haiku-4-5"


@pytest.fixture(scope="module")
def small_claude(world: Path) -> Iterator[Stack]:
    mp = pytest.MonkeyPatch()
    mp.setenv("XDG_CONFIG_HOME", str(world / "config"))  # never the user's own config
    (world / "state-small-claude").mkdir()
    with StandinThread(windows=SMALL_WINDOW) as thread:
        gateway, state = start_stack(thread, world / "workspace", world / "state-small-claude",
                                     models={CLAUDE: model_info("gpt-4").context_window})
        try:
            yield Stack(thread, gateway, state)
        finally:
            stop_stack(thread, gateway, state)
            mp.undo()


def module_text(lines: int) -> str:
    out = [f"def step_{k}(queue, batch_{k}):  # moves batch {k} along the pipeline"
           for k in range(lines)]
    out[lines // 2] = "    raise KeyError('a missing batch')"
    return "\n".join(out)


def write_input() -> dict:
    """About 6,000 tokens: a module written through the editor tool."""
    return {"command": "create", "path": "src/pipeline/steps.py", "file_text": module_text(330)}


def exchanges() -> list[tuple[str, str, str]]:
    return [(f"call_{k}", f"pytest tests/test_steps.py -k case_{k}", prose(200 + k, 200))
            for k in range(5)]


def openai_loop() -> list[dict]:
    msgs: list[dict] = [
        {"role": "system", "content": "You are a careful coding agent."},
        {"role": "user", "content": "Write the steps module and test it."},
        {"role": "assistant", "content": "Writing the module.", "tool_calls": [
            {"id": "call_w", "type": "function", "function": {
                "name": "str_replace_editor", "arguments": json.dumps(write_input())}}]},
        {"role": "tool", "tool_call_id": "call_w", "content": "File created successfully."}]
    for cid, cmd, output in exchanges():
        msgs += [{"role": "assistant", "content": None, "tool_calls": [
                    {"id": cid, "type": "function", "function": {
                        "name": "bash", "arguments": json.dumps({"command": cmd})}}]},
                 {"role": "tool", "tool_call_id": cid, "content": output}]
    return msgs


def anthropic_loop() -> list[dict]:
    msgs: list[dict] = [
        {"role": "user", "content": "Write the steps module and test it."},
        {"role": "assistant", "content": [
            {"type": "text", "text": "Writing the module."},
            {"type": "tool_use", "id": "call_w", "name": "str_replace_editor",
             "input": write_input()}]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "call_w",
                                      "content": "File created successfully."}]}]
    for cid, cmd, output in exchanges():
        msgs += [{"role": "assistant", "content": [
                    {"type": "tool_use", "id": cid, "name": "bash", "input": {"command": cmd}}]},
                 {"role": "user", "content": [{"type": "tool_result", "tool_use_id": cid,
                                               "content": output}]}]
    return msgs


def outlined(text: str) -> None:
    original = write_input()["file_text"]
    assert len(text) < len(original) and text.startswith(original.split("\n")[0])
    assert "[cut from this message: KeyError]" in text


def test_openai_agent_loop_sends_the_outlined_arguments(stack):
    msgs = openai_loop()
    raw = stack.openai().chat.completions.with_raw_response.create(
        model="gpt-4", messages=msgs, max_tokens=500)
    assert raw.parse().choices[0].message.content.startswith("stand-in answer")
    (seen,) = stack.model_requests()
    within_window([seen])
    sent = seen["body"]["messages"]
    assert len(sent) == len(msgs)  # outlined, nothing summarized
    assert seen["prompt_tokens"] + 500 <= model_info("gpt-4").context_window
    call = sent[2]["tool_calls"][0]
    assert call["id"] == "call_w" and call["function"]["name"] == "str_replace_editor"
    args = json.loads(call["function"]["arguments"])
    assert args["path"] == "src/pipeline/steps.py"
    outlined(args["file_text"])
    assert sent[3:] == msgs[3:]


def test_anthropic_agent_loop_sends_the_outlined_input_object(small_claude):
    msgs = anthropic_loop()
    done = small_claude.anthropic().messages.create(
        model=CLAUDE, max_tokens=500, system="You are a careful coding agent.", messages=msgs)
    assert "stand-in answer" in done.content[0].text
    (seen,) = small_claude.model_requests()
    within_window([seen])
    assert seen["prompt_tokens"] + 500 <= model_info("gpt-4").context_window
    sent = seen["body"]["messages"]
    assert len(sent) == len(msgs)
    block = sent[1]["content"][1]
    assert block["type"] == "tool_use" and block["id"] == "call_w"
    assert isinstance(block["input"], dict) and block["input"]["path"] == "src/pipeline/steps.py"
    outlined(block["input"]["file_text"])


def legacy_loop() -> list[dict]:
    """The same loop in the deprecated function calling: `function_call` and `function`."""
    msgs: list[dict] = [
        {"role": "system", "content": "You are a careful coding agent."},
        {"role": "user", "content": "Write the steps module and test it."},
        {"role": "assistant", "content": "Writing the module.", "function_call": {
            "name": "str_replace_editor", "arguments": json.dumps(write_input())}},
        {"role": "function", "name": "str_replace_editor",
         "content": "File created successfully."}]
    for _, cmd, output in exchanges():
        msgs += [{"role": "assistant", "content": None, "function_call": {
                    "name": "bash", "arguments": json.dumps({"command": cmd})}},
                 {"role": "function", "name": "bash", "content": output}]
    return msgs


FUNCTIONS = [{"name": "bash", "description": "Run a shell command.", "parameters": {
    "type": "object", "properties": {"command": {"type": "string"}}}},
    {"name": "str_replace_editor", "description": "Create or edit a file.",
     "parameters": {"type": "object", "properties": {"path": {"type": "string"}}}}]


def test_deprecated_function_calling_is_fitted_and_sent_as_the_client_wrote_it(stack):
    """An old client's `functions` and `function` messages (the SDK still sends them): read,
    counted (the definitions too), fitted with the call's arguments outlined, and sent back in
    the client's own shape, which the strict stand-in accepts within the window."""
    msgs = legacy_loop()
    raw = stack.openai().chat.completions.with_raw_response.create(
        model="gpt-4", messages=msgs, max_tokens=500, functions=FUNCTIONS,
        function_call="auto")
    assert raw.parse().choices[0].message.content.startswith("stand-in answer")
    (seen,) = stack.model_requests()
    within_window([seen])
    assert seen["prompt_tokens"] + 500 <= model_info("gpt-4").context_window
    # the functions' ~60 tokens are counted as the stand-in bills them (4 apart, not 55)
    assert abs(int(raw.headers["x-ctxlayer-tokens"]) - seen["prompt_tokens"]) <= 20
    body = seen["body"]
    assert body["functions"] == FUNCTIONS and body["function_call"] == "auto"
    sent = body["messages"]
    assert len(sent) == len(msgs)  # outlined, nothing summarized
    call = sent[2]["function_call"]
    assert call["name"] == "str_replace_editor"
    outlined(json.loads(call["arguments"])["file_text"])
    assert sent[3:] == msgs[3:]
