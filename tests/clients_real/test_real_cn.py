"""Continue's CLI `cn` (the npm package, pinned in versions.env) through the gateway's Chat
Completions: `cn -p --auto` with a config.yaml whose model has `apiBase` on the gateway, running
the stand-in agent's Read and Bash calls in a temporary git repository."""

from __future__ import annotations

import pytest
from real_clients import (
    assert_all_valid,
    client,
    client_env,
    conversations,
    model_requests,
    run,
    tool_outputs,
)

pytestmark = [pytest.mark.client, pytest.mark.e2e]


def test_cn_runs_the_agents_tool_calls_and_ends_with_its_text(stack, repo, tmp_path):
    exe = client("cn", "CONTINUE_CLI", "node_modules/.bin/cn")
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
""")
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
