"""ctx/inspect: the inspector page (one self-contained HTML string) for a conversation trimmed
into a budget, or for a session's assembled context.

Owns the request's validation and the gathering of counts; the page is rendered by
`ctxlayer.inspector` (pure). Must not write files or open a browser: the client shows the HTML.
"""

from __future__ import annotations

from ctxlayer import protocol
from ctxlayer.core.errors import ContextError, require_tokens
from ctxlayer.state.caller import Caller


async def inspect(caller: Caller, p: protocol.InspectParams) -> protocol.InspectResult:
    from ctxlayer.inspector import render_inspector

    model = caller.model(p.model)
    require_tokens(p.budget)
    if p.session_id is not None and caller.state.conversations.has_session(caller.workspace,
                                                                           p.session_id):
        data = await _live_chat_data(caller, p.session_id)
    elif p.session_id is not None:
        data = await _session_data(caller, p, model)
    elif p.messages is not None:
        data = await _conversation_data(caller, p, model)
    else:
        raise ContextError("invalid", "give `sessionId` or `messages` to inspect",
                           field="messages")
    return protocol.InspectResult(html=render_inspector(data))


def _window(caller: Caller, model: str | None, budget: int) -> int:
    from ctxlayer.tokenizers import model_info

    return max(caller.options.context_window or model_info(model).context_window, budget)


async def _conversation_data(caller: Caller, p: protocol.InspectParams, model: str | None):
    from ctxlayer.inspector import inspect_conversation

    budget = p.budget if p.budget is not None else caller.default_budget(model)
    messages = list(p.messages or [])  # Message structs, validated strictly by the params
    return await caller.state.tokenizers.run(
        model,
        lambda c: inspect_conversation(messages, budget, c, model=model or "default",
                                       window=_window(caller, model, budget)),
        size=1 << 62,
    )


async def _session_data(caller: Caller, p: protocol.InspectParams, model: str | None):
    """A session's page: what ctx/assemble produces for it now (kept messages as bars, the
    dropped ones in the audit table)."""
    from ctxlayer.core.tokens import OPENAI_FORMAT, message_tokens
    from ctxlayer.inspector import build_inspector_data
    from ctxlayer.state.requests.assembly import run_assembly, session_layers

    assert p.session_id is not None
    system = await session_layers(caller, p.session_id)
    result = (await run_assembly(caller, p.session_id, budget=p.budget, system=system)).result
    t = result.tokens
    layers = {"system": t.system, "workspace": t.workspace, "rules": t.rules,
              "working": t.working, "history": t.history}
    trigger = caller.policy.sessions.compaction.trigger

    def build(counter):
        tokens = [message_tokens(m, counter) for m in result.messages]
        return build_inspector_data(
            result.messages, tokens, model=model or "default",
            window=_window(caller, model, result.budget), budget=result.budget,
            dropped=result.dropped, truncated=result.truncated, layers=layers,
            cache_boundary=result.cache_boundary, compaction_at=int(result.budget * trigger),
            session_id=p.session_id, title=f"ctxlayer · session {p.session_id}",
            overhead=OPENAI_FORMAT.reply_priming,
        )

    return await caller.state.tokenizers.run(model, build, size=1 << 62)


async def _live_chat_data(caller: Caller, session_id: str):
    """A live chat's page (the gateway, ctx/prepare): the messages of its last request as the
    engine read them, what that turn summarized, outlined, shortened and dropped, and the
    figures the status bar shows (its budget, the model's window). The slider's steps are
    the next turn fitted by core.prepare from the chat's state at each budget (read only)."""
    from ctxlayer.inspector import build_inspector_data
    from ctxlayer.inspector.steps import engine_steps, prepare_runner, split_audit, step_budgets

    state = caller.state
    conv = state.conversations.of_session(caller.workspace, session_id)
    st = conv.state
    if st is None:
        raise ContextError("unknown_session", f"the live chat of session {session_id!r} has "
                           "sent no request this daemon fitted", field="sessionId")
    dropped, changed = split_audit(state.conversations.why(caller.workspace, None, session_id))
    budget = max(1, conv.budget)
    window = max(conv.window or budget, budget)
    restored, tools = frozenset(conv.restored), conv.tools_tokens

    def build(counter):
        run = prepare_runner(st, counter, tools=tools, restored=restored)
        steps = engine_steps(st.messages,
                             [b for b in step_budgets(window, budget) if b != budget], run)
        return build_inspector_data(
            st.messages, st.tokens, model=conv.model, window=window, budget=budget,
            dropped=dropped, truncated=changed,
            layers={"system": conv.system_tokens, "workspace": 0, "rules": 0, "working": 0,
                    "history": max(0, conv.tokens - conv.system_tokens)},
            compaction_at=budget, session_id=session_id, steps=steps,
            result_tokens=conv.tokens,
            title=f"ctxlayer · {conv.source} chat {conv.conversation_id}")

    return await state.tokenizers.run(conv.model, build, size=1 << 62)
