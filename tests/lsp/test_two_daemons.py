"""Two editors on one workspace, each with a daemon of its own over the same state folder, share
the workspace's session (Neovim names it by the folder): what one sets is in the other's next
answer. The real daemons over stdio."""

from __future__ import annotations

import itertools

import pytest
from conftest import WORLD, RawDaemon, hermetic_env, make_repo

pytestmark = pytest.mark.e2e
_worlds = itertools.count()
RULE = "Never edit the generated files under gen/."


async def test_a_rule_and_a_mode_one_daemon_sets_are_in_the_others_next_assembly():
    world = WORLD / f"two-daemons-{next(_worlds)}"
    env = hermetic_env(world)
    root = make_repo(world / "repo")
    a, b = await RawDaemon.start(env=env), await RawDaemon.start(env=env)
    try:
        for daemon in (a, b):
            await daemon.initialize(root)
            out = await daemon.request(1, "ctx/session/open", {"sessionId": "shared"})
            assert "result" in out, out
        await a.request(2, "ctx/session/append", {"sessionId": "shared", "messages": [
            {"role": "user", "content": "Where do the handlers live?"}]})
        first = (await b.request(2, "ctx/assemble", {"sessionId": "shared"}))["result"]
        assert RULE not in str(first["messages"])

        out = await a.request(3, "ctx/session/addRule", {"sessionId": "shared", "rule": {
            "text": RULE, "weight": 5}})
        rule_id = out["result"]["ruleId"]
        await a.request(4, "ctx/session/setMode", {"sessionId": "shared", "mode": "short"})
        then = (await b.request(3, "ctx/assemble", {"sessionId": "shared"}))["result"]
        assert RULE in str(then["messages"]), then["messages"]
        listed = (await b.request(4, "ctx/session/list", {}))["result"]["sessions"]
        assert [s["mode"] for s in listed if s["sessionId"] == "shared"] == ["short"]

        # the other daemon removes it: gone from the first one's next assembly
        out = await b.request(5, "ctx/session/removeRule", {"sessionId": "shared",
                                                            "ruleId": rule_id})
        assert "result" in out, out
        last = (await a.request(5, "ctx/assemble", {"sessionId": "shared"}))["result"]
        assert RULE not in str(last["messages"])
    finally:
        await a.close()
        await b.close()
