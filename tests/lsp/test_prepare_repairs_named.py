"""A tool call ctx/prepare removes for lacking its result is named, with what it cost.

Before: in the OpenAI format the entry was `{"action": "dropped", "reason": "tool calls c1
lost their results...", "summary": "assistant: read_file(...)", "tokensBefore": 0,
"tokensAfter": 0}`: no messageId, so ctx/why could not be asked about it, and 0 tokens for a
call with a 400-character argument; the Anthropic entry named its message but said 0 tokens
too. Now both name the assistant message and what its removed calls cost as counted.
The real daemon over stdio."""

from __future__ import annotations

import pytest
from conftest import ask, result

pytestmark = pytest.mark.e2e
PATH = "a very long path argument " + "x" * 400

OPENAI = {"model": "gpt-4o", "messages": [
    {"role": "user", "content": "q"},
    {"role": "assistant", "content": "I will read IMPORTANT-TEXT.", "tool_calls": [
        {"id": "c1", "type": "function",
         "function": {"name": "read_file", "arguments": '{"path": "' + PATH + '"}'}}]},
    {"role": "user", "content": "q2"}]}
ANTHROPIC = {"model": "claude-sonnet-4", "max_tokens": 100, "messages": [
    {"role": "user", "content": "q"},
    {"role": "assistant", "content": [
        {"type": "text", "text": "I will read IMPORTANT-TEXT."},
        {"type": "tool_use", "id": "t1", "name": "read_file", "input": {"path": PATH}}]},
    {"role": "user", "content": "q2"}]}



@pytest.mark.parametrize("fmt,request_", [("openai", OPENAI), ("anthropic", ANTHROPIC)])
async def test_a_call_removed_for_lacking_its_result_is_named_with_its_cost(own_daemon, fmt,
                                                                           request_):
    prepared = await result(own_daemon, "ctx/prepare", {
        "format": fmt, "conversationId": f"calls-{fmt}", "request": request_})
    [entry] = prepared["dropped"]
    assert entry["tokensAfter"] == 0
    # the call's arguments alone cost more than 40 tokens in either encoding
    path_tokens = (await result(own_daemon, "ctx/count", {
        "model": request_["model"], "texts": [PATH]}))["total"]
    assert entry["tokensBefore"] > path_tokens > 40, (entry, path_tokens)
    assert entry["messageId"], entry
    why = await result(own_daemon, "ctx/why", {"conversationId": f"calls-{fmt}",
                                               "messageId": entry["messageId"]})
    assert entry in why["entries"], why
    # the assistant's text went on without its call
    kept = prepared["request"]["messages"][1]
    assert "IMPORTANT-TEXT" in str(kept["content"]) and "read_file" not in str(kept)


@pytest.mark.parametrize("fmt,request_", [("openai", OPENAI), ("anthropic", ANTHROPIC)])
async def test_restoring_a_removed_call_is_refused_saying_why(own_daemon, fmt, request_):
    # ctx/restore answered {} and ctx/why then said "restored on request: shown whole" beside
    # the removal, while the next turn sent the message without its call all the same
    cid = f"restore-{fmt}"
    prepared = await result(own_daemon, "ctx/prepare", {
        "format": fmt, "conversationId": cid, "request": request_})
    [entry] = prepared["dropped"]
    refused = await ask(own_daemon, "ctx/restore", {
        "conversationId": cid, "messageId": entry["messageId"]})
    error = refused.get("error")
    assert error and error["code"] == -32602, refused
    assert error["data"]["field"] == "messageId" and "cannot bring that back" in error["message"]
    why = await result(own_daemon, "ctx/why", {"conversationId": cid})
    assert all(e["action"] != "restored" for e in why["entries"]), why


LONG = "I will read IMPORTANT-TEXT. " + " ".join(f"detail{i} of the plan," for i in range(900))


async def test_a_message_cut_to_fit_that_lost_a_call_comes_back_but_for_the_call(own_daemon):
    # cut to fit (9022 -> 1648 tokens) and its call removed: the restore was refused as "not
    # cut to fit", and the text cut could not be brought back
    request_ = {"model": "gpt-4o", "messages": [
        {"role": "user", "content": "q " + "question words " * 50},
        {"role": "assistant", "content": LONG, "tool_calls": [
            {"id": "c1", "type": "function",
             "function": {"name": "read_file", "arguments": '{"path": "a"}'}}]},
        {"role": "user", "content": "q2 " + "more words " * 50},
        {"role": "assistant", "content": "ok " * 50},
        {"role": "user", "content": "q3 latest"}]}
    params = {"format": "openai", "conversationId": "cut-and-call", "request": request_,
              "budget": 3000}
    prepared = await result(own_daemon, "ctx/prepare", params)
    [removed] = prepared["dropped"]
    assert removed["messageId"] in {e["messageId"] for e in prepared["truncated"]}, prepared
    await result(own_daemon, "ctx/restore", {"conversationId": "cut-and-call",
                                            "messageId": removed["messageId"]})
    again = await result(own_daemon, "ctx/prepare", params)
    sent = again["request"]["messages"]
    # as whole as the budget lets it (shortened, said, where it alone is over it)
    assert again["notice"].startswith("ctxlayer: restored 1 message"), again["notice"]
    assert all("tool_calls" not in m for m in sent)  # its call as the request has it: none
