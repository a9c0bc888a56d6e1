"""ctx/assemble's `budget` below the session's own does not summarize the session for good,
over real stdio.

One ctx/assemble at budget 800 summarized a session whose budget is 50000 for good: every
later assembly at the session's own budget sent the summary and two messages (971 tokens)
though the whole history (6665 tokens) fits it seven times (probe p40). A summary made for a
smaller room is withdrawn by the first assembly where the whole history fits again, said in
the audit; at the budget it was made for it stays (the cached prefix holds from one assembly
to the next).
"""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import RawDaemon, exchanges, hermetic_env, make_repo, result, started

pytestmark = pytest.mark.e2e


def history() -> list[dict]:
    return exchanges(10, 80, "latest?", sep="w")


async def _assemble(daemon: RawDaemon, rid: str, params: dict) -> dict:
    got = await daemon.request(rid, "ctx/assemble", params)
    assert "result" in got, got
    return got["result"]


async def test_a_one_off_small_budget_does_not_summarize_the_session_for_good(own_daemon):
    daemon = own_daemon
    await daemon.request("o", "ctx/session/open", {"sessionId": "s", "budget": 50000})
    await daemon.request("a", "ctx/session/append",
                         {"sessionId": "s", "messages": history()})
    whole = await _assemble(daemon, "w", {"sessionId": "s"})
    assert not whole["compacted"] and len(whole["messages"]) == 22
    
    small = await _assemble(daemon, "small", {"sessionId": "s", "budget": 800})
    assert small["compacted"] and small["tokens"]["total"] <= 800
    # the session's own budget counts the history as its next assembly will send it: whole
    # (it counted the summary made for 800, 1.5% where the next assembly sent 11%)
    own = (await daemon.request("b0", "ctx/session/budget", {"sessionId": "s"}))["result"]
    assert own["used"] == whole["tokens"]["total"], own
    summary = next(m["id"] for m in small["messages"] if m.get("kind") == "summary")
    
    again = await _assemble(daemon, "again", {"sessionId": "s"})
    assert not again["compacted"]
    assert again["messages"] == whole["messages"], [m.get("id") for m in
                                                    again["messages"]][:4]
    budget = (await daemon.request("b", "ctx/session/budget", {"sessionId": "s"}))["result"]
    assert budget["used"] == whole["tokens"]["total"]
    audit = (await daemon.request("au", "ctx/session/audit",
                                  {"sessionId": "s"}))["result"]["entries"]
    withdrawn = [e for e in audit if e["messageId"] == summary and e["action"] == "restored"]
    assert len(withdrawn) == 1 and "summary is withdrawn" in withdrawn[0]["reason"], audit


def longer_history() -> list[dict]:
    """20 exchanges and a question: over a budget of 6,000 whole (the session compacts)."""
    return exchanges(20, 60, "Final question?")


def _verbatim(assembled: dict) -> list[str]:
    return [m["content"][:12] for m in assembled["messages"]
            if m["content"].startswith(("Question", "Answer"))]


async def test_a_one_off_small_budget_does_not_deepen_the_summary_for_good(tmp_path: Path):
    """Where the whole history does not fit the session's own budget either, its summary was
    kept as made for the one-off budget: after one assembly at 1,500, every assembly at the
    session's 6,000 kept 3 messages verbatim (2,329 tokens) where its own compaction kept
    11 (5,563), after new turns and a restart too (probe 68). Now the summary made for the
    smaller room is made again for the session's own, said in the audit."""
    env, root = hermetic_env(tmp_path / "world"), make_repo(tmp_path / "repo")
    daemon = await started(env, root)
    params = {"sessionId": "s", "format": "openai"}
    try:
        await result(daemon, "ctx/session/open", {"sessionId": "s", "budget": 6000})
        await result(daemon, "ctx/session/append", {**params, "messages": longer_history()})
        own = await result(daemon, "ctx/assemble", params)
        assert own["compacted"] and len(_verbatim(own)) > 3, _verbatim(own)
        small = await result(daemon, "ctx/assemble", {**params, "budget": 1500})
        assert small["tokens"]["total"] <= 1500 and len(_verbatim(small)) < len(_verbatim(own))
        back = await result(daemon, "ctx/assemble", params)
        assert _verbatim(back) == _verbatim(own), (_verbatim(back), _verbatim(own))
        assert back["tokens"]["total"] == own["tokens"]["total"]
        audit = (await result(daemon, "ctx/session/audit", {"sessionId": "s"}))["entries"]
        withdrawn = [e for e in audit if e["action"] == "restored"]
        assert len(withdrawn) == 1 and "made again" in withdrawn[0]["reason"], withdrawn
        await result(daemon, "ctx/session/append", {**params, "messages": [
            {"role": "assistant", "content": "ok"}, {"role": "user", "content": "one more?"}]})
        turned = await result(daemon, "ctx/assemble", params)
        assert len(_verbatim(turned)) >= len(_verbatim(own)), _verbatim(turned)
    finally:
        assert await daemon.close() == 0
    daemon = await started(env, root)
    try:
        await result(daemon, "ctx/session/open", {"sessionId": "s"})
        again = await result(daemon, "ctx/assemble", params)
        assert _verbatim(again) == _verbatim(turned)
        assert again["tokens"]["total"] == turned["tokens"]["total"]
    finally:
        assert await daemon.close() == 0


async def test_a_compaction_at_the_budget_it_was_made_for_is_kept(own_daemon):
    daemon = own_daemon
    await daemon.request("o", "ctx/session/open", {"sessionId": "s", "budget": 2000})
    await daemon.request("a", "ctx/session/append",
                         {"sessionId": "s", "messages": history()})
    # an editor that sends its budget setting with every assembly: the session's own
    # (the second assembly may still compact: its summary is sized once it is known)
    first = await _assemble(daemon, "1", {"sessionId": "s", "budget": 2000})
    second = await _assemble(daemon, "2", {"sessionId": "s", "budget": 2000})
    third = await _assemble(daemon, "3", {"sessionId": "s"})
    assert first["compacted"] and not third["compacted"]
    assert second["messages"] == third["messages"]
    # all of it reused but the reply priming the fingerprint leaves out
    assert third["tokens"]["total"] - 3 <= third["cacheReuseTokens"]


async def test_a_one_off_budget_over_the_models_window_is_said(own_daemon):
    """ctx/assemble's own budget may be over the model's window (a caller reads a whole history
    back with one), but an open at it is refused: 60,000 for gpt-3.5-turbo (16,385) answered
    30,128 tokens with notice null. Now its notice says the window; the session's own budget
    gives none."""
    daemon = own_daemon
    await daemon.request("o2", "ctx/session/open", {"sessionId": "g", "model": "gpt-3.5-turbo"})
    await daemon.request("a2", "ctx/session/append", {"sessionId": "g", "messages": [
        {"role": "user", "content": "word " * 30000}]})
    wide = await _assemble(daemon, "wide", {"sessionId": "g", "budget": 60000})
    assert wide["tokens"]["total"] > 16385, wide["tokens"]
    assert "16,385-token context window of gpt-3.5-turbo" in (wide.get("notice") or ""), wide
    own = await _assemble(daemon, "own", {"sessionId": "g"})
    assert "context window" not in (own.get("notice") or ""), own.get("notice")
