"""Live conversations through the request functions (no face): a real State on a temporary
state folder, the real tokenizer, the real session service and its SQLite database."""

from __future__ import annotations

import asyncio
import random

import msgspec
import pytest

from ctxlayer import protocol
from ctxlayer.core.errors import ContextError
from ctxlayer.state import Caller
from ctxlayer.state.requests import REQUESTS, call, chats, sessions

MODEL = "gpt-4o"
SYSTEM = {"role": "system", "content": "You are a careful coding assistant."}


def words(r: random.Random, n: int) -> str:
    vocab = ("cache", "token", "budget", "parser", "router", "queue", "store", "index")
    return " ".join(r.choice(vocab) for _ in range(n))


def grow(messages: list[dict], r: random.Random, t: int) -> list[dict]:
    return [*messages,
            {"role": "assistant", "id": f"a{t}", "content": f"We decided on x{t}. "
             + words(r, r.randint(40, 160))},
            {"role": "user", "id": f"u{t + 1}", "content": f"Next, question {t + 1}? "
             + words(r, r.randint(10, 60))}]


def params(messages: list[dict], budget: int = 3000, **extra) -> protocol.PrepareParams:
    return protocol.PrepareParams(format="ctxlayer", request={"messages": messages, **extra},
                                  budget=budget)


async def run_chat(caller: Caller, turns: int, budget: int = 3000, seed: int = 1):
    r = random.Random(seed)
    messages = [SYSTEM, {"role": "user", "id": "u0", "content": "Where is the cache built?"}]
    results = []
    for t in range(turns):
        results.append((messages, await chats.prepare(caller, params(messages, budget))))
        messages = grow(messages, r, t)
    return messages, results


async def test_a_chat_is_prepared_turn_by_turn_within_its_budget(caller, state):
    published: list[tuple[str, protocol.Budget]] = []
    state.events.budget_listeners.append(lambda ws, b, who: published.append((ws, b)))
    _, results = await run_chat(caller, 60)
    ids = {res.conversation_id for _, res in results}
    assert len(ids) == 1, "a chat without an id is known by its first messages"
    cid = ids.pop()
    assert all(res.session_id == f"chat-{cid}" for _, res in results)
    for sent, res in results:
        assert res.tokens <= res.budget == 3000
        out = res.request["messages"]
        assert out[0] == SYSTEM
        assert out[-1] == sent[-1], "the newest question goes out as the client wrote it"
    steps = [res for _, res in results if res.notice]
    assert steps and all(res.compacted for res in steps)
    assert all(res.notice.startswith("ctxlayer: summarized ") for res in steps)
    quiet = [(a, b) for (_, a), (_, b) in zip(results, results[1:], strict=False)
             if not b.notice]
    assert quiet and all(b.cache_reuse_tokens == a.tokens - 3 for a, b in quiet)
    # the editors hear of every turn, as a live chat's budget
    assert len(published) == 60
    assert {(b.conversation_id, b.source) for _, b in published} == {(cid, "prepare")}
    listed = await chats.conversations(caller, protocol.Empty())
    assert [c.conversation_id for c in listed.conversations] == [cid]
    assert listed.conversations[0].dropped > 0


async def test_why_restore_and_the_session_audit(caller, state):
    sent, results = await run_chat(caller, 60)
    last = results[-1][1]
    why = await call(caller, "ctx/why", protocol.WhyParams(conversation_id=last.conversation_id))
    gone = next(e for e in why.entries if e.action == "summarized" and e.message_id == "u1")
    one = await call(caller, "ctx/why", protocol.WhyParams(session_id=last.session_id,
                                                     message_id="u1"))
    assert one.entries == [gone]
    await call(caller, "ctx/restore", protocol.RestoreParams(conversation_id=last.conversation_id,
                                                       message_id="u1"))
    again = await chats.prepare(caller, params(sent))
    original = next(m for m in sent if m.get("id") == "u1")
    assert original in again.request["messages"]
    # (the restored message may take the room of others: a step can come with it)
    assert again.notice.startswith("ctxlayer: ")
    assert again.notice.endswith("restored 1 message whole")
    why = await call(caller, "ctx/why", protocol.WhyParams(conversation_id=last.conversation_id,
                                                     message_id="u1"))
    assert [e.action for e in why.entries] == ["restored"]  # shown whole again
    # the session keeps what the turns did
    log = sessions.audit(caller, protocol.AuditParams(session_id=last.session_id))
    actions = {e.action for e in log.entries}
    assert {"summarized", "restored"} <= actions
    assert any(e.message_id == "u1" for e in log.entries)


async def test_errors_name_the_field(caller):
    _, results = await run_chat(caller, 3)
    cid = results[-1][1].conversation_id
    with pytest.raises(ContextError) as err:
        await call(caller, "ctx/restore", protocol.RestoreParams(conversation_id=cid,
                                                           message_id="nope"))
    assert err.value.field == "messageId"
    with pytest.raises(ContextError) as err:
        await call(caller, "ctx/why", protocol.WhyParams(conversation_id="unknown"))
    assert (err.value.kind, err.value.field) == ("unknown_session", "conversationId")
    with pytest.raises(ContextError) as err:
        await chats.prepare(caller, params([SYSTEM, {"role": "user", "content": "hi",
                                                     "colour": "red"}]))
    assert err.value.field == "request.messages[1].colour"
    with pytest.raises(ContextError) as err:
        await chats.prepare(caller, params([SYSTEM], budget=0))
    assert err.value.field == "budget"


async def test_usage_feeds_the_sessions_calibration(caller, state):
    _, results = await run_chat(caller, 5, budget=100_000)
    res = results[-1][1]
    await state.conversations.settled()  # the session hears of each turn in the background
    # ctx/session/reportUsage works with the result's session id, against the last turn
    bias = await call(caller, "ctx/session/reportUsage", protocol.ReportUsageParams(
        session_id=res.session_id, prompt_tokens=res.tokens))
    assert bias.bias == 1.0
    bias = await call(caller, "ctx/session/reportUsage", protocol.ReportUsageParams(
        session_id=res.session_id, prompt_tokens=res.tokens * 3))
    assert bias.bias == 1.5  # the median of 1 and 3 clamped to 2: one outlier cannot run away
    convs = state.conversations
    budget = convs.report_usage(res.conversation_id, {
        "prompt_tokens": res.tokens * 2, "prompt_tokens_details": {"cached_tokens": 1024}})
    # the provider's count goes to the calibration; the chat's figures stay ours, which its
    # byLayer adds up to (they were the provider's count: byLayer did not add up)
    assert (budget.used, budget.cached_tokens) == (res.tokens, 1024)
    assert budget.by_layer.system + budget.by_layer.history == budget.used
    assert convs.of_session(caller.workspace, res.session_id).bias == 2.0
    assert (budget.conversation_id, budget.source, budget.session_id) == (
        res.conversation_id, "prepare", res.session_id)
    anthropic = convs.report_usage(res.conversation_id, {
        "input_tokens": 10, "cache_read_input_tokens": 500, "cache_creation_input_tokens": 7})
    assert (anthropic.used, anthropic.cached_tokens) == (res.tokens, 500)
    assert convs.report_usage(res.conversation_id, {"weird": 1}) is None
    assert convs.report_usage("unknown", {"prompt_tokens": 5}) is None
    # billed twice what we counted: the next turn fits into a budget that leaves room for it
    nxt = await chats.prepare(caller, params(results[-1][0], budget=100_000))
    assert nxt.budget < 100_000


async def test_a_usage_report_is_not_undone_by_the_turns_older_note_of_its_prompt(
        caller, state, monkeypatch):
    """A turn tells the session its prompt in the background and takes the session's bias
    back. When the provider's usage report (the gateway's report of a refused prompt) lands
    while that note is under way, the note's bias is the older one: it must not replace the
    report's (it did, and the request fitted again to the report's bias came out unchanged)."""
    import threading

    _, results = await run_chat(caller, 3, budget=100_000)
    await state.conversations.settled()
    read, reported = threading.Event(), threading.Event()
    noted = state.sessions.note_prompt

    def note_prompt(*args):
        bias = noted(*args)  # the session's bias before the report
        read.set()
        reported.wait(10)
        return bias

    monkeypatch.setattr(state.sessions, "note_prompt", note_prompt)
    messages = grow(results[-1][0], random.Random(9), 9)
    res = await chats.prepare(caller, params(messages, budget=100_000))  # its note under way
    assert await asyncio.to_thread(read.wait, 10)
    await state.work(state.conversations.report_usage, res.conversation_id,
                     {"prompt_tokens": res.tokens * 2})
    reported.set()
    await state.conversations.settled()
    bias = noted(caller.workspace, res.session_id, res.tokens)
    assert bias > 1.5
    nxt = await chats.prepare(caller, params(messages, budget=100_000))
    assert nxt.budget == int(100_000 / bias)


async def test_one_conversations_turns_apply_in_arrival_order(caller):
    r = random.Random(4)
    first = [SYSTEM, {"role": "user", "id": "u0", "content": "hello there"}]
    second = grow(first, r, 0)
    third = grow(second, r, 1)
    a, b, c = await asyncio.gather(*(chats.prepare(caller, params(m, conversation_id=None))
                                     for m in (first, second, third)))
    assert a.cache_reuse_tokens == 0
    assert b.cache_reuse_tokens == a.tokens - 3
    assert c.cache_reuse_tokens == b.tokens - 3


async def test_tools_and_max_tokens_share_the_window(caller):
    tools = [{"type": "function", "function": {"name": "read_file", "description": "Read "
              + "a file from the workspace. " * 50, "parameters": {"type": "object"}}}]
    messages = [SYSTEM, {"role": "user", "content": "hi"}]
    plain = await chats.prepare(caller, params(messages, budget=10_000))
    with_tools = await chats.prepare(caller, params(messages, budget=10_000, tools=tools))
    assert with_tools.tokens > plain.tokens + 250
    assert with_tools.request["tools"] == tools
    caller.options = msgspec.structs.replace(caller.options, context_window=50_000)
    p = protocol.PrepareParams(format="ctxlayer", request={"messages": messages,
                                                           "max_tokens": 8000})
    res = await chats.prepare(caller, p)
    assert res.budget == 42_000


def test_the_requests_table_serves_them():
    assert REQUESTS["ctx/prepare"].fn is chats.prepare
    assert REQUESTS["ctx/why"].fn is chats.why
    assert REQUESTS["ctx/restore"].fn is chats.restore
    assert REQUESTS["ctx/conversations"].fn is chats.conversations


def test_a_conversation_is_known_by_its_first_messages_text_only():
    from ctxlayer.state.chatcodec import identity_text

    first = {"system": [{"type": "text", "text": "Be brief.", "cache_control": {"type": "x"}}],
             "messages": [{"role": "user", "content": [
                 {"type": "text", "text": "Fix the bug", "cache_control": {"type": "x"}}]}]}
    later = {"system": [{"type": "text", "text": "Be brief."}],
             "messages": [{"role": "user", "content": [{"type": "text", "text": "Fix the bug"}]},
                          {"role": "assistant", "content": "Done."},
                          {"role": "user", "content": "Thanks"}]}
    other = {"system": "Be brief.", "messages": [{"role": "user", "content": "Another bug"}]}
    assert identity_text("anthropic", first) == identity_text("anthropic", later)
    assert identity_text("anthropic", first) != identity_text("anthropic", other)
    assert identity_text("openai", later) != identity_text("anthropic", later)


# --- Claude Code: system messages between turns, the window it asked for ---------------------

REMINDER = {"role": "system", "content": [{"type": "text", "text": "Plan mode: edit nothing."}]}


def claude_code_chat(r: random.Random, turns: int) -> list[dict]:
    msgs: list[dict] = [{"role": "user", "content": "Where is the cache built?"}, REMINDER]
    for t in range(turns):
        msgs += [{"role": "assistant", "content": f"Answer {t}: " + words(r, 150)},
                 {"role": "user", "content": f"Question {t + 1}: " + words(r, 30)}]
    return msgs


def plain(value):
    if isinstance(value, dict):
        return {k: plain(v) for k, v in value.items() if k != "cache_control"}
    if isinstance(value, list):
        return [plain(v) for v in value]
    return value


async def test_prepare_and_trim_keep_system_messages_between_turns(caller):
    from ctxlayer.state.requests import call

    r = random.Random(3)
    msgs = claude_code_chat(r, 30)
    request = {"model": "claude-opus-4-8", "max_tokens": 500, "system": "You are Claude Code.",
               "messages": msgs}

    async def go():
        prepared = await chats.prepare(caller, protocol.PrepareParams(
            format="anthropic", request=request, budget=1500))
        without = await chats.prepare(caller, protocol.PrepareParams(
            format="anthropic", request={**request, "messages": [msgs[0], *msgs[2:]]},
            conversation_id="without"))
        alone = await chats.prepare(caller, protocol.PrepareParams(
            format="anthropic", request={**request, "messages": msgs[:2]},
            conversation_id="alone"))
        first = await chats.prepare(caller, protocol.PrepareParams(
            format="anthropic", request={**request, "messages": msgs[:1]},
            conversation_id="first"))
        trimmed = await call(caller, "ctx/trim", protocol.TrimParams(
            format="anthropic", messages=msgs, system="You are Claude Code.", budget=1500,
            model="claude-opus-4-8"))
        return prepared, without, alone, first, trimmed

    prepared, without, alone, first, trimmed = await go()
    assert prepared.compacted
    kept = prepared.request["messages"]
    assert [plain(m) for m in kept if m["role"] == "system"] == [REMINDER]
    assert kept.index(next(m for m in kept if m["role"] == "system")) >= 1
    assert alone.tokens > first.tokens  # counted
    assert without.conversation_id != prepared.conversation_id
    assert [plain(m) for m in trimmed.messages if m["role"] == "system"] == [REMINDER]


async def test_the_window_given_sets_the_budget(caller):
    request = {"model": "claude-sonnet-4-5", "max_tokens": 1000,
               "messages": [{"role": "user", "content": "hi"}]}

    async def go(window):
        return await chats.prepare(caller, protocol.PrepareParams(
            format="anthropic", request=request, context_window=window))

    assert (await go(10_000)).budget == 9000
    with pytest.raises(ContextError) as err:
        await go(0)
    assert err.value.field == "contextWindow"


async def test_a_turn_takes_over_what_it_shares_with_the_last_one(caller, state):
    """The next request of a live chat is not read again where it repeats the last one: its
    messages are the very objects the last turn decoded (a 5 MB Claude Code history was read
    whole on every turn), and the turn comes out as a cold read of the same request would."""
    r = random.Random(3)
    messages = [SYSTEM, {"role": "user", "content": "Where is the cache built?"}]
    for t in range(6):
        messages = grow(messages, r, t)
    first = await chats.prepare(caller, protocol.PrepareParams(
        format="openai", request={"messages": messages}, budget=3000))
    conv = state.conversations._get(caller.workspace, first.conversation_id)
    before = conv.decoded.messages
    more = grow(messages, r, 6)
    second = await chats.prepare(caller, protocol.PrepareParams(
        format="openai", request={"messages": more}, budget=3000))
    assert second.conversation_id == first.conversation_id
    now = conv.decoded.messages
    assert len(now) == len(before) + 2
    assert all(a is b for a, b in zip(before, now, strict=False)), "the shared part is taken over"
    cold = await chats.prepare(caller, protocol.PrepareParams(
        format="openai", request={"messages": more}, budget=3000, conversation_id="cold"))
    assert cold.request == second.request and cold.tokens == second.tokens


async def test_a_live_chats_calibration_outlives_a_restart(caller, state, tmp_path):
    """The provider's usage of a live chat is written on the keeping thread (the answer does not
    wait for the database); closing the state lands it first, and a new state reads it back."""
    from ctxlayer.state import State

    _, results = await run_chat(caller, 5, budget=100_000)
    res = results[-1][1]
    await state.conversations.settled()
    for _ in range(3):
        state.conversations.report_usage(res.conversation_id, {"prompt_tokens": res.tokens * 2})
    state.close()
    again = State(tmp_path / "state")
    try:
        live = again.sessions.open(caller.workspace, protocol.SessionOpenParams(
            session_id=res.session_id))
        assert again.sessions.note_prompt(caller.workspace, res.session_id, 1) == 2.0, live
    finally:
        again.close()


@pytest.mark.parametrize("other_first", [False, True])
async def test_after_a_restart_a_chat_that_went_on_under_a_fork_finds_its_window(tmp_path,
                                                                               other_first):
    """One client session, two chats (a Claude Code chat and its sub-agent's): the one that
    came first has the family's id, the other a fork's. After a restart nothing of the family
    is in memory, and the ids go out again in the order the chats come back: the chat that went
    on under the fork's id starts from its own kept window (the one its messages agree with
    the furthest), not from the other chat's, nor afresh, whichever comes back first."""
    from ctxlayer.state import State

    def caller_of(st):
        return Caller(st, source="prepare", options=protocol.InitializationOptions(model=MODEL))

    def chat(seed: int, opening: str, turns: int) -> list[list[dict]]:
        r = random.Random(seed)  # no system message: the chats share no message
        messages = [{"role": "user", "id": "u0", "content": opening}]
        out = []
        for t in range(turns):
            out.append(messages)
            messages = grow(messages, r, t)
        return out

    def ask(st, messages):
        return chats.prepare(caller_of(st), protocol.PrepareParams(
            format="ctxlayer", request={"messages": messages}, budget=3000,
            client_session_id="sess"))

    lead = chat(11, "Where is the cache built?", 40)
    worker = chat(12, "Count the cache's entries.", 4)
    other = chat(13, "List the cache's files.", 4)
    st = State(tmp_path / "state")
    try:
        w = await ask(st, worker[0])  # the family's id
        o = await ask(st, other[0])  # a fork's, and the lead chat another fork's
        a = [await ask(st, lead[t]) for t in range(39)]
        assert len({a[-1].conversation_id, w.conversation_id, o.conversation_id}) == 3
        assert a[-1].compacted and a[-1].request["messages"][0]["content"].startswith(
            "[Summary of")
        await st.conversations.settled()
    finally:
        st.close()
    again = State(tmp_path / "state")
    try:
        if other_first:
            await ask(again, worker[1])
        after = await ask(again, lead[39])
    finally:
        again.close()
    before = a[-1].request["messages"]
    assert after.request["messages"][0] == before[0]  # the same summary chunk
    assert after.cache_reuse_tokens > 0


async def test_a_sub_agent_does_not_take_the_status_bar_from_its_chat(caller, state):
    """The editors' status bars show the workspace's live chat. A Claude Code run's sub-agent
    (a chat of its own under the run's session id) or its request on a small model goes to a
    conversation of its own, but the bar stays on the chat that started it while that chat is
    the bigger; another client's chat takes it as before."""
    published: list[protocol.Budget] = []
    state.events.budget_listeners.append(lambda ws, b, who: published.append(b))

    def ask(messages, session="run", model=MODEL):
        return chats.prepare(caller, protocol.PrepareParams(
            format="ctxlayer", request={"model": model, "messages": messages}, budget=100_000,
            client_session_id=session))

    r = random.Random(5)
    lead = [{"role": "user", "id": "u0", "content": "Where is the cache built?"}]
    for t in range(6):
        lead = grow(lead, r, t)
    main = await ask(lead)
    sub = await ask([{"role": "user", "content": "Count the cache's entries."}])
    side = await ask([{"role": "user", "content": "A title for this chat."}],
                     model="gpt-4o-mini")
    assert len({main.conversation_id, sub.conversation_id, side.conversation_id}) == 3
    assert [b.live for b in published] == [True, False, False]
    assert state.events.live_chat(caller.workspace)[0] == main.conversation_id
    # the chat's next turn, then a chat of another run: that one is live
    await ask(grow(lead, r, 6))
    other = await ask([{"role": "user", "content": "Another run's question."}], session="b")
    assert published[-1].live and published[-1].conversation_id == other.conversation_id


async def test_a_new_chat_without_a_run_id_takes_the_status_bar_however_small(caller, state):
    """Chats without a run's session id, or that share only OpenAI's `user` (a person, across
    chats), are not one run: a new small chat takes the bar from a bigger one."""
    published: list[protocol.Budget] = []
    state.events.budget_listeners.append(lambda ws, b, who: published.append(b))
    r = random.Random(6)
    big = [SYSTEM, {"role": "user", "content": "Where is the cache built?"}]
    for t in range(6):
        big = grow(big, r, t)
    big = [{k: v for k, v in m.items() if k != "id"} for m in big]

    def ask(messages, extra):
        return chats.prepare(caller, protocol.PrepareParams(
            format="openai", request={"model": MODEL, "messages": messages, **extra},
            budget=100_000))

    for extra in ({}, {"user": "someone"}):
        await ask(big, extra)
        # another chat: it shares no message with the big one
        small = await ask([{"role": "system", "content": "You review pull requests."},
                           {"role": "user", "content": "Is the queue bounded?"}], extra)
        assert published[-1].live and published[-1].conversation_id == small.conversation_id


async def test_automatic_caching_reports_the_breakpoint_the_provider_places(caller):
    """With a request-level cache_control (Anthropic's automatic caching) the gateway adds no
    breakpoint of its own, and cacheBreakpoints said []: the provider places one on the
    request's last cacheable block, the last message's."""
    turns = [{"role": "user", "content": "Where is the cache built?"},
             {"role": "assistant", "content": "In the store."},
             {"role": "user", "content": "And the index?"}]
    request = {"model": "claude-sonnet-4-5", "max_tokens": 64, "system": "You help.",
               "messages": turns, "cache_control": {"type": "ephemeral"}}
    result = await chats.prepare(caller, protocol.PrepareParams(
        format="anthropic", request=request, budget=3000))
    sent = result.request["messages"]
    assert not any("cache_control" in b for m in sent if isinstance(m["content"], list)
                   for b in m["content"])
    assert result.cache_breakpoints == [len(sent) - 1]
