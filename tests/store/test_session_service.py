"""The session service over a real SQLite store: what a client is told matches what is stored."""

from __future__ import annotations

import pytest

from ctxlayer import protocol
from ctxlayer.core.errors import ContextError
from ctxlayer.core.tokens import CountCache, WordTokenizer
from ctxlayer.protocol import Message
from ctxlayer.store import SessionStore
from ctxlayer.store.sessions import SessionService, SystemLayers

WS = "/ws"


def service(tmp_path) -> SessionService:
    counter = CountCache(WordTokenizer())
    return SessionService(SessionStore(tmp_path), lambda model: counter,
                          default_model=lambda: "gpt-4o", default_budget=lambda model: 100_000)


def big_system(words: int) -> SystemLayers:
    text = " ".join(f"w{k}" for k in range(words))
    return SystemLayers(messages=[Message(role="system", content=text, id="ctx:workspace")],
                        workspace_tokens=words)


def test_an_append_over_the_budget_is_acknowledged_and_reported_not_an_error(tmp_path):
    svc = service(tmp_path)
    svc.open(WS, protocol.SessionOpenParams(session_id="s", budget=50))
    svc.set_system(WS, "s", big_system(200))  # the workspace segment alone is over the budget
    budget = svc.append(WS, "s", [Message(role="user", content="hello there", id="u1")])
    assert budget.used > budget.limit == 50 and budget.percent > 100
    again = service(tmp_path)  # a restarted daemon finds what the client was told is stored
    assert again.list(WS)[0].messages == 1


def test_rules_over_the_budget_are_an_error_at_assembly_and_reported_in_the_budget(tmp_path):
    svc = service(tmp_path)
    svc.open(WS, protocol.SessionOpenParams(session_id="s", budget=60))
    svc.add_rule(WS, "s", protocol.RuleSpec(text="Never " + "do that thing " * 30, weight=1))
    budget = svc.budget(WS, "s")
    assert budget.by_layer.rules > 60 and budget.used > budget.limit
    with pytest.raises(ContextError) as err:
        svc.assemble(WS, "s")
    assert err.value.kind == "pinned_over_budget" and "rules" in str(err.value)


def test_repeated_assemblies_do_not_repeat_the_same_audit_entries(tmp_path):
    svc = service(tmp_path)
    svc.open(WS, protocol.SessionOpenParams(session_id="s", budget=400, mode="short"))
    for k in range(6):  # working items beyond the short mode's share are reported as dropped
        svc.add_item(WS, "s", protocol.WorkingItemSpec(kind="note", content="fact " * 60 + str(k)))
    svc.append(WS, "s", [Message(role="user", content="hello there", id="u1")])
    svc.assemble(WS, "s")
    first = svc.audit(WS, "s", None)
    assert first, "the first assembly reports what it left out"
    for _ in range(3):
        svc.assemble(WS, "s")
    assert svc.audit(WS, "s", None) == first
