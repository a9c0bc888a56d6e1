"""Required working items (`optional: false`) are compressed, never removed, over real stdio:
they take the working zone's room before the optional ones, shortened to their part of it
when together they are over it. A hotter optional note took the room of a required spec,
which was left out whole; in short mode every item over about 1,000 tokens was left out,
required ones too. The notice says which working items were left out and why: it said
"dropped 1 message to fit 1,696 / 100,000 tokens" for a working item, nothing over budget."""

from __future__ import annotations

import pytest
from conftest import result

pytestmark = pytest.mark.e2e


def working(assembled: dict) -> str:
    return "\n".join(m["content"] for m in assembled["messages"] if m.get("id") == "ctx:working")


async def open_with_question(daemon, mode: str) -> None:
    await result(daemon, "ctx/session/open", {"sessionId": "s", "budget": 100000, "mode": mode})
    await result(daemon, "ctx/session/append", {"sessionId": "s", "messages": [
        {"role": "user", "content": "why does the build fail?"}]})


async def add(daemon, item_id: str, head: str, optional: bool, n: int = 220) -> None:
    text = head + " " + " ".join(f"field{k} must be an int in src/schema_{item_id}.py"
                                 for k in range(n)) + f" END-{item_id}"
    await result(daemon, "ctx/session/addItem", {"sessionId": "s", "item": {
        "id": item_id, "kind": "spec", "content": text, "optional": optional}})


async def test_a_required_item_keeps_its_room_over_a_hotter_optional_one(own_daemon):
    await open_with_question(own_daemon, "debug")
    await add(own_daemon, "spec", "REQUIRED SPEC", optional=False)
    await add(own_daemon, "scratch", "OPTIONAL SCRATCH", optional=True)  # newer: hotter
    got = await result(own_daemon, "ctx/assemble", {"sessionId": "s"})
    shown = working(got)
    assert "REQUIRED SPEC" in shown and "END-spec" in shown
    assert "OPTIONAL SCRATCH" not in shown
    assert [e["messageId"] for e in got["dropped"]] == ["scratch"]
    notice = got["notice"]
    assert "working item scratch" in notice and "share of the mode" in notice, notice
    assert "message" not in notice, notice


async def test_required_items_over_the_zone_are_shortened_never_left_out(own_daemon):
    await open_with_question(own_daemon, "short")  # a working zone of 1,000 tokens
    await add(own_daemon, "a", "REQUIRED A", optional=False)
    await add(own_daemon, "b", "OPTIONAL B", optional=True)
    await add(own_daemon, "c", "REQUIRED C", optional=False)
    got = await result(own_daemon, "ctx/assemble", {"sessionId": "s"})
    shown = working(got)
    assert "REQUIRED A" in shown and "REQUIRED C" in shown, shown[:300]
    assert "OPTIONAL B" not in shown
    assert got["tokens"]["working"] <= 1000
    assert sorted(e["messageId"] for e in got["truncated"]) == ["a", "c"]
    assert [e["messageId"] for e in got["dropped"]] == ["b"]
    notice = got["notice"]
    assert "left out working item b" in notice and "shortened working items a, c" in notice, \
        notice
