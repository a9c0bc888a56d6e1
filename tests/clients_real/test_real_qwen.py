"""Qwen Code (the npm package `@qwen-code/qwen-code`, pinned in versions.env) through the
gateway's Chat Completions: `qwen -p` with its OpenAI-compatible provider on the gateway
(`OPENAI_BASE_URL`, `OPENAI_MODEL`), running the stand-in agent's `run_shell_command` and
`read_file` calls in a temporary git repository; a long loop in a small `[gateway.models]`
window is compacted by the gateway and still completes."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import real_clients as rc
from terminal import Terminal

pytestmark = [pytest.mark.client, pytest.mark.e2e]

MODEL = "qwen3-coder-plus"


def qwen(stack, repo: Path, home: Path, prompt: str, window: int | None = None) -> str:
    """`qwen -p` on the gateway (the README's variables); its standard output. Its settings
    turn off usage statistics and the update check, and tell it the model's ``window``."""
    exe = rc.client("qwen", "QWEN_CODE", "node_modules/.bin/qwen")
    (home / ".qwen").mkdir(parents=True, exist_ok=True)
    settings: dict = {
        "privacy": {"usageStatisticsEnabled": False}, "telemetry": {"enabled": False},
        "general": {"disableAutoUpdate": True, "disableUpdateNag": True}}
    if window:
        settings["model"] = {"generationConfig": {"contextWindowSize": window}}
    (home / ".qwen" / "settings.json").write_text(json.dumps(settings))
    env = rc.client_env(home, OPENAI_BASE_URL=stack.openai_url, OPENAI_MODEL=MODEL,
                        OPENAI_API_KEY="sk-test-not-a-key")
    return rc.run([exe, "-p", prompt, "--yolo"], env, repo).stdout


def test_qwen_code_runs_the_agents_tool_calls_and_ends_with_its_text(stack, repo, tmp_path):
    stack.standin.agent(2, [
        {"name": "run_shell_command", "arguments": {"command": "cat README.md"}},
        {"name": "read_file", "arguments": {"file_path": str(repo / "README.md")}}])
    out = qwen(stack, repo, tmp_path / "home", "What does this project do?")
    assert "stand-in answer after 2 tool results" in out, out
    requests = rc.model_requests(stack)
    rc.assert_all_valid(requests)
    assert {r["path"] for r in requests} == {"/v1/chat/completions"}
    assert {r["body"]["model"] for r in requests} == {MODEL} and all(r["stream"] for r in requests)
    # both tools really ran (the last request carries both results): the shell's names its
    # command and exit code (its output was once "(empty)" in a CI run: Qwen Code's own
    # reading of the terminal), the file read holds the file (with `absolute_path`, the name
    # of an older Qwen Code, it was an error the test counted around)
    shell, read = rc.tool_outputs(requests[-1:])
    assert "Command: cat README.md" in shell and "Exit Code: 0" in shell, shell
    assert "It adds numbers" in read, read
    (chat,) = rc.conversations(stack)
    assert chat["model"] == MODEL and chat["tokens"] > 0


#: Qwen Code asks for a 32k answer: the budget is the window less that, and its tools take 9k
WINDOW = 64_000


def test_qwen_code_long_shell_loop_compacts_in_a_small_window_and_completes(repo, tmp_path):
    """A shell loop whose outputs outgrow a 64k window (`[gateway.models]`; the stand-in,
    given the same window, refuses anything larger): the gateway fits each request Qwen Code
    sends, and Qwen Code finishes."""
    log = "\n".join(f"line {i}: step {i} of the build passed, {i * 7} checks" for i in range(200))
    (repo / "build.log").write_text(log)
    rounds = 14
    with rc.open_stack(tmp_path / "stack", {MODEL: WINDOW}) as stack:
        # each call its own (Qwen Code halts a run that repeats one call)
        stack.standin.agent(rounds, [{"name": "run_shell_command",
                                      "arguments": {"command": f"cat build.log  # pass {k}"}}
                                     for k in range(rounds)])
        out = qwen(stack, repo, tmp_path / "home", "Check the build log, many times.")
        assert f"stand-in answer after {rounds} tool results" in out, out
        requests = rc.model_requests(stack)
        rc.assert_all_valid(requests)
        assert max(r["prompt_tokens"] for r in requests) <= WINDOW
        chats = [c for c in rc.conversations(stack) if c["model"] == MODEL]
        assert chats and all(c["tokens"] <= c["budget"] for c in chats)
        logs = [o for o in rc.tool_outputs(requests) if "line 0: step 0" in o]
        outlined = [o for o in logs if "line 100: step 100" not in o]
        summarized = any("[Summary of" in json.dumps(r["body"]["messages"]) for r in requests)
        assert any(c["dropped"] for c in chats) or outlined or summarized, chats


def test_qwen_codes_own_compression_goes_on_in_one_chat(repo, tmp_path):
    """Qwen Code told its window is 50k (`contextWindowSize`) compresses its history itself:
    it asks its summarizer (a system prompt of its own) for a summary, then sends the history
    replaced by that summary and its order to resume. It names no session, and that history
    starts like no chat: it goes on in the chat it compacted. Listed: that chat alone (the
    summarizer's asides, since the chat's last turn, no tools, are set aside), where every
    compression made one chat more (15 listed for this run before)."""
    log = "\n".join(f"line {i}: step {i} of the build passed, {i * 7} checks" for i in range(200))
    (repo / "build.log").write_text(log)
    rounds = 10
    with rc.open_stack(tmp_path / "stack", {MODEL: 128_000}) as stack:
        stack.standin.agent(rounds, [{"name": "run_shell_command",
                                      "arguments": {"command": f"cat build.log  # pass {k}"}}
                                     for k in range(rounds)])
        out = qwen(stack, repo, tmp_path / "home", "Check the build log, many times.",
                   window=50_000)
        requests = rc.model_requests(stack)
        chats = rc.conversations(stack)
    assert f"stand-in answer after {rounds} tool results" in out, out
    rc.assert_all_valid(requests)
    resumed = [r for r in requests if "Resume the prior task using the summary above"
               in json.dumps(r["body"]["messages"][1])]
    assert len(resumed) >= 4, len(resumed)  # it compressed, again and again
    summarizer = [r for r in requests if r["body"]["messages"][0]["content"].startswith(
        "You are the component that summarizes")]
    assert summarizer, [r["body"]["messages"][0]["content"][:60] for r in requests]
    (going_on,) = chats
    last = requests[-1]["prompt_tokens"]
    assert abs(going_on["tokens"] - last) < 0.15 * last, (going_on, last)


def test_qwen_code_in_its_terminal_is_one_chat_beside_its_memory_agent(stack, repo, tmp_path):
    """Qwen Code as people run it, in its terminal UI: after its answers it asks the chat's
    model what the user might type next (the chat's history and one question more), and
    sends its memory agent over the chat's turns (a system prompt and tools of its own, the
    turns, its instruction). One chat is listed, the live one the status bars follow (before:
    the memory agent was a chat too, and the live one: its 1.1% for the chat's 2.3%)."""
    exe = rc.client("qwen", "QWEN_CODE", "node_modules/.bin/qwen")
    home = tmp_path / "home"
    (home / ".qwen").mkdir(parents=True)
    (home / ".qwen" / "settings.json").write_text(json.dumps({
        "privacy": {"usageStatisticsEnabled": False}, "telemetry": {"enabled": False},
        "general": {"disableAutoUpdate": True, "disableUpdateNag": True},
        "security": {"auth": {"selectedType": "openai"}}}))
    env = rc.client_env(home, OPENAI_BASE_URL=stack.openai_url, OPENAI_MODEL=MODEL,
                        OPENAI_API_KEY="sk-test-not-a-key", TERM="xterm-256color")
    env.pop("CI")  # as a person runs it
    stack.standin.agent(1, [{"name": "run_shell_command",
                             "arguments": {"command": "cat README.md"}}])

    def memory() -> list[dict]:
        return [r for r in rc.model_requests(stack)
                if "memory extraction" in str(r["body"]["messages"][0]["content"])]

    term = Terminal([str(exe), "--yolo"], env, repo)
    try:
        term.wait(lambda: "YOLO mode" in term.text(), "showed its prompt")
        for n, question in enumerate(["What does this project do?",
                                      "Now tell me more about add, in detail."], 1):
            term.type(question + "\r")
            term.wait(lambda n=n: term.text().count("stand-in answer") >= n,
                      f"showed answer {n}")
        term.wait(memory, "sent its memory agent")
    finally:
        term.close()
    requests = rc.model_requests(stack)
    rc.assert_all_valid(requests)
    (chat,) = rc.conversations(stack)
    assert chat["model"] == MODEL
    live = stack.state.events.live_chat(stack.gateway.caller.workspace)
    assert live is not None and live[0] == chat["conversationId"]
