"""A chat switched from a model with a small window to one with a big window (the same
x-ctxlayer-conversation, the same history) is fitted again to the big window: it goes out as
the same history would go out as a new chat on that model.

Before: the window fitted to 4k was carried over: after the switch the gateway forwarded
1,797 and 1,812 tokens of a 64k window, the log cut to 4,974 characters, where the same
history as a new chat went out at 35,320 tokens, the log at 99,099 characters."""

from __future__ import annotations

from pathlib import Path

import requests
from gateway_stack import Stack, fresh_stack

WINDOWS = {"standin-small": 4096, "standin-big": 65536}
LOG = "\n".join(f"{i}: INFO processing item {i} ok value={i * 7}" for i in range(8000))
JOB = [{"role": "user", "content": "run the job"},
       {"role": "assistant", "content": None, "tool_calls": [
           {"id": "c1", "type": "function", "function": {"name": "run", "arguments": "{}"}}]},
       {"role": "tool", "tool_call_id": "c1", "content": LOG}]


def sent(stack: Stack, model: str, messages: list[dict]) -> tuple[int, dict]:
    """(x-ctxlayer-tokens, the body the stand-in received) of one request of the chat."""
    resp = requests.post(stack.openai_url + "/chat/completions",
                         json={"model": model, "messages": messages}, timeout=60,
                         headers={"authorization": "Bearer x",
                                  "x-ctxlayer-conversation": "chat"})
    assert resp.status_code == 200, resp.text
    return int(resp.headers["x-ctxlayer-tokens"]), stack.model_requests()[-1]["body"]


def test_a_chat_switched_to_a_bigger_window_goes_out_as_a_new_chat_there_would(tmp_path: Path):
    later = [*JOB, {"role": "assistant", "content": "noted"},
             {"role": "user", "content": "next"}]
    with fresh_stack(tmp_path / "new", WINDOWS, windows=WINDOWS) as stack:
        expected = sent(stack, "standin-big", later)
    with fresh_stack(tmp_path / "switched", WINDOWS, windows=WINDOWS) as stack:
        small, _ = sent(stack, "standin-small", JOB)
        assert small < 4096
        tokens, body = sent(stack, "standin-big", later)
    assert (tokens, body) == expected
    assert tokens > 65536 // 2, tokens
