"""Codex CLI (the npm package, pinned in versions.env) through the gateway's Responses API:
`codex exec` with a `model_providers` entry of `wire_api = "responses"` (the README's config),
running the stand-in agent's `exec_command` calls in a temporary git repository."""

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

MODEL = "gpt-5-codex"


def test_codex_exec_runs_the_agents_shell_calls_and_ends_with_its_text(stack, repo, tmp_path):
    exe = client("codex", "CODEX", "node_modules/.bin/codex")
    codex_home = tmp_path / "codex-home"
    codex_home.mkdir()
    (codex_home / "config.toml").write_text(f'''model = "{MODEL}"
model_provider = "ctxlayer"
approval_policy = "never"
sandbox_mode = "danger-full-access"

[model_providers.ctxlayer]
name = "ctxlayer"
base_url = "{stack.openai_url}"
env_key = "OPENAI_API_KEY"
wire_api = "responses"
''')
    stack.standin.agent(2, [{"name": "exec_command", "arguments": {"cmd": "cat README.md"}}])
    env = client_env(tmp_path / "home", CODEX_HOME=str(codex_home),
                     OPENAI_API_KEY="sk-test-not-a-key")
    done = run([exe, "exec", "--skip-git-repo-check", "What does this project do?"], env, repo)
    assert "stand-in answer after 2 tool results" in done.stdout, done.stdout
    requests = model_requests(stack)
    assert_all_valid(requests)
    assert {r["path"] for r in requests} == {"/v1/responses"}
    assert {r["body"]["model"] for r in requests} == {MODEL} and all(r["stream"] for r in requests)
    outputs = tool_outputs(requests)
    assert sum("It adds numbers" in o for o in outputs) >= 2, outputs  # the shell really ran
    (chat,) = conversations(stack)
    assert chat["model"] == MODEL and chat["tokens"] > 0
