"""A chat goes upstream in the order it was had: the summaries of the work on earlier
questions, then the question the client works on now and its work; never the newest question
before a summary whose "Asked" is the previous one. The probe: Claude Code run three times
with `--continue` in a 40k window sent Q0's summary, then Q2, then a summary of Q1's work that
held Q2's first call too. Turn by turn, as the clients send them: Claude Code's shape on the
Messages API (its reminders in the first user message), Codex's on the Responses API (its
AGENTS.md and environment as user turns of their own). Official SDKs, the real gateway, the
strict stand-in."""

from __future__ import annotations

import json

from gateway_stack import small_stack

LOG = "\n".join(f"line {n}: step {n} of the build passed, {n % 7} checks" for n in range(40))
REMINDER = ("<system-reminder>\nAs you answer the user's questions, you can use the following "
            "context:\n# gitStatus\nCurrent branch: main\n\nStatus:\n(clean)\n"
            "</system-reminder>")
ASK = "QUESTION {}: check the build log again, many times."
ROUNDS = 10


def claude_code(questions: int, rounds: int) -> list[dict]:
    """Claude Code continued: each question answered after ROUNDS Bash calls, the newest one
    ``rounds`` calls in."""
    out: list[dict] = []
    for q in range(questions):
        head = [{"type": "text", "text": REMINDER}] if q == 0 else []
        out.append({"role": "user", "content": [*head, {"type": "text", "text": ASK.format(q)}]})
        for k in range(rounds if q == questions - 1 else ROUNDS):
            out += [{"role": "assistant", "content": [
                        {"type": "tool_use", "id": f"toolu_{q}_{k}", "name": "Bash",
                         "input": {"command": f"cat build.log; echo RUN{q} pass {k}"}}]},
                    {"role": "user", "content": [
                        {"type": "tool_result", "tool_use_id": f"toolu_{q}_{k}", "content": LOG}]}]
        if q < questions - 1:
            out.append({"role": "assistant", "content": [{"type": "text", "text": "Passed."}]})
    return out


def codex(questions: int, rounds: int) -> list[dict]:
    def user(text: str) -> dict:
        return {"type": "message", "role": "user",
                "content": [{"type": "input_text", "text": text}]}
    out = [user("# AGENTS.md instructions for /repo\n\n<INSTRUCTIONS>\n- Use pnpm, not npm.\n"
                "</INSTRUCTIONS>"),
           user("<environment_context>\n  <cwd>/repo</cwd>\n</environment_context>")]
    for q in range(questions):
        out.append(user(ASK.format(q)))
        for k in range(rounds if q == questions - 1 else ROUNDS):
            out += [{"type": "function_call", "call_id": f"call_{q}_{k}", "name": "exec_command",
                     "arguments": json.dumps({"cmd": f"cat build.log; echo RUN{q} pass {k}"})},
                    {"type": "function_call_output", "call_id": f"call_{q}_{k}", "output": LOG}]
        if q < questions - 1:
            out.append({"type": "message", "role": "assistant",
                        "content": [{"type": "output_text", "text": "Passed."}]})
    return out


def in_order(sent: str) -> None:
    """The newest question after every summary of what came before it, before every summary
    of the work on it; no summary after it says an earlier question was asked."""
    newest = ASK.format(2)
    assert "[Summary of" in sent, "the chat was not summarized: the test would show nothing"
    at = sent.index(newest)
    after = sent[at:]
    assert "QUESTION 1" not in after and "RUN1 pass" not in after, after[:2000]
    assert "RUN2 pass" not in sent[:at]
    assert "QUESTION 1" in sent[:at]


def test_claude_code_continued_reads_in_conversation_order(tmp_path):
    with small_stack(tmp_path) as stack:
        client = stack.anthropic()
        for questions in (1, 2, 3):
            for rounds in range(1, ROUNDS + 1):
                client.messages.create(model="standin-small", max_tokens=256,
                                       messages=claude_code(questions, rounds),
                                       metadata={"user_id": "user_1_session_continued"})
        seen = stack.model_requests()
    assert all(r["status"] == 200 and r["problems"] == [] for r in seen)
    in_order(json.dumps(seen[-1]["body"]["messages"]))


def test_codex_resumed_reads_in_conversation_order(tmp_path):
    with small_stack(tmp_path) as stack:
        client = stack.openai()
        for questions in (1, 2, 3):
            for rounds in range(1, ROUNDS + 1):
                client.responses.create(model="standin-small", input=codex(questions, rounds),
                                        instructions="You are a coding agent.")
        seen = stack.model_requests()
    assert all(r["status"] == 200 and r["problems"] == [] for r in seen)
    in_order(json.dumps(seen[-1]["body"]["input"]))
