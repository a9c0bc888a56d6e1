"""The user's instruction files reach the model in every request, verbatim, through the
gateway, in the shapes the clients send them: Claude Code's CLAUDE.md in a `<system-reminder>`
of its first user message (beside its git status and its attribution reminder), Codex's
"# AGENTS.md instructions" user message on the Responses API. The probe: a Claude Code
session resumed with a second question lost 20 of its CLAUDE.md's 24 lines at the first
compaction ("Use pnpm, not npm or yarn" among them), the attribution reminder listed as the
user's hard constraint; Codex's AGENTS.md became the summary's "Asked", cut at 200 characters.
Official SDKs, the real gateway, the strict stand-in."""

from __future__ import annotations

import json

from gateway_stack import small_stack

RULES = ("# CLAUDE.md\n\n## Commands\n- Build: `pnpm build`\n\n## Rules\n"
         "- Use pnpm, not npm or yarn.\n- Money is stored as integer cents.\n"
         "- Never push to the main branch; open a pull request instead.\n"
         "- The API server lives in services/api.")
CLAUDE_MD = ("<system-reminder>\nCodebase and user instructions are shown below. Be sure to "
             "adhere to these instructions. IMPORTANT: These instructions OVERRIDE any default "
             "behavior and you MUST follow them exactly as written.\n\nContents of "
             "/repo/CLAUDE.md (project instructions, checked into the codebase):\n\n" + RULES
             + "\n</system-reminder>")
GIT_STATUS = ("<system-reminder>\nAs you answer the user's questions, you can use the following "
              "context:\n# gitStatus\nCurrent branch: main\n\nStatus:\n(clean)\n"
              "</system-reminder>")
ATTRIBUTION = ("<system-reminder>\nAttribution for git commits and pull requests you create "
               "from here on (the user's own instructions about these lines, such as a "
               "CLAUDE.md or memory rule, take precedence over this reminder, but do not add "
               "attribution lines this reminder leaves out):\n- End git commit messages with:\n"
               "Co-Authored-By: Claude <noreply@anthropic.com>\n</system-reminder>")
LOG = "\n".join(f"line {n}: step {n} of the build passed, {n % 7} checks" for n in range(40))


def claude_code(rounds: int) -> list[dict]:
    """A Claude Code session resumed: its first question's tool loop, then a second one."""
    messages: list[dict] = [{"role": "user", "content": [
        {"type": "text", "text": CLAUDE_MD}, {"type": "text", "text": GIT_STATUS},
        {"type": "text", "text": ATTRIBUTION},
        {"type": "text", "text": "QUESTION 0: check the build log, many times."}]}]
    for k in range(rounds):
        messages += [{"role": "assistant", "content": [
                         {"type": "tool_use", "id": f"toolu_{k}", "name": "Bash",
                          "input": {"command": f"cat build.log; echo pass {k}"}}]},
                     {"role": "user", "content": [
                         {"type": "tool_result", "tool_use_id": f"toolu_{k}", "content": LOG}]}]
    return [*messages, {"role": "assistant", "content": [{"type": "text", "text": "Passed."}]},
            {"role": "user", "content": [{"type": "text", "text": "QUESTION 1: once more."}]}]


def codex(rounds: int) -> list[dict]:
    items: list[dict] = [
        {"type": "message", "role": "user", "content": [{"type": "input_text", "text":
         "# AGENTS.md instructions for /repo\n\n<INSTRUCTIONS>\n" + RULES
         + "\n</INSTRUCTIONS>"}]},
        {"type": "message", "role": "user", "content": [{"type": "input_text", "text":
         "<environment_context>\n  <cwd>/repo</cwd>\n</environment_context>"}]},
        {"type": "message", "role": "user", "content": [{"type": "input_text", "text":
         "QUESTION: check the build log, many times."}]}]
    for k in range(rounds):
        items += [{"type": "function_call", "call_id": f"call_{k}", "name": "exec_command",
                   "arguments": json.dumps({"cmd": f"cat build.log; echo pass {k}"})},
                  {"type": "function_call_output", "call_id": f"call_{k}", "output": LOG}]
    return items


def test_claude_codes_claude_md_goes_verbatim_and_its_reminders_are_no_constraints(tmp_path):
    with small_stack(tmp_path) as stack:
        stack.anthropic().messages.create(
            model="standin-small", max_tokens=256, messages=claude_code(30),
            metadata={"user_id": "user_1_session_resumed"})
        (seen,) = stack.model_requests()
    assert seen["status"] == 200 and seen["problems"] == []
    sent = json.dumps(seen["body"]["messages"])
    assert "[Summary of" in sent, "the chat was not summarized: the test would show nothing"
    assert json.dumps(RULES)[1:-1] in sent
    summary = sent.split("[Summary of", 1)[1]
    assert "Attribution for git commits" not in summary
    assert sent.index(json.dumps(RULES)[1:-1]) < sent.index("[Summary of")
    assert "QUESTION 1: once more." in sent and "toolu_29" in sent


def test_codexs_agents_md_goes_verbatim_and_is_not_what_was_asked(tmp_path):
    with small_stack(tmp_path) as stack:
        stack.openai().responses.create(model="standin-small", input=codex(30),
                                        instructions="You are a coding agent.")
        (seen,) = stack.model_requests()
    assert seen["status"] == 200 and seen["problems"] == []
    sent = json.dumps(seen["body"]["input"])
    assert "[Summary of" in sent, "the chat was not summarized: the test would show nothing"
    assert json.dumps(RULES)[1:-1] in sent
    summary = sent.split("[Summary of", 1)[1]
    assert "AGENTS.md" not in summary and "pnpm" not in summary
    assert "call_29" in sent  # the newest exchange, beside them
