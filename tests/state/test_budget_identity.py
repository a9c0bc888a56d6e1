"""The budgets the editors follow (ctx/budgetChanged): the live chat is the one that last sent
a request, and a file event re-measures chats without making another one live. A real State on
a temporary folder, the real tokenizer and session service; the budgets as a listener hears
them (what the JSON-RPC face forwards)."""

from __future__ import annotations

import pytest

from ctxlayer import protocol
from ctxlayer.state import Caller
from ctxlayer.state.requests import call, chats, sessions

MODEL = "gpt-4o"


@pytest.fixture
def heard(state):
    out: list[protocol.Budget] = []
    state.events.budget_listeners.append(lambda ws, b, who: out.append(b))
    return out


def history(n: int) -> list[dict]:
    return [{"role": "user" if k % 2 == 0 else "assistant", "id": f"m{k}",
             "content": f"Turn {k}: the invoice module rounds half up, we said. " * 12}
            for k in range(n)]


def segment(text: str) -> protocol.WorkspaceSegment:
    return protocol.WorkspaceSegment(text=text, tokens=0, hash=str(hash(text)), version=2,
                                     updated_at="", parts=[])


async def open_chat(caller: Caller, session_id: str, n: int, budget: int = 3000) -> None:
    await call(caller, "ctx/session/open", protocol.SessionOpenParams(
        session_id=session_id, model=MODEL, budget=budget))
    await call(caller, "ctx/session/append", protocol.SessionAppendParams(
        session_id=session_id, messages=history(n)))


async def test_an_assembly_makes_its_chat_live_and_a_file_event_keeps_it(caller, heard):
    await open_chat(caller, "workspace", 0)
    await open_chat(caller, "chat", 30)
    heard.clear()
    result = await call(caller, "ctx/assemble", protocol.AssembleParams(session_id="chat", budget=3000))
    [live] = heard
    assert live.live and live.source == "session" and live.session_id == "chat"
    assert live.used == result.tokens.total and live.limit == 3000
    assert live.compacted and live.notice == result.notice
    assert live.notice.startswith("ctxlayer: summarized older turns")
    assert live.window == 128_000  # gpt-4o's window, the budget being the chat's own

    heard.clear()
    await sessions.on_segment_changed(caller, segment("A new file, notes.md. " * 40))
    by_session = {b.session_id: b for b in heard}
    assert set(by_session) == {"workspace", "chat"}
    assert by_session["chat"].live and by_session["chat"].source == "session"
    assert by_session["workspace"].live is False  # re-measured, and not the chat in front
    assert by_session["chat"].compacted is None  # a re-measure is no new compaction


async def test_a_file_event_leaves_a_prepared_chat_live_and_unmeasured(caller, state, heard):
    await open_chat(caller, "workspace", 0)
    messages = [{"role": "system", "content": "You are careful."}, *history(40)]
    result = await chats.prepare(caller, protocol.PrepareParams(
        format="ctxlayer", request={"messages": messages}, budget=3000, context_window=4096))
    [live] = [b for b in heard if b.conversation_id]
    assert live.live and live.source == "prepare" and live.conversation_id == \
        result.conversation_id
    assert live.compacted == result.compacted and live.notice == result.notice
    assert live.window == 4096 and live.limit == 3000 and live.percent == pytest.approx(
        round(100 * result.tokens / 3000, 1))

    heard.clear()
    await sessions.on_segment_changed(caller, segment("Another file. " * 40))
    assert [b.session_id for b in heard] == ["workspace"]  # the chat's session is not re-published
    assert heard[0].live is False
    assert state.events.live_chat(caller.workspace)[0] == result.conversation_id


async def test_a_session_change_of_another_chat_does_not_take_the_status_bar(caller, heard):
    await open_chat(caller, "a", 10)
    await open_chat(caller, "b", 10)
    await call(caller, "ctx/assemble", protocol.AssembleParams(session_id="a", budget=3000))
    heard.clear()
    await call(caller, "ctx/session/append", protocol.SessionAppendParams(session_id="b",
                                                               messages=history(2)))
    assert [b.live for b in heard] == [False]
    await call(caller, "ctx/assemble", protocol.AssembleParams(session_id="b", budget=3000))
    assert heard[-1].live and heard[-1].session_id == "b"


async def test_the_page_of_a_live_chat_shows_what_its_last_request_sent(caller):
    messages = [{"role": "system", "content": "You are careful."}, *history(40),
                {"role": "user", "content": "Which rounding rule did we settle on, finally?"}]
    result = await chats.prepare(caller, protocol.PrepareParams(
        format="ctxlayer", request={"messages": messages}, budget=3000, context_window=4096))
    html = (await call(caller, "ctx/inspect", protocol.InspectParams(
        session_id=result.session_id))).html
    assert f"prepare chat {result.conversation_id}" in html
    assert "Which rounding rule did we settle on, finally?" in html
    assert "history 0" not in html  # the chat's own history, not its empty session's
    assert "4,096" in html or "4096" in html  # the window the chat was given
