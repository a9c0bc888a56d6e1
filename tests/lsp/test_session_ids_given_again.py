"""A rule or working item added with an id the session holds replaces it, and says so: the
answer's `replaced` names what was there, and the session's audit keeps the same entry. The
same rule or item given again (a client's retry) replaces nothing and says nothing.

Before: the second ctx/session/addRule with id `style` answered `{ruleId, demoted: []}`
exactly as the first did, and the audit stayed empty: the rule "Use tabs." was gone without a
word (an item alike). The real daemon over stdio."""

from __future__ import annotations

import pytest
from conftest import result

pytestmark = pytest.mark.e2e


async def test_an_id_given_again_says_what_it_replaced(own_daemon):
    daemon = own_daemon
    await result(daemon, "ctx/session/open", {"sessionId": "s"})
    rule = {"sessionId": "s", "rule": {"id": "style", "text": "Use tabs.", "weight": 2}}
    assert (await result(daemon, "ctx/session/addRule", rule)).get("replaced") is None
    assert (await result(daemon, "ctx/session/addRule", rule)).get("replaced") is None
    rule["rule"] = {**rule["rule"], "text": "Use four spaces."}
    said = (await result(daemon, "ctx/session/addRule", rule))["replaced"]
    assert said["action"] == "dropped" and said["messageId"] == "style", said
    assert "Use tabs." in said["summary"] and "replaced" in said["reason"], said

    item = {"sessionId": "s", "item": {"id": "port", "kind": "note", "content": "port 8080"}}
    assert (await result(daemon, "ctx/session/addItem", item)).get("replaced") is None
    assert (await result(daemon, "ctx/session/addItem", item)).get("replaced") is None
    item["item"] = {**item["item"], "content": "port 9090"}
    was = (await result(daemon, "ctx/session/addItem", item))["replaced"]
    assert was["messageId"] == "port" and "port 8080" in was["summary"], was

    entries = (await result(daemon, "ctx/session/audit", {"sessionId": "s"}))["entries"]
    assert said in entries and was in entries and len(entries) == 2, entries
    assembled = await result(daemon, "ctx/assemble", {"sessionId": "s"})
    text = "\n".join(m["content"] for m in assembled["messages"])
    assert "Use four spaces." in text and "Use tabs." not in text
    assert "port 9090" in text and "port 8080" not in text
