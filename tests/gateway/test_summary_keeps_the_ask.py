"""A summary keeps what the user asked, in their words, and leaves out what their client
injected around it. Claude Code resumed (the probe: its default model, 25 Bash calls, then
`--resume` with a new question): from the next compaction on, the task ("Check the build log,
many times.") was gone from every request, summary included, and the summary's "Decided"
items were Claude Code's `<system-reminder>` lines ("As you answer the user's questions, you
can use the following context:"); its facts ledger was "line 1, line 2, ... line 249", the
numbers of a log's lines. The official Anthropic SDK drives the real gateway before the strict
stand-in."""

from __future__ import annotations

import json

from gateway_stack import small_stack

TASK = "Check the build log, many times."
REMINDER = ("<system-reminder>\nAs you answer the user's questions, you can use the following "
            "context:\n# gitStatus\nMain branch (you will usually use this for PRs): main\n"
            "Status:\n?? build.log\n</system-reminder>")
LOG = "\n".join(f"line {n}: step {n} of the build passed, {n % 7} checks" for n in range(120))


def conversation(rounds: int) -> list[dict]:
    messages: list[dict] = [{"role": "user", "content": [
        {"type": "text", "text": REMINDER}, {"type": "text", "text": TASK}]}]
    for k in range(rounds):
        messages.append({"role": "assistant", "content": [
            {"type": "tool_use", "id": f"toolu_{k}", "name": "Bash",
             "input": {"command": "cat build.log"}}]})
        messages.append({"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": f"toolu_{k}", "content": LOG}]})
    messages.append({"role": "assistant", "content": [{"type": "text", "text": "It passed."}]})
    messages.append({"role": "user", "content": [{"type": "text", "text": "Once more please."}]})
    return messages


def test_a_summarized_task_stays_in_the_users_words_without_the_injected_context(tmp_path):
    with small_stack(tmp_path) as stack:
        stack.anthropic().messages.create(
            model="standin-small", max_tokens=256, messages=conversation(40),
            metadata={"user_id": "user_1_session_resumed"})
        (seen,) = stack.model_requests()
        assert seen["status"] == 200 and seen["problems"] == []
    sent = seen["body"]["messages"]
    texts = [b["text"] for m in sent for b in m["content"]
             if isinstance(b, dict) and b.get("type") == "text"]
    summaries = [t for t in texts if t.startswith("[Summary of")]
    assert summaries, "the chat was not summarized: the test would show nothing"
    assert not any(TASK in t for t in texts if not t.startswith("[Summary of")), \
        "the task went whole: the summary was not asked to keep it"
    assert any(f"Asked:\n- {TASK}" in s for s in summaries), summaries
    every = json.dumps(sent)
    assert "As you answer the user" not in every.split("[Summary of", 1)[1]
    assert "line 1, line 2, line 3" not in every
    assert "Once more please." in texts  # the question, whole
