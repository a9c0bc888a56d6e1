"""A session's working memory (zone B) as a client sees it through ctx/assemble: what a cooled
item keeps when compressed, and what a turn is. The real daemon over stdio."""

from __future__ import annotations

import itertools
import json

import pytest
from conftest import WORLD, RawDaemon, hermetic_env, make_repo, result

pytestmark = pytest.mark.e2e
_worlds = itertools.count()

#: facts a compressed item must keep whole, and the prose around them that may go
SCHEMA = ("Keep the database schema in migrations/0007_add_index.sql unchanged; it has the "
          "unique index on users.email that production relies on.")
CONFIG = ("Traceback: KeyError 'user_id' raised in api/handlers/session.py line 77 "
          "(get_session). The command `pytest -k test_session_expiry` reproduces it. Also "
          "config/settings.toml sets timeout=30. "
          + "Some more prose about the situation that is not very important but fills space. "
          * 8)
FACTS = ("migrations/0007_add_index.sql", "config/settings.toml", "timeout=30",
         "pytest -k test_session_expiry", "api/handlers/session.py", "get_session")


async def started() -> tuple[RawDaemon, object]:
    base = WORLD / f"working-{next(_worlds)}"
    env = hermetic_env(base)
    root = make_repo(base / "repo")
    daemon = await RawDaemon.start(env=env)
    await daemon.initialize(root)
    return daemon, root



async def working_zone(daemon: RawDaemon, sid: str) -> str:
    out = await result(daemon, "ctx/assemble", {"sessionId": sid})
    return "".join(m["content"] for m in out["messages"] if m.get("id") == "ctx:working")


async def test_a_compressed_item_keeps_its_facts_whole():
    daemon, _ = await started()
    try:
        await result(daemon, "ctx/session/open", {"sessionId": "s", "budget": 50000})
        await result(daemon, "ctx/session/append", {"sessionId": "s", "messages": [
            {"role": "user", "content": "start"}]})
        for item_id, text in (("schema", SCHEMA), ("config", CONFIG)):
            await result(daemon, "ctx/session/addItem", {"sessionId": "s", "item": {
                "id": item_id, "kind": "note", "content": text, "optional": False}})
        for _ in range(4):  # four turns that refer to neither: both are compressed
            await result(daemon, "ctx/session/append", {"sessionId": "s", "messages": [
                {"role": "assistant", "content": "ok"}, {"role": "user", "content": "go on"}]})
        shown = await working_zone(daemon, "s")
        assert shown.count(", compressed]") == 2, shown
        assert len(shown) < len(SCHEMA) + len(CONFIG)
        assert [f for f in FACTS if f not in shown] == []
        assert "…`" not in shown and "inde…" not in shown  # nothing cut mid-name
    finally:
        await daemon.close()


SPEC = ("Acceptance criteria from the ticket: exports must be UTF-8 with a BOM, dates in ISO "
        "8601, amounts with two decimals, and the header row localized.")


def agent_turn(turn: int, steps: int) -> list[dict]:
    """One user request an agent answers in ``steps`` tool-calling steps, then its answer."""
    out = [{"role": "user", "content": f"Request {turn}: implement the next part of the export."}]
    for k in range(steps):
        out += [{"role": "assistant", "content": "", "toolCalls": [{
                    "id": f"t{turn}c{k}", "name": "read_file",
                    "arguments": json.dumps({"path": f"src/export/part{k}.py"})}]},
                {"role": "tool", "toolCallId": f"t{turn}c{k}", "content": f"def part{k}(): pass"}]
    return out + [{"role": "assistant", "content": "Here is the implementation plan."}]


async def test_working_notes_cool_once_a_user_turn_not_once_a_tool_step():
    daemon, _ = await started()
    try:
        await result(daemon, "ctx/session/open", {"sessionId": "agent", "budget": 50000})
        await result(daemon, "ctx/session/addItem", {"sessionId": "agent", "item": {
            "id": "spec", "kind": "note", "content": SPEC}})
        # one request in seven steps, sent as an agent sends them: each step in its own append
        messages = agent_turn(0, 7)
        for k in range(0, len(messages), 2):
            await result(daemon, "ctx/session/append", {"sessionId": "agent",
                                                         "messages": messages[k:k + 2]})
        shown = await working_zone(daemon, "agent")
        assert SPEC in shown, "one turn: the note is whole after the first answer"
        audit = await result(daemon, "ctx/session/audit", {"sessionId": "agent"})
        assert audit["entries"] == []
        for turn in (1, 2, 3):  # four turns in all: compressed after its 4th, as Z2 counts
            await result(daemon, "ctx/session/append", {"sessionId": "agent",
                                                         "messages": agent_turn(turn, 7)})
            shown = await working_zone(daemon, "agent")
            assert ("[note, compressed]" in shown) == (turn == 3), (turn, shown)
        audit = await result(daemon, "ctx/session/audit", {"sessionId": "agent"})
        assert [e["reason"] for e in audit["entries"]] == [
            "working item cooled to heat 0.24: compressed"]
    finally:
        await daemon.close()


#: notes with no space to cut their prose at, and one sentence said again and again: each was
#: "compressed" to an empty string (audit `tokensAfter: 0`), a note kept for the task lost
NO_SPACES = {
    "zh": "用户希望我们在写代码之前先讨论架构决策。他们想要小的拉取请求，每个都有清晰的描述。" * 5,
    "json": ('{"user":{"id":42,"name":"alice","roles":["admin","dev"],"prefs":{"theme":"dark",'
             '"lang":"en"}},"items":[1,2,3,4,5,6,7,8,9,10]}') * 3,
    "again": "Keep: zebra flamingo quartz " * 20,
    "word": "x" * 400,
}


async def test_a_note_kept_for_the_task_is_never_compressed_to_nothing():
    daemon, _ = await started()
    try:
        await result(daemon, "ctx/session/open", {"sessionId": "s", "budget": 30000})
        for item_id, text in NO_SPACES.items():
            await result(daemon, "ctx/session/addItem", {"sessionId": "s", "item": {
                "id": item_id, "kind": "note", "content": text, "optional": False}})
        for turn in range(4):  # four turns that refer to none: each is compressed if it can be
            await result(daemon, "ctx/session/append", {"sessionId": "s", "messages": [
                {"role": "user", "content": f"question {turn}"},
                {"role": "assistant", "content": f"answer {turn}"}]})
        shown = await working_zone(daemon, "s")
        bodies = {}  # "## [note, compressed] (zh)\n<what the note shows>", a note by its id
        for part in shown.split("## [")[1:]:
            head, body = part.split("\n", 1)
            bodies[head.rsplit("(", 1)[1].rstrip(")")] = body.strip()
        assert NO_SPACES["zh"][:30] in bodies["zh"] and len(bodies["zh"]) < len(NO_SPACES["zh"])
        assert bodies["json"].startswith('{"user":{"id":42,"name":"alice"'), bodies["json"]
        assert bodies["again"].startswith("Keep: zebra flamingo quartz Keep:"), bodies["again"]
        assert bodies["word"] == NO_SPACES["word"], "no shorter form keeps any of it: whole"
        audit = await result(daemon, "ctx/session/audit", {"sessionId": "s"})
        compressed = {e["messageId"]: e["tokensAfter"] for e in audit["entries"]}
        assert sorted(compressed) == ["again", "json", "zh"], audit["entries"]
        assert all(after > 0 for after in compressed.values()), compressed
    finally:
        await daemon.close()
