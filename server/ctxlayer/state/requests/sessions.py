"""ctx/session/*: open, append, addItem, addRule, removeRule, setMode, budget, reportUsage,
audit, list, close. Each is one call of the session service (store/sessions.py) on a worker
thread; the dispatch runs the writes of one session in arrival order (its lane). A change
publishes the session's new budget (`State.events`), which the faces push to the editors of
that workspace.
"""

from __future__ import annotations

import msgspec

from ctxlayer import protocol
from ctxlayer.core.formats import stored
from ctxlayer.core.trim import stages
from ctxlayer.state.caller import Caller
from ctxlayer.state.requests.budgets import publish
from ctxlayer.state.requests.messages import attachments, decode


async def ensure_layers(caller: Caller, session_id: str) -> None:
    """A session this process has not measured yet (opened before a restart, or by another
    connection) gets its system layers first, so its budget counts the workspace."""
    from ctxlayer.state.requests.assembly import session_layers

    state = caller.state
    key = (caller.workspace, session_id)
    if key in state.layered:
        return
    layers = await session_layers(caller, session_id)
    await state.work(state.sessions.set_system, caller.workspace, session_id, layers)
    state.layered.add(key)


async def open_session(caller: Caller, p: protocol.SessionOpenParams) -> protocol.SessionOpenResult:
    from ctxlayer.state.requests.assembly import session_layers

    state = caller.state
    if p.model is None:
        p.model = caller.model()
    if p.budget is None:
        p.budget = caller.default_budget(p.model)
    result = await state.work(state.sessions.open, caller.workspace, p)
    layers = await session_layers(caller, result.session_id)
    await state.work(state.sessions.set_system, caller.workspace, result.session_id, layers)
    state.layered.add((caller.workspace, result.session_id))
    return result


async def append(caller: Caller, p: protocol.SessionAppendParams) -> protocol.Budget:
    state = caller.state
    if p.format == "ctxlayer":  # nothing to count: validate on the loop
        decoded = decode(p.format, p.messages, None, None)
    else:
        model = await state.work(state.sessions.model_of, caller.workspace, p.session_id)
        decoded = await state.tokenizers.run(
            model, lambda c: decode(p.format, p.messages, None, c), size=1 << 62)
    # ids the codec made up give way to the session's own (ctx:msg:<seq>)
    messages = [msgspec.structs.replace(m, id=None) if m.id in decoded.derived_ids else m
                for m in decoded.messages]
    # the provider messages themselves are stored beside them, so that no part is lost
    raws = stored.raws(decoded) if p.format != "ctxlayer" else None
    messages, left_out = without_parts(messages, raws)
    if left_out:  # said in the session's audit, never dropped silently
        await state.work(state.sessions.record_audit, caller.workspace, p.session_id, left_out)
    files = await attachments(caller, messages)
    if files:  # embedded once, at append: the stored message is what the model will read
        messages = stages.enrich(messages, files)
    await ensure_layers(caller, p.session_id)
    budget = await state.work(state.sessions.append, caller.workspace, p.session_id, messages,
                              raws)
    return publish(caller, budget)


def without_parts(messages: list[protocol.Message], raws: list | None
                  ) -> tuple[list[protocol.Message], list[protocol.AuditEntry]]:
    """The non-text parts of a message whose format a session cannot store as it came (one
    without a stored form in core/formats/stored.py) are not kept, so neither counted nor
    sent again: one audit entry each says so."""
    from ctxlayer.core.text import describe

    out, audit = [], []
    for i, m in enumerate(messages):
        if m.parts_tokens and (raws is None or raws[i] is None):
            audit.append(protocol.AuditEntry(
                action="dropped", reason="non-text parts of this format are not kept in a "
                "session; ctx/prepare and the gateway send them as they came",
                summary=describe(m), tokens_before=m.parts_tokens, tokens_after=0,
                message_id=m.id, index=i))
            m = msgspec.structs.replace(m, parts_tokens=None, parts=None)
        out.append(m)
    return out, audit


async def add_item(caller: Caller, p: protocol.SessionAddItemParams) -> protocol.SessionAddItemResult:
    state = caller.state
    await ensure_layers(caller, p.session_id)
    item_id = await state.work(state.sessions.add_item, caller.workspace, p.session_id, p.item)
    publish(caller, await state.work(state.sessions.budget, caller.workspace, p.session_id))
    return protocol.SessionAddItemResult(item_id=item_id)


async def add_rule(caller: Caller, p: protocol.SessionAddRuleParams) -> protocol.SessionAddRuleResult:
    state = caller.state
    await ensure_layers(caller, p.session_id)
    result = await state.work(state.sessions.add_rule, caller.workspace, p.session_id, p.rule)
    publish(caller, await state.work(state.sessions.budget, caller.workspace, p.session_id))
    return result


async def remove_rule(caller: Caller, p: protocol.SessionRemoveRuleParams) -> protocol.Empty:
    state = caller.state
    await ensure_layers(caller, p.session_id)
    await state.work(state.sessions.remove_rule, caller.workspace, p.session_id, p.rule_id)
    publish(caller, await state.work(state.sessions.budget, caller.workspace, p.session_id))
    return protocol.Empty()


async def set_mode(caller: Caller, p: protocol.SessionSetModeParams) -> protocol.Budget:
    state = caller.state
    await ensure_layers(caller, p.session_id)
    budget = await state.work(state.sessions.set_mode, caller.workspace, p.session_id, p.mode)
    return publish(caller, budget)


async def budget(caller: Caller, p: protocol.SessionRef) -> protocol.Budget:
    await ensure_layers(caller, p.session_id)
    state = caller.state
    return await state.work(state.sessions.budget, caller.workspace, p.session_id)


def report_usage(caller: Caller, p: protocol.ReportUsageParams) -> protocol.ReportUsageResult:
    bias = caller.state.sessions.report_usage(caller.workspace, p.session_id, p.prompt_tokens,
                                              p.estimated_tokens)
    return protocol.ReportUsageResult(bias=round(bias, 6))


def audit(caller: Caller, p: protocol.AuditParams) -> protocol.AuditResult:
    return protocol.AuditResult(
        entries=caller.state.sessions.audit(caller.workspace, p.session_id, p.limit))


def list_sessions(caller: Caller, p: protocol.Empty) -> protocol.SessionListResult:
    return protocol.SessionListResult(sessions=caller.state.sessions.list(caller.workspace))


def close(caller: Caller, p: protocol.SessionRef) -> protocol.Empty:
    state = caller.state
    state.sessions.close(caller.workspace, p.session_id)
    state.layered.discard((caller.workspace, p.session_id))
    return protocol.Empty()


async def on_segment_changed(caller: Caller, segment: protocol.WorkspaceSegment) -> None:
    """Every open session of the workspace is measured against the new segment."""
    import logging

    from ctxlayer.state.requests.assembly import segment_layers

    state = caller.state
    if not state.sessions_started:
        return
    svc = state.sessions
    for session_id in svc.open_sessions(caller.workspace):
        if state.conversations.has_session(caller.workspace, session_id):
            continue  # a live chat's request carries its own system: a file changes nothing
        try:
            async with state.lanes.turn(("session", caller.workspace, session_id)):
                spec = state.system_specs.get((caller.workspace, session_id))
                model = await state.work(svc.model_of, caller.workspace, session_id)
                layers = await segment_layers(caller, segment, spec, model=model,
                                              session_id=session_id)
                await state.work(svc.set_system, caller.workspace, session_id, layers)
                publish(caller, await state.work(svc.budget, caller.workspace, session_id))
        except Exception:
            logging.getLogger(__name__).exception(
                "budget of session %s after a segment change", session_id)
