"""Values a client may send that are valid JSON but odd: numbers past what SQLite keeps, and
tool-call arguments that are not a JSON object, written into a format that wants one. Each
was an internal error (-32603) of the real daemon over stdio."""

from __future__ import annotations

import json

import pytest
from conftest import RawDaemon
from providers.sdk import anthropic_sdk_accepts, openai_sdk_accepts
from providers.standin_checks import problems

pytestmark = pytest.mark.e2e
HUGE = 2**63  # one past SQLite's largest integer


async def test_a_budget_past_any_window_is_refused_naming_the_field(raw_daemon: RawDaemon):
    out = await raw_daemon.request(1, "ctx/session/open", {"sessionId": "huge", "budget": HUGE})
    assert out["error"]["code"] == -32602, out
    assert out["error"]["data"]["field"] == "budget" and "at most" in out["error"]["message"]
    out = await raw_daemon.request(2, "ctx/trim", {
        "messages": [{"role": "user", "content": "hi"}], "budget": HUGE})
    assert out["error"]["code"] == -32602, out
    # the session is not half made: opened with a budget it may hold, it answers (one its
    # model's window holds: 2**53 - 1 is over gpt-4o's, refused as over the window)
    out = await raw_daemon.request(3, "ctx/session/open", {"sessionId": "huge",
                                                           "budget": 100_000})
    assert out["result"]["budget"] == 100_000, out


async def test_an_audit_limit_past_any_count_lists_everything(raw_daemon: RawDaemon):
    await raw_daemon.request(1, "ctx/session/open", {"sessionId": "log"})
    await raw_daemon.request(2, "ctx/session/addRule", {"sessionId": "log", "rule": {
        "text": "Always run the tests.", "weight": 1}})
    out = await raw_daemon.request(3, "ctx/session/audit", {"sessionId": "log", "limit": HUGE})
    everything = await raw_daemon.request(4, "ctx/session/audit", {"sessionId": "log"})
    assert out["result"] == everything["result"], out


ARGUMENTS = ["{\"path\": \"a.py\"", "[\"a.py\", \"b.py\"]", "\"a.py\"", "null",
             "{\"n\": NaN}", ""]


async def test_tool_arguments_that_are_not_an_object_go_whole_into_anthropic_input(
        raw_daemon: RawDaemon):
    """A session kept in ctxlayer's format (or OpenAI's, whose arguments are any text) holds
    a model's broken JSON as it came; assembled for Anthropic, whose `input` must be an
    object, that was an internal error ("Input data was truncated"), and a list or a string
    went out as an `input` the provider refuses."""
    msgs = [{"role": "user", "content": "read them"}]
    for k, args in enumerate(ARGUMENTS):
        msgs += [{"role": "assistant", "content": "",
                  "toolCalls": [{"id": f"c{k}", "name": "read", "arguments": args}]},
                 {"role": "tool", "content": f"output {k}", "toolCallId": f"c{k}"}]
    await raw_daemon.request(1, "ctx/session/open", {"sessionId": "args"})
    out = await raw_daemon.request(2, "ctx/session/append", {"sessionId": "args",
                                                              "messages": msgs})
    assert "result" in out, out
    out = await raw_daemon.request(3, "ctx/assemble", {"sessionId": "args",
                                                       "format": "anthropic"})
    result = out["result"]
    body = {"model": "claude-sonnet-4-5", "max_tokens": 100, "messages": result["messages"]}
    anthropic_sdk_accepts(body)
    assert problems("anthropic", body) == []
    inputs = [b["input"] for m in result["messages"] if isinstance(m["content"], list)
              for b in m["content"] if b["type"] == "tool_use"]
    assert inputs == [{"arguments": a} for a in ARGUMENTS[:4]] + [
        {"arguments": ARGUMENTS[4]}, {}]
    said = [e for e in result["truncated"] if "not a JSON object" in e["reason"]]
    assert len(said) == 5 and all(e["messageId"] for e in said), result["truncated"]
    # OpenAI's arguments are text: they go as they came, nothing said
    out = await raw_daemon.request(4, "ctx/assemble", {"sessionId": "args", "format": "openai"})
    result = out["result"]
    openai_sdk_accepts({"messages": result["messages"]})
    sent = [c["function"]["arguments"] for m in result["messages"]
            for c in m.get("tool_calls") or ()]
    assert sent == ARGUMENTS and not result["truncated"], json.dumps(result)[:500]


async def test_a_system_or_developer_message_before_the_first_user_turn_is_kept(
        raw_daemon: RawDaemon):
    """A client's own instruction appended first to a session (OpenAI's `developer` message,
    a system prompt) was dropped from every assembly as "the history must start with a user
    turn", with all the room in the world."""
    chat = [{"role": "developer", "content": "Answer in one line."},
            {"role": "user", "content": "What does make test run?"}]
    await raw_daemon.request(1, "ctx/session/open", {"sessionId": "dev"})
    out = await raw_daemon.request(2, "ctx/session/append", {"sessionId": "dev",
                                                              "format": "openai",
                                                              "messages": chat})
    assert "result" in out, out
    out = (await raw_daemon.request(3, "ctx/assemble", {"sessionId": "dev",
                                                        "format": "openai"}))["result"]
    assert out["messages"][-2:] == chat and not out["dropped"], out
    out = (await raw_daemon.request(4, "ctx/assemble", {"sessionId": "dev",
                                                        "format": "anthropic"}))["result"]
    assert "Answer in one line." in json.dumps(out["system"]) and not out["dropped"], out
    assert out["messages"] == [{"role": "user", "content": "What does make test run?"}]
    # a turn before the first user turn still goes (Anthropic refuses one), and says so
    await raw_daemon.request(5, "ctx/session/open", {"sessionId": "greeting"})
    await raw_daemon.request(6, "ctx/session/append", {"sessionId": "greeting", "messages": [
        {"role": "assistant", "content": "Hello! How can I help?"},
        {"role": "user", "content": "What does make test run?"}]})
    out = (await raw_daemon.request(7, "ctx/assemble", {"sessionId": "greeting"}))["result"]
    assert [e["reason"] for e in out["dropped"]] == ["the history must start with a user turn"]


async def test_an_output_room_that_fills_the_window_is_refused_naming_the_field(
        raw_daemon: RawDaemon):
    """It left the prompt a budget of one token: "the newest user message alone needs 7
    tokens, over the budget of 1", naming nothing the client sent."""
    ask = {"model": "gpt-4o", "messages": [{"role": "user", "content": "hi"}]}
    out = await raw_daemon.request(1, "ctx/prepare", {"format": "openai", "request": ask,
                                                      "reserveOutput": HUGE})
    assert out["error"]["code"] == -32602 and out["error"]["data"]["field"] == "reserveOutput"
    out = await raw_daemon.request(2, "ctx/prepare", {"format": "openai",
                                                      "request": {**ask, "max_tokens": HUGE}})
    assert out["error"]["data"]["field"] == "request.max_tokens", out
    assert "128,000-token window of gpt-4o" in out["error"]["message"]
    out = await raw_daemon.request(3, "ctx/prepare", {"format": "openai",
                                                      "request": {**ask, "max_tokens": 4096}})
    assert "result" in out, out
