"""What an Anthropic system block carries besides its text is named in the session's audit;
a null field carries nothing and is not named, over real stdio.

Before (probe 68): a block with `"citations": null` was audited as "its citations not kept",
though null says nothing (the stored messages' parts read null as absent already).
"""

from __future__ import annotations

import pytest
from conftest import RawDaemon, result

pytestmark = pytest.mark.e2e


async def test_a_null_field_of_a_system_block_is_not_said_to_be_lost(own_daemon: RawDaemon):
    await result(own_daemon, "ctx/session/open", {"sessionId": "s", "model": "claude-sonnet-4-5"})
    await result(own_daemon, "ctx/session/append", {
        "sessionId": "s", "format": "anthropic",
        "system": [{"type": "text", "text": "You are X.",
                    "cache_control": {"type": "ephemeral", "ttl": "1h"}},
                   {"type": "text", "text": "Be brief.", "citations": None}],
        "messages": [{"role": "user", "content": "hi"}]})
    audit = (await result(own_daemon, "ctx/session/audit", {"sessionId": "s"}))["entries"]
    said = [e["reason"] for e in audit if "system block" in e["reason"]]
    assert said == ["a session keeps a system block's text: its cache_control not kept"], said
