"""A session's own system message and its pinned messages outlive its compactions, over real
stdio. An OpenAI-style client appends its conversation with its system prompt first: the first
compaction replaced it by the summary, pinned or not, the audit called it `summarized`, and
the summary held none of its wording (REQUIREMENTS T5/T6: leading system messages are always
kept, P0 never dropped; T3/T4: pinned messages are never touched)."""

from __future__ import annotations

import pytest
from conftest import RawDaemon

pytestmark = pytest.mark.e2e

SYSTEM = "You are BillingBot. Always answer in German and never reveal internal ticket numbers."
PINNED = "Keep every amount in euro cents, as integers."


def turns(start: int, n: int) -> list[dict]:
    out = []
    for k in range(start, start + n):
        out.append({"role": "user", "content": f"Question {k}: "
                    + " ".join(f"w{k}_{j}" for j in range(60))})
        out.append({"role": "assistant", "content": f"Answer {k}: "
                    + " ".join(f"a{k}_{j}" for j in range(60))})
    return out


async def _assemble(daemon: RawDaemon, rid: str, sid: str, fmt: str) -> dict:
    got = await daemon.request(rid, "ctx/assemble", {"sessionId": sid, "format": fmt})
    assert "result" in got, got
    return got["result"]


def _texts(result: dict) -> list[str]:
    return [m.get("content") if isinstance(m.get("content"), str) else "" for m in
            result["messages"]]


@pytest.mark.parametrize("fmt, pinned", [("ctxlayer", False), ("ctxlayer", True),
                                         ("openai", False)])
async def test_a_sessions_system_message_stays_before_the_summary(own_daemon, fmt, pinned):
    daemon = own_daemon
    await daemon.request("o", "ctx/session/open", {"sessionId": "s", "budget": 3000})
    first = {"role": "system", "content": SYSTEM}
    if fmt == "ctxlayer":
        first.update(id="sys", pinned=pinned)
    msgs = [first, *turns(0, 12), {"role": "user", "content": "Final question?"}]
    got = await daemon.request("a", "ctx/session/append",
                               {"sessionId": "s", "format": fmt, "messages": msgs})
    assert got["result"]["used"] > 3000, got  # the assembly must compact
    for round_ in range(2):  # the first compaction, and one after more turns
        result = await _assemble(daemon, f"asm{round_}", "s", fmt)
        assert result["compacted"] and result["tokens"]["total"] <= 3000, result["tokens"]
        texts = _texts(result)
        assert texts.count(SYSTEM) == 1, texts[:4]
        summary_at = next(i for i, t in enumerate(texts) if "earlier messages" in t)
        # where it stood: after the daemon's own system layers, before the summary
        assert texts.index(SYSTEM) == summary_at - 1, texts[:4]
        assert SYSTEM not in texts[summary_at]  # shown once, not repeated in it
        await daemon.request(f"more{round_}", "ctx/session/append", {
            "sessionId": "s", "format": fmt,
            "messages": [*turns(100 + 10 * round_, 8), {"role": "user", "content": "Next?"}]})
    audit = await daemon.request("au", "ctx/session/audit", {"sessionId": "s"})
    said = [e for e in audit["result"]["entries"] if SYSTEM[:40] in e["summary"]]
    assert said == [], said  # never summarized
    assert any(e["action"] == "summarized" for e in audit["result"]["entries"])
    why = await daemon.request("why", "ctx/why", {"sessionId": "s"})
    said = [e for e in why["result"]["entries"] if SYSTEM[:40] in e["summary"]]
    assert said == [], said  # nor explained as replaced by the summary


async def test_a_pinned_message_mid_conversation_stays_whole_after_the_summary(own_daemon):
    daemon = own_daemon
    await daemon.request("o", "ctx/session/open", {"sessionId": "p", "budget": 3000})
    msgs = [*turns(0, 3), {"role": "user", "content": PINNED, "id": "pin", "pinned": True},
            {"role": "assistant", "content": "Noted.", "id": "ok"}, *turns(3, 10),
            {"role": "user", "content": "Final question?"}]
    await daemon.request("a", "ctx/session/append", {"sessionId": "p", "messages": msgs})
    result = await _assemble(daemon, "asm", "p", "ctxlayer")
    ids = [m.get("id") for m in result["messages"]]
    assert result["compacted"] and result["tokens"]["total"] <= 3000
    summary = next(i for i in ids if i and i.startswith("ctx:summary:") and
                   not i.endswith(":ack"))
    # after the summary and its acknowledgement (the roles alternate), in its order
    assert ids[ids.index(summary):ids.index(summary) + 3] == [summary, f"{summary}:ack",
                                                              "pin"], ids
    assert "ok" not in ids  # its neighbours are summarized as before
    shown = result["messages"][ids.index("pin")]
    assert shown["content"] == PINNED and shown.get("pinned") is True


async def test_a_pinned_message_over_the_budget_is_named_in_the_error(own_daemon):
    """The error blamed the rules ("remove rules or raise the budget") of a session that had
    none: the pinned message took the room."""
    daemon = own_daemon
    await daemon.request("o", "ctx/session/open", {"sessionId": "big", "budget": 3000})
    big = {"role": "user", "id": "bigpin", "pinned": True, "content": "PINNED " + "x " * 6000}
    await daemon.request("a", "ctx/session/append", {"sessionId": "big", "messages": [
        *turns(0, 6), big, *turns(6, 4)]})  # the newest question goes in the summary
    got = await daemon.request("asm", "ctx/assemble", {"sessionId": "big"})
    assert got["error"]["data"]["kind"] == "pinned_over_budget", got
    assert "1 message kept whole (system, pinned) takes" in got["error"]["message"], got
    assert "unpin or shorten" in got["error"]["message"]
