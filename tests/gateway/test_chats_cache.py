"""`ctxlayer chats` shows the provider's own cache reads (the usage the gateway read from its
answer) next to the gateway's estimate, and the bill against sending everything uncached
(reads 0.1x, the rest written at 1.25x for Claude, 1x for the others; its help says so)."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from ctxlayer.commands.chats import bill, k

LONG = " ".join(f"fact {i}: the adder keeps its numbers in base ten" for i in range(300))


def chats(stack, *flags: str) -> str:
    done = subprocess.run([sys.executable, "-m", "ctxlayer", "chats", "--url", stack.anthropic_url,
                           "--state-dir", str(stack.state.state_dir), *flags],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_chats_shows_the_providers_cache_reads_and_the_bill(stack):
    client = stack.anthropic()
    history = [{"role": "user", "content": LONG}, {"role": "assistant", "content": "noted"}]
    for question in ("what base?", "and why?"):
        history.append({"role": "user", "content": question})
        answer = client.messages.create(model="claude-sonnet-4-5", max_tokens=64,
                                        system="You help with the adder.", messages=history,
                                        extra_headers={"x-ctxlayer-conversation": "cache-bill"})
        history.append({"role": "assistant", "content": answer.content[0].text})
    last = stack.model_requests()[-1]
    assert last["status"] == 200 and last["problems"] == []
    (row,) = [c for c in json.loads(chats(stack, "--json"))["conversations"]
              if c["conversationId"] == "cache-bill"]
    assert row["cachedTokens"] > 1000  # the provider read the long first message from its cache
    expected = bill(row)
    assert expected is not None and 0.1 < expected < 1
    table = chats(stack)
    (line,) = [t for t in table.splitlines() if t.startswith("cache-bill")]
    header = table.splitlines()[0]
    assert "est. cache" in header and "read" in header and "bill" in header
    assert f" {k(row['cachedTokens'])} " in line and f"{expected:.0%}" in line
    # the column says what it counts: messages left out, not whatever was cut ("cut 0" read
    # as nothing cut beside a log shortened from 106k to 39k tokens)
    assert header.split()[-2:] == ["dropped", "updated"]
    assert line.split()[-2] == str(row["dropped"])


@pytest.mark.parametrize("row,expected", [
    ({"model": "claude-opus-4-8", "tokens": 1000, "cachedTokens": 1000}, 0.1),
    ({"model": "claude-opus-4-8", "tokens": 1000, "cachedTokens": 0}, 1.25),
    ({"model": "claude-opus-4-8", "tokens": 1000, "cachedTokens": 500}, 0.675),
    ({"model": "gpt-4o", "tokens": 1000, "cachedTokens": 500}, 0.55),
    ({"model": "gpt-4o", "tokens": 1000, "cachedTokens": 5000}, 0.1),  # never above tokens
    ({"model": "gpt-4o", "tokens": 1000, "cachedTokens": None}, None),
    ({"model": "gpt-4o", "tokens": 0, "cachedTokens": 0}, None),
])
def test_the_bill_is_reads_at_a_tenth_and_the_rest_written_or_plain(row, expected):
    assert bill(row) == (None if expected is None else pytest.approx(expected))


def test_the_help_defines_the_bill():
    done = subprocess.run([sys.executable, "-m", "ctxlayer", "chats", "--help"],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0
    text = " ".join(done.stdout.split())
    assert "x 0.1" in text and "x 1.25" in text and "uncached" in text


def test_the_estimated_reuse_counts_the_tools_while_they_stay_the_same(stack):
    """The tool definitions open the prompt the provider caches: the gateway's estimate of
    what a request reuses counts them while they are the previous request's (OpenCode's 6k
    were left out: "2.4k" beside the provider's 8.4k read from its cache)."""
    client = stack.anthropic()
    tools = [{"name": f"tool_{k}", "description": LONG[:2000], "input_schema": {
        "type": "object", "properties": {"path": {"type": "string"}}}} for k in range(4)]
    history: list[dict] = []

    def ask(question: str, with_tools: list[dict]) -> dict:
        history.append({"role": "user", "content": question})
        answer = client.messages.create(model="claude-sonnet-4-5", max_tokens=64,
                                        system="You help with the adder.", messages=history,
                                        tools=with_tools,
                                        extra_headers={"x-ctxlayer-conversation": "tools-reuse"})
        history.append({"role": "assistant", "content": answer.content[0].text})
        (row,) = [c for c in json.loads(chats(stack, "--json"))["conversations"]
                  if c["conversationId"] == "tools-reuse"]
        return row

    first = ask("what base?", tools)
    assert first["cacheReuseTokens"] == 0
    same = ask("and why?", tools)
    assert same["cacheReuseTokens"] > 2000  # the tools, then the messages they share
    # near what the stand-in read from its cache (it leaves out Anthropic's tool-use prompt)
    assert abs(same["cacheReuseTokens"] - same["cachedTokens"]) < 0.15 * same["cachedTokens"]
    changed = ask("and now?", [*tools[:3], {**tools[3], "description": "another"}])
    assert changed["cacheReuseTokens"] < 200 < changed["tokens"] - 2000


def test_what_a_tool_wrote_cannot_drive_the_terminal_that_lists_the_chats(small):
    """A tool's output with terminal escape sequences (clear the screen, retitle the window)
    is shortened, and `chats --why` prints its summary line with them escaped: the listing
    shows them, the terminal does not obey them."""
    escapes = "\x1b[2J\x1b]0;pwned\x07 build output"
    client = small.openai()
    tool_call = {"id": "c1", "type": "function",
                 "function": {"name": "run", "arguments": "{}"}}
    messages = [
        {"role": "user", "content": "Run the build."},
        {"role": "assistant", "content": None, "tool_calls": [tool_call]},
        {"role": "tool", "tool_call_id": "c1", "content": escapes + "\n" + LONG * 2},
        {"role": "user", "content": "Did it pass?"}]
    client.chat.completions.create(model="standin-small", messages=messages,
                                   extra_headers={"x-ctxlayer-conversation": "escapes"})
    assert small.model_requests()[-1]["status"] == 200
    why = chats(small, "--why", "escapes")
    assert "\x1b" not in why and "\x07" not in why
    assert "\\x1b[2J\\x1b]0;pwned\\x07 build output" in why, why
