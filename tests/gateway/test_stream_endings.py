"""A stream the upstream ends cleanly before its format's last event (a close-delimited body
whose process died, a proxy that closes its chunked body well) ends for the client with the
provider's error event, as a reset one does: the official SDKs raise it. Before, the half
event left over went on, then the end: the SDKs took 'Hello wor' with no finish reason for a
whole answer."""

from __future__ import annotations

import json

import anthropic
import httpx2 as httpx
import openai
import pytest

from ctxlayer.gateway.endings import Ending

QUESTION = [{"role": "user", "content": "What does the project do?"}]
SAYS = "ended the stream before its last event"
MODES = ["ended", "ended_between"]


@pytest.mark.parametrize("mode", MODES)
def test_a_chat_stream_ended_early_raises_in_the_sdk(stack, mode):
    stack.standin.fail(mode=mode)
    with pytest.raises(openai.APIError, match=SAYS):
        for _ in stack.openai().chat.completions.create(model="gpt-4o", messages=QUESTION,
                                                        stream=True):
            pass
    assert stack.standin.requests()[-1]["ended"] is True


@pytest.mark.parametrize("mode", MODES)
def test_an_anthropic_stream_ended_early_raises_in_the_sdk(stack, mode):
    stack.standin.fail(mode=mode)
    with pytest.raises(anthropic.APIError, match=SAYS), stack.anthropic().messages.stream(
            model="claude-sonnet-4", max_tokens=20, messages=QUESTION) as stream:
        for _ in stream.text_stream:
            pass


@pytest.mark.parametrize("mode", MODES)
def test_a_responses_stream_ended_early_raises_in_the_sdk(stack, mode):
    stack.standin.fail(mode=mode)
    with pytest.raises(openai.APIError, match=SAYS):
        for _ in stack.openai().responses.create(model="gpt-4o", input="What is it?",
                                                 stream=True):
            pass


def test_the_half_event_is_not_passed_on(stack):
    """Every event the client gets is whole, the last the provider's error event."""
    stack.standin.fail(mode="ended")
    body = {"model": "claude-sonnet-4", "max_tokens": 20, "messages": QUESTION, "stream": True}
    with httpx.Client(timeout=30) as client, client.stream(
            "POST", f"{stack.anthropic_url}/v1/messages", json=body,
            headers={"anthropic-version": "2023-06-01", "x-api-key": "sk-ant-test"}) as response:
        events = [e for e in response.read().decode().split("\n\n") if e]
    said = [json.loads(e.partition("data: ")[2]) for e in events]  # all whole
    assert said[-1]["type"] == "error" and SAYS in said[-1]["error"]["message"]
    assert all(s["type"] != "message_stop" for s in said)


def test_whole_streams_still_end_as_they_came(stack):
    """The stand-in's whole streams, each format's, end without the error event."""
    text = "".join(c.choices[0].delta.content or "" for c in stack.openai().chat.completions
                   .create(model="gpt-4o", messages=QUESTION, stream=True) if c.choices)
    assert text
    with stack.anthropic().messages.stream(model="claude-sonnet-4", max_tokens=20,
                                           messages=QUESTION) as stream:
        assert stream.get_final_message().stop_reason
    last = list(stack.openai().responses.create(model="gpt-4o", input="Hi", stream=True))[-1]
    assert last.type == "response.completed"


@pytest.mark.parametrize("fmt, events, over", [
    ("openai", b'data: {"choices": [{"delta": {"content": "Hi"}, "finish_reason": null}]}\n\n',
     False),
    # a server that sends no [DONE] after the finish reason: the answer is whole there
    ("openai", b'data: {"choices": [{"delta": {}, "finish_reason": "stop"}]}\n\n', True),
    ("openai", b"data: [DONE]\r\n\r\n", True),
    ("openai", b'data: {"error": {"message": "boom"}}\n\n', True),
    ("openai", b'data: {"error": null, "choices": [{"delta": {"content": "x"}}]}\n\n', False),
    ("openai", b'data: {"choices": [{"delta": {"content": "\\"finish_reason\\": \\"x"}}]}\n\n',
     False),
    ("anthropic", b'event: message_delta\ndata: {"type": "message_delta"}\n\n', False),
    ("anthropic", b'event: message_stop\ndata: {"type": "message_stop"}\n\n', True),
    ("anthropic", b'event: error\ndata: {"type": "error", "error": {}}\n\n', True),
    ("anthropic", b'data: {"type": "content_block_delta", "delta": {"text": "message_stop"}}'
                  b"\n\n", False),
    ("responses", b'data: {"type": "response.output_text.delta"}\n\n', False),
    ("responses", b'data: {"type": "response.incomplete"}\n\n', True),
    ("responses", b'data: {"type": "response.failed"}\n\n', True),
])
def test_what_ends_an_answer(fmt, events, over):
    ending = Ending(fmt)
    ending.read(events)
    assert ending.over is over
