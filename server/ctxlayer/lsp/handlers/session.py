"""ctx/session/*: open, append, addItem, addRule, removeRule, setMode, budget, compact,
reportUsage, audit, list, close; and ctx/budgetChanged after every append, mode or rule
change, and for every open session of the workspace when the segment changes.

Thin: parse, call the SessionService (store/sessions.py) on a worker thread, convert back.
The service is one per daemon (`daemon.service("sessions", ...)`) over the sessions database
in the daemon's state folder; sessions are keyed by this connection's workspace root.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any

from ctxlayer import protocol
from ctxlayer.lsp.convert import parse, to_wire
from ctxlayer.lsp.errors import maps_errors
from ctxlayer.lsp.server import CtxServer

log = logging.getLogger(__name__)


def service(ls: CtxServer) -> Any:
    """The daemon's SessionService, created on first use; this workspace's settings applied."""
    from ctxlayer.store import SessionStore
    from ctxlayer.store.sessions import SessionService
    from ctxlayer.tokenizers import DEFAULT_MODEL

    def factory() -> SessionService:
        durability = getattr(getattr(ls.config, "session", None), "durability", "normal")
        store = SessionStore(ls.daemon.state_dir, durability=durability)
        if store.recovered_from is not None:
            ls.tell(f"ctxlayer: the sessions database was unreadable; moved it to "
                    f"{store.recovered_from} and started a fresh one", "warning", show=True)
        return SessionService(store, ls.daemon.tokenizers.guarded,
                              default_model=lambda: DEFAULT_MODEL,
                              default_budget=lambda model: ls.default_budget(model))

    svc = ls.daemon.service("sessions", factory, close=lambda s: s.store.close())
    ws = workspace(ls)
    if ws not in svc.settings:
        svc.configure(ws, settings_from_config(getattr(ls.config, "session", None)))
    return svc


def workspace(ls: CtxServer) -> str:
    return str(ls.root) if ls.root is not None else ""


def settings_from_config(cfg: Any) -> Any:
    """[session] of ctxlayer.toml -> the core's policies."""
    from ctxlayer.config import SessionConfig
    from ctxlayer.core.assembly.compaction import CompactionPolicy
    from ctxlayer.core.zones import DecayPolicy, ModeSpec, RulePolicy
    from ctxlayer.store.sessions import SessionSettings

    cfg = cfg if cfg is not None else SessionConfig()
    modes = {name: ModeSpec(rules_share=m.rules_share, working_share=m.working_share, cap=m.cap)
             for name, m in (("short", cfg.modes.short), ("deep", cfg.modes.deep),
                             ("debug", cfg.modes.debug))}
    return SessionSettings(
        modes=modes, default_mode=cfg.default_mode,
        rules=RulePolicy(max_rules=cfg.max_rules, prefix=cfg.rule_prefix),
        decay=DecayPolicy(factor=cfg.decay, compress_below=cfg.compress_below,
                          remove_below=cfg.remove_below),
        compaction=CompactionPolicy(trigger=cfg.compaction_trigger,
                                    target=cfg.compaction_target, keep_recent=cfg.keep_recent,
                                    tool_output_cap=cfg.tool_output_cap,
                                    summary_max_tokens=cfg.summary_max_tokens),
        calibration_window=cfg.calibration_window,
    )


async def call(ls: CtxServer, method: str, *args: Any, **kwargs: Any) -> Any:
    svc = service(ls)
    return await asyncio.to_thread(getattr(svc, method), workspace(ls), *args, **kwargs)


def push_budget(ls: CtxServer, budget: protocol.Budget) -> None:
    ls.notify("ctx/budgetChanged", budget)


@maps_errors
async def open_session(ls: CtxServer, params: dict | None) -> dict:
    req = parse(params, protocol.SessionOpenParams)
    model = ls.model(req.model)
    if model is not None and req.model is None:
        req.model = model
    if req.budget is None:
        req.budget = ls.default_budget(req.model)
    result = await call(ls, "open", req)
    from ctxlayer.lsp.handlers.assemble import segment_layers

    layers = await segment_layers(ls, result.session_id, await ls.segment())
    await call(ls, "set_system", result.session_id, layers)
    return to_wire(result)


@maps_errors
async def append(ls: CtxServer, params: dict | None) -> dict:
    req = parse(params, protocol.SessionAppendParams)
    req.messages = parse(req.messages, list[protocol.Message], "messages")
    budget = await call(ls, "append", req.session_id, req.messages)
    push_budget(ls, budget)
    return to_wire(budget)


@maps_errors
async def add_item(ls: CtxServer, params: dict | None) -> dict:
    req = parse(params, protocol.SessionAddItemParams)
    item_id = await call(ls, "add_item", req.session_id, req.item)
    return to_wire(protocol.SessionAddItemResult(item_id=item_id))


@maps_errors
async def add_rule(ls: CtxServer, params: dict | None) -> dict:
    req = parse(params, protocol.SessionAddRuleParams)
    result = await call(ls, "add_rule", req.session_id, req.rule)
    push_budget(ls, await call(ls, "budget", req.session_id))
    return to_wire(result)


@maps_errors
async def remove_rule(ls: CtxServer, params: dict | None) -> dict:
    req = parse(params, protocol.SessionRemoveRuleParams)
    await call(ls, "remove_rule", req.session_id, req.rule_id)
    push_budget(ls, await call(ls, "budget", req.session_id))
    return {}


@maps_errors
async def set_mode(ls: CtxServer, params: dict | None) -> dict:
    req = parse(params, protocol.SessionSetModeParams)
    budget = await call(ls, "set_mode", req.session_id, req.mode)
    push_budget(ls, budget)
    return to_wire(budget)


@maps_errors
async def budget(ls: CtxServer, params: dict | None) -> dict:
    req = parse(params, protocol.SessionRef)
    return to_wire(await call(ls, "budget", req.session_id))


@maps_errors
async def report_usage(ls: CtxServer, params: dict | None) -> dict:
    req = parse(params, protocol.ReportUsageParams)
    bias = await call(ls, "report_usage", req.session_id, req.prompt_tokens, req.estimated_tokens)
    return to_wire(protocol.ReportUsageResult(bias=round(bias, 6)))


@maps_errors
async def audit(ls: CtxServer, params: dict | None) -> dict:
    req = parse(params, protocol.AuditParams)
    entries = await call(ls, "audit", req.session_id, req.limit)
    return to_wire(protocol.AuditResult(entries=entries))


@maps_errors
async def list_sessions(ls: CtxServer, params: dict | None) -> dict:
    parse(params, protocol.Empty)
    return to_wire(protocol.SessionListResult(sessions=await call(ls, "list")))


@maps_errors
async def close(ls: CtxServer, params: dict | None) -> dict:
    req = parse(params, protocol.SessionRef)
    await call(ls, "close", req.session_id)
    return {}


async def on_segment_changed(ls: CtxServer, segment: protocol.WorkspaceSegment,
                             changed: list[str]) -> None:
    """Every open session of this workspace is measured against the new segment."""
    from ctxlayer.lsp.handlers.assemble import segment_layers

    svc = service(ls)
    for session_id in svc.open_sessions(workspace(ls)):
        try:
            layers = await segment_layers(ls, session_id, segment)
            await asyncio.to_thread(svc.set_system, workspace(ls), session_id, layers)
            push_budget(ls, await call(ls, "budget", session_id))
        except Exception:
            log.exception("budget of session %s after a segment change", session_id)


def register(server: CtxServer) -> None:
    server.feature("ctx/session/open")(open_session)
    server.feature("ctx/session/append")(append)
    server.feature("ctx/session/addItem")(add_item)
    server.feature("ctx/session/addRule")(add_rule)
    server.feature("ctx/session/removeRule")(remove_rule)
    server.feature("ctx/session/setMode")(set_mode)
    server.feature("ctx/session/budget")(budget)
    server.feature("ctx/session/reportUsage")(report_usage)
    server.feature("ctx/session/audit")(audit)
    server.feature("ctx/session/list")(list_sessions)
    server.feature("ctx/session/close")(close)
    server.segment_listeners.append(on_segment_changed)
