"""ctx/why of a session of ctx/assemble explains its last result, not only what that assembly
newly did: a second assembly that summarizes nothing new sends the same summary, and the
messages it still replaces are `summarized`; a restored one is `restored`; after a restart
the session's kept compaction state says the same. A real State on a temporary folder."""

from __future__ import annotations

import pytest

from ctxlayer import protocol
from ctxlayer.core.errors import ContextError
from ctxlayer.state import Caller, State
from ctxlayer.state.requests import call

MODEL = "gpt-4o"
SID = "s"


def caller_of(state: State) -> Caller:
    return Caller(state, source="session", options=protocol.InitializationOptions(model=MODEL))


def turn(i: int) -> list[dict]:
    return [{"id": f"u{i}", "role": "user", "content": f"Q{i}: why does server/mod{i}.py fail? "
             + "please explain the parser behaviour in detail. " * 8},
            {"id": f"a{i}", "role": "assistant", "content": f"A{i}: look at line {i + 10}. "
             + "The tokenizer state machine resets on newline so we lose context. " * 10}]


async def why(caller: Caller, message_id: str | None = None) -> list[tuple[str, str | None]]:
    out = await call(caller, "ctx/why", protocol.WhyParams(session_id=SID,
                                                           message_id=message_id))
    return [(e.action, e.message_id) for e in out.entries]


async def assemble(caller: Caller) -> list[str | None]:
    out = await call(caller, "ctx/assemble", protocol.AssembleParams(session_id=SID))
    return [m.id for m in out.messages]


async def test_why_explains_the_last_result_after_later_assemblies_and_a_restart(tmp_path):
    state = State(tmp_path / "state")
    caller = caller_of(state)
    try:
        await call(caller, "ctx/session/open", protocol.SessionOpenParams(
            session_id=SID, model=MODEL, budget=4000))
        for i in range(30):
            await call(caller, "ctx/session/append", protocol.SessionAppendParams(
                session_id=SID, messages=turn(i)))
        first = await assemble(caller)
        assert "u5" not in first
        assert await why(caller, "u5") == [("summarized", "u5")]
        second = await assemble(caller)  # nothing new: the same result
        assert second == first
        assert await why(caller, "u5") == [("summarized", "u5")]
        assert ("summarized", "u6") in await why(caller)
        await call(caller, "ctx/restore", protocol.RestoreParams(session_id=SID,
                                                                 message_id="u6"))
        assert await why(caller, "u6") == [("restored", "u6")]
        third = await assemble(caller)
        assert "u6" in third and "u5" not in third
        assert await why(caller, "u6") == [("restored", "u6")]
        assert await why(caller, "u5") == [("summarized", "u5")]
    finally:
        state.close()
    state = State(tmp_path / "state")  # a restart: before any assembly, from the kept state
    caller = caller_of(state)
    try:
        assert await why(caller, "u5") == [("summarized", "u5")]
        assert await why(caller, "u6") == [("restored", "u6")]
        assert await assemble(caller) == third
        assert await why(caller, "u5") == [("summarized", "u5")]
        assert await why(caller, "a29") == []  # held, kept whole
        # an id the session does not hold is said, as a live chat's (it read as "kept whole")
        with pytest.raises(ContextError) as err:
            await why(caller, "zzz")
        assert (err.value.kind, err.value.field) == ("invalid", "messageId")
    finally:
        state.close()
