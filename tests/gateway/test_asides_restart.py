"""What a client asked beside its chat stays unlisted across a restart, and is listed again once
a request goes on in it. OpenCode asks its title (no tools, a system prompt of its own, on a
small model) before the chat's first request: the title's window was written while it was
still a chat, and after a restart `ctxlayer chats` listed it beside the chat (a probe's
OpenCode run: c17492e36ab3c62d2 on claude-haiku-4-5, 662 tokens). Real gateway, the `ctxlayer
chats` command, a real state folder kept across the restarts."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from gateway_stack import Stack, fresh_stack

TITLE = "You are a title generator. You output ONLY a thread title."
AGENT = "You are opencode, an interactive CLI agent."
QUESTION = "Make the adder multiply too, and run its tests."
TOOLS = [{"type": "function", "function": {"name": "bash", "parameters": {"type": "object"}}}]
TITLE_ASKED = [{"role": "user", "content": "Generate a title for this conversation:\n"},
               {"role": "user", "content": QUESTION}]


def ask(stack: Stack, system: str, messages: list[dict], model: str, **kw) -> str:
    raw = stack.openai().chat.completions.with_raw_response.create(
        model=model, messages=[{"role": "system", "content": system}, *messages], **kw)
    raw.parse()
    return raw.headers["x-ctxlayer-conversation"]


def listed(stack: Stack) -> list[str]:
    """The conversations ctx/conversations lists, through `ctxlayer chats` and the gateway."""
    done = subprocess.run([sys.executable, "-m", "ctxlayer", "chats", "--json", "--url",
                           stack.anthropic_url, "--state-dir", str(stack.state.state_dir)],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    return [c["conversationId"] for c in json.loads(done.stdout)["conversations"]]


def test_a_title_asked_beside_a_chat_is_not_listed_after_a_restart(tmp_path: Path):
    with fresh_stack(tmp_path) as stack:
        title = ask(stack, TITLE, TITLE_ASKED, "gpt-4o-mini")
        chat = ask(stack, AGENT, [{"role": "user", "content": QUESTION}], "gpt-4o", tools=TOOLS)
        assert title != chat and listed(stack) == [chat]
    with fresh_stack(tmp_path) as stack:
        assert listed(stack) == [chat]


def test_an_aside_that_goes_on_is_listed_again_after_a_restart(tmp_path: Path):
    """Asked again in the same run (its turn writes no window, only what it sent), and asked
    again after a restart (its kept window taken up): a chat again, also after the next."""
    going_on = [*TITLE_ASKED, {"role": "assistant", "content": "Adder multiplies"},
                {"role": "user", "content": "Shorter, please."}]
    with fresh_stack(tmp_path) as stack:
        title = ask(stack, TITLE, TITLE_ASKED, "gpt-4o-mini")
        chat = ask(stack, AGENT, [{"role": "user", "content": QUESTION}], "gpt-4o", tools=TOOLS)
        assert ask(stack, TITLE, going_on, "gpt-4o-mini") == title
        assert sorted(listed(stack)) == sorted([chat, title])
    with fresh_stack(tmp_path) as stack:
        assert sorted(listed(stack)) == sorted([chat, title])


def test_an_aside_kept_unlisted_comes_back_listed_when_it_goes_on_after_a_restart(
        tmp_path: Path):
    going_on = [*TITLE_ASKED, {"role": "assistant", "content": "Adder multiplies"},
                {"role": "user", "content": "Shorter, please."}]
    with fresh_stack(tmp_path) as stack:
        title = ask(stack, TITLE, TITLE_ASKED, "gpt-4o-mini")
        chat = ask(stack, AGENT, [{"role": "user", "content": QUESTION}], "gpt-4o", tools=TOOLS)
    with fresh_stack(tmp_path) as stack:
        assert ask(stack, TITLE, going_on, "gpt-4o-mini") == title
        assert sorted(listed(stack)) == sorted([chat, title])
    with fresh_stack(tmp_path) as stack:
        assert sorted(listed(stack)) == sorted([chat, title])
