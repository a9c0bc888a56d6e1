"""Claude Code (the npm package, pinned in versions.env) through the gateway: `claude -p` on its
default model runs the stand-in agent's Bash and Read calls in a temporary git repository, and
a long tool loop in a small `[gateway.models]` window is compacted by the gateway and still
completes. Every request it sends must be one Anthropic accepts (the stand-in checks)."""

from __future__ import annotations

import json
import time
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
from terminal import Terminal

pytestmark = [pytest.mark.client, pytest.mark.e2e]

#: The model Claude Code uses when none is set (this release's default).
DEFAULT_MODEL = "claude-opus-5-5"


def claude(stack, repo: Path, home: Path, prompt: str, *args: str, **env_extra: str) -> dict:
    exe = client("claude", "CLAUDE_CODE", "node_modules/.bin/claude")
    env = client_env(home, ANTHROPIC_BASE_URL=stack.anthropic_url,
                     ANTHROPIC_API_KEY="sk-ant-test-not-a-key", **env_extra)
    # as root Claude Code refuses --dangerously-skip-permissions: name the tools it may use
    done = run([exe, "-p", prompt, "--output-format", "json", "--allowedTools", "Bash Read",
                *args], env, repo)
    return json.loads(done.stdout)


def read_the_build_log(stack, repo: Path, tmp_path: Path, rounds: int, lines: int) -> dict:
    """Claude Code reads a build log of ``lines`` lines ``rounds`` times (the stand-in agent's
    Bash calls), with its answer reserve lowered to 8k (its own variable: the 128k it asks by
    default leaves no budget in a small window), and ends with the agent's text."""
    log = "\n".join(f"line {i}: step {i} of the build passed, {i * 7} checks"
                    for i in range(lines))
    (repo / "build.log").write_text(log)
    stack.standin.agent(rounds, [{"name": "Bash", "arguments": {
        "command": "cat build.log", "description": "Read the build log"}}])
    answer = claude(stack, repo, tmp_path / "home", "Check the build log, many times.",
                    CLAUDE_CODE_MAX_OUTPUT_TOKENS="8000")
    assert answer["result"].startswith(f"stand-in answer after {rounds} tool results"), answer
    return answer


def test_claude_code_runs_the_agents_tool_calls_and_ends_with_its_text(stack, repo, tmp_path):
    stack.standin.agent(2, [
        {"name": "Bash", "arguments": {"command": "cat README.md", "description": "Read it"}},
        {"name": "Read", "arguments": {"file_path": str(repo / "README.md")}}])
    answer = claude(stack, repo, tmp_path / "home", "What does this project do?")
    assert answer["is_error"] is False and answer["subtype"] == "success"
    assert answer["result"].startswith("stand-in answer after 2 tool results"), answer
    requests = model_requests(stack)
    assert_all_valid(requests)
    assert {r["body"]["model"] for r in requests} == {DEFAULT_MODEL}
    assert all(r["stream"] for r in requests)  # Claude Code streams
    outputs = tool_outputs(requests)
    assert sum("It adds numbers" in o for o in outputs) >= 2, outputs  # both tools really ran
    (chat,) = conversations(stack)
    assert chat["model"] == DEFAULT_MODEL and chat["tokens"] > 0
    # fitted to the model's 1M window less the reply Claude Code asks for (it was fitted to
    # 200k less that: 72k of its 1M), as our counts read it once the usage calibrated them
    room = 1_000_000 - requests[-1]["body"]["max_tokens"]
    assert 0.9 * room <= chat["budget"] <= room, chat


def test_claude_code_long_tool_loop_compacts_in_a_small_window_and_completes(repo, tmp_path):
    """A tool loop whose results outgrow a 40k window: the gateway fits each request (the
    stand-in, given the same window, refuses anything larger), outlining the logs before it
    summarizes anything, and Claude Code finishes. Its
    answer reserve is lowered to 8k (its own variable): the 128k it asks by default leaves no
    budget in a window this small, and the gateway says so with a 400."""
    rounds = 12
    with open_stack(tmp_path / "stack", {DEFAULT_MODEL: WINDOW}) as stack:
        read_the_build_log(stack, repo, tmp_path, rounds, lines=200)
        requests = model_requests(stack)
        assert_all_valid(requests)
        (chat,) = conversations(stack)
        assert chat["tokens"] <= chat["budget"]
        sent = [r["prompt_tokens"] for r in requests]
        assert max(sent) <= WINDOW and len(requests) == rounds + 1
        # the gateway cut the loop to fit: a later request carries fewer messages than the
        # one before it (summarized), or the log outlined (its middle lines cut)
        counts = [len(r["body"]["messages"]) for r in requests]
        logs = [o for o in tool_outputs(requests) if "line 0: step 0" in o]
        outlined = [o for o in logs if "line 100: step 100" not in o]
        assert chat["dropped"] > 0 or outlined, (chat, counts)
        assert any(b < a for a, b in zip(counts, counts[1:], strict=False)) or outlined, counts


WINDOW = 40_000


def test_claude_code_thinking_hidden_in_signatures_is_costed_and_kept(repo, tmp_path):
    """Claude Code asks for adaptive thinking with `display: "omitted"` and keeps every turn's
    thinking: each answer's thinking block comes back with no text, its thinking (here 900
    words a turn, about 1,600 tokens) sealed in the signature, which the provider counts. The
    gateway costs each block by its signature, so a 12-round loop in a 40k window never sends
    a prompt the provider refuses, and the latest turn's thinking goes back as it came. By the
    text alone the gateway saw none of that thinking: six prompts were refused, fitting again
    by the chat's calibration did not bring them under the window, and Claude Code gave up
    ("Prompt is too long · automatic compaction failed")."""
    rounds = 12
    with open_stack(tmp_path / "stack", {DEFAULT_MODEL: WINDOW}, thinking_words=900) as stack:
        read_the_build_log(stack, repo, tmp_path, rounds, lines=80)
        requests = [r for r in model_requests(stack) if r["body"]["model"] == DEFAULT_MODEL]
        assert_all_valid(requests)  # the stand-in checks each signature, and the window
        assert requests[-1]["body"]["thinking"]["display"] == "omitted"
        thinking = [b for m in requests[-1]["body"]["messages"] if m["role"] == "assistant"
                    and isinstance(m["content"], list) for b in m["content"]
                    if b["type"] == "thinking"]
        assert thinking and all(b["thinking"] == "" for b in thinking)
        assert max(r["prompt_tokens"] for r in requests) > WINDOW // 2


def plain(message: dict) -> dict:
    """A message without its cache markers (a client moves them from request to request)."""
    content = message.get("content")
    if isinstance(content, list):
        content = [{k: v for k, v in b.items() if k != "cache_control"}
                   if isinstance(b, dict) else b for b in content]
    return {**message, "content": content}


def compacted(message: dict) -> bool:
    """A summary chunk the gateway wrote, or the build log outlined (its middle cut)."""
    text = json.dumps(message.get("content"))
    return "[Summary of" in text or ("line 0: step 0" in text and "line 100: step 100" not in text)


def test_claude_code_fork_session_starts_from_the_window_of_its_chat(repo, tmp_path):
    """`claude --resume <id> --fork-session` after a tool loop the gateway compacted: the fork
    comes with a session id of its own, and its first request starts as the last request of
    the chat it forked from did, compacted part and all (the prefix the provider cached for
    that chat), not with a compaction of its own."""
    log = "\n".join(f"line {i}: step {i} of the build passed, {i * 7} checks" for i in range(200))
    (repo / "build.log").write_text(log)
    rounds, home = 12, tmp_path / "home"
    with open_stack(tmp_path / "stack", {DEFAULT_MODEL: WINDOW}) as stack:
        stack.standin.agent(rounds, [{"name": "Bash", "arguments": {
            "command": "cat build.log", "description": "Read the build log"}}])
        first = claude(stack, repo, home, "Check the build log, many times.",
                       CLAUDE_CODE_MAX_OUTPUT_TOKENS="8000")
        before = model_requests(stack)
        last = [plain(m) for m in before[-1]["body"]["messages"]]
        cut = next(i for i, m in enumerate(last) if compacted(m))  # the chat was compacted

        stack.standin.agent(0)
        fork = claude(stack, repo, home, "Which step took the most checks?", "--resume",
                      first["session_id"], "--fork-session", CLAUDE_CODE_MAX_OUTPUT_TOKENS="8000")
        assert fork["session_id"] != first["session_id"] and fork["is_error"] is False, fork
        after = [r for r in model_requests(stack)[len(before):]
                 if r["body"]["model"] == DEFAULT_MODEL]
        assert_all_valid(after)
        sent = [plain(m) for m in after[0]["body"]["messages"]]
        shared = next((i for i, (a, b) in enumerate(zip(last, sent, strict=False)) if a != b),
                      min(len(last), len(sent)))
        assert shared > cut, (shared, cut, len(last), len(sent))
        assert len(conversations(stack)) == 2


def test_claude_code_sub_agent_leaves_its_chats_window_alone(repo, tmp_path):
    """A sub-agent (the `Agent` tool) runs in the middle of a chat the gateway compacted: its
    requests come under the chat's session id with a chat of their own, and the chat's next
    request starts as its request before the sub-agent did, compacted part and all."""
    log = "\n".join(f"line {i}: step {i} of the build passed, {i * 7} checks" for i in range(200))
    (repo / "build.log").write_text(log)
    bash = {"name": "Bash", "arguments": {"command": "cat build.log",
                                          "description": "Read the build log"}}
    task = "Count the lines of build.log that say passed."
    agent = {"name": "Agent", "arguments": {"description": "Count passed lines", "prompt": task,
                                            "subagent_type": "general-purpose",
                                            "run_in_background": False}}
    rounds = 13  # 11 reads by the chat, its sub-agent, one read by the sub-agent
    with open_stack(tmp_path / "stack", {DEFAULT_MODEL: WINDOW}) as stack:
        stack.standin.agent(rounds, [*[bash] * 11, agent, bash])
        answer = claude(stack, repo, tmp_path / "home", "Check the build log, many times.",
                        "--allowedTools", "Agent", CLAUDE_CODE_MAX_OUTPUT_TOKENS="8000")
        assert answer["is_error"] is False, answer
        requests = [r for r in model_requests(stack) if r["body"]["model"] == DEFAULT_MODEL]
        assert_all_valid(requests)
        worker = [r for r in requests if task in json.dumps(r["body"]["messages"][0])]
        chat = [r for r in requests if r not in worker]
        assert worker, "the sub-agent sent no request"
        # the chat's last request before the sub-agent's first, and its first one after
        start = requests.index(worker[0])
        before = [plain(m) for m in [r for r in chat if requests.index(r) < start][-1]
                  ["body"]["messages"]]
        after = [plain(m) for m in [r for r in chat if requests.index(r) > start][0]
                 ["body"]["messages"]]
        cut = next(i for i, m in enumerate(before) if compacted(m))
        shared = next((i for i, (a, b) in enumerate(zip(before, after, strict=False))
                       if a != b), min(len(before), len(after)))
        assert shared > cut, (shared, cut, len(before), len(after))
        assert len(conversations(stack)) == 2  # the chat's and the sub-agent's


def test_claude_code_resumed_after_a_gateway_restart_reuses_its_prefix(repo, tmp_path):
    """A chat the gateway compacted, with a sub-agent's chat under the same session id; the
    gateway stops and starts again on the same state folder; `claude --resume <id>` goes on.
    Its first request after the restart starts as its last request before did, compacted
    part and all, under the chat's own conversation id: the window kept in the state folder,
    taken up, not a compaction of its own."""
    log = "\n".join(f"line {i}: step {i} of the build passed, {i * 7} checks" for i in range(200))
    (repo / "build.log").write_text(log)
    bash = {"name": "Bash", "arguments": {"command": "cat build.log",
                                          "description": "Read the build log"}}
    agent = {"name": "Agent", "arguments": {
        "description": "Count passed lines", "prompt": "Count the lines that say passed.",
        "subagent_type": "general-purpose", "run_in_background": False}}
    home, rounds = tmp_path / "home", 13
    with open_stack(tmp_path / "stack", {DEFAULT_MODEL: WINDOW}) as stack:
        stack.standin.agent(rounds, [*[bash] * 6, agent, bash, *[bash] * 5])
        first = claude(stack, repo, home, "Check the build log, many times.",
                       "--allowedTools", "Agent", CLAUDE_CODE_MAX_OUTPUT_TOKENS="8000")
        assert first["is_error"] is False, first
        requests = [r for r in model_requests(stack) if r["body"]["model"] == DEFAULT_MODEL]
        last = [plain(m) for m in requests[-1]["body"]["messages"]]
        cut = next(i for i, m in enumerate(last) if compacted(m))  # the chat was compacted
        chats = {c["conversationId"]: c for c in conversations(stack)}
        assert len(chats) == 2  # the chat's and the sub-agent's
        chat_id = max(chats, key=lambda c: chats[c]["tokens"])
    with open_stack(tmp_path / "stack", {DEFAULT_MODEL: WINDOW}) as stack:
        stack.standin.agent(0)
        again = claude(stack, repo, home, "Which step took the most checks?", "--resume",
                       first["session_id"], CLAUDE_CODE_MAX_OUTPUT_TOKENS="8000")
        assert again["is_error"] is False and again["session_id"] == first["session_id"], again
        after = [r for r in model_requests(stack) if r["body"]["model"] == DEFAULT_MODEL]
        assert_all_valid(after)
        sent = [plain(m) for m in after[0]["body"]["messages"]]
        shared = next((i for i, (a, b) in enumerate(zip(last, sent, strict=False)) if a != b),
                      min(len(last), len(sent)))
        assert shared > cut, (shared, cut, len(last), len(sent))
        listed = conversations(stack)
        chat = next(c for c in listed if c["conversationId"] == chat_id)
        assert chat["cacheReuseTokens"] > 0, chat
        # the sub-agent's chat is listed too, as the state folder keeps it (not in memory
        # until it comes back); no other conversation was made
        assert {c["conversationId"] for c in listed} <= set(chats), listed


def test_claude_code_goes_on_after_its_own_compact(stack, repo, tmp_path):
    """`/compact` (Claude Code's own compaction, resumed in print mode), then one more turn:
    Claude Code replaces the history by its summary and sends, between it and the turn after,
    a system message with no content (`[]`), which the provider refuses as every message but
    a final assistant one needs content. The gateway leaves the empty one out (audited), so
    every request is valid and the chat goes on (before, every request after the compaction
    was refused: "messages.1.content: must be a non-empty string or list of blocks", and the
    chat could not go on), in the conversation it was."""
    first = read_the_build_log(stack, repo, tmp_path, 3, 50)
    (first_chat,) = conversations(stack)
    stack.standin.agent(0, [])
    compacted = claude(stack, repo, tmp_path / "home", "/compact", "--resume",
                       first["session_id"])
    assert compacted["is_error"] is False, compacted
    stack.standin.agent(1, [{"name": "Bash", "arguments": {"command": "ls",
                                                           "description": "List the files"}}])
    after = claude(stack, repo, tmp_path / "home", "One more check.", "--resume",
                   compacted["session_id"])
    assert after["is_error"] is False and after["result"].startswith(
        "stand-in answer after 1 tool results"), after
    requests = model_requests(stack)
    assert_all_valid(requests)
    summary = "This session is being continued from a previous conversation"
    assert summary in json.dumps(requests[-1]["body"]["messages"][0])  # it did compact
    # the chat goes on under its id, one chat listed (before, the history after the summary,
    # which shares no message with the one before, was listed as a chat of its own)
    (going_on,) = conversations(stack)
    assert going_on["conversationId"] == first_chat["conversationId"]
    last = requests[-1]["prompt_tokens"]
    assert abs(going_on["tokens"] - last) < 0.15 * last, (going_on, last)


def in_its_terminal(stack, repo: Path, home: Path) -> Terminal:
    """Claude Code as people run it: its terminal UI, its nonessential traffic on, showing its
    prompt. Its config holds what a person's first run asks once: the theme, trust in the
    folder, the key from the environment."""
    exe = client("claude", "CLAUDE_CODE", "node_modules/.bin/claude")
    key = "sk-ant-test-not-a-key-0123456789"
    env = client_env(home, ANTHROPIC_BASE_URL=stack.anthropic_url, ANTHROPIC_API_KEY=key,
                     TERM="xterm-256color")
    for quiet in ("CI", "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC"):
        env.pop(quiet)
    (home / ".claude.json").write_text(json.dumps({
        "hasCompletedOnboarding": True, "theme": "dark",
        "customApiKeyResponses": {"approved": [key[-20:]], "rejected": []},
        "projects": {str(repo): {"hasTrustDialogAccepted": True,
                                 "hasCompletedProjectOnboarding": True}}}))
    term = Terminal([str(exe)], env, repo)
    term.wait(lambda: "\u276f" in term.shown(), "showed its prompt")
    return term


def ask_in(term: Terminal, stack, question: str) -> None:
    """Type ``question`` and wait until the gateway sent it on and the answer is shown."""
    shown = term.text().count("stand-in answer")
    term.type(question + "\r")
    term.wait(lambda: any(question in json.dumps(r["body"]["messages"][-2:])
                          for r in model_requests(stack) if r["body"].get("tools")),
              f"sent {question!r}")
    term.wait(lambda: term.text().count("stand-in answer") > shown, f"answered {question!r}")


def one_live_chat(stack) -> dict:
    (chat,) = conversations(stack)
    live = stack.state.events.live_chat(stack.gateway.caller.workspace)
    assert live is not None and live[0] == chat["conversationId"], (live, chat)
    return chat


def test_claude_code_in_its_terminal_asks_titles_beside_its_one_chat(stack, repo, tmp_path):
    """As each question is asked in its terminal, Claude Code asks its model, under the chat's
    session id, for the session's title (no tools, a system prompt of its own, the question
    quoted in `<session>`). The titles are not chats: one chat is listed, the live one the
    status bars follow (before: one chat more per title, the first title under the id of the
    session's chat, which took a fork's)."""
    term = in_its_terminal(stack, repo, tmp_path / "home")
    try:
        for question in ["What does this project do?", "Now tell me more about add, in detail."]:
            ask_in(term, stack, question)
    finally:
        term.close()
    requests = model_requests(stack)
    assert_all_valid(requests)
    titles = [r for r in requests if not r["body"].get("tools")]
    assert titles and all("<session>" in json.dumps(r["body"]["messages"]) for r in titles)
    assert {r["body"]["model"] for r in requests} == {DEFAULT_MODEL}
    one_live_chat(stack)


def test_claude_code_goes_on_after_its_compact_in_its_terminal(stack, repo, tmp_path):
    """`/compact` in its terminal: the history after it opens with Claude Code's reminders,
    its summary in a block after them, and its billing header's version suffix changed. The
    chat goes on in the conversation it was, the one listed and live (before: a chat more,
    first the title's, and the status bars stayed on the chat before the compaction)."""
    term = in_its_terminal(stack, repo, tmp_path / "home")
    try:
        ask_in(term, stack, "What does this project do?")
        first = one_live_chat(stack)
        term.type("/compact")
        time.sleep(1)  # the command list it opens is closed (Esc), then the command goes;
        term.type("\x1b")  # an Esc and Enter typed at once read as Alt+Enter, a new line
        time.sleep(0.5)
        term.type("\r")
        term.wait(lambda: "Compacted" in term.text(), "compacted")
        ask_in(term, stack, "And what about subtraction?")
    finally:
        term.close()
    requests = model_requests(stack)
    assert_all_valid(requests)
    summary = "This session is being continued from a previous conversation"
    assert summary in json.dumps(requests[-1]["body"]["messages"][0])  # it did compact
    assert one_live_chat(stack)["conversationId"] == first["conversationId"]
