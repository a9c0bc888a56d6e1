"""A chat forked under a new session id (Claude Code's `--fork-session` or `/branch`: the same
history, another `metadata.user_id`) starts from the window of the chat it forked from, as that
chat's next turn would: its first request starts with the prefix the provider cached for the
other, not with a summary of its own written afresh; its client is told what that window
summarized; a chat that merely opens alike keeps nothing of the other's summaries. Real gateway,
official Anthropic SDK, the strict stand-in with a 4096-token window."""

from __future__ import annotations

import pytest
from gateway_stack import Stack, prose

SYSTEM = "You are Claude Code."


def send(stack: Stack, messages: list[dict], session: str,
         model: str = "standin-small") -> tuple[dict, list[dict]]:
    """(the answer's x-ctxlayer headers, the messages the stand-in received)."""
    raw = stack.anthropic().messages.with_raw_response.create(
        model=model, max_tokens=128, system=SYSTEM, messages=messages,
        metadata={"user_id": f"user_x_account_y_session_{session}"})
    raw.parse()
    sent = stack.model_requests()[-1]["body"]["messages"]
    return {k: v for k, v in raw.headers.items() if k.startswith("x-ctxlayer-")}, sent


def long_chat(stack: Stack, session: str, turns: int = 12) -> list[dict]:
    """A chat long enough to have been summarized in steps; its messages so far."""
    messages: list[dict] = []
    for k in range(turns):
        messages.append({"role": "user", "content": prose(f"{session} asks {k}", 200)})
        send(stack, messages, session)
        messages.append({"role": "assistant", "content": prose(f"{session} says {k}", 200)})
    return messages


def text(message: dict) -> str:
    content = message["content"]
    return content if isinstance(content, str) else " ".join(
        b.get("text", "") for b in content if isinstance(b, dict))


def is_summary(message: dict) -> bool:
    return "[Summary of" in text(message)


def test_a_fork_under_a_new_session_sends_what_its_chat_would_have_sent(small):
    history = long_chat(small, "parent")
    parent_before = small.model_requests()[-1]["body"]["messages"]
    assert any(is_summary(m) for m in parent_before)  # the chat was summarized

    forked = [*history, {"role": "user", "content": "fork: now try the other approach"}]
    fork_headers, fork_sent = send(small, forked, "fork")
    # the parent's own next turn with the very same messages, from the same window
    parent_headers, parent_sent = send(small, forked, "parent")
    assert fork_headers["x-ctxlayer-conversation"] != parent_headers["x-ctxlayer-conversation"]
    assert fork_sent == parent_sent
    # the prefix the provider cached for the parent's last request leads the fork's request
    shared = next((i for i, (a, b) in enumerate(zip(parent_before, fork_sent, strict=False))
                   if a != b), len(parent_before))
    assert shared >= 1 and is_summary(fork_sent[0])
    # its client is told what the window it took over summarized (its own first turn)
    assert int(fork_headers["x-ctxlayer-dropped"]) > 0
    assert fork_headers["x-ctxlayer-compacted"] == "true"
    fork_id = fork_headers["x-ctxlayer-conversation"]
    ws = small.gateway.caller.workspace
    assert any(e.action == "summarized"
               for e in small.state.conversations.why(ws, conversation_id=fork_id))


def test_a_chat_that_opens_alike_keeps_nothing_of_the_others_summaries(small):
    history = long_chat(small, "first")
    assert any(is_summary(m) for m in small.model_requests()[-1]["body"]["messages"])
    # another chat: the same first question, then its own short history
    other = [history[0], {"role": "assistant", "content": "a different answer"},
             {"role": "user", "content": "and a different follow-up"}]
    headers, sent = send(small, other, "other")
    # within its budget: sent as it came (the gateway's cache markers aside), no summary of
    # the first chat
    assert [(m["role"], text(m)) for m in sent] == [(m["role"], m["content"]) for m in other]
    assert headers["x-ctxlayer-dropped"] == "0"
    assert headers["x-ctxlayer-compacted"] == "false"


def test_a_side_request_on_another_model_leaves_the_chats_window_alone(small):
    """A request on another model beside the chat, under the same session id (a Claude Code
    sub-agent on haiku: the Agent tool's `model`): the chat's next turn still continues its
    own window."""
    history = long_chat(small, "main")
    before = small.model_requests()[-1]["body"]["messages"]
    assert any(is_summary(m) for m in before)
    small.anthropic().messages.create(
        model="claude-haiku-4-5", max_tokens=32, system="Answer with a title.",
        messages=[{"role": "user", "content": "a title for: " + history[0]["content"][:80]}],
        metadata={"user_id": "user_x_account_y_session_main"})
    _, sent = send(small, [*history, {"role": "user", "content": "main asks again"}], "main")
    shared = next((i for i, (a, b) in enumerate(zip(before, sent, strict=False)) if a != b),
                  len(before))
    assert is_summary(sent[0]) and shared >= 1, (shared, len(before))
    assert text(sent[0]) == text(before[0])  # the same summary chunk: no compaction afresh


@pytest.mark.parametrize(("model", "whole"), [("standin-twin", False), ("standin-other", True)])
def test_a_model_switch_starts_from_the_chats_window_and_switching_back_goes_on(small, model,
                                                                              whole):
    """`/model` in the middle of a chat (another model counted alike, the same session id):
    the other model's first request starts with the chat's compacted prefix, not a compaction
    of its own; or, on a model whose window holds the whole chat (the stand-in's default),
    carries every message as the client sent it, none summarized (the provider caches each
    model's prefixes apart, so the compacted prefix saves nothing there). Back on the first
    model, the chat's own window goes on."""
    history = long_chat(small, model)
    before = small.model_requests()[-1]["body"]["messages"]
    assert is_summary(before[0])
    asked = [*history, {"role": "user", "content": f"{model} asks the other model"}]
    headers, other = send(small, asked, model, model=model)
    if whole:
        assert [(m["role"], text(m)) for m in other] == [(m["role"], text(m)) for m in asked]
    else:
        assert text(other[0]) == text(before[0])
    assert headers["x-ctxlayer-compacted"] == ("false" if whole else "true")
    # listed on the model it goes on with (a branch kept the other's name), and its next
    # request goes on from its window (its own turn on the other name started afresh)
    cid = headers["x-ctxlayer-conversation"]
    (info,) = [c for c in small.state.conversations.list(small.gateway.caller.workspace)
               if c.conversation_id == cid]
    assert info.model == model
    on = [*asked, {"role": "assistant", "content": "the other model answers"},
          {"role": "user", "content": f"{model} asks the other model again"}]
    headers, going_on = send(small, on, model, model=model)
    assert headers["x-ctxlayer-conversation"] == cid
    assert text(going_on[0]) == text(other[0])
    back = [*asked, {"role": "assistant", "content": "the other model answers"},
            {"role": "user", "content": f"{model} asks the first model again"}]
    _, again = send(small, back, model)
    assert text(again[0]) == text(before[0])


def test_a_sub_agents_chat_under_the_session_id_leaves_the_chats_window_alone(small):
    """Claude Code's sub-agents send chats of their own under its session id, between two
    turns of its chat: the chat's next turn goes on in its own conversation and window."""
    history = long_chat(small, "lead")
    before = small.model_requests()[-1]["body"]["messages"]
    assert is_summary(before[0])
    lead = send(small, history + [{"role": "user", "content": "lead asks"}], "lead")[0]
    worker, _ = send(small, [{"role": "user", "content": "Read README.md and report."}], "lead")
    assert worker["x-ctxlayer-conversation"] != lead["x-ctxlayer-conversation"]
    headers, sent = send(small, [*history, {"role": "user", "content": "lead asks"},
                                 {"role": "assistant", "content": "the sub-agent reported"},
                                 {"role": "user", "content": "lead asks again"}], "lead")
    assert headers["x-ctxlayer-conversation"] == lead["x-ctxlayer-conversation"]
    assert text(sent[0]) == text(before[0])  # the same summary chunk: no compaction afresh
