"""ctx/inspect: the inspector page (one self-contained HTML string) for a conversation trimmed
into a budget, or for a session's assembled context.

Owns the request's validation and the gathering of counts; the page is rendered by
`ctxlayer.inspector` (pure). Must not write files or open a browser: the client shows the HTML.
"""

from __future__ import annotations

from typing import Any, NamedTuple

from ctxlayer import protocol
from ctxlayer.core.errors import ContextError, require_tokens
from ctxlayer.core.model_names import model_key
from ctxlayer.state.caller import Caller
from ctxlayer.state.requests.budgets import lowered
from ctxlayer.state.session_service import chat_of


async def given(caller: Caller, p: protocol.InspectParams) -> Any:
    """What the loop gives first: a live chat's last turn (the gateway's, ctx/prepare's: its
    conversation is the loop's), else the segment for a session's page."""
    if p.session_id is None:
        return None
    if p.messages is not None:
        # a page is of one or the other: messages beside a session would be left unread
        raise ContextError("invalid", "give `sessionId` or `messages` to inspect, not both",
                           field="messages")
    convs = caller.state.conversations
    if convs.has_session(caller.workspace, p.session_id):
        return _live_chat(caller, p)
    kept = await convs.kept_window(caller.workspace, p.session_id)
    if kept is not None:
        # its session holds none of its messages: its page would be an empty one
        raise ContextError("unknown_session", _not_in_memory(p.session_id, kept.info),
                           field="sessionId")
    return await caller.segment()


def _not_in_memory(session_id: str, info: protocol.ConversationInfo | None) -> str:
    """What to say of a chat the state folder keeps that is not in memory: why there is no
    page, when it comes back, and what can be read of its last turn meanwhile."""
    cid = chat_of(session_id) or session_id
    last = "" if info is None else (
        f" Its last turn: {info.tokens:,} / {info.budget:,} tokens, {info.dropped} messages "
        f"left out, est. cache {info.cache_reuse_tokens:,}.")
    return (f"chat {cid!r} (session {session_id!r}) is not in memory: this daemon has not "
            "fitted a request of it since it started, or let it go for newer chats, and its "
            "messages are the client's, not kept. Its page comes back with its next request; "
            f"what its last turn cut: ctx/why (`ctxlayer chats --why {cid}` through a running "
            f"gateway).{last}")


def inspect(caller: Caller, p: protocol.InspectParams,
            segment: protocol.WorkspaceSegment | None) -> Any:
    from ctxlayer.inspector import render_inspector

    require_tokens(p.budget)
    if isinstance(segment, LiveChat):  # a live chat's page, from what the loop gave
        return protocol.InspectResult(html=render_inspector(_live_chat_data(caller, segment)))
    if p.session_id is not None:
        assert segment is not None
        return protocol.InspectResult(html=render_inspector(
            _session_data(caller, p, _session_model(caller, p.session_id, p.model), segment)))
    if p.messages is None:
        raise ContextError("invalid", "give `sessionId` or `messages` to inspect",
                           field="messages")
    return protocol.InspectResult(html=render_inspector(
        _conversation_data(caller, p, caller.model(p.model))))


def _session_model(caller: Caller, session_id: str, asked: str | None) -> str:
    """The model a session's page names, sizes its window by and counts its rows with: the
    session's own, which its assembly counts with (the page said initialize's, else the
    tokenizers' default: `gpt-4o window 184000` for a session on claude-sonnet-4-5, its rows
    1,379 tokens beside layers of 2,616). Another model asked is refused, naming `model`:
    ctx/assemble would not send the session counted with it."""
    own = caller.state.sessions.model_of(caller.workspace, session_id)
    if asked is not None and not same_model(asked, own):
        raise ContextError("invalid", f"session {session_id!r} is counted with its own model "
                           f"{own!r}, as ctx/assemble counts it, not {asked!r}: leave `model` "
                           "out (ctx/session/configure changes the session's model)",
                           field="model")
    return own


def same_model(asked: str, own: str) -> bool:
    """Whether the model asked is the one named: by the name the tables key it, however the
    provider spells it (`gpt-4o` for a session on `openai/gpt-4o` was refused as another)."""
    return model_key(asked) == model_key(own)


def _window(caller: Caller, model: str | None, budget: int) -> int:
    from ctxlayer.tokenizers import model_info

    return max(caller.options.context_window or model_info(model).context_window, budget)


def _named(model: str | None) -> str:
    """The model the page's counts were made with, by name: with none given, the tokenizers'
    default, not a word that names no model."""
    from ctxlayer.tokenizers import model_info

    return model or model_info(model).name


def _conversation_data(caller: Caller, p: protocol.InspectParams, model: str | None) -> Any:
    from ctxlayer.inspector import inspect_conversation

    budget = p.budget if p.budget is not None else caller.default_budget(model)
    messages = list(p.messages or [])  # Message structs, validated strictly by the params
    return inspect_conversation(messages, budget, caller.state.tokenizers.guarded(model),
                                model=_named(model), window=_window(caller, model, budget))


def _session_data(caller: Caller, p: protocol.InspectParams, model: str | None,
                  segment: protocol.WorkspaceSegment) -> Any:
    """A session's page: what ctx/assemble would send it at `budget` (default: its own), kept
    messages as bars, the dropped ones in the audit table. Only a preview: inspecting never
    changes a session (an assembly at a smaller budget would compact it for good), so a summary
    it needs is written offline and nothing is kept."""
    from ctxlayer.state.requests.assembly import session_layers

    assert p.session_id is not None
    system = session_layers(caller, p.session_id, segment)
    budget = p.budget
    if budget is None:  # what ctx/assemble fits to: a window the caller names may lower it
        low = lowered(caller, p.session_id)
        budget = low.budget if low is not None else None
    out = caller.state.sessions.preview(caller.workspace, p.session_id, budget=budget,
                                        system=system)
    assert out.assembly.result is not None  # offline: it never waits for a client's summary
    return _session_page(caller, p, model, out.assembly.result, out.why)


def _session_page(caller: Caller, p: protocol.InspectParams, model: str | None,
                  result: protocol.AssembleResult, why: list[protocol.AuditEntry]) -> Any:
    """The page of a session's assembled `result`: its messages as rows; in the table what
    it cut and shortened, and what else explains it (`why`: the messages its summary
    replaces, those an earlier stage shortened), by the session history's own indexes."""
    from ctxlayer.core.tokens import OPENAI_FORMAT, message_tokens
    from ctxlayer.inspector import build_inspector_data

    cut = [*result.dropped, *result.truncated]
    said = {(e.message_id, e.action) for e in cut if e.message_id is not None}
    history_audit = [e for e in why if e not in cut and (e.message_id is None or
                                                         (e.message_id, e.action) not in said)]
    t = result.tokens
    layers = {"system": t.system, "workspace": t.workspace, "rules": t.rules,
              "working": t.working, "history": t.history}
    trigger = caller.policy.sessions.compaction.trigger
    counter = caller.state.tokenizers.guarded(model)
    tokens = [message_tokens(m, counter) for m in result.messages]
    return build_inspector_data(
        result.messages, tokens, model=_named(model),
        window=_window(caller, model, result.budget), budget=result.budget,
        dropped=result.dropped, truncated=result.truncated, history_audit=history_audit,
        layers=layers,
        cache_boundary=result.cache_boundary, compaction_at=int(result.budget * trigger),
        session_id=p.session_id, title=f"ctxlayer · session {p.session_id}",
        overhead=OPENAI_FORMAT.reply_priming,
    )


class LiveChat(NamedTuple):
    """A live chat's last turn as the loop has it (its conversations are the loop's)."""

    state: Any
    entries: list
    conv: Any
    session_id: str


def _live_chat(caller: Caller, p: protocol.InspectParams) -> LiveChat:
    """On the loop: the live chat of ``p.session_id`` (the gateway, ctx/prepare). Its page is
    its last request as fitted, at its budget, counted for its model: another `budget` or
    `model` is refused naming it (both were ignored without a word: `budget: 10` showed the
    page at 199,000). The page's slider shows the next turn at other budgets."""
    state = caller.state
    session_id = p.session_id
    assert session_id is not None
    conv = state.conversations.of_session(caller.workspace, session_id)
    if conv.state is None:
        raise ContextError("unknown_session", f"the live chat of session {session_id!r} has "
                           "sent no request this daemon fitted", field="sessionId")
    own = f"the page of live chat {conv.conversation_id!r} is its last request as fitted"
    if p.budget is not None and p.budget != conv.budget:
        raise ContextError("invalid", f"{own}, at its budget of {conv.budget:,} tokens: leave "
                           "`budget` out (the page's slider shows the next turn at others)",
                           field="budget")
    if p.model is not None and not same_model(p.model, conv.model):
        raise ContextError("invalid", f"{own}, counted for its model {conv.model!r}, not "
                           f"{p.model!r}: leave `model` out", field="model")
    return LiveChat(conv.state, state.conversations.why(caller.workspace, None, session_id),
                    conv, session_id)


def _live_chat_data(caller: Caller, live: LiveChat):
    """A live chat's page: the messages of its last request as the engine read them, what that
    turn summarized, outlined, shortened and dropped, and the figures the status bar shows
    (its budget, the model's window); the cache boundary where the prefix its result shared
    with the previous one ends (`chats`' est. cache). The slider's steps are the next turn fitted by
    core.prepare from the chat's state at each budget (read only)."""
    from ctxlayer.inspector import build_inspector_data
    from ctxlayer.inspector.steps import (
        cache_row,
        engine_steps,
        prepare_runner,
        split_audit,
        step_budgets,
    )

    st, conv = live.state, live.conv
    dropped, changed = split_audit(live.entries)
    budget = max(1, conv.budget)
    window = max(conv.window or budget, budget)
    counter = caller.state.tokenizers.guarded(conv.model)
    run = prepare_runner(st, counter, tools=conv.tools_tokens, restored=frozenset(conv.restored))
    steps = engine_steps(st.messages, [b for b in step_budgets(window, budget) if b != budget],
                         run)
    return build_inspector_data(
        st.messages, st.tokens, model=conv.model, window=window, budget=budget,
        dropped=dropped, truncated=changed,
        layers={"system": conv.system_tokens, "workspace": 0, "rules": 0, "working": 0,
                "history": max(0, conv.tokens - conv.system_tokens)},
        compaction_at=budget, session_id=live.session_id, steps=steps,
        cache_boundary=cache_row(st, conv.cache_reuse), cache_tokens=conv.cache_reuse,
        result_tokens=conv.tokens, title=f"ctxlayer · {conv.source} chat {conv.conversation_id}")
