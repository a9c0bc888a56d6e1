"""What a client asks beside its chat, naming no session or under the chat's (Claude Code's
titles): a title before the chat's first request (OpenCode), a commit message after its answer
(aider), on a small model or the chat's, a system prompt of their own, no tools, quoting the
chat's question; or a title asked of a model counted otherwise with the chat's whole history.
None is listed as a chat, nor stays the live chat the editors' status bars follow, nor takes
the chat's window; one that goes on is a chat again. Real gateway, official SDKs, the strict
stand-in."""

from __future__ import annotations

from collections.abc import Iterator

import openai
import pytest
from gateway_stack import Stack, fresh_stack, prose, small_stack
from test_branch import long_chat, send

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


def test_a_title_asked_before_a_chats_refused_first_request_is_set_aside(stack):
    """OpenCode asks 32,000 tokens of output of a model whose window is 24,000: its chat's
    first request is refused (400), and the title it asked before was listed as the
    workspace's one chat, and the live one."""
    title = ask(stack, TITLE, [{"role": "user", "content": "Generate a title for this:\n"},
                               {"role": "user", "content": f'"{QUESTION}"'}],
                model="gpt-4o-mini")
    assert listed(stack) == [title]
    with pytest.raises(openai.BadRequestError, match="max_tokens"):
        ask(stack, "You are an agent.", [{"role": "user", "content": QUESTION}], tools=TOOLS,
            max_tokens=500_000)
    assert listed(stack) == [] and live(stack) is None
    # the chat asked again within its window: the one chat
    chat = ask(stack, "You are an agent.", [{"role": "user", "content": QUESTION}], tools=TOOLS)
    assert listed(stack) == [chat] and live(stack) == chat


def test_claude_codes_titles_under_its_session_id_are_set_aside(stack):
    """Claude Code in its terminal asks its own model for the session's title under the chat's
    session id, with a system prompt of its own and no tools, the question quoted: before the
    chat's first request and beside each question after it. Its question comes as one text
    block of several, beside its reminders. Before: one chat more per title, and the first
    title held the chat's own id."""
    client = stack.anthropic()
    session = {"x-claude-code-session-id": "5e5510a1-0000-4000-8000-00000000c0de"}
    tool = [{"name": "Bash", "description": "Run it.", "input_schema": {"type": "object"}}]

    def title(question: str) -> str:
        return client.messages.with_raw_response.create(
            model="claude-opus-5-5", max_tokens=100, system="Write the session's title.",
            messages=[{"role": "user", "content": f"<session>\n{question}\n</session>\n\n"
                       "Write the title in the language of the session."}],
            extra_headers=session).headers["x-ctxlayer-conversation"]

    def chat(messages: list[dict]) -> str:
        return client.messages.with_raw_response.create(
            model="claude-opus-5-5", max_tokens=100, system="You are Claude Code.", tools=tool,
            messages=messages, extra_headers=session).headers["x-ctxlayer-conversation"]

    first = [{"role": "user", "content": [
        {"type": "text", "text": "<system-reminder>Today is 2026-12-06.</system-reminder>"},
        {"type": "text", "text": QUESTION}]}]
    titled = title(QUESTION)
    going = chat(first)
    assert going != titled and listed(stack) == [going] and live(stack) == going
    later = "And now make it subtract, please."
    second = [*first, {"role": "assistant", "content": "Done."},
              {"role": "user", "content": later}]
    assert chat(second) == going
    title(later)
    assert listed(stack) == [going] and live(stack) == going

def test_a_request_under_a_session_id_is_beside_that_sessions_chats_only(stack):
    """A client that names its session (an app on the Anthropic SDK, no tools) and asks a
    question another chat just asked is a chat: its titles are asked under its own id."""
    chat = ask(stack, AIDER, aider_chat())
    other = stack.anthropic().messages.with_raw_response.create(
        model="claude-opus-5-5", max_tokens=100, system="You explain code.",
        messages=[{"role": "user", "content": f"In one line: {QUESTION} What does it mean?"}],
        extra_headers={"x-claude-code-session-id": "an-app-of-its-own"},
    ).headers["x-ctxlayer-conversation"]
    assert sorted(listed(stack)) == sorted([chat, other]) and live(stack) == other

QWEN = "You are Qwen Code, an interactive CLI agent."
MEMORY = "You are now acting as the managed memory extraction subagent."


def qwen_turn(question: str = QUESTION) -> list[dict]:
    return [{"role": "user", "content": question},
            {"role": "assistant", "content": "It adds and multiplies now."}]


def test_a_helper_that_goes_over_the_chats_history_is_neither_listed_nor_live(stack):
    """Qwen Code in its terminal sends, as each turn ends, its memory agent over the chat's
    history: a system prompt and tools of its own, the chat's turns, its instruction after
    them; the agent runs its own tool loop. Before: a chat more, and the live one the status
    bars showed (its 1.1% for the chat's 2.3%) until the chat's next request."""
    chat = ask(stack, QWEN, qwen_turn()[:1], tools=TOOLS)
    memory = [*qwen_turn(), {"role": "user", "content": "Update the managed memory."}]
    helper = ask(stack, MEMORY, memory, tools=TOOLS[:1])
    assert helper != chat and listed(stack) == [chat] and live(stack) == chat
    stack.now[0] += 30  # its tool loop goes on, the chat's turn further back
    looped = [*memory, {"role": "assistant", "content": None, "tool_calls": [
        {"id": "c1", "type": "function", "function": {"name": "bash", "arguments": "{}"}}]},
        {"role": "tool", "tool_call_id": "c1", "content": "no memory yet"}]
    assert ask(stack, MEMORY, looped, tools=TOOLS[:1]) == helper
    assert listed(stack) == [chat] and live(stack) == chat
    going_on = [*qwen_turn(), {"role": "user", "content": "And now make it subtract."}]
    assert ask(stack, QWEN, going_on, tools=TOOLS) == chat
    assert listed(stack) == [chat] and live(stack) == chat


ARCHITECT = "Act as an expert architect engineer and provide direction to your editor."
EDITOR = "Act as an expert software developer who edits source code."
PLAN = "Change README.md to say that it multiplies too; nothing else in the file changes."


def test_an_editor_asked_the_chats_answer_is_neither_listed_nor_live(stack):
    """aider's architect mode: the architect chat answers with a plan, and aider asks its
    editor that plan, under the editor's system prompt, the chat's files before it; the
    editor may go on (a failed edit is sent back to it). Before: each editor's request was a
    chat more, and the live one the status bars showed until the architect's next question."""
    stack.standin.reply(PLAN)
    files = {"role": "user", "content": "I have added these files to the chat: README.md"}
    shown = [files, {"role": "assistant", "content": "Ok, I will use that as the contents."}]
    chat = ask(stack, ARCHITECT, [*shown, {"role": "user", "content": QUESTION}])
    to_edit = [files, {"role": "assistant", "content": "Ok, any changes will be to those."},
               {"role": "user", "content": PLAN}]
    editor = ask(stack, EDITOR, to_edit)
    assert editor != chat and listed(stack) == [chat] and live(stack) == chat
    stack.now[0] += 30  # its edit failed, and it is told so
    retried = [*to_edit, {"role": "assistant", "content": "README.md\n<<<<<<< SEARCH"},
               {"role": "user", "content": "The SEARCH section must match exactly."}]
    assert ask(stack, EDITOR, retried) == editor
    assert listed(stack) == [chat] and live(stack) == chat
    going_on = [*shown, {"role": "user", "content": QUESTION},
                {"role": "assistant", "content": PLAN},
                {"role": "user", "content": "And say it subtracts."}]
    assert ask(stack, ARCHITECT, going_on) == chat
    assert listed(stack) == [chat] and live(stack) == chat


def test_a_chat_that_quotes_an_answer_given_long_before_is_a_chat(stack):
    stack.standin.reply(PLAN)
    chat = ask(stack, ARCHITECT, [{"role": "user", "content": QUESTION}])
    stack.now[0] += 30
    other = ask(stack, EDITOR, [{"role": "user", "content": PLAN}])
    assert sorted(listed(stack)) == sorted([chat, other]) and live(stack) == other

def test_a_chat_that_changes_its_system_prompt_and_asks_on_later_is_a_chat(stack):
    """A person who switches the chat's mode (another system prompt, the same history) and
    asks on is not a helper of the chat it left: it is listed and live."""
    chat = ask(stack, QWEN, qwen_turn()[:1], tools=TOOLS)
    stack.now[0] += 30
    switched = [*qwen_turn(), {"role": "user", "content": "Plan the next change."}]
    planned = ask(stack, "You are in plan mode.", switched, tools=TOOLS)
    assert planned in listed(stack) and chat in listed(stack) and live(stack) == planned

def test_a_request_that_quotes_no_chat_is_a_chat_of_its_own(stack):
    chat = ask(stack, AIDER, aider_chat())
    other = ask(stack, COMMIT, commit_message("Make the parser strict."), model="gpt-4o-mini")
    assert sorted(listed(stack)) == sorted([chat, other])
    assert live(stack) == other
    # nor a new chat of the same client (its system prompt) that quotes the last one
    plain = "You are a helpful assistant."
    first = ask(stack, plain, [{"role": "user", "content": "How do I run the adder's tests?"}])
    again = ask(stack, plain, [{"role": "user", "content": "About 'How do I run the adder's "
                                                           "tests?': and with coverage?"}])
    assert {first, again} <= set(listed(stack)) and live(stack) == again
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


def test_what_was_asked_beside_a_chat_leaves_memory_before_any_chat(stack):
    """Memory holds the most recent conversations (64 by default): a commit message asked
    after each of aider's edits took a place each, and pushed the other chats out (each
    then read back from the state folder when it went on)."""
    stack.state.conversations.max_live = 3
    chat = ask(stack, AIDER, aider_chat())
    ask(stack, COMMIT, commit_message(), model="gpt-4o-mini")
    others = [ask(stack, f"You are agent {k}.", [{"role": "user", "content": f"Task {k}."}],
                  tools=TOOLS) for k in range(2)]
    assert sorted(listed(stack)) == sorted([chat, *others])
    # memory full of chats: the next aside takes the place of none of them
    going_on = [*aider_chat(), {"role": "assistant", "content": "Done."},
                {"role": "user", "content": "Make the adder subtract."}]
    assert ask(stack, AIDER, going_on) == chat
    ask(stack, COMMIT, commit_message("Make the adder subtract."), model="gpt-4o-mini")
    assert sorted(listed(stack)) == sorted([chat, *others])


# --- with the chat's history, on a model counted otherwise ---------------------------------


def chat_turns(stack: Stack, n: int) -> list[dict]:
    """An aider-like chat on `standin-small` (a 4096-token window) long enough to have been
    summarized in steps; its messages so far."""
    messages: list[dict] = [{"role": "system", "content": AIDER}, *aider_chat()[:2]]
    for k in range(n):
        messages.append({"role": "user", "content": prose(f"asks {k}", 200)})
        ask_small(stack, messages)
        messages.append({"role": "assistant", "content": prose(f"says {k}", 200)})
    return messages


def ask_small(stack: Stack, messages: list[dict], model: str = "standin-small"
              ) -> tuple[str, int, list[dict]]:
    """(the conversation, the tokens the provider read from its cache, what it was sent)."""
    raw = stack.openai().chat.completions.with_raw_response.create(
        model=model, max_tokens=128, messages=messages)
    raw.parse()
    sent = stack.model_requests()[-1]["body"]["messages"]
    return raw.headers["x-ctxlayer-conversation"], int(raw.headers["x-ctxlayer-tokens"]), sent


def summary(sent: list[dict]) -> str | None:
    """The summary chunk the request opens with, after its system prompt."""
    found = str(sent[1]["content"])
    return found if found.startswith("[Summary of") else None


@pytest.fixture
def small(tmp_path) -> Iterator[Stack]:
    with small_stack(tmp_path) as stack:
        yield stack


def test_a_title_asked_of_a_model_counted_otherwise_leaves_the_chats_window_alone(small):
    """A title asked of another model with the chat's whole history, no session id (the
    history opens like the chat: the same family): before, it took the chat's conversation
    over, its window dropped (counts of another encoding), and the chat's next request
    started afresh: its summaries written again, the provider's cached prefix lost."""
    history = chat_turns(small, 10)
    chat, _, before = ask_small(small, history)
    assert summary(before) is not None
    title, _, _ = ask_small(small, [*history, {"role": "user", "content": "A title, please."}],
                            model="gpt-3.5-turbo")
    assert title != chat
    going_on = [*history, {"role": "assistant", "content": "answered"},
                {"role": "user", "content": prose("asks again", 40)}]
    again, _, sent = ask_small(small, going_on)
    assert again == chat
    assert summary(sent) == summary(before)  # its summary chunk: no compaction afresh
    assert listed(small) == [chat] and live(small) == chat


def test_after_a_switch_to_a_model_counted_otherwise_and_back_each_keeps_its_window(small):
    """A `/model` to a model counted otherwise is a conversation of its own, listed beside the
    chat; back on the first model, the chat goes on from its own window, and the other
    model's turns, part of its history now, are not an aside."""
    history = chat_turns(small, 10)
    chat, _, before = ask_small(small, history)
    assert summary(before) is not None
    switched = [*history, {"role": "assistant", "content": "answered"},
                {"role": "user", "content": "The other model asks."}]
    other, _, _ = ask_small(small, switched, model="gpt-3.5-turbo")
    on = [*switched, {"role": "assistant", "content": "the other model answers"},
          {"role": "user", "content": "The other model asks again."}]
    assert ask_small(small, on, model="gpt-3.5-turbo")[0] == other
    back = [*on, {"role": "assistant", "content": "answered again"},
            {"role": "user", "content": "The first model asks."}]
    again, _, sent = ask_small(small, back)
    assert again == chat and summary(sent) == summary(before)
    assert sorted(listed(small)) == sorted([chat, other]) and live(small) == chat


def test_a_title_under_the_chats_session_id_on_a_small_model_is_not_listed(small):
    """Under a session id (Claude Code's, in `metadata.user_id`) a small model's request is a
    family of its own; asked with the chat's history and a question of its own, it is set
    aside once the chat goes on without it (a sub-agent's own chat is not: test_branch)."""
    history = long_chat(small, "main")
    main, _ = send(small, [*history, {"role": "user", "content": "main asks"}], "main")
    asked = [*history, {"role": "user", "content": "main asks"},
             {"role": "assistant", "content": "main answers"},
             {"role": "user", "content": "Write a five-word title for this chat."}]
    title, _ = send(small, asked, "main", model="claude-haiku-4-5")
    assert title["x-ctxlayer-conversation"] != main["x-ctxlayer-conversation"]
    assert len(listed(small)) == 2
    send(small, [*asked[:-1], {"role": "user", "content": "main asks again"}], "main")
    assert listed(small) == [main["x-ctxlayer-conversation"]]
