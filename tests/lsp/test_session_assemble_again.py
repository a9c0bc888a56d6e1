"""ctx/assemble of an unchanged session answers the same every time, and so does a restarted
daemon; its ctx/session/budget is then within the limit.

Before (S2): with nothing sent between, five assemblies of an agent's session summarized one
or two messages more each (ctx:summary:1, :3, :4, :5, :7, each `compacted: true`): the
summary's stop was planned with the tail's older tool outputs outlined and its oldest message
shortened, the trigger read them whole. Killed and started again, the daemon summarized
further still, and its budget said 3827 used of a limit of 3000 where the assembly sent 2977.
The real daemon over stdio, killed (SIGKILL) and started again on the same state folder."""

from __future__ import annotations

import itertools
import json

import pytest
from conftest import WORLD, RawDaemon, hermetic_env, make_repo, result

pytestmark = pytest.mark.e2e
_worlds = itertools.count()
TASK = "Migrate the billing service from MySQL to Postgres; never drop the invoices table."


def turn(t: int) -> list[dict]:
    """One step of an agent: a read, its output, a note, the user's go-ahead."""
    return [
        {"role": "assistant", "content": f"Step {t}: reading file", "id": f"a{t}",
         "toolCalls": [{"id": f"c{t}", "name": "read",
                        "arguments": json.dumps({"path": f"billing/models_{t}.py"})}]},
        {"role": "tool", "toolCallId": f"c{t}", "id": f"t{t}",
         "content": f"billing/models_{t}.py:{t + 10}: class Invoice{t}(Model): ...\n" * 20},
        {"role": "assistant", "content": f"Changed billing/models_{t}.py line {t + 10}.",
         "id": f"b{t}"},
        {"role": "user", "content": f"ok continue with module {t + 1}", "id": f"u{t}"},
    ]


async def opened(daemon: RawDaemon, root) -> None:
    await daemon.initialize(root)
    await result(daemon, "ctx/session/open",
                 {"sessionId": "s", "model": "claude-sonnet-4", "budget": 3000})


@pytest.mark.parametrize("turns", [10, 40])
async def test_an_unchanged_session_assembles_the_same_before_and_after_a_restart(turns):
    base = WORLD / f"assemble-again-{next(_worlds)}"
    env, root = hermetic_env(base), make_repo(base / "repo")
    daemon = await RawDaemon.start(env=env)
    try:
        await opened(daemon, root)
        await result(daemon, "ctx/session/append", {
            "sessionId": "s", "messages": [{"role": "user", "content": TASK, "id": "task"}]})
        for t in range(turns):
            await result(daemon, "ctx/session/append", {"sessionId": "s", "messages": turn(t)})
            first = await result(daemon, "ctx/assemble", {"sessionId": "s"})
        for _ in range(3):
            again = await result(daemon, "ctx/assemble", {"sessionId": "s"})
            assert not again["compacted"], [m["id"] for m in again["messages"]][:4]
            assert again["messages"] == first["messages"]
    finally:
        daemon.proc.kill()
        await daemon.proc.wait()

    daemon = await RawDaemon.start(env=env)
    try:
        await opened(daemon, root)
        budget = await result(daemon, "ctx/session/budget", {"sessionId": "s"})
        assert first["tokens"]["total"] <= budget["used"] <= budget["limit"] == 3000, budget
        after = await result(daemon, "ctx/assemble", {"sessionId": "s"})
        assert not after["compacted"]
        assert after["messages"] == first["messages"]
    finally:
        assert await daemon.close() == 0
