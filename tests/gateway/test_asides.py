"""What a client asks beside its chat, naming no session: a title before the chat's first
request (OpenCode), a commit message after its answer (aider), on a small model, a system
prompt of their own, no tools, quoting the chat's question. Neither is listed as a chat, nor
becomes the live chat the editors' status bars follow; one that goes on is a chat again. Real
gateway, official SDKs, the strict stand-in."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from gateway_stack import Stack, fresh_stack

from ctxlayer.state.asides import ASIDE_SECONDS

AIDER = "Act as an expert software developer."
COMMIT = "You are an expert software engineer that generates concise commit messages."
TITLE = "You are a title generator. You output ONLY a thread title."
QUESTION = "Say it multiplies too."
TOOLS = [{"type": "function", "function": {"name": "bash", "parameters": {"type": "object"}}}]


@pytest.fixture
def stack(tmp_path) -> Iterator[Stack]:
    """A stack of the test's own, its clock of turns in the test's hands."""
    with fresh_stack(tmp_path) as fresh:
        now = [1000.0]
        fresh.state.conversations.ticks = lambda: now[0]
        fresh.now = now  # type: ignore[attr-defined]
        yield fresh


def ask(stack: Stack, system: str, messages: list[dict], model: str = "gpt-4o", **kw) -> str:
    raw = stack.openai().chat.completions.with_raw_response.create(
        model=model, messages=[{"role": "system", "content": system}, *messages], **kw)
    raw.parse()  # the provider answered it
    return raw.headers["x-ctxlayer-conversation"]


def listed(stack: Stack) -> list[str]:
    return [c.conversation_id for c in stack.state.conversations.list(
        stack.gateway.caller.workspace)]


def live(stack: Stack) -> str | None:
    found = stack.state.events.live_chat(stack.gateway.caller.workspace)
    return found[0] if found else None


def aider_chat(question: str = QUESTION) -> list[dict]:
    """aider's opening: an example exchange, then the question."""
    return [{"role": "user", "content": "Change get_factorial() to use math.factorial"},
            {"role": "assistant", "content": "I will edit mathweb/flask/app.py."},
            {"role": "user", "content": question}]


def commit_message(question: str = QUESTION) -> list[dict]:
    return [{"role": "user", "content": f"# Diffs:\n-It adds\n+It multiplies\n\nUSER: "
                                        f"{question}\n\nASSISTANT: I will say so."}]


def test_a_commit_message_after_the_chats_answer_is_neither_listed_nor_live(stack):
    chat = ask(stack, AIDER, aider_chat())
    aside = ask(stack, COMMIT, commit_message(), model="gpt-4o-mini")
    assert aside != chat
    assert listed(stack) == [chat]
    assert live(stack) == chat
    # the chat's next question: still one chat, the live one
    going_on = [*aider_chat(), {"role": "assistant", "content": "Done."},
                {"role": "user", "content": "And now make it subtract."}]
    assert ask(stack, AIDER, going_on) == chat
    assert listed(stack) == [chat] and live(stack) == chat


def test_a_title_asked_before_the_chats_first_request_is_set_aside_when_it_comes(stack):
    title = ask(stack, TITLE, [{"role": "user", "content": "Generate a title for this:\n"},
                               {"role": "user", "content": f'"{QUESTION}"'}],
                model="gpt-4o-mini")
    assert listed(stack) == [title] and live(stack) == title  # no chat to be beside, yet
    chat = ask(stack, "You are an agent.", [{"role": "user", "content": QUESTION}], tools=TOOLS)
    assert listed(stack) == [chat]
    assert live(stack) == chat


def test_a_request_that_quotes_no_chat_is_a_chat_of_its_own(stack):
    chat = ask(stack, AIDER, aider_chat())
    other = ask(stack, COMMIT, commit_message("Make the parser strict."), model="gpt-4o-mini")
    assert sorted(listed(stack)) == sorted([chat, other])
    assert live(stack) == other
    # nor does a question of a word or two make a quote
    short = ask(stack, AIDER, aider_chat("Fix it."))
    title = ask(stack, TITLE, [{"role": "user", "content": "Title for: Fix it."}])
    assert {short, title} <= set(listed(stack)) and live(stack) == title


def test_a_request_long_after_the_chats_last_turn_is_a_chat_of_its_own(stack):
    chat = ask(stack, AIDER, aider_chat())
    stack.now[0] += ASIDE_SECONDS + 1  # type: ignore[attr-defined]
    later = ask(stack, COMMIT, commit_message(), model="gpt-4o-mini")
    assert sorted(listed(stack)) == sorted([chat, later])
    assert live(stack) == later


def test_an_aside_that_goes_on_is_a_chat_again(stack):
    chat = ask(stack, AIDER, aider_chat())
    aside = ask(stack, COMMIT, commit_message(), model="gpt-4o-mini")
    assert listed(stack) == [chat]
    going_on = [*commit_message(), {"role": "assistant", "content": "feat: multiply"},
                {"role": "user", "content": "Shorter, please."}]
    assert ask(stack, COMMIT, going_on, model="gpt-4o-mini") == aside
    assert sorted(listed(stack)) == sorted([chat, aside])
    assert live(stack) == aside


def test_a_summary_asked_beside_an_anthropic_agent_loop_is_set_aside(stack):
    """The question is further back than the loop's tool results (user messages too, in the
    Messages API): it is still the question the aside quotes."""
    tool = [{"name": "bash", "description": "Run it.", "input_schema": {"type": "object"}}]
    messages: list[dict] = [{"role": "user", "content": QUESTION}]
    for k in range(6):
        messages += [{"role": "assistant", "content": [{"type": "tool_use", "id": f"t{k}",
                                                        "name": "bash", "input": {}}]},
                     {"role": "user", "content": [{"type": "tool_result", "tool_use_id": f"t{k}",
                                                   "content": f"output {k}"}]}]
    client = stack.anthropic()
    chat = client.messages.with_raw_response.create(
        model="claude-sonnet-4-5", max_tokens=100, system="You are an agent.", tools=tool,
        messages=messages).headers["x-ctxlayer-conversation"]
    summary = client.messages.with_raw_response.create(
        model="claude-haiku-4-5", max_tokens=100, system="Summarize the conversation.",
        messages=[{"role": "user", "content": f"user: {QUESTION}\nassistant: ran bash 6 times"}]
    ).headers["x-ctxlayer-conversation"]
    assert summary != chat
    assert listed(stack) == [chat] and live(stack) == chat
