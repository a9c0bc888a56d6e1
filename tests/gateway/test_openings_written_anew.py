"""A chat whose client writes its opening anew, from a client that names no session, starts
like no chat the gateway has seen: a history the client's own compaction wrote opens with its
summary (Qwen Code, OpenCode on the Messages API, Continue's `cn`), aider's with its repo map
and files, written anew as the chat's files change. It goes on in its chat: the workspace's
most recent on the same model with the same system prompt (a compaction), the one whose last
question it carries, answered (aider); a chat with another system prompt (the client's
summarizer, asked just before) or on another model is left alone. Real gateway, official
SDKs, the strict stand-in."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from gateway_stack import Stack, fresh_stack

QWEN = "You are Qwen Code, an interactive CLI agent."
SUMMARIZER = "You are the component that summarizes a conversation."
#: Qwen Code 0.24's summary as it sends it on: the model's words, then its order to resume
QWEN_SUMMARY = ("<state_snapshot>\nThe user asked to check the build log; it passed.\n"
                "</state_snapshot>\n\nResume the prior task using the summary above. Continue "
                "from the last in-flight step; do not acknowledge the summary.")


@pytest.fixture
def stack(tmp_path) -> Iterator[Stack]:
    """A stack of the test's own: the chats listed are its alone."""
    with fresh_stack(tmp_path) as fresh:
        yield fresh


def chat_completion(stack: Stack, system: str, messages: list[dict],
                    model: str = "gpt-4o", **kw) -> str:
    raw = stack.openai().chat.completions.with_raw_response.create(
        model=model, messages=[{"role": "system", "content": system}, *messages], **kw)
    return raw.headers["x-ctxlayer-conversation"]


def listed(stack: Stack) -> list[str]:
    return [c.conversation_id for c in stack.state.conversations.list(
        stack.gateway.caller.workspace)]


def turns(first: str, n: int) -> list[dict]:
    out: list[dict] = [{"role": "user", "content": first}]
    for k in range(n):
        out += [{"role": "assistant", "content": f"answer {k}"},
                {"role": "user", "content": f"question {k}"}]
    return out


def test_qwen_codes_compacted_history_goes_on_in_the_chat_it_compacted(stack):
    chat = chat_completion(stack, QWEN, turns("Check the build log.", 2))
    other_model = chat_completion(stack, QWEN, turns("Something else.", 0), model="gpt-4.1")
    aside = chat_completion(stack, SUMMARIZER, [*turns("Check the build log.", 2), {
        "role": "user", "content": "Produce the <state_snapshot> XML."}])
    agent = chat_completion(stack, "You are another agent.", turns("Fix the tests.", 0),
                            tools=[{"type": "function", "function": {
                                "name": "run", "parameters": {"type": "object"}}}])
    assert len({chat, other_model, aside, agent}) == 4
    compacted = [{"role": "user", "content": [{"type": "text", "text": QWEN_SUMMARY}]},
                 {"role": "assistant", "content": "Got it. Thanks for the additional context!"},
                 {"role": "user", "content": "question 3"}]
    assert chat_completion(stack, QWEN, compacted) == chat
    # the next request opens alike: the same chat; the chain before the summary is not listed,
    # nor the summarizer's aside (another system prompt, no tools, since the chat's last turn),
    # but the chat on another model with its system prompt is, and another agent's with tools
    going_on = [*compacted, {"role": "assistant", "content": "answer 3"},
                {"role": "user", "content": "question 4"}]
    assert chat_completion(stack, QWEN, going_on) == chat
    assert sorted(listed(stack)) == sorted([chat, other_model, agent])
    # a second compaction: its summary differs, and it too goes on there
    again = [{"role": "user", "content": QWEN_SUMMARY.replace("it passed", "it passed twice")},
             {"role": "assistant", "content": "Got it. Thanks for the additional context!"},
             {"role": "user", "content": "question 5"}]
    assert chat_completion(stack, QWEN, again) == chat
    assert len(listed(stack)) == 3
    # the aside, going on, is listed again
    chat_completion(stack, SUMMARIZER, [*turns("Check the build log.", 2), {
        "role": "user", "content": "Produce the <state_snapshot> XML."},
        {"role": "assistant", "content": "<state_snapshot/>"},
        {"role": "user", "content": "More."}])
    assert aside in listed(stack)


def test_a_compacted_history_with_no_chat_of_its_system_prompt_is_a_chat_of_its_own(stack):
    chat = chat_completion(stack, QWEN, turns("Check the build log.", 1))
    compacted = [{"role": "user", "content": QWEN_SUMMARY},
                 {"role": "assistant", "content": "Got it."}, {"role": "user", "content": "go"}]
    elsewhere = chat_completion(stack, "You are another agent.", compacted)
    on_another_model = chat_completion(stack, QWEN, compacted, model="gpt-4.1")
    assert len({chat, elsewhere, on_another_model}) == 3


def test_opencodes_compacted_history_on_the_messages_api_goes_on_in_its_chat(stack):
    """OpenCode's compacted history asks what was done and its summary answers."""
    def ask(messages: list[dict], system: str = "You are OpenCode.") -> str:
        return stack.anthropic().messages.with_raw_response.create(
            model="claude-sonnet-4-5", max_tokens=64, system=system, messages=messages,
        ).headers["x-ctxlayer-conversation"]

    chat = ask(turns("Check the build log.", 2))
    aside = ask([{"role": "user", "content": "Here is the conversation so far: ..."}],
                system="You are a context summarization agent.")
    question = {"role": "user", "content": "What did we do so far?"}  # its words, 1.18
    after = [question, {"role": "assistant", "content": "We checked the build log."},
             {"role": "user", "content": "Continue if you have next steps."}]
    assert ask(after) == chat
    assert listed(stack) == [chat] and aside != chat  # the summarization aside set aside


def test_cns_history_opening_with_the_assistants_summary_goes_on_in_its_chat(stack):
    """Continue's `cn` asks its chat for a summary, then sends the system prompt and the
    assistant's summary alone, and the turns after it: that history, which grows from an
    assistant message, goes on in the chat, each request (the name of a chat no longer takes
    in the assistant messages before its first user message). A chat that opens with a
    greeting is taken for one too, as two chats that open alike are: an edit of the other,
    until each goes on in its own."""
    cn = "You are an agent in the Continue CLI."
    chat = chat_completion(stack, cn, turns("Check the build log.", 2))
    chat_completion(stack, cn, [*turns("Check the build log.", 2), {
        "role": "user", "content": "Please provide a concise summary of our conversation so far,"
                                   " capturing the key context."}])
    summary = {"role": "assistant", "content": "We checked the build log twice."}
    assert chat_completion(stack, cn, [summary]) == chat
    on = [summary, {"role": "assistant", "content": "It passed."},
          {"role": "user", "content": "continue"}]
    assert chat_completion(stack, cn, on) == chat
    assert listed(stack) == [chat]
    greeting = [{"role": "assistant", "content": "Hello! Ask me."},
                {"role": "user", "content": "hi"}]
    assert chat_completion(stack, cn, greeting) == chat
    going_on = chat_completion(stack, cn, [*on, {"role": "assistant", "content": "Done."},
                                           {"role": "user", "content": "thanks"}])
    assert going_on != chat and sorted(listed(stack)) == sorted([chat, going_on])


@pytest.mark.parametrize("hint", [{}, {"user": "aider-user"}])
def test_aiders_chat_goes_on_as_its_repo_map_and_files_are_written_anew(stack, hint):
    """aider sends its repo map and the chat's files first, then the chat's turns: a file
    added to the chat changes both. Each turn carries the last one's question, answered: one
    chat. Another aider chat (no question of the first's in it) is a chat of its own. Under
    a client's `user` too: there a request that shares only its system prompt with the
    family's chats is a new chat, but one that carries a chat's question, answered, is not."""
    aider = "Act as an expert software developer."

    def opening(files: str) -> list[dict]:
        return [{"role": "user", "content": f"Here are summaries of some files: {files}"},
                {"role": "assistant", "content": "Ok."}]

    first = [*opening("a.py b.py c.py"), {"role": "user", "content": "What does f1 do?"}]
    chat = chat_completion(stack, aider, first, extra_body=hint)
    second = [*opening("a.py c.py"), {"role": "user", "content": "What does f1 do?"},
              {"role": "assistant", "content": "It adds one."},
              {"role": "user", "content": "And f2?"}]
    assert chat_completion(stack, aider, second, extra_body=hint) == chat
    third = [*opening("c.py"), *second[2:], {"role": "assistant", "content": "It adds two."},
             {"role": "user", "content": "And C3?"}]
    assert chat_completion(stack, aider, third, extra_body=hint) == chat
    # `--restore-chat-history`: the turns read back from aider's markdown log, each question
    # with a markdown line end after it, before the opening written anew
    restored = [{"role": "user", "content": "What does f1 do?  \n"},
                {"role": "assistant", "content": "\nIt adds one.\n\n"},
                {"role": "user", "content": "And f2?  \n"},
                {"role": "assistant", "content": "\nIt adds two.\n\n"},
                {"role": "user", "content": "And C3?  \n"},
                {"role": "assistant", "content": "\nIt is a class.\n\n"},
                *opening("c.py"), {"role": "user", "content": "And C4?"}]
    assert chat_completion(stack, aider, restored, extra_body=hint) == chat
    assert listed(stack) == [chat]
    other = chat_completion(stack, aider, [*opening("b.py"),
                                           {"role": "user", "content": "What does f1 do?"}],
                            extra_body=hint)
    assert other != chat  # asked again, never answered in it: a new chat


def test_codexs_compacted_history_of_a_resumed_session_goes_on_in_its_chat(stack):
    # Codex resumed, then compacting its own history, sends its opening messages in another
    # order (the task before its skills and environment) and its summary after the newest
    # question: sharing only its first developer message with the chat, it was listed as a
    # second chat under the same prompt_cache_key
    def item(role: str, text: str) -> dict:
        kind = "output_text" if role == "assistant" else "input_text"
        return {"type": "message", "role": role, "content": [{"type": kind, "text": text}]}

    codex, skills = "You are a coding agent running in the Codex CLI.", "<skills_instructions>"
    env, task = "<environment_context>", "Check the build."

    def respond(items: list[dict]) -> str:
        raw = stack.openai().responses.with_raw_response.create(
            model="gpt-4o", input=items, prompt_cache_key="codex-session-1", store=False)
        return raw.headers["x-ctxlayer-conversation"]

    opening = [item("developer", codex), item("developer", skills), item("user", env),
               item("user", task)]
    chat = respond(opening)
    assert respond([*opening, item("assistant", "It passed."),
                    item("user", "Once more please.")]) == chat
    compacted = [item("developer", codex), item("user", task), item("developer", skills),
                 item("user", env), item("user", "Once more please."),
                 item("user", "Another language model started to solve this problem and "
                              "produced a summary of its thinking process. The build passed.")]
    assert respond(compacted) == chat
    assert listed(stack) == [chat]


def test_qwen_codes_resumed_session_without_its_date_reminder_goes_on_in_its_chat(stack):
    """`qwen -c` resumes the session's history, but its first user message comes without the
    reminder of the date it opened with (the probe's: 4 text blocks of the 5 sent before).
    Before: a chat of its own, two listed for one Qwen Code session."""
    skills = "<system-reminder>\nThe following skills are available.\n</system-reminder>"
    date = ("<system-reminder>\nThe current date is: Monday, December 7, 2026.\n"
            "</system-reminder>")
    ask = "Run ./run_tests.sh, find the failing test and fix it."
    tools = [{"type": "function", "function": {"name": "run_shell_command",
                                               "parameters": {"type": "object"}}}]
    history: list[dict] = []
    for k in range(3):
        history += [{"role": "assistant", "content": None, "tool_calls": [
            {"id": f"call{k}", "type": "function",
             "function": {"name": "run_shell_command", "arguments": "{}"}}]},
            {"role": "tool", "tool_call_id": f"call{k}", "content": f"output {k}"}]

    def first(*blocks: str) -> dict:
        return {"role": "user", "content": [{"type": "text", "text": b} for b in blocks]}

    chat = chat_completion(stack, QWEN, [first(skills, date, ask), *history], tools=tools)
    resumed = [first(skills, ask), *history, {"role": "assistant", "content": "Fixed it."},
               {"role": "user", "content": "Which file did you edit?"}]
    assert chat_completion(stack, QWEN, resumed, tools=tools) == chat
    assert listed(stack) == [chat]
