"""ctx/trim in a provider's format uses the budget it is given: an Anthropic assistant turn
the fit kept before every user turn it kept (Anthropic refuses a request that starts so) is
dropped by the fit, not after it, and its room goes to the question."""

from __future__ import annotations

import pytest
from conftest import RawDaemon, result

pytestmark = pytest.mark.e2e


async def test_an_anthropic_turn_that_cannot_lead_leaves_its_room(raw_daemon: RawDaemon):
    """The encoder dropped it after the fit: the question went out cut to 265 tokens of a
    600-token budget, and the result said 579 (the dropped turn counted). (At 600 and under,
    the review's head and tail now fit beside the question's half of the room since the log
    outline's sizes moved (879cc8e): the turn that cannot lead is then not the one left.)"""
    review = "please review:\n```python\n" + "\n".join(
        f"    total_{k} = compute(items[{k}], factor={k % 9}) + offset_{k}"
        for k in range(300)) + "\n```"
    failing = "then why does it fail?\n" + "\n".join(
        f"2024-01-01 12:{k // 60:02d}:{k % 60:02d} [INFO] review: step {k} of the run went "
        f"through worker-{k % 7} in {k * 13 % 997} ms" for k in range(400))
    messages = [{"role": "user", "content": review},
                {"role": "assistant", "content": "It looks fine overall. " + "The loop is ok. "
                 * 50},
                {"role": "user", "content": failing}]
    out = await result(raw_daemon, "ctx/trim", {"format": "anthropic", "model":
                                                "claude-sonnet-4-5", "messages": messages,
                                                "budget": 700})
    assert [m["role"] for m in out["messages"]] == ["user"]
    leading = [e for e in out["dropped"] if "must start with a user message" in e["reason"]]
    assert len(leading) == 1, out["dropped"]
    [question] = out["truncated"]
    assert question["tokensAfter"] >= 450, question  # it was 265
    # the count said is what goes out (it was 579: the dropped turn's tokens counted)
    counted = await result(raw_daemon, "ctx/count", {"format": "anthropic", "model":
                                                     "claude-sonnet-4-5",
                                                     "messages": out["messages"]})
    assert out["tokens"] == counted["total"] <= 700
