"""A session row with no budget stored (NULL: a row another version or a hand wrote) answers
with the model's default budget. The state's default was `model_info(m).default_budget()`,
a call of the int a property returns: a TypeError, an internal error to the client; and
ctx/assemble and ctx/session/configure with a model compared the row's None with the
model's window (TypeError, -32603)."""

from __future__ import annotations

import sqlite3

import pytest
from conftest import RawDaemon, hermetic_env, make_repo

from ctxlayer.store import DB_NAME
from ctxlayer.tokenizers import model_info

pytestmark = pytest.mark.e2e


async def test_a_session_stored_without_a_budget_gets_the_model_default(tmp_path):
    root = make_repo(tmp_path / "repo")
    env = hermetic_env(tmp_path / "world")
    daemon = await RawDaemon.start(env=env)
    try:
        await daemon.initialize(root)
        opened = await daemon.request("o1", "ctx/session/open",
                                      {"sessionId": "nulled", "model": "gpt-4.1"})
        assert opened["result"]["budget"] == model_info("gpt-4.1").default_budget
    finally:
        assert await daemon.close() == 0
    db = sqlite3.connect(tmp_path / "world" / "state" / DB_NAME)
    with db:
        changed = db.execute("UPDATE sessions SET budget = NULL WHERE session_id = 'nulled'")
        assert changed.rowcount == 1
    db.close()

    daemon = await RawDaemon.start(env=env)
    try:
        await daemon.initialize(root)
        budget = await daemon.request("b", "ctx/session/budget", {"sessionId": "nulled"})
        assert budget.get("result", {}).get("limit") == model_info("gpt-4.1").default_budget, (
            budget)
        again = await daemon.request("o2", "ctx/session/open", {"sessionId": "nulled"})
        assert again["result"]["budget"] == model_info("gpt-4.1").default_budget, again
        # the budget checked against the window: the row's None was compared, -32603
        assembled = await daemon.request("a", "ctx/assemble", {"sessionId": "nulled"})
        assert assembled.get("result", {}).get("budget") == \
            model_info("gpt-4.1").default_budget, assembled
        configured = await daemon.request("c", "ctx/session/configure",
                                          {"sessionId": "nulled", "model": "gpt-4.1"})
        assert "result" in configured, configured
    finally:
        assert await daemon.close() == 0
