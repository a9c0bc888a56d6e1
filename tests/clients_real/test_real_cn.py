"""Continue's CLI `cn` (the npm package, pinned in versions.env) through the gateway's Chat
Completions: `cn -p --auto` with a config.yaml whose model has `apiBase` on the gateway, running
the stand-in agent's Read and Bash calls in a temporary git repository."""

from __future__ import annotations

from pathlib import Path

import pytest
from real_clients import (
    assert_all_valid,
    client,
    client_env,
    conversations,
    model_requests,
    open_stack,
    run,
    tool_outputs,
)

pytestmark = [pytest.mark.client, pytest.mark.e2e]


def cn_config(stack, tmp_path: Path, options: str = "") -> Path:
    """A config.yaml whose one model is on the gateway (``options``: its
    `defaultCompletionOptions`, YAML lines)."""
    config = tmp_path / "config.yaml"
    config.write_text(f"""name: ctxlayer-test
version: 1.0.0
schema: v1
models:
  - name: standin
    provider: openai
    model: gpt-4o
    apiBase: {stack.openai_url}
    apiKey: sk-test-not-a-key
    roles: [chat, edit, apply]
""" + (f"    defaultCompletionOptions:\n{options}" if options else ""))
    return config


def test_cn_runs_the_agents_tool_calls_and_ends_with_its_text(stack, repo, tmp_path):
    exe = client("cn", "CONTINUE_CLI", "node_modules/.bin/cn")
    config = cn_config(stack, tmp_path)
    stack.standin.agent(2, [{"name": "Read", "arguments": {"filepath": "README.md"}},
                            {"name": "Bash", "arguments": {"command": "cat README.md"}}])
    done = run([exe, "--config", config, "--auto", "-p", "What does this project do?"],
               client_env(tmp_path / "home"), repo)
    assert "stand-in answer after 2 tool results" in done.stdout, done.stdout
    requests = model_requests(stack)
    assert_all_valid(requests)
    assert {r["path"] for r in requests} == {"/v1/chat/completions"}
    assert all(r["stream"] for r in requests)
    outputs = tool_outputs(requests)
    assert sum("It adds numbers" in o for o in outputs) >= 2, outputs  # both tools really ran
    (chat,) = conversations(stack)
    assert chat["model"] == "gpt-4o" and chat["tokens"] > 0


def test_cns_own_compaction_goes_on_in_one_chat(repo, tmp_path):
    """`cn` told its model's window is 30k (`contextLength`) compacts its history itself: it
    asks the chat for a summary, then sends the system prompt and the assistant's summary
    alone, and the turns after it. That history names no session and opens with no words of
    the user's: it goes on in the chat it compacted, one chat listed (5 before)."""
    log = "\n".join(f"line {i}: step {i} of the build passed, {i * 7} checks" for i in range(200))
    (repo / "build.log").write_text(log)
    exe = client("cn", "CONTINUE_CLI", "node_modules/.bin/cn")
    with open_stack(tmp_path / "stack", {"gpt-4o": 128_000}) as stack:
        config = cn_config(stack, tmp_path, "      contextLength: 30000\n      maxTokens: 2000\n")
        stack.standin.agent(8, [{"name": "Bash", "arguments": {"command": "cat build.log"}}])
        run([exe, "--config", config, "--auto", "-p", "Check the build log, many times."],
            client_env(tmp_path / "home"), repo)
        requests = model_requests(stack)
        chats = conversations(stack)
    assert_all_valid(requests)
    asked = [n for n, r in enumerate(requests) if "Please provide a concise summary" in str(
        r["body"]["messages"][-1].get("content"))]
    assert asked and any(r["body"]["messages"][1]["role"] == "assistant"
                         for r in requests[asked[0]:])  # the summary opens the history
    (chat,) = chats
    last = requests[-1]["prompt_tokens"]
    assert abs(chat["tokens"] - last) < 0.15 * last, (chat, last)
