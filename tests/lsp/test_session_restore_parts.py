"""ctx/restore of a message carrying an image, over real stdio: the user's words come back with
it, whatever the image costs. Its words were given the restored messages' room less the image,
1 token: a screenshot's question ("Why does the Save button overlap ...", 56 tokens) was cut to
nothing, the image sent alone, still over the room. Two restored screenshots that leave the
summary no room give way one group at a time, each said; all of them went at once, and a
budget of 3,000 went out with 1,651 tokens and no image."""

from __future__ import annotations

import json

import pytest
from conftest import result
from images import png as png_head

pytestmark = pytest.mark.e2e


def png(width: int, height: int) -> str:
    """A PNG's header, 64 bytes after it."""
    return png_head(width, height, 64)


IMG = png(1024, 768)
QUESTION = ("Why does the Save button overlap the sidebar at 1024px? The CSS grid in layout.css "
            "line 42 sets grid-template-columns: 240px 1fr; please propose a fix that keeps the "
            "sidebar collapsible.")


def image(data: str = IMG) -> dict:
    return {"type": "image", "source": {"type": "base64", "media_type": "image/png",
                                        "data": data}}


def later_turns() -> list[dict]:
    out = []
    for k in range(14):
        out += [{"role": "assistant", "content": f"Turn {k}: " + "we looked at the layout and "
                 "its many rules in detail. " * 30}, {"role": "user", "content": f"next {k}"}]
    return out


async def assembled_after_restoring(daemon, turns: list[dict], ids: list[str]) -> dict:
    await result(daemon, "ctx/session/open", {"sessionId": "s", "budget": 3000})
    await result(daemon, "ctx/session/append", {"sessionId": "s", "messages": turns,
                                                 "format": "anthropic"})
    first = await result(daemon, "ctx/assemble", {"sessionId": "s", "format": "anthropic"})
    assert first["compacted"], "never summarized"
    for mid in ids:
        await result(daemon, "ctx/restore", {"sessionId": "s", "messageId": mid})
    return await result(daemon, "ctx/assemble", {"sessionId": "s", "format": "anthropic"})


async def test_a_restored_screenshot_keeps_the_question_beside_it(own_daemon):
    turns = [{"role": "user", "content": [image(), {"type": "text", "text": QUESTION}]},
             *later_turns()]
    out = await assembled_after_restoring(own_daemon, turns, ["ctx:msg:0"])
    shown = [m for m in out["messages"] if IMG[:60] in json.dumps(m)]
    assert len(shown) == 1
    assert [(p["type"], p.get("text")) for p in shown[0]["content"]] == [
        ("image", None), ("text", QUESTION)]
    said = [e for e in out["truncated"] if e["messageId"] == "ctx:msg:0"]
    assert [e["action"] for e in said] == ["restored"]  # over its room, said, not cut
    assert "never shortened" in said[0]["reason"] and "image" in said[0]["reason"]
    assert said[0]["tokensAfter"] == said[0]["tokensBefore"]
    assert out["tokens"]["total"] <= 3000


async def test_restored_images_with_no_room_for_all_give_way_one_group_at_a_time(own_daemon):
    turns = [{"role": "user", "content": [image(), {"type": "text",
                                                    "text": "look at this screenshot"}]},
             {"role": "assistant", "content": [
                 {"type": "thinking", "thinking": " ".join(["why"] * 200), "signature": "s0"},
                 {"type": "tool_use", "id": "toolu_1", "name": "read", "input": {"path": "a"}}]},
             {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_1",
                                           "content": [image()]}]},
             *later_turns()]
    out = await assembled_after_restoring(own_daemon, turns, ["ctx:msg:0", "ctx:msg:2"])
    assert out["tokens"]["total"] <= 3000
    sent = json.dumps(out["messages"])
    assert sent.count(IMG[:60]) == 1  # the newer restored group is shown
    assert "toolu_1" in sent
    gone = [e for e in out["dropped"] if e["messageId"] in ("ctx:msg:0", "ctx:msg:1",
                                                            "ctx:msg:2")]
    assert [e["messageId"] for e in gone] == ["ctx:msg:0"]
    assert gone[0]["reason"].startswith("restored, but no room beside the summary")
    # nothing is said of the message left out but that
    assert "ctx:msg:0" not in [e["messageId"] for e in out["truncated"]]
