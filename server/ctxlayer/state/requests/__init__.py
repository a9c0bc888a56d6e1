"""Every request of the protocol, declared once: its state function and where it runs.

A request's params and result structs are `protocol.REQUESTS[method]`; this table adds the
function (`fn(caller, params) -> result`) and how it runs:
- an `async def` runs on the event loop and hops to worker threads itself for heavy work
  (counting through `state.tokenizers.run`, the session service through `state.work`);
- a plain `def` is cheap or blocking work the dispatch runs on a worker thread;
- `lane` (a function of the caller and the params) names the key whose requests apply in
  arrival order: a session's writes and reads, one conversation's turns.
Faces (lsp/, gateway/) derive everything else from here and never call each other's handlers.
To add a request: a struct pair in protocol.py, one function in a module below, one line here.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable
from typing import Any, NamedTuple

from ctxlayer import protocol
from ctxlayer.state.requests import assembly, chats, counting, inspect, sessions, workspace


class Request(NamedTuple):
    fn: Callable[..., Any]
    lane: Callable[[Any, Any], Hashable] | None = None


def by_session(caller: Any, p: Any) -> Hashable:
    return ("session", caller.workspace, p.session_id)


def by_conversation(caller: Any, p: Any) -> Hashable | None:
    """One conversation's turns in order; without an id the conversation is found by its first
    messages, so its turns share the workspace's prepare lane."""
    if getattr(p, "conversation_id", None):
        return ("conversation", caller.workspace, p.conversation_id)
    if getattr(p, "session_id", None):
        return ("session", caller.workspace, p.session_id)
    return ("conversations", caller.workspace)


REQUESTS: dict[str, Request] = {
    "ctx/segment": Request(workspace.segment),
    "ctx/systemPrompt": Request(workspace.system_prompt),
    "ctx/count": Request(counting.count),
    "ctx/trim": Request(counting.trim),
    "ctx/session/open": Request(sessions.open_session),
    "ctx/session/append": Request(sessions.append, lane=by_session),
    "ctx/session/addItem": Request(sessions.add_item, lane=by_session),
    "ctx/session/addRule": Request(sessions.add_rule, lane=by_session),
    "ctx/session/removeRule": Request(sessions.remove_rule, lane=by_session),
    "ctx/session/setMode": Request(sessions.set_mode, lane=by_session),
    "ctx/assemble": Request(assembly.assemble, lane=by_session),
    "ctx/session/compact": Request(assembly.compact, lane=by_session),
    "ctx/session/reportUsage": Request(sessions.report_usage, lane=by_session),
    "ctx/session/budget": Request(sessions.budget, lane=by_session),
    "ctx/session/audit": Request(sessions.audit, lane=by_session),
    "ctx/session/list": Request(sessions.list_sessions),
    "ctx/session/close": Request(sessions.close, lane=by_session),
    "ctx/inspect": Request(inspect.inspect),
    "ctx/prepare": Request(chats.prepare, lane=by_conversation),
    "ctx/conversations": Request(chats.conversations),
    "ctx/why": Request(chats.why, lane=by_conversation),
    "ctx/restore": Request(chats.restore, lane=by_conversation),
}

missing = set(protocol.REQUESTS) ^ set(REQUESTS)
assert not missing, f"requests without a state function (or without a protocol entry): {missing}"
