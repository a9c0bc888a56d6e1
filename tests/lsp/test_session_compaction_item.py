"""A Responses `compaction` item at the start of a session is sent by ctx/assemble, over real
stdio.

Before (probe 68): a session whose history starts with the provider's `compaction` item (what
/responses/compact returns, which Codex sends back first) was assembled in the responses
format without it ("the history must start with a user turn", dropped with its 21 tokens),
though ctx/trim keeps the same body and the provider takes it first: the model lost all the
earlier conversation the item holds. Now an item kept whole stays where it is.
"""

from __future__ import annotations

import base64

import pytest
from conftest import RawDaemon, result

pytestmark = pytest.mark.e2e

COMPACTION = {"type": "compaction", "id": "cmp_1", "encrypted_content": base64.b64encode(
    b"the whole earlier conversation, 40k tokens of it").decode()}
ANSWER = {"type": "message", "role": "assistant",
          "content": [{"type": "output_text", "text": "a1"}]}


@pytest.mark.parametrize("items", [
    [COMPACTION, {"role": "user", "content": "NEWEST go on"}],
    [COMPACTION, {"role": "user", "content": "q1"}, ANSWER,
     {"role": "user", "content": "NEWEST go on"}],
], ids=["then the question", "then a turn"])
async def test_a_compaction_item_heading_the_history_is_sent(own_daemon: RawDaemon, items):
    await result(own_daemon, "ctx/session/open", {"sessionId": "s", "budget": 20000})
    await result(own_daemon, "ctx/session/append",
                 {"sessionId": "s", "format": "responses", "messages": items})
    out = await result(own_daemon, "ctx/assemble", {"sessionId": "s", "format": "responses"})
    assert out["dropped"] == [], out["dropped"]
    # after the system layers (the workspace segment), the history as it came
    assert out["messages"][-len(items):] == items, out["messages"]
    assert all(m.get("role") == "system" for m in out["messages"][:-len(items)])
