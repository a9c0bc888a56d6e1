"""An Anthropic system block appended to a session goes out again as it came: its
cache_control (the client's breakpoint, its ttl) and other fields with it, also after a
restart; where it cannot (another format, a fifth breakpoint), the assembly's result says so.
Over real stdio.

Before (probe 72, s10): the session kept a system block's text only. The append said
nothing, ctx/assemble sent `system` without any cache_control (the "1h" ttl gone) with
dropped [] truncated [] notice None; only ctx/session/audit said "a session keeps a system
block's text: its cache_control not kept". And before that (probe 68) a block's
`"citations": null` was said to be lost, though null carries nothing.
"""

from __future__ import annotations

import itertools

import pytest
from conftest import WORLD, RawDaemon, hermetic_env, make_repo, result

pytestmark = pytest.mark.e2e
_worlds = itertools.count()

REVIEWER = {"type": "text", "text": "You are a careful reviewer. " * 300,
            "cache_control": {"type": "ephemeral", "ttl": "1h"}}
TODAY = {"type": "text", "text": "Today is Monday.", "citations": None}
HELLO = {"role": "user", "content": [{"type": "text", "text": "hello",
                                      "cache_control": {"type": "ephemeral"}}]}


async def _open_and_append(daemon: RawDaemon, messages: list[dict]) -> dict:
    await result(daemon, "ctx/session/open", {"sessionId": "s", "model": "claude-sonnet-4-5"})
    return await result(daemon, "ctx/session/append", {
        "sessionId": "s", "format": "anthropic", "system": [REVIEWER, TODAY],
        "messages": messages})


async def test_a_system_blocks_cache_control_goes_out_again_also_after_a_restart():
    base = WORLD / f"system-blocks-{next(_worlds)}"
    env, root = hermetic_env(base), make_repo(base / "repo")
    daemon = await RawDaemon.start(env=env)
    try:
        await daemon.initialize(root)
        await _open_and_append(daemon, [HELLO])
        before = await result(daemon, "ctx/assemble", {"sessionId": "s", "format": "anthropic"})
        audit = (await result(daemon, "ctx/session/audit", {"sessionId": "s"}))["entries"]
    finally:
        assert await daemon.close() == 0
    # the user's blocks follow the session's layers (history, as the session has them), whole
    assert before["system"][-2:] == [REVIEWER, TODAY], before["system"]
    assert before["messages"] == [HELLO]
    assert before["truncated"] == [] and before["dropped"] == [], before
    assert not [e for e in audit if "system block" in e["reason"]], audit
    daemon = await RawDaemon.start(env=env)
    try:
        await daemon.initialize(root)
        after = await result(daemon, "ctx/assemble", {"sessionId": "s", "format": "anthropic"})
    finally:
        assert await daemon.close() == 0
    assert after["system"] == before["system"] and after["messages"] == [HELLO], after


async def test_a_system_block_assembled_as_openai_names_its_cache_control(
        own_daemon: RawDaemon):
    await _open_and_append(own_daemon, [HELLO])
    out = await result(own_daemon, "ctx/assemble", {"sessionId": "s", "format": "openai"})
    said = [e["reason"] for e in out["truncated"] if e["summary"].startswith("system")]
    # the reviewer's block loses its cache_control; Monday's null citations carry nothing
    assert len(said) == 1 and "text cache_control" in said[0], out["truncated"]
    assert "citations" not in said[0]


async def test_a_fifth_breakpoint_the_earliest_one_is_named(own_daemon: RawDaemon):
    turns = []
    for k in range(4):  # four more of the client's breakpoints, on its messages
        turns += [{"role": "user", "content": [{"type": "text", "text": f"question {k}",
                                                "cache_control": {"type": "ephemeral"}}]},
                  {"role": "assistant", "content": f"answer {k}"}]
    await _open_and_append(own_daemon, [*turns, {"role": "user", "content": "and?"}])
    out = await result(own_daemon, "ctx/assemble", {"sessionId": "s", "format": "anthropic"})
    marked = [b for b in out["system"] if "cache_control" in b] + [
        m for m in out["messages"] if isinstance(m["content"], list)
        and "cache_control" in m["content"][-1]]
    assert len(marked) == 4, out
    assert "cache_control" not in out["system"][-2]  # the earliest of the five
    said = [e for e in out["truncated"] if "its cache_control" in e["summary"]]
    assert len(said) == 1 and "more than 4" in said[0]["reason"], out["truncated"]


async def test_a_blank_system_block_is_left_out_and_said(own_daemon: RawDaemon):
    # kept as it came, a block of blanks would go out whole, and the provider refuses it
    await result(own_daemon, "ctx/session/open", {"sessionId": "s", "model": "claude-sonnet-4-5"})
    await result(own_daemon, "ctx/session/append", {
        "sessionId": "s", "format": "anthropic", "messages": [HELLO],
        "system": [{"type": "text", "text": "  ", "cache_control": {"type": "ephemeral"}},
                   TODAY]})
    out = await result(own_daemon, "ctx/assemble", {"sessionId": "s", "format": "anthropic"})
    assert all(b["text"].strip() for b in out["system"]) and out["system"][-1] == TODAY, out
    assert [e["reason"] for e in out["dropped"]] == [
        "an empty system message: the provider refuses one"], out["dropped"]
    assert out["truncated"] == [], out["truncated"]


async def test_a_one_hour_block_appended_after_a_five_minute_one_is_sent_as_five_minutes():
    """Anthropic refuses a 1-hour breakpoint after a 5-minute one (the prompt is read tools,
    system, messages). A session sends its kept blocks in the order appended: a plain
    breakpoint, then a "1h" one appended later, went out in that refused order with nothing
    said (the review probe). Now the later one goes as 5-minute, named in `truncated`."""
    plain = {"type": "text", "text": "Project notes. " * 200, "cache_control": {"type": "ephemeral"}}
    base = WORLD / f"system-blocks-{next(_worlds)}"
    env, root = hermetic_env(base), make_repo(base / "repo")
    daemon = await RawDaemon.start(env=env)
    try:
        await daemon.initialize(root)
        await result(daemon, "ctx/session/open", {"sessionId": "s", "model": "claude-sonnet-4-5"})
        await result(daemon, "ctx/session/append", {
            "sessionId": "s", "format": "anthropic", "system": [plain],
            "messages": [{"role": "user", "content": "hello"}]})
        await result(daemon, "ctx/session/append", {
            "sessionId": "s", "format": "anthropic", "system": [REVIEWER],
            "messages": [{"role": "assistant", "content": "hi"},
                         {"role": "user", "content": "review a.py"}]})
        out = await result(daemon, "ctx/assemble", {"sessionId": "s", "format": "anthropic"})
    finally:
        assert await daemon.close() == 0
    ttls = [b["cache_control"].get("ttl", "5m") for b in out["system"]
            if isinstance(b, dict) and b.get("cache_control")]
    assert ttls == ["5m", "5m"], out["system"]
    assert out["system"][-1]["text"] == REVIEWER["text"]
    assert any("1-hour" in e["reason"] and "system block" in e["summary"]
               for e in out["truncated"]), out["truncated"]
