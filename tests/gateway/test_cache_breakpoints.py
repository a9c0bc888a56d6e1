"""Anthropic takes at most 4 `cache_control` breakpoints in a request, system and tools
included ("A maximum of 4 blocks with cache_control may be provided"). A client that marks
more went through the gateway with all of them and got the provider's 400; now the client's
last four (its longest cached prefixes) go, and each one removed is in the chat's audit. The
official SDK drives the real gateway; the strict stand-in refuses what Anthropic refuses."""

from __future__ import annotations

import httpx2 as httpx
from providers.standin_checks import problems

from ctxlayer.statefiles import read_token, token_file

CC = {"type": "ephemeral"}


def marked(text: str) -> list[dict]:
    return [{"type": "text", "text": text, "cache_control": CC}]


def marks(body: dict) -> list[str]:
    """Where the body carries cache_control, in the order the provider reads it."""
    out = [f"tools[{n}]" for n, t in enumerate(body.get("tools") or []) if "cache_control" in t]
    system = body.get("system")
    out += [f"system[{n}]" for n, b in enumerate(system if isinstance(system, list) else [])
            if "cache_control" in b]
    for n, m in enumerate(body["messages"]):
        for j, b in enumerate(m["content"] if isinstance(m["content"], list) else []):
            out += [f"messages[{n}][{j}][{p}]" for p, part in enumerate(
                b.get("content") if isinstance(b.get("content"), list) else [])
                if "cache_control" in part]
            out += [f"messages[{n}][{j}]"] if "cache_control" in b else []
    return out


def test_more_than_four_breakpoints_keep_the_clients_last_four(stack):
    turns = []
    for i in range(6):
        turns += [{"role": "user", "content": marked(f"question {i}")},
                  {"role": "assistant", "content": marked(f"answer {i}")}]
    turns.append({"role": "user", "content": "the last question"})
    tools = [{"name": "grep", "description": "search", "input_schema": {"type": "object"},
              "cache_control": CC}]
    body = {"model": "claude-sonnet-4-5", "max_tokens": 64, "system": marked("You help."),
            "tools": tools, "messages": turns}
    assert problems("anthropic", body)  # the stand-in refuses it as it came

    raw = stack.anthropic().messages.with_raw_response.create(**body, extra_headers={
        "x-ctxlayer-conversation": "fourteen-breakpoints"})
    assert raw.parse().content[0].text.startswith("stand-in answer")
    (seen,) = stack.model_requests()
    assert seen["status"] == 200 and seen["problems"] == []
    sent = seen["body"]
    assert marks(sent) == ["messages[8][0]", "messages[9][0]", "messages[10][0]",
                           "messages[11][0]"]
    # nothing else changed: every block is there, only the first ten lost their marker
    unmarked = [[{"type": "text", "text": m["content"][0]["text"]}] for m in turns[:8]]
    assert [m["content"] for m in sent["messages"][:12]] == unmarked + [
        m["content"] for m in turns[8:12]]
    assert sent["tools"][0]["name"] == "grep" and sent["system"][0]["text"] == "You help."

    token = read_token(token_file(stack.state.state_dir))
    why = httpx.get(stack.anthropic_url + "/ctxlayer/why",
                    params={"conversationId": "fourteen-breakpoints"},
                    headers={"Authorization": f"Bearer {token}"}).json()["entries"]
    removed = [e for e in why if "cache_control" in e["reason"]]
    assert len(removed) == 10, why  # 14 marks, 4 kept: each other one said
    assert any(e["summary"].startswith("tool grep") for e in removed)
    assert any(e["summary"].startswith("system block 1") for e in removed)
    assert sum(e.get("messageId") is not None for e in removed) == 8


def test_nested_and_fewer_breakpoints_are_left_as_the_client_set_them(stack):
    """Four in all, one on a tool_result's inner part: none removed. Five, the fifth inside
    a tool_result: the first, on the system, goes."""
    use = {"role": "assistant", "content": [
        {"type": "tool_use", "id": "tu1", "name": "grep", "input": {}}]}
    result = {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "tu1",
                                           "content": marked("found it")}]}
    turns = [{"role": "user", "content": marked("q0")}, use, result,
             {"role": "assistant", "content": marked("a1")},
             {"role": "user", "content": "the last question"}]
    for system, first in ((marked("You help."), "system[0]"), (marked("s1") + marked("s2"),
                                                                "system[1]")):
        stack.standin.reset()
        body = {"model": "claude-sonnet-4-5", "max_tokens": 64, "system": system,
                "messages": turns}
        stack.anthropic().messages.create(**body)
        (seen,) = stack.model_requests()
        assert seen["status"] == 200 and seen["problems"] == [], seen["problems"]
        assert marks(seen["body"]) == [first, "messages[0][0]", "messages[2][0][0]",
                                       "messages[3][0]"]


def test_the_marks_inside_a_custom_document_count_and_are_capped_too(stack):
    """A document whose source is content blocks: the provider counts the marks on those
    blocks, the cap did not (six went out, and the provider refused them)."""
    document = {"type": "document", "title": "notes", "source": {"type": "content", "content": [
        {"type": "text", "text": "part one", "cache_control": CC},
        {"type": "text", "text": "part two", "cache_control": CC}]}}
    body = {"model": "claude-sonnet-4-5", "max_tokens": 64, "system": marked("You help."),
            "messages": [{"role": "user", "content": [document, *marked("read it")]},
                         {"role": "assistant", "content": marked("done")},
                         {"role": "user", "content": marked("and then?")}]}
    assert problems("anthropic", body)  # six marks: refused as it came
    raw = stack.anthropic().messages.with_raw_response.create(**body)
    assert raw.parse().content
    (seen,) = stack.model_requests()
    assert seen["status"] == 200 and seen["problems"] == []
    parts = seen["body"]["messages"][0]["content"][0]["source"]["content"]
    assert ["cache_control" in p for p in parts] == [False, True]  # the first two went
    assert [p["text"] for p in parts] == ["part one", "part two"]


def test_a_request_level_cache_control_gets_no_breakpoint_of_the_gateways(stack):
    """Anthropic's automatic caching (`cache_control` at the body's top) places the request's
    breakpoint itself and counts among the four. The gateway added its own on the last
    message beside it: a request with more breakpoints than the client meant, and a client
    with three marks of its own and automatic caching was refused for five."""
    turns = [{"role": "user", "content": "q0"}, {"role": "assistant", "content": "a0"},
             {"role": "user", "content": "the last question"}]
    body = {"model": "claude-sonnet-4-5", "max_tokens": 64, "system": "You help.",
            "messages": turns}
    automatic = {"cache_control": CC}
    stack.anthropic().messages.create(**body, extra_body=automatic)
    (seen,) = stack.model_requests()
    assert seen["status"] == 200 and seen["problems"] == [], seen["problems"]
    assert marks(seen["body"]) == [] and seen["body"]["cache_control"] == CC

    # four marks and the request's: refused as they came, the client's last three go
    stack.standin.reset()
    tools = [{"name": "grep", "description": "search", "input_schema": {"type": "object"},
              "cache_control": CC}]
    turns = [{"role": "user", "content": marked("q0")},
             {"role": "assistant", "content": marked("a0")},
             {"role": "user", "content": marked("the last question")}]
    body = {**body, "tools": tools, "messages": turns}
    assert problems("anthropic", {**body, **automatic})
    assert not problems("anthropic", body)
    stack.anthropic().messages.create(**body, extra_body=automatic)
    (seen,) = stack.model_requests()
    assert seen["status"] == 200 and seen["problems"] == [], seen["problems"]
    assert marks(seen["body"]) == ["messages[0][0]", "messages[1][0]", "messages[2][0]"]
