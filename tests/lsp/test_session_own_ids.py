"""The ids a session gives rules and working items sent without one never take a client's.

Before: a rule added as `rule-1` by the client, then one without an id, which the session
named `rule-{its position}` = `rule-1` too. The store refused it (-32005 "UNIQUE constraint
failed") after memory had replaced the client's rule with it; the client had been told the
request failed, the assemblies of that daemon went on without the client's rule, and a
restarted daemon brought it back: memory and the state folder disagreed. Items alike
(`item-1`). The real daemon over stdio, restarted on the same state folder."""

from __future__ import annotations

import itertools

import pytest
from conftest import WORLD, RawDaemon, hermetic_env, make_repo, result

pytestmark = pytest.mark.e2e
_worlds = itertools.count()

RULES = [{"id": "rule-1", "text": "Never delete user data", "weight": 5},
         {"text": "Always write tests", "weight": 1},
         {"text": "Always use type hints", "weight": 1}]
ITEMS = [{"id": "item-1", "kind": "note", "content": "client note ONE"},
         {"kind": "note", "content": "own note TWO"},
         {"kind": "note", "content": "own note THREE"}]



async def zones(daemon: RawDaemon) -> tuple[str, str]:
    """The rules and working-notes messages of an assembly of session s."""
    out = await result(daemon, "ctx/assemble", {"sessionId": "s"})
    text = {m.get("id"): m["content"] for m in out["messages"]}
    return text.get("ctx:rules", ""), text.get("ctx:working", "")


async def test_own_ids_pass_over_the_ids_a_client_chose_and_a_restart_agrees():
    base = WORLD / f"own-ids-{next(_worlds)}"
    env, root = hermetic_env(base), make_repo(base / "repo")
    daemon = await RawDaemon.start(env=env)
    try:
        await daemon.initialize(root)
        await result(daemon, "ctx/session/open", {"sessionId": "s", "budget": 20000})
        await result(daemon, "ctx/session/append", {
            "sessionId": "s", "messages": [{"role": "user", "content": "hi"}]})
        rule_ids = [(await result(daemon, "ctx/session/addRule",
                                  {"sessionId": "s", "rule": r}))["ruleId"] for r in RULES]
        item_ids = [(await result(daemon, "ctx/session/addItem",
                                  {"sessionId": "s", "item": it}))["itemId"] for it in ITEMS]
        assert rule_ids[0] == "rule-1" and len(set(rule_ids)) == 3, rule_ids
        assert item_ids[0] == "item-1" and len(set(item_ids)) == 3, item_ids
        before = await zones(daemon)
    finally:
        assert await daemon.close() == 0
    for rule in RULES:
        assert rule["text"] in before[0], before[0]
    for item, item_id in zip(ITEMS, item_ids, strict=True):
        assert f"({item_id})\n{item['content']}" in before[1], before[1]

    daemon = await RawDaemon.start(env=env)
    try:
        await daemon.initialize(root)
        await result(daemon, "ctx/session/open", {"sessionId": "s"})
        assert await zones(daemon) == before  # what the state folder holds is what was shown
    finally:
        assert await daemon.close() == 0
