"""ctx/session/*: open, append, addItem, addRule, removeRule, setMode, configure, budget,
reportUsage, audit, list, close. Plain functions over the session service
(state/session_service.py), which the requests table runs on a session thread, a session's
requests in arrival order (its lane). A change publishes the session's new budget
(`State.events`), which the faces push to the editors of that workspace.
"""

from __future__ import annotations

import logging

import msgspec

from ctxlayer import protocol
from ctxlayer.core.errors import ContextError, require_tokens
from ctxlayer.core.formats import stored
from ctxlayer.core.trim import stages
from ctxlayer.state.caller import Caller
from ctxlayer.state.requests.budgets import fitted_to, publish
from ctxlayer.state.requests.messages import attachments, decode
from ctxlayer.state.session_service import CHAT_PREFIX, require_model_named

log = logging.getLogger(__name__)


def ensure_layers(caller: Caller, session_id: str, segment: protocol.WorkspaceSegment) -> None:
    """A session this process has not measured yet (opened before a restart, or by another
    connection) gets its system layers first, so its budget counts the workspace."""
    from ctxlayer.state.requests.assembly import session_layers

    svc = caller.state.sessions
    if svc.layered(caller.workspace, session_id):
        return
    svc.set_system(caller.workspace, session_id, session_layers(caller, session_id, segment))


def open_session(caller: Caller, p: protocol.SessionOpenParams,
                 segment: protocol.WorkspaceSegment) -> protocol.SessionOpenResult:
    from ctxlayer.state.requests.assembly import session_layers

    state = caller.state
    require_model_named(p.model)  # before the budget, which would be checked against no model
    # a session opened again keeps its own model when none is named: its budget is checked
    # against that one (nvim reopened a claude session, 190,000, against gpt-4o's 128,000)
    model = p.model or state.sessions.model_kept(caller.workspace, p.session_id) \
        or caller.model()
    if p.model is None:
        p.model = caller.model()
    if p.budget is None:
        p.budget = caller.default_budget(p.model)
    else:
        require_tokens(p.budget)
        caller.require_budget_fits(p.budget, model)
    if p.mode is None:  # initialize's mode is this connection's default
        p.mode = caller.default_mode()  # type: ignore[assignment]
    result = state.sessions.open(caller.workspace, p)
    layers = session_layers(caller, result.session_id, segment)
    state.sessions.set_system(caller.workspace, result.session_id, layers)
    return result


def append(caller: Caller, p: protocol.SessionAppendParams,
           segment: protocol.WorkspaceSegment) -> protocol.Budget:
    svc, workspace = caller.state.sessions, caller.workspace
    counter = None
    if p.format == "ctxlayer":  # nothing to count
        decoded = decode(p.format, p.messages, None, None)
    else:
        model = svc.model_of(workspace, p.session_id)
        counter = caller.state.tokenizers.guarded(model)
        # a session keeps every message, also those before a provider's compaction; read by
        # its model, whose rules price their parts (an assembly prices them again, for its
        # format and turn: core/formats/priced.py)
        decoded = decode(p.format, p.messages, None, counter, whole=True, model=model)
    # ids the codec made up give way to the session's own (ctx:msg:<seq>)
    messages = [msgspec.structs.replace(m, id=None) if m.id in decoded.derived_ids else m
                for m in decoded.messages]
    # the provider messages themselves are stored beside them, so that no part is lost
    raws = stored.raws(decoded) if p.format != "ctxlayer" else None
    # refused, naming it, by a format without one
    prompt, prompt_raws = system_prompt(p.format, p.system, counter) \
        if p.system is not None else ([], [])
    if prompt:
        messages = prompt + messages
        raws = prompt_raws + raws if raws is not None else None
    messages, left_out = without_parts(messages, raws)
    if left_out:  # said in the session's audit, never dropped silently
        svc.record_audit(workspace, p.session_id, left_out)
    files = attachments(caller, messages)
    if files:  # embedded once, at append: the stored message is what the model will read
        messages = stages.enrich(messages, files)
    ensure_layers(caller, p.session_id, segment)
    return publish(caller, fitted_to(caller, p.session_id,
                                     svc.append(workspace, p.session_id, messages, raws)))


def system_prompt(fmt: str, system: object, counter: object
                  ) -> tuple[list[protocol.Message], list[dict | None]]:
    """A request's system prompt kept apart from its messages (Anthropic `system`, Responses
    `instructions`) as a session takes it: system messages, as OpenAI system messages appended
    at that point are (the codec pins it within one request; in a session it is history like
    theirs), and what to store beside each (core/formats/stored.py): an Anthropic block as it
    came, so that its cache_control (the client's breakpoint, its ttl) goes out again."""
    decoded = decode(fmt, [], system, counter, whole=True)
    prompt = [msgspec.structs.replace(m, id=None, pinned=False) for m in decoded.messages]
    return prompt, stored.raws(decoded)


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


def add_item(caller: Caller, p: protocol.SessionAddItemParams,
             segment: protocol.WorkspaceSegment) -> protocol.SessionAddItemResult:
    svc = caller.state.sessions
    ensure_layers(caller, p.session_id, segment)
    result = svc.add_item(caller.workspace, p.session_id, p.item)
    publish(caller, fitted_to(caller, p.session_id))
    return result


def add_rule(caller: Caller, p: protocol.SessionAddRuleParams,
             segment: protocol.WorkspaceSegment) -> protocol.SessionAddRuleResult:
    svc = caller.state.sessions
    ensure_layers(caller, p.session_id, segment)
    result = svc.add_rule(caller.workspace, p.session_id, p.rule)
    publish(caller, fitted_to(caller, p.session_id))
    return result


def remove_rule(caller: Caller, p: protocol.SessionRemoveRuleParams,
                segment: protocol.WorkspaceSegment) -> protocol.Empty:
    svc = caller.state.sessions
    ensure_layers(caller, p.session_id, segment)
    svc.remove_rule(caller.workspace, p.session_id, p.rule_id)
    publish(caller, fitted_to(caller, p.session_id))
    return protocol.Empty()


def set_mode(caller: Caller, p: protocol.SessionSetModeParams,
             given: protocol.Budget | protocol.WorkspaceSegment) -> protocol.Budget:
    if isinstance(given, protocol.Budget):  # a chat's session: its mode kept, its figures said
        caller.state.sessions.set_mode(caller.workspace, p.session_id, p.mode)
        return publish(caller, given)
    ensure_layers(caller, p.session_id, given)
    measured = caller.state.sessions.set_mode(caller.workspace, p.session_id, p.mode)
    return publish(caller, fitted_to(caller, p.session_id, measured))


def configure(caller: Caller, p: protocol.SessionConfigureParams,
              given: protocol.Budget | protocol.WorkspaceSegment) -> protocol.Budget:
    """The session's model, budget or mode changed; its budget published as setMode's is (a
    chat's session: its chat's figures, ``given``, which its next request measures anew)."""
    from ctxlayer.state.requests.assembly import session_layers

    if p.reset_budget and p.budget is not None:
        raise ContextError("invalid", "a budget and resetBudget both: give one (resetBudget "
                           "is the model's default budget)", field="resetBudget")
    svc, workspace = caller.state.sessions, caller.workspace
    if isinstance(given, protocol.Budget):  # a chat's session: its mode only
        not_a_chats(p)
        svc.configure(workspace, p.session_id, p)
        return publish(caller, given)
    within_window(caller, p)
    segment = given
    if p.reset_budget:
        # the budget a session opened without one gets (open_session): of its model now
        model = p.model or svc.model_of(workspace, p.session_id)
        p.budget = caller.default_budget(model)
    ensure_layers(caller, p.session_id, segment)
    budget = svc.configure(workspace, p.session_id, p)
    if not svc.layered(workspace, p.session_id):  # a new model counts its system layers too
        svc.set_system(workspace, p.session_id, session_layers(caller, p.session_id, segment))
        budget = svc.budget(workspace, p.session_id)
    return publish(caller, fitted_to(caller, p.session_id, budget))


def not_a_chats(p: protocol.SessionConfigureParams) -> None:
    """Refuse a model or budget for a live chat's session (`chat-<id>`), naming the field: the
    chat's are its client's, named by each of its requests (its `model`; ctx/prepare's
    `budget`, the gateway's window), so the session's would change nothing it sends. It
    answered success and the chat's figures unchanged, and a later budget was checked against
    the model it had been given. Its mode is kept, as ctx/session/setMode keeps it."""
    asked = [("model", p.model is not None), ("budget", p.budget is not None),
             ("resetBudget", p.reset_budget)]
    field = next((name for name, given in asked if given), None)
    if field is not None:
        raise ContextError("invalid", f"{p.session_id!r} is a live chat's session: its model "
                           "and budget are its client's, named by each of its requests (the "
                           "request's model, ctx/prepare's budget or the gateway's), not "
                           "configured here; leave out model, budget and resetBudget",
                           field=field)


def within_window(caller: Caller, p: protocol.SessionConfigureParams) -> None:
    """Refuse a configure that leaves the session a budget over its model's window: the
    budget it asks for (named `budget`), else the session's own under the model it asks for
    (named `model`: 500,000 kept when gpt-4o, of 128,000, came)."""
    if p.reset_budget or (p.budget is None and p.model is None):
        return
    svc, workspace = caller.state.sessions, caller.workspace
    model = p.model or svc.model_of(workspace, p.session_id)
    if p.budget is not None:
        require_tokens(p.budget)
        caller.require_budget_fits(p.budget, model)
    else:
        caller.require_budget_fits(svc.budget_of(workspace, p.session_id), model,
                                   field="model", kept=True)


def budget(caller: Caller, p: protocol.SessionRef,
           given: protocol.Budget | protocol.WorkspaceSegment) -> protocol.Budget:
    if isinstance(given, protocol.Budget):  # a chat's (chats.session_budget): its requests'
        return given
    ensure_layers(caller, p.session_id, given)
    return fitted_to(caller, p.session_id)


def report_usage(caller: Caller, p: protocol.ReportUsageParams,
                 given: protocol.Budget | protocol.WorkspaceSegment) -> protocol.ReportUsageResult:
    """The new bias changes what the session's budget leaves for its messages: the editors
    are told, as after any change (before, the status bar kept the old limit). A chat's
    session (``given`` its Budget, chats.session_budget) says its chat's figures, which its
    next request measures with the new bias: measured, the session said the workspace's
    tokens, which a chat's requests never carry."""
    svc = caller.state.sessions
    if not isinstance(given, protocol.Budget):
        ensure_layers(caller, p.session_id, given)
    bias = svc.report_usage(caller.workspace, p.session_id, p.prompt_tokens, p.estimated_tokens)
    publish(caller, given if isinstance(given, protocol.Budget)
            else fitted_to(caller, p.session_id))
    return protocol.ReportUsageResult(bias=round(bias, 6))


def audit(caller: Caller, p: protocol.AuditParams) -> protocol.AuditResult:
    return protocol.AuditResult(
        entries=caller.state.sessions.audit(caller.workspace, p.session_id, p.limit))


def list_sessions(caller: Caller, p: protocol.NoParams,
                  live: dict[str, int]) -> protocol.SessionListResult:
    """The open sessions; a chat's with the messages of its last request (``live``: of the
    chats in memory, chats.live_chats; else as its kept window says), which its session
    never holds (it listed 0)."""
    from ctxlayer.state.windows import kept_figures

    sessions, store = caller.state.sessions, caller.state.sessions.store
    listed = sessions.list(caller.workspace)
    for k, info in enumerate(listed):
        if not info.session_id.startswith(CHAT_PREFIX):
            continue
        messages = live.get(info.session_id)
        if messages is None:
            kept = kept_figures(store, caller.workspace, info.session_id)
            messages = kept[1] if kept is not None else None
        if messages is not None:
            listed[k] = msgspec.structs.replace(info, messages=messages)
    return protocol.SessionListResult(sessions=listed)


def close(caller: Caller, p: protocol.SessionRef) -> protocol.Empty:
    caller.state.sessions.close(caller.workspace, p.session_id)  # forgets its memory too
    return protocol.Empty()


async def on_segment_changed(caller: Caller, segment: protocol.WorkspaceSegment,
                             told: list[Caller] | None = None) -> None:
    """Every open session of the workspace is measured against the new segment, each in its
    lane on a session thread (`caller`: the state's own on the workspace, state/opening.py),
    its budget told to each caller of `told` (the callers on the live workspace; None: the
    caller itself) as its own window fits it."""
    from ctxlayer.state.requests import in_lane

    state = caller.state
    if not state.sessions_started:
        return
    for session_id in state.sessions.open_sessions(caller.workspace):
        if state.conversations.has_session(caller.workspace, session_id):
            continue  # a live chat's request carries its own system: a file changes nothing
        try:
            await in_lane(caller, ("session", caller.workspace, session_id), remeasure,
                          session_id, segment, told)
        except Exception:
            log.exception("budget of session %s after a segment change", session_id)


def remeasure(caller: Caller, session_id: str, segment: protocol.WorkspaceSegment,
              told: list[Caller] | None = None) -> None:
    """A session's system layers against `segment` (once), its new budget told to each caller
    of `told` (None: `caller`) as that caller's ctx/session/budget answers it: the window a
    client names lowers the limit its assemblies fit to. Told to every editor as the state's
    own caller (which names no window) measured it, a file saved pushed the kept 100,000 to
    an editor whose session budget and assemblies said 8,000."""
    from ctxlayer.state.requests.assembly import segment_layers

    svc = caller.state.sessions
    spec = svc.system_spec(caller.workspace, session_id)
    layers = segment_layers(caller, segment, spec, model=svc.model_of(caller.workspace,
                                                                      session_id),
                            session_id=session_id)
    svc.set_system(caller.workspace, session_id, layers)
    fitted: dict[tuple[int | None, int | None], protocol.Budget] = {}
    for each in [caller] if told is None else list(told):  # a copy: the loop changes `told`
        view = (each.options.context_window, each.options.reserve_output)
        if view not in fitted:
            fitted[view] = fitted_to(each, session_id)
        publish(each, fitted[view], alone=True)
