"""An agent that stores each step as it happens appends a tool's result alone, after the append
of its call. In a provider format that append was refused ("'tc0' answers no tool call: no
assistant message is before it"): the check of a request's newest turn looked at the append
alone, not at the session it goes on. The real daemon over stdio."""

from __future__ import annotations

import pytest

pytestmark = pytest.mark.e2e

STEPS = {
    "openai": [
        [{"role": "user", "content": "Fix the bug in app.py."}],
        [{"role": "assistant", "content": None, "tool_calls": [{
            "id": "tc0", "type": "function",
            "function": {"name": "read", "arguments": "{\"path\": \"app.py\"}"}}]}],
        [{"role": "tool", "tool_call_id": "tc0", "content": "def main(): retrun 1"}],
    ],
    "anthropic": [
        [{"role": "user", "content": "Fix the bug in app.py."}],
        [{"role": "assistant", "content": [
            {"type": "tool_use", "id": "tu0", "name": "read", "input": {"path": "app.py"}}]}],
        [{"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": "tu0", "content": "def main(): retrun 1"}]}],
    ],
}


@pytest.mark.parametrize("fmt", sorted(STEPS))
async def test_a_tool_result_appended_after_its_call_is_stored_and_sent(own_daemon, fmt):
    daemon = own_daemon
    await daemon.request("o", "ctx/session/open", {"sessionId": "s", "budget": 100_000})
    for k, step in enumerate(STEPS[fmt]):
        got = await daemon.request(f"a{k}", "ctx/session/append",
                                   {"sessionId": "s", "format": fmt, "messages": step})
        assert "result" in got, got
    assembled = await daemon.request("asm", "ctx/assemble", {"sessionId": "s", "format": fmt})
    result = assembled["result"]
    assert "retrun 1" in str(result["messages"]), "the result is sent"
    assert "app.py" in str(result["messages"][-2:]), "after its call"
    assert result["dropped"] == []
