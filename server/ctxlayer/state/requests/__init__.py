"""Every request of the protocol, declared once: its state function and where it runs.

A request's params and result structs are `protocol.REQUESTS[method]`; this table adds the
function and its place (`place.py` says what each means):
- `runs="loop"`: `async def fn(caller, params)` awaited on the event loop (cheap reads, and
  ctx/prepare, whose conversations place their own turns: state/conversations.py);
- `runs="worker"`: `def fn(caller, params[, given])` on a worker thread (counting, trimming);
- `runs="lane"`: `def fn(caller, params[, given])` on a session thread, inside its lane;
- `lane` (a function of the caller and the params) names the key whose requests apply in
  arrival order: a session's writes and reads, one conversation's turns;
- `given`: what only the loop can give, awaited first and passed in as the third argument
  (the workspace segment, `place.segment`; a live conversation's part);
- `inline`: `(model, characters)` of a small request, run on the loop when its encoding is
  loaded and it is under `state.tokens.INLINE_CHARS` (a thread hop costs more);
- `reads`: a read across lanes (ctx/why, the lists, ctx/inspect), and the lanes it reads: it
  answers after the requests that arrived before it there (ctx/why sent after an assembly
  answered from before it: "kept whole"); a read of one session or chat also before the ones
  after it in its lanes (ctx/inspect sent between two appends counted the second one), a list
  (`holds=False`) not: it holds back no lane; `lanes.py` says how and why.
No request function moves work off the loop itself (`tests/test_architecture.py`).
Faces (lsp/, gateway/) parse the params with the method's struct, then `await call(caller,
method, params)`, and map errors; they never call each other's handlers.
To add a request: a struct pair in protocol.py, one function in a module below, one line here.
"""

from __future__ import annotations

import contextlib
import inspect as _inspect
from collections.abc import Awaitable, Callable, Hashable
from typing import TYPE_CHECKING, Any, NamedTuple

from ctxlayer import protocol
from ctxlayer.state.lanes import ReadsLane
from ctxlayer.state.requests import assembly, chats, counting, inspect, place, sessions, workspace
from ctxlayer.state.requests.place import Runs, segment
from ctxlayer.state.session_service import chat_of
from ctxlayer.store.errors import FolderGone

if TYPE_CHECKING:
    from ctxlayer.state.caller import Caller


class Request(NamedTuple):
    fn: Callable[..., Any]
    runs: Runs
    lane: Callable[[Any, Any], Hashable] | None = None
    given: Callable[[Any, Any], Awaitable[Any]] | None = None
    inline: Callable[[Any, Any], tuple[str | None, int]] | None = None
    #: a read of what other requests write (a session's or a chat's last result, the lists):
    #: which lanes it reads (`Lanes.read`), a function of the caller and the params
    reads: Callable[[Any, Any], ReadsLane] | None = None
    #: whether the read holds back the requests that arrive after it in those lanes (a read
    #: of one session or chat); a list of the workspace does not
    holds: bool = True


def by_session(caller: Caller, p: Any) -> Hashable:
    return ("session", caller.workspace, p.session_id)


def by_session_or_chat(caller: Caller, p: Any) -> Hashable:
    """A request naming a session or a conversation: in the session's lane when it names one
    (a restore then lands between the appends and assemblies around it)."""
    if p.session_id is not None and p.conversation_id is None:
        return by_session(caller, p)
    return ("conversation", caller.workspace, p.conversation_id)


def workspace_lanes(caller: Caller, p: Any) -> ReadsLane:
    """The lanes of the caller's workspace, its sessions' and its chats': what a list reads.
    A list holds none of them back (`holds=False` below): it may wait for one session's slow
    work, which the others must not wait for."""
    workspace = caller.workspace
    return lambda key: isinstance(key, tuple) and key[1:2] == (workspace,)


def named_lanes(caller: Caller, p: Any) -> ReadsLane:
    """A read of one session of ctx/assemble reads its lane alone; one of a chat (by its
    conversation or its chat- session) the lanes its turns run in (`Conversations.lanes_of`);
    a page of `messages` no lane. Other sessions and chats never wait for it."""
    session_id = getattr(p, "session_id", None)
    conversation_id = getattr(p, "conversation_id", None)
    if conversation_id is None and session_id is not None:
        conversation_id = chat_of(session_id)
        if conversation_id is None:
            lane = by_session(caller, p)
            return lambda key: key == lane
    if conversation_id is None:
        return lambda key: False
    return caller.state.conversations.lanes_of(caller.workspace, conversation_id).__contains__


def in_session(fn: Callable[..., Any], *, given: Any = segment) -> Request:
    """A request on one session: in its lane on a session thread, given the segment (a session
    this process has not measured yet gets its system layers first)."""
    return Request(fn, "lane", lane=by_session, given=given)


REQUESTS: dict[str, Request] = {
    "ctx/segment": Request(workspace.segment, "loop"),
    "ctx/systemPrompt": Request(workspace.system_prompt, "worker", given=segment),
    "ctx/count": Request(counting.count, "worker", inline=counting.inline),
    "ctx/trim": Request(counting.trim, "worker"),
    "ctx/session/open": in_session(sessions.open_session),
    "ctx/session/append": in_session(sessions.append),
    "ctx/session/addItem": in_session(sessions.add_item),
    "ctx/session/addRule": in_session(sessions.add_rule),
    "ctx/session/removeRule": in_session(sessions.remove_rule),
    # a chat's session answers its chat's figures, which the loop holds
    "ctx/session/setMode": in_session(sessions.set_mode, given=chats.session_budget),
    "ctx/session/configure": in_session(sessions.configure, given=chats.session_budget),
    "ctx/assemble": in_session(assembly.assemble),
    "ctx/session/compact": in_session(assembly.compact),
    "ctx/session/reportUsage": in_session(sessions.report_usage, given=chats.session_budget),
    # a chat's session answers its chat's figures, which the loop holds
    "ctx/session/budget": in_session(sessions.budget, given=chats.session_budget),
    "ctx/session/audit": in_session(sessions.audit, given=None),
    "ctx/session/list": Request(sessions.list_sessions, "worker", given=chats.live_chats,
                                reads=workspace_lanes, holds=False),
    "ctx/session/close": in_session(sessions.close, given=None),
    "ctx/inspect": Request(inspect.inspect, "worker", given=inspect.given, reads=named_lanes),
    # a conversation's turns are ordered by the conversations themselves (state/conversations.py),
    # so the gateway, which calls them directly, gets the same order
    "ctx/prepare": Request(chats.prepare, "loop"),
    "ctx/conversations": Request(chats.conversations, "loop", reads=workspace_lanes,
                                 holds=False),
    # a live conversation's part is the loop's (given); a session's is read on its thread
    "ctx/why": Request(chats.why, "worker", given=chats.live_why, reads=named_lanes),
    "ctx/restore": Request(chats.restore, "lane", lane=by_session_or_chat,
                           given=chats.live_restore),
}

missing = set(protocol.REQUESTS) ^ set(REQUESTS)
assert not missing, f"requests without a state function (or without a protocol entry): {missing}"
wrong = [m for m, r in REQUESTS.items()
         if _inspect.iscoroutinefunction(r.fn) != (r.runs == "loop")
         or len(_inspect.signature(r.fn).parameters) != 2 + (r.given is not None)]
assert not wrong, f"`runs` or `given` disagrees with the function (async def runs on the " \
    f"loop, a plain def takes what it is given as its third argument): {wrong}"


async def call(caller: Caller, method: str, params: Any) -> Any:
    """Run one request where its declaration says: in its lane (the place is taken before the
    first await, so call this as the face's first await), on the loop or a thread. The state
    folder gone from under the process is told to the user once, besides the request's
    error."""
    try:
        return await _call(caller, method, params)
    except FolderGone as exc:
        caller.state.folder_gone(exc)
        raise


async def _call(caller: Caller, method: str, params: Any) -> Any:
    request = REQUESTS[method]
    lanes = caller.state.lanes
    lane = lanes.turn(request.lane(caller, params)) if request.lane \
        else lanes.read(request.reads(caller, params), holds=request.holds) if request.reads \
        else contextlib.nullcontext()
    with caller.state.tokenizers.answering():  # no encoding is built for later meanwhile
        async with lane:
            if request.runs == "loop":
                return await request.fn(caller, params)
            args = (caller, params)
            if request.given is not None:
                args += (await request.given(caller, params),)
            if request.inline is not None \
                    and caller.state.tokenizers.can_inline(*request.inline(caller, params)):
                return request.fn(*args)
            return await place.run(caller, request.runs, request.fn, *args)


async def in_lane(caller: Caller, key: Hashable, fn: Callable[..., Any], *args: Any) -> Any:
    """Work that is not a request (a segment change re-measuring a session) in a lane, on a
    session thread, as a request there would run."""
    async with caller.state.lanes.turn(key):
        return await place.run(caller, "lane", fn, caller, *args)
