"""Every request of the protocol, declared once: its state function and where it runs.

A request's params and result structs are `protocol.REQUESTS[method]`; this table adds the
function (`fn(caller, params) -> result`) and how it runs:
- `runs="loop"`: an `async def` on the event loop, which hops to worker threads itself for
  heavy work (counting through `state.tokenizers.run`, the session service through
  `state.work`), so it can also wait for the workspace scan or the client's summary;
- `runs="worker"`: a plain `def` (blocking: the database) the dispatch runs on a worker thread;
- `lane` (a function of the caller and the params) names the key whose requests apply in
  arrival order: a session's writes and reads, one conversation's turns.
Faces (lsp/, gateway/) parse the params with the method's struct, then `await call(caller,
method, params)`, and map errors; they never call each other's handlers.
To add a request: a struct pair in protocol.py, one function in a module below, one line here.
"""

from __future__ import annotations

import contextlib
import inspect as _inspect
from collections.abc import Callable, Hashable
from typing import Any, Literal, NamedTuple

from ctxlayer import protocol
from ctxlayer.state.requests import assembly, chats, counting, inspect, sessions, workspace


class Request(NamedTuple):
    fn: Callable[..., Any]
    runs: Literal["loop", "worker"]
    lane: Callable[[Any, Any], Hashable] | None = None


def by_session(caller: Any, p: Any) -> Hashable:
    return ("session", caller.workspace, p.session_id)


def by_session_or_chat(caller: Any, p: Any) -> Hashable:
    """A request naming a session or a conversation: in the session's lane when it names one
    (a restore then lands between the appends and assemblies around it)."""
    if p.session_id is not None and p.conversation_id is None:
        return by_session(caller, p)
    return ("conversation", caller.workspace, p.conversation_id)


REQUESTS: dict[str, Request] = {
    "ctx/segment": Request(workspace.segment, "loop"),
    "ctx/systemPrompt": Request(workspace.system_prompt, "loop"),
    "ctx/count": Request(counting.count, "loop"),
    "ctx/trim": Request(counting.trim, "loop"),
    "ctx/session/open": Request(sessions.open_session, "loop", lane=by_session),
    "ctx/session/append": Request(sessions.append, "loop", lane=by_session),
    "ctx/session/addItem": Request(sessions.add_item, "loop", lane=by_session),
    "ctx/session/addRule": Request(sessions.add_rule, "loop", lane=by_session),
    "ctx/session/removeRule": Request(sessions.remove_rule, "loop", lane=by_session),
    "ctx/session/setMode": Request(sessions.set_mode, "loop", lane=by_session),
    "ctx/assemble": Request(assembly.assemble, "loop", lane=by_session),
    "ctx/session/compact": Request(assembly.compact, "loop", lane=by_session),
    "ctx/session/reportUsage": Request(sessions.report_usage, "worker", lane=by_session),
    "ctx/session/budget": Request(sessions.budget, "loop", lane=by_session),
    "ctx/session/audit": Request(sessions.audit, "worker", lane=by_session),
    "ctx/session/list": Request(sessions.list_sessions, "worker"),
    "ctx/session/close": Request(sessions.close, "worker", lane=by_session),
    "ctx/inspect": Request(inspect.inspect, "loop"),
    # a conversation's turns are ordered by the conversations themselves (state/conversations.py),
    # so the gateway, which calls them directly, gets the same order
    "ctx/prepare": Request(chats.prepare, "loop"),
    "ctx/conversations": Request(chats.conversations, "loop"),
    "ctx/why": Request(chats.why, "loop"),
    "ctx/restore": Request(chats.restore, "loop", lane=by_session_or_chat),
}

missing = set(protocol.REQUESTS) ^ set(REQUESTS)
assert not missing, f"requests without a state function (or without a protocol entry): {missing}"
wrong = [m for m, r in REQUESTS.items()
         if _inspect.iscoroutinefunction(r.fn) != (r.runs == "loop")]
assert not wrong, f"`runs` disagrees with the function (async def runs on the loop): {wrong}"


async def call(caller: Any, method: str, params: Any) -> Any:
    """Run one request where its declaration says: in its lane (the place is taken before the
    first await, so call this as the face's first await), on the loop or a worker thread."""
    request = REQUESTS[method]
    lane = caller.state.lanes.turn(request.lane(caller, params)) if request.lane else None
    async with lane if lane is not None else contextlib.nullcontext():
        if request.runs == "loop":
            return await request.fn(caller, params)
        return await caller.state.work(request.fn, caller, params)
