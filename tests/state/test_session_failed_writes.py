"""A request whose write the store refuses changes nothing in the session's memory either:
what a daemon assembles is what a restarted one finds in the state folder.

Before: adding a rule or a working item changed memory first and wrote after; an append
cooled the working items in place before its write; a usage report recorded its ratio
before its write; new system prompt params were taken before theirs. When the write failed
(a full disk, a state folder another process held too long), the client was told the request
failed and the daemon went on with the change all the same, until a restart dropped it."""

from __future__ import annotations

from collections.abc import Callable

import msgspec
import pytest

from ctxlayer import protocol
from ctxlayer.core.tokens import CountCache, WordTokenizer
from ctxlayer.protocol import Message
from ctxlayer.state.session_service import SessionService
from ctxlayer.store import SessionStore
from ctxlayer.store.errors import StoreError

WS = "/ws"


def service(tmp_path) -> SessionService:
    counter = CountCache(WordTokenizer())
    return SessionService(SessionStore(tmp_path), lambda model: counter,
                          default_model=lambda: "gpt-4o", default_budget=lambda model: 100_000)


def held(svc: SessionService) -> tuple:
    """What the session's memory holds of what the store keeps (rules, items, calibration,
    system prompt params)."""
    live = svc._get(WS, "s")
    return (sorted((r.id, r.text) for r in live.rules),
            [(it.id, it.content, round(it.heat, 6), it.compressed) for it in live.items],
            msgspec.json.encode(live.calibration), live.system_spec)


def failing(svc: SessionService, method: str) -> None:
    def refuse(*args: object, **kw: object) -> None:
        raise StoreError("disk I/O error")

    setattr(svc.store, method, refuse)


FAILED: dict[str, tuple[str, Callable[[SessionService], object]]] = {
    "addRule": ("put_rule", lambda svc: svc.add_rule(
        WS, "s", protocol.RuleSpec(text="Always run the linter.", weight=3))),
    "addRule client id": ("put_rule", lambda svc: svc.add_rule(
        WS, "s", protocol.RuleSpec(id="mine", text="Never push on Fridays.", weight=3))),
    "addItem": ("put_items", lambda svc: svc.add_item(
        WS, "s", protocol.WorkingItemSpec(kind="note", content="the port is 9090"))),
    "addItem client id": ("put_items", lambda svc: svc.add_item(
        WS, "s", protocol.WorkingItemSpec(id="port", kind="note", content="port 7070"))),
    "append": ("append", lambda svc: svc.append(
        WS, "s", [Message(role="assistant", content="nothing of the notes here")])),
    "reportUsage": ("update", lambda svc: svc.report_usage(WS, "s", 900, 600)),
    "systemPrompt": ("update", lambda svc: svc.assemble(
        WS, "s", spec=protocol.SystemPromptParams(identity="You are BIGBOT."))),
}


@pytest.mark.parametrize("request_name", list(FAILED))
def test_a_refused_write_leaves_memory_as_the_state_folder_is(tmp_path, request_name):
    method, call = FAILED[request_name]
    svc = service(tmp_path)
    svc.open(WS, protocol.SessionOpenParams(session_id="s", budget=100_000))
    svc.append(WS, "s", [Message(role="user", content="what next?")])
    svc.add_rule(WS, "s", protocol.RuleSpec(id="mine", text="Keep it short.", weight=1))
    svc.add_item(WS, "s", protocol.WorkingItemSpec(id="port", kind="note", content="port 80"))
    svc.report_usage(WS, "s", 500, 400)
    before = held(svc)
    failing(svc, method)
    with pytest.raises(StoreError):
        call(svc)
    assert held(svc) == before
    restarted = service(tmp_path)
    restarted.open(WS, protocol.SessionOpenParams(session_id="s"))
    assert held(restarted) == before
