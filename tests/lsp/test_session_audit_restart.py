"""A restarted daemon does not log again what a session's audit already holds, over real
stdio.

Before (probe 68): what assemblies had logged was remembered in memory only, so the first
assembly after each restart of a compacted session logged again every entry it had
(1 to 66 duplicates a restart: the 'truncated' summary, every 'summarized' message). Now the
first assembly with something to log reads what the stored audit holds.
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest
from conftest import exchanges, hermetic_env, make_repo, result, started

pytestmark = pytest.mark.e2e

SESSION = {"sessionId": "s", "format": "openai"}


def history() -> list[dict]:
    return exchanges(20, 60, "Final question?")


def duplicates(entries: list[dict]) -> int:
    seen = Counter(json.dumps(e, sort_keys=True) for e in entries)
    return sum(n - 1 for n in seen.values())


async def test_a_restart_adds_no_duplicate_audit_entries(tmp_path: Path):
    env, root = hermetic_env(tmp_path / "world"), make_repo(tmp_path / "repo")
    daemon = await started(env, root)
    try:
        await result(daemon, "ctx/session/open", {"sessionId": "s", "budget": 3000})
        await result(daemon, "ctx/session/append", {**SESSION, "messages": history()})
        first = await result(daemon, "ctx/assemble", SESSION)
        assert first["compacted"]
        await result(daemon, "ctx/assemble", SESSION)
        logged = (await result(daemon, "ctx/session/audit", {"sessionId": "s"}))["entries"]
        assert logged and duplicates(logged) == 0
    finally:
        assert await daemon.close() == 0
    for _ in range(2):
        daemon = await started(env, root)
        try:
            await result(daemon, "ctx/session/open", {"sessionId": "s"})
            again = await result(daemon, "ctx/assemble", SESSION)
            assert again["messages"] == first["messages"]
            audit = (await result(daemon, "ctx/session/audit", {"sessionId": "s"}))["entries"]
            assert duplicates(audit) == 0 and len(audit) == len(logged), (len(audit),
                                                                          len(logged))
        finally:
            assert await daemon.close() == 0
