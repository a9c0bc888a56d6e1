"""A custom tool's call (OpenAI's `custom` tool call: free-text input, no JSON) appended to a
session goes out as one in every format that has them, also after a restart, and is named
in `truncated` by the one that has not (Anthropic). Over real stdio.

Before (probe 72, s14): assembled as responses it came out as a `function_call` whose
`arguments` were the patch text (not JSON), with nothing said; assembled as anthropic the
entry spoke of "tool call arguments that are not a JSON object" and not of a custom tool
(one whose input read as a JSON object went as that object, unsaid).
"""

from __future__ import annotations

import itertools

import pytest
from conftest import WORLD, RawDaemon, hermetic_env, make_repo, result

pytestmark = pytest.mark.e2e
_worlds = itertools.count()

PATCH = "*** Begin Patch\n*** Update File: a.py\n@@\n-x = 1\n+x = 2\n*** End Patch"
CHAT = [{"role": "user", "content": "fix a.py"},
        {"role": "assistant", "content": None, "tool_calls": [
            {"id": "c1", "type": "custom", "custom": {"name": "apply_patch", "input": PATCH}}]},
        {"role": "tool", "tool_call_id": "c1", "content": "Done: a.py updated"},
        {"role": "user", "content": "and now?"}]
CALL = {"type": "custom_tool_call", "call_id": "c1", "name": "apply_patch", "input": PATCH}
OUTPUT = {"type": "custom_tool_call_output", "call_id": "c1", "output": "Done: a.py updated"}


async def _assembled(daemon: RawDaemon, session_id: str, fmt: str) -> dict:
    return await result(daemon, "ctx/assemble", {"sessionId": session_id, "format": fmt})


def _calls(items: list[dict]) -> list[dict]:
    return [i for i in items if i.get("call_id") == "c1"]


async def test_a_custom_tool_call_goes_out_as_one_in_responses_also_after_a_restart():
    base = WORLD / f"custom-calls-{next(_worlds)}"
    env, root = hermetic_env(base), make_repo(base / "repo")
    daemon = await RawDaemon.start(env=env)
    try:
        await daemon.initialize(root)
        await result(daemon, "ctx/session/open", {"sessionId": "s", "model": "gpt-4o"})
        await result(daemon, "ctx/session/append", {
            "sessionId": "s", "format": "openai", "messages": CHAT})
        before = await _assembled(daemon, "s", "responses")
    finally:
        assert await daemon.close() == 0
    assert _calls(before["messages"]) == [CALL, OUTPUT], before["messages"]
    assert before["truncated"] == [], before["truncated"]
    daemon = await RawDaemon.start(env=env)
    try:
        await daemon.initialize(root)
        after = await _assembled(daemon, "s", "responses")
        # and back: those items appended in the Responses format, assembled as Chat Completions
        await result(daemon, "ctx/session/open", {"sessionId": "back", "model": "gpt-4o"})
        await result(daemon, "ctx/session/append", {
            "sessionId": "back", "format": "responses", "messages": after["messages"]})
        back = await _assembled(daemon, "back", "openai")
    finally:
        assert await daemon.close() == 0
    assert _calls(after["messages"]) == [CALL, OUTPUT], after["messages"]
    [assistant] = [m for m in back["messages"] if m.get("tool_calls")]
    assert assistant["tool_calls"] == CHAT[1]["tool_calls"], assistant
    assert back["truncated"] == [], back["truncated"]


@pytest.mark.parametrize("text", [PATCH, '{"looks": "like JSON"}'])
async def test_a_custom_tool_call_assembled_as_anthropic_is_named(own_daemon: RawDaemon,
                                                                   text: str):
    chat = [CHAT[0], {**CHAT[1], "tool_calls": [
        {"id": "c1", "type": "custom", "custom": {"name": "apply_patch", "input": text}}]},
        *CHAT[2:]]
    await result(own_daemon, "ctx/session/open", {"sessionId": "s", "model": "gpt-4o"})
    await result(own_daemon, "ctx/session/append", {
        "sessionId": "s", "format": "openai", "messages": chat})
    out = await _assembled(own_daemon, "s", "anthropic")
    [use] = [b for m in out["messages"] if isinstance(m["content"], list)
             for b in m["content"] if b.get("type") == "tool_use"]
    assert use["input"] == {"input": text}, use
    said = [e for e in out["truncated"] if "custom tool" in e["reason"]]
    assert len(said) == 1 and said[0]["summary"].startswith("apply_patch("), out["truncated"]
