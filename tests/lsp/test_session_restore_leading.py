"""ctx/restore of a turn no assembly can show is refused with the reason, over real stdio: a
chat that opens with the assistant's greeting has it dropped from every window (the history
must start with a user turn). Restoring it answered {}, audited "restored on request: shown
whole and pinned", and the next assembly dropped it again. Once a summary stands before it,
it is shown after the summary: that restore is taken."""

from __future__ import annotations

import pytest
from conftest import ask, result

pytestmark = pytest.mark.e2e

GREETING = {"role": "assistant", "content": "Hi! The repo uses Postgres 16.", "id": "greet"}


async def test_a_leading_assistant_message_is_not_restored_and_says_why(own_daemon):
    await result(own_daemon, "ctx/session/open", {"sessionId": "s", "budget": 50000})
    await result(own_daemon, "ctx/session/append", {"sessionId": "s", "messages": [
        GREETING, {"role": "user", "content": "which database do we use?", "id": "q"}]})
    first = await result(own_daemon, "ctx/assemble", {"sessionId": "s"})
    assert [e["messageId"] for e in first["dropped"]] == ["greet"]
    got = await ask(own_daemon, "ctx/restore", {"sessionId": "s", "messageId": "greet"})
    assert got["error"]["code"] == -32602, got
    assert got["error"]["data"]["field"] == "messageId"
    assert "first user message" in got["error"]["message"]
    audit = await result(own_daemon, "ctx/session/audit", {"sessionId": "s", "limit": 20})
    assert "restored" not in [e["action"] for e in audit["entries"]]
    # the user's own message is still restored as before
    assert "result" in await ask(own_daemon, "ctx/restore", {"sessionId": "s", "messageId": "q"})


async def test_after_a_summary_the_greeting_is_restored_and_shown(own_daemon):
    await result(own_daemon, "ctx/session/open", {"sessionId": "s", "budget": 3000})
    turns = [GREETING]
    for k in range(12):
        turns += [{"role": "user", "content": f"question {k} " + "about the schema " * 40,
                   "id": f"u{k}"},
                  {"role": "assistant", "content": f"answer {k} " + "it is fine " * 40,
                   "id": f"a{k}"}]
    await result(own_daemon, "ctx/session/append", {"sessionId": "s", "messages": turns})
    first = await result(own_daemon, "ctx/assemble", {"sessionId": "s"})
    assert any(m.get("kind") == "summary" for m in first["messages"]), "never summarized"
    await result(own_daemon, "ctx/restore", {"sessionId": "s", "messageId": "greet"})
    again = await result(own_daemon, "ctx/assemble", {"sessionId": "s"})
    assert "greet" in [m.get("id") for m in again["messages"]]
