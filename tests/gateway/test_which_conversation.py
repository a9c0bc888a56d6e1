"""Which conversation a request belongs to: the `x-ctxlayer-conversation` header, else the
client's own session id (`x-claude-code-session-id`, Anthropic `metadata.user_id`, OpenAI
`prompt_cache_key`, then `user`), else its message chain. Two chats with the same system
prompt and first message (aider's first message is a fixed example) are two conversations
from where they differ, each with its own summary chunks; an edit lands in the chat it
edits. Real gateway, official SDKs, the strict stand-in."""

from __future__ import annotations

import pytest
from gateway_stack import Stack, fresh_stack, prose

EXAMPLE = [{"role": "user", "content": "Change get_factorial() to use math.factorial"},
           {"role": "assistant", "content": "Ok, I will edit mathweb/flask/app.py."}]


class Chat:
    """An aider-like chat: a fixed system prompt and example, then its own turns."""

    def __init__(self, stack: Stack, name: str, system: str) -> None:
        self.stack = stack
        self.client = stack.openai()
        self.name = name
        self.messages: list[dict] = [{"role": "system", "content": system}, *EXAMPLE]
        self.ids: list[str] = []
        self.stepped = 0  # turns on which something was newly summarized

    def turn(self, k: int) -> str:
        self.messages.append({"role": "user", "content": prose(f"{self.name} asks {k}")})
        raw = self.client.chat.completions.with_raw_response.create(
            model="standin-small", max_tokens=256, messages=self.messages)
        raw.parse()
        self.messages.append({"role": "assistant", "content": prose(f"{self.name} says {k}")})
        self.ids.append(raw.headers["x-ctxlayer-conversation"])
        self.stepped += int(raw.headers["x-ctxlayer-dropped"]) > 0
        return self.ids[-1]


TURNS = 14


def test_two_interleaved_chats_keep_their_own_summaries(small):
    alone = Chat(small, "bob", "You are aider (run 1).")
    for k in range(TURNS):
        alone.turn(k)
    assert alone.stepped >= 2  # the chat is long enough to be summarized in steps
    assert len(set(alone.ids)) == 1

    a = Chat(small, "alice", "You are aider (run 2).")
    b = Chat(small, "bob", "You are aider (run 2).")
    for k in range(TURNS):
        a.turn(k)
        b.turn(k)
    # b's first request cannot be told from an edit of a's question, so it takes the
    # conversation and a's chain is kept as a fork, where a's next request lands: from then on
    # they are two conversations, each with one id
    assert a.ids[0] == b.ids[0]
    assert len(set(a.ids[1:])) == 1 and len(set(b.ids)) == 1 and a.ids[1] != b.ids[0]
    # each recognizes its own previous turn: no more summarizing than the same chat alone
    # (re-summarizing from the start would step on nearly every turn)
    assert b.stepped <= alone.stepped + 1, (b.stepped, alone.stepped)
    assert a.stepped <= alone.stepped + 1, (a.stepped, alone.stepped)
    # both are listed: a's fork since a's own turn went on in it
    assert {a.ids[-1], b.ids[-1]} <= listed(small)


def listed(stack: Stack) -> set[str]:
    """The conversations `ctx/conversations` (and `ctxlayer chats`) lists."""
    return {c.conversation_id for c in stack.state.conversations.list(
        stack.gateway.caller.workspace)}


def test_an_edit_or_a_regenerated_answer_lands_in_the_same_conversation(small):
    chat = Chat(small, "carol", "You are aider (run 3).")
    first = [chat.turn(k) for k in range(3)]
    assert len(set(first)) == 1
    # regenerate: the same request again
    again = chat.client.chat.completions.with_raw_response.create(
        model="standin-small", max_tokens=256, messages=chat.messages[:-1])
    assert again.headers["x-ctxlayer-conversation"] == first[0]
    # edit the last question
    edited = [*chat.messages[:-2], {"role": "user", "content": "no, do it differently"}]
    raw = chat.client.chat.completions.with_raw_response.create(
        model="standin-small", max_tokens=256, messages=edited)
    assert raw.headers["x-ctxlayer-conversation"] == first[0]
    # rewind two turns and go on from there
    rewound = [*chat.messages[:-4], {"role": "user", "content": "start over from here"}]
    raw = chat.client.chat.completions.with_raw_response.create(
        model="standin-small", max_tokens=256, messages=rewound)
    assert raw.headers["x-ctxlayer-conversation"] == first[0]
    # the chains the edits left behind are kept as forks (ids of the family's), and not
    # listed: one chat is shown (each was listed, as a chat of its own)
    def ours() -> set[str]:
        return {c for c in listed(chat.stack) if c.startswith(first[0])}
    assert ours() == {first[0]}
    # until a request goes on in one: the chat before the rewind, one turn further
    chat.messages.append({"role": "user", "content": "and one more thing"})
    on = chat.client.chat.completions.with_raw_response.create(
        model="standin-small", max_tokens=256, messages=chat.messages)
    assert on.headers["x-ctxlayer-conversation"] != first[0]
    assert ours() == {first[0], on.headers["x-ctxlayer-conversation"]}


def ask_openai(stack: Stack, **kw) -> str:
    raw = stack.openai().chat.completions.with_raw_response.create(
        model="gpt-4o", messages=[{"role": "user", "content": "the same first question"}], **kw)
    return raw.headers["x-ctxlayer-conversation"]


def ask_anthropic(stack: Stack, content: str = "the same first question", **kw) -> str:
    raw = stack.anthropic().messages.with_raw_response.create(
        model="claude-sonnet-4-5", max_tokens=64, system="You are Claude Code.",
        messages=[{"role": "user", "content": content}], **kw)
    return raw.headers["x-ctxlayer-conversation"]


def ask_chat(stack: Stack, messages: list[dict], **kw) -> str:
    raw = stack.anthropic().messages.with_raw_response.create(
        model="claude-sonnet-4-5", max_tokens=64, system="You are Claude Code.",
        messages=messages, **kw)
    return raw.headers["x-ctxlayer-conversation"]


FIRST = [{"role": "user", "content": "the same first question"}]
LATER = [*FIRST, {"role": "assistant", "content": "an answer"},
         {"role": "user", "content": "a follow-up"}]


def test_claude_code_session_header_names_the_conversation(stack):
    """The session id names the family of a Claude Code run's requests: its chat goes on in
    one conversation, and a chat that shares no message with it under the same id (a
    sub-agent's) is a conversation of its own, which the chat's next turn leaves alone."""
    one = ask_anthropic(stack, extra_headers={"x-claude-code-session-id": "sess-1"})
    two = ask_anthropic(stack, extra_headers={"x-claude-code-session-id": "sess-2"})
    assert one != two  # two parallel runs with the same prompt
    assert ask_chat(stack, LATER, extra_headers={"x-claude-code-session-id": "sess-1"}) == one
    side = ask_anthropic(stack, "something else entirely",
                         extra_headers={"x-claude-code-session-id": "sess-1"})
    assert side not in (one, two)
    assert ask_chat(stack, [*LATER, {"role": "assistant", "content": "done"},
                            {"role": "user", "content": "and then?"}],
                    extra_headers={"x-claude-code-session-id": "sess-1"}) == one
    named = ask_anthropic(stack, extra_headers={"x-claude-code-session-id": "sess-1",
                                                "x-ctxlayer-conversation": "mine"})
    assert named == "mine"  # the header wins


def test_a_history_claude_codes_compaction_wrote_goes_on_in_its_chat(stack):
    """After Claude Code's own compaction its history opens with its summary and shares no
    message with the chain before: it goes on in the chat it compacted (one chat listed, the
    same id for the status line and the why view), not in a new one beside it as a
    sub-agent's chat would; the chain it replaced is kept, unlisted, as an edit's is."""
    session = {"x-claude-code-session-id": "sess-compact"}
    chat = ask_chat(stack, LATER, extra_headers=session)
    side = ask_anthropic(stack, "a sub-agent's task", extra_headers=session)
    assert side != chat
    ask_chat(stack, [*LATER, {"role": "assistant", "content": "an answer"},
                     {"role": "user", "content": "more"}], extra_headers=session)
    summary = ("This session is being continued from a previous conversation that ran out of "
               "context. The summary below covers the earlier portion of the conversation.")
    after = ask_chat(stack, [{"role": "user", "content": [{"type": "text", "text": summary}]},
                             {"role": "assistant", "content": "ok"},
                             {"role": "user", "content": "go on"}], extra_headers=session)
    assert after == chat
    assert {chat, side} <= listed(stack)
    # the fork (an id of the family's, as the sub-agent's is): unlisted
    assert [c for c in listed(stack) if c.startswith(chat + "-")] == [side]


def test_a_compacted_history_goes_on_in_the_chat_with_its_system_prompt(stack):
    """A sub-agent's request (a system prompt of its own) may come last before the history the
    compaction wrote (an agent run in the background): that history goes on in the chat whose
    system prompt it has, not in the sub-agent's."""
    session = {"x-claude-code-session-id": "sess-compact-2"}
    chat = ask_chat(stack, LATER, extra_headers=session)
    side = stack.anthropic().messages.with_raw_response.create(
        model="claude-sonnet-4-5", max_tokens=64, system="You are a sub-agent.",
        messages=[{"role": "user", "content": "a task"}], extra_headers=session,
    ).headers["x-ctxlayer-conversation"]
    assert side != chat
    summary = ("This session is being continued from a previous conversation that ran out of "
               "context.")
    after = ask_chat(stack, [{"role": "user", "content": summary},
                             {"role": "assistant", "content": "ok"},
                             {"role": "user", "content": "go on"}], extra_headers=session)
    assert after == chat


def test_claude_codes_compaction_in_its_terminal_goes_on_in_its_chat(stack):
    """In its terminal Claude Code's history after `/compact` (or its automatic compaction)
    opens with its reminders, the summary in a block after them, and the version suffix of
    its billing header (its first system block) changed; a title was asked beside it just
    before. Before: a chat more, and the status bars stayed on the chat before the
    compaction, the bigger one of the session."""
    session = {"x-claude-code-session-id": "sess-terminal"}

    def system(suffix: str, *more: str) -> list[dict]:
        return [{"type": "text", "text": "x-anthropic-billing-header: cc_version=2.1.332."
                 f"{suffix}; cc_entrypoint=cli;"},
                {"type": "text", "text": "You are Claude Code."},
                *({"type": "text", "text": m} for m in more)]

    def ask(suffix: str, messages: list[dict], *more: str) -> str:
        return stack.anthropic().messages.with_raw_response.create(
            model="claude-opus-5-5", max_tokens=64, system=system(suffix, *more),
            messages=messages, extra_headers=session).headers["x-ctxlayer-conversation"]

    reminder = {"type": "text", "text": "<system-reminder>git status: clean</system-reminder>"}
    question = {"type": "text", "text": "What does this project do?"}
    first = [{"role": "user", "content": [reminder, question]}]
    chat = ask("8d3", first)
    ask("8d3", [*first, {"role": "assistant", "content": "It adds numbers."},
                {"role": "user", "content": "And the tests?"}])
    title = ask("4e9", [{"role": "user", "content": "<session>\nAnd subtraction?\n</session>"
                         "\n\nWrite the title."}], "Write the session's title.")
    summary = ("This session is being continued from a previous conversation that ran out of "
               "context. The summary below covers the earlier portion of the conversation.")
    after = ask("cf6", [{"role": "user", "content": [
        reminder, {"type": "text", "text": summary},
        {"type": "text", "text": "And subtraction?"}]}])
    assert after == chat and title != chat
    assert {c for c in listed(stack) if c.startswith(chat)} == {chat}
    live = stack.state.events.live_chat(stack.gateway.caller.workspace)
    assert live is not None and live[0] == chat

def test_metadata_user_id_names_the_conversation(stack):
    one = ask_anthropic(stack, metadata={"user_id": "user_x_session_a"})
    two = ask_anthropic(stack, metadata={"user_id": "user_x_session_b"})
    assert one != two
    assert ask_chat(stack, LATER, metadata={"user_id": "user_x_session_a"}) == one


def test_prompt_cache_key_then_user_name_the_conversation(stack):
    one = ask_openai(stack, prompt_cache_key="chat-1")
    two = ask_openai(stack, prompt_cache_key="chat-2")
    assert one != two
    assert ask_openai(stack, prompt_cache_key="chat-1", user="u") == one  # the key first
    three = ask_openai(stack, user="u")
    assert three not in (one, two) and ask_openai(stack, user="u") == three
    plain = ask_openai(stack)
    assert plain not in (one, two, three)


@pytest.mark.parametrize("hint", [{"user": "dana"}, {"prompt_cache_key": "dana-key"}])
def test_a_new_chat_under_the_same_user_and_system_prompt_is_a_chat_of_its_own(small, hint):
    """On Chat Completions the system prompt is the first message: a new chat of one client
    (one `user` or `prompt_cache_key`, one system prompt, an unrelated question) shares it
    with the client's last chat and nothing else. It was taken for an edit of that chat: it
    took its id, that chat dropped out of the listing and its id answered ctx/why with the
    new chat's empty audit. As on Anthropic's API (its system prompt no message), it is a
    chat of its own, and the first one goes on under its id."""
    client = small.openai()
    system = {"role": "system", "content": f"You are a helpful assistant ({hint})."}

    def ask(messages: list[dict]) -> str:
        raw = client.chat.completions.with_raw_response.create(
            model="standin-small", max_tokens=128, messages=[system, *messages],
            extra_body=hint)
        raw.parse()
        return raw.headers["x-ctxlayer-conversation"]

    first: list[dict] = []
    for k in range(6):
        first.append({"role": "user", "content": prose(f"{hint} first asks {k}", 150)})
        one = ask(first)
        first.append({"role": "assistant", "content": prose(f"{hint} first says {k}", 150)})
    workspace = small.gateway.caller.workspace
    cut = small.state.conversations.why(workspace, one)
    assert cut  # the first chat was compacted: its audit says what
    two = ask([{"role": "user", "content": "A brand new, unrelated question about pasta."}])
    assert two != one
    assert {one, two} <= listed(small)
    assert small.state.conversations.why(workspace, one) == cut
    first.append({"role": "user", "content": "and one more thing"})
    assert ask(first) == one


def test_the_warning_of_an_unknown_model_names_the_window_the_config_gave(small):
    """`[gateway] models` gives `standin-small` 4096 tokens: the warning says that window,
    not the 128k default a model nobody named would get."""
    raw = small.openai().chat.completions.with_raw_response.create(
        model="standin-small", max_tokens=16, messages=[{"role": "user", "content": "hi"}])
    warning = raw.headers["x-ctxlayer-warning"]
    assert "4096 tokens from [gateway] models" in warning and "default" not in warning


def test_the_warning_names_the_config_even_where_it_gives_the_default_window(tmp_path):
    """A user who set `my-azure-gpt4o` to 128,000 tokens read that "the default window of
    128000 tokens" applied: the gateway decided by the number, not by whether it was named."""
    models = {"my-azure-gpt4o": 128_000, "tiny-model": 3_000}
    with fresh_stack(tmp_path, models) as stack:
        said = {}
        for model in ("my-azure-gpt4o", "tiny-model", "nobody-named-it"):
            raw = stack.openai().chat.completions.with_raw_response.create(
                model=model, max_tokens=16, messages=[{"role": "user", "content": "hi"}])
            said[model] = raw.headers["x-ctxlayer-warning"]
    assert "a window of 128000 tokens from [gateway] models" in said["my-azure-gpt4o"]
    assert "default" not in said["my-azure-gpt4o"]
    assert "a window of 3000 tokens from [gateway] models" in said["tiny-model"]
    assert "the default window of 128000 tokens" in said["nobody-named-it"]
