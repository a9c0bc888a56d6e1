"""OpenCode (the npm package `opencode-ai`, pinned in versions.env) through the gateway: `opencode
run` with its `anthropic` provider's base URL on the gateway (Messages API), and with its
`openai` provider's (which sends the Responses API), running the stand-in agent's `bash` calls
in a temporary git repository; a long loop in a small `[gateway.models]` window is compacted by
the gateway and still completes. OpenCode also asks a small model for the session's title,
beside its chat: not a chat of its own. Every request must be one the provider accepts (the
stand-in checks)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import real_clients as rc

pytestmark = [pytest.mark.client, pytest.mark.e2e]

CLAUDE, GPT = "claude-sonnet-4-5", "gpt-4.1"


def opencode(stack, repo: Path, home: Path, provider: str, model: str, prompt: str,
             *args: str, limit: dict | None = None) -> str:
    """`opencode run` on ``provider``/``model`` (and ``args``), its base URL the gateway's (the
    README's opencode.json), the model's ``limit`` (its window) when given; its standard
    output."""
    exe = rc.client("opencode", "OPENCODE", "node_modules/.bin/opencode")
    url = stack.anthropic_url + "/v1" if provider == "anthropic" else stack.openai_url
    options: dict = {"options": {"baseURL": url, "apiKey": "sk-test-not-a-key"}}
    if limit:
        options["models"] = {model: {"limit": limit}}
    (repo / "opencode.json").write_text(json.dumps({
        "$schema": "https://opencode.ai/config.json", "autoupdate": False, "share": "disabled",
        "permission": {"bash": "allow"}, "provider": {provider: options}}))
    done = rc.run([exe, "run", "--model", f"{provider}/{model}", *args, prompt],
                  rc.client_env(home), repo)
    return done.stdout


def main_chat(stack, model: str) -> dict:
    """The conversation of the agent's loop: the one listed (the title OpenCode asks a small
    model for beside it, before the loop's first request, is not a chat of its own), and the
    live one the status bars follow."""
    listed = rc.conversations(stack)
    assert [c["model"] for c in listed] == [model], listed
    live = stack.state.events.live_chat(stack.gateway.caller.workspace)
    assert live is not None and live[0] == listed[0]["conversationId"], (live, listed)
    return listed[0]


@pytest.mark.parametrize("variant", [(), ("--variant", "high")], ids=["plain", "thinking"])
def test_opencode_runs_the_agents_bash_calls_on_the_messages_api(stack, repo, tmp_path, variant):
    """With `--variant high`, OpenCode asks for extended thinking: each answer's signed thinking
    block goes back through the gateway as it came (the stand-in checks each signature, and
    that the tool loop's latest assistant message starts with its thinking)."""
    stack.standin.agent(2, [{"name": "bash", "arguments": {
        "command": "cat README.md", "description": "Read it"}}])
    out = opencode(stack, repo, tmp_path / "home", "anthropic", CLAUDE,
                   "What does this project do?", *variant)
    assert "stand-in answer after 2 tool results" in out, out
    requests = rc.model_requests(stack)
    rc.assert_all_valid(requests)
    assert {r["path"] for r in requests} == {"/v1/messages"}
    loop = [r for r in requests if r["body"]["model"] == CLAUDE]
    assert len(loop) == 3 and all(r["stream"] for r in loop)
    sent_back = [b for m in loop[-1]["body"]["messages"] if m["role"] == "assistant"
                 for b in m["content"] if b["type"] == "thinking"]
    assert len(sent_back) == (2 if variant else 0)
    outputs = rc.tool_outputs(requests)
    assert sum("It adds numbers" in o for o in outputs) >= 2, outputs  # bash really ran
    titles = [r for r in requests if r["body"]["model"] != CLAUDE]
    assert titles and "What does this project do?" in json.dumps(titles[0]["body"]["messages"])
    assert main_chat(stack, CLAUDE)["tokens"] > 0


WINDOW = 60_000


def test_opencode_long_loop_on_the_responses_api_compacts_in_a_small_window(repo, tmp_path):
    """A loop whose outputs outgrow a 60k window (the stand-in, given the same window, refuses
    anything larger; OpenCode's answer reserve leaves about half of it): the gateway fits each
    Responses request, the build log outlined or the oldest turns summarized, and OpenCode
    finishes."""
    log = "\n".join(f"line {i}: step {i} of the build passed, {i * 7} checks" for i in range(300))
    (repo / "build.log").write_text(log)
    rounds = 12
    with rc.open_stack(tmp_path / "stack", {GPT: WINDOW}) as stack:
        stack.standin.agent(rounds, [{"name": "bash", "arguments": {
            "command": "cat build.log", "description": "Read the build log"}}])
        out = opencode(stack, repo, tmp_path / "home", "openai", GPT,
                       "Check the build log, many times.")
        assert f"stand-in answer after {rounds} tool results" in out, out
        requests = rc.model_requests(stack)
        rc.assert_all_valid(requests)
        assert {r["path"] for r in requests} == {"/v1/responses"}
        loop = [r for r in requests if r["body"]["model"] == GPT]
        assert len(loop) == rounds + 1
        assert max(r["prompt_tokens"] for r in loop) <= WINDOW
        chat = main_chat(stack, GPT)
        assert chat["tokens"] <= chat["budget"]
        logs = [o for o in rc.tool_outputs(loop) if "line 0: step 0" in o]
        outlined = [o for o in logs if "line 150: step 150" not in o]
        summarized = any("[Summary of" in json.dumps(r["body"]["input"]) for r in loop)
        assert chat["dropped"] > 0 or outlined or summarized, chat


def test_opencodes_own_compaction_on_the_messages_api_goes_on_in_its_chat(repo, tmp_path):
    """OpenCode told its model's window is 40k (`limit.context`) compacts its history itself:
    it asks its summarization agent (a system prompt of its own) for a summary, then sends
    the history from "What did we do so far?" and the summary's answer on. On the Messages
    API it names no session, so that history starts like no chat: it goes on in the chat it
    compacted. Listed: that chat alone (the summarization aside, no tools, and the title
    asked on a small model, set aside; before, they and the chain before each compaction
    were listed as chats of their own)."""
    log = "\n".join(f"line {i}: step {i} of the build passed, {i * 7} checks" for i in range(300))
    (repo / "build.log").write_text(log)
    rounds = 8
    with rc.open_stack(tmp_path / "stack", {CLAUDE: 128_000}) as stack:
        stack.standin.agent(rounds, [{"name": "bash", "arguments": {
            "command": "cat build.log", "description": "Read the build log"}}])
        opencode(stack, repo, tmp_path / "home", "anthropic", CLAUDE,
                 "Check the build log, many times.", limit={"context": 40_000, "output": 4_000})
        requests = rc.model_requests(stack)
        chats = rc.conversations(stack)
    rc.assert_all_valid(requests)
    loop = [r for r in requests if r["body"]["model"] == CLAUDE]
    asides = [r for r in loop if not r["body"].get("tools")]
    after = [r for r in loop if json.dumps(r["body"]["messages"][0]).count("What did we do")]
    assert asides and len(after) >= 2, [len(r["body"]["messages"]) for r in loop]
    (going_on,) = chats
    last = after[-1]["prompt_tokens"]
    assert abs(going_on["tokens"] - last) < 0.15 * last, (going_on, last)
