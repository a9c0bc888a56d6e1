"""ctx/assemble and ctx/session/compact; asking the client's model for a summary.

The core decides whether a compaction needs a summary. When it does and the caller can write
one (a client that declared `capabilities.experimental.ctxlayer.summarize`), the caller is
asked and given at most `[session] summarizer_timeout` seconds; a slow, failing or absent
answer falls back to the offline summary, so the turn is never blocked longer than that.
The workspace segment is read once at the start of an assembly: a change that lands during one
applies to the next. The system prompt a session was last assembled with is remembered, so a
workspace change re-measures the session with the same layers.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any

import msgspec

from ctxlayer import protocol
from ctxlayer.core.errors import ContextError
from ctxlayer.state.caller import Caller

log = logging.getLogger(__name__)


async def segment_layers(caller: Caller, segment: protocol.WorkspaceSegment,
                         spec: protocol.SystemPromptParams | None = None, *,
                         model: str | None = None, session_id: str | None = None) -> Any:
    """The system layers of an assembly: the full layered prompt when asked, else the segment,
    counted with the session's model."""
    from ctxlayer.core.tokens import message_tokens
    from ctxlayer.store.sessions import SystemLayers

    model = model or caller.model(spec.model if spec is not None else None)
    tokenizers = caller.state.tokenizers
    if spec is None:
        if not segment.text:
            return SystemLayers()
        msg = protocol.Message(role="system", content=segment.text, id="ctx:workspace",
                               pinned=True, hide=True)
        tokens = await tokenizers.run(model, lambda c: message_tokens(msg, c),
                                      size=len(segment.text))
        return SystemLayers(messages=[msg], cache_boundary=None, workspace_tokens=tokens)
    from ctxlayer.core.prompt import build_system_prompt, spec_from_params
    from ctxlayer.state.requests.workspace import session_history
    from ctxlayer.tokenizers import prompt_traits

    built_spec = spec_from_params(spec, traits=prompt_traits(model),
                                  workspace_parts=[(p.name, p.text) for p in segment.parts],
                                  history=await session_history(caller, spec, session_id))

    def build(counter: Any) -> SystemLayers:
        built = build_system_prompt(built_spec, counter)
        ws = sum(message_tokens(m, counter) for m in built.messages if m.id == "ctx:workspace")
        return SystemLayers(messages=built.messages, cache_boundary=built.cache_boundary,
                            workspace_tokens=ws)

    return await tokenizers.run(model, build, size=1 << 62)


async def session_layers(caller: Caller, session_id: str,
                         spec: protocol.SystemPromptParams | None = None) -> Any:
    """This session's layers now: with `spec`, remembered for the next workspace change."""
    state = caller.state
    key = (caller.workspace, session_id)
    if spec is not None:
        state.system_specs[key] = spec
    else:
        spec = state.system_specs.get(key)
    model = await state.work(state.sessions.model_of, caller.workspace, session_id)
    return await segment_layers(caller, await caller.segment(), spec, model=model,
                                session_id=session_id)


async def ask_summary(caller: Caller, request: Any) -> str | None:
    """The caller's summary, or None when it fails or is slower than the timeout."""
    if caller.summarize is None:
        return None
    params = protocol.SummarizeParams(messages=request.messages,
                                      instructions=request.instructions,
                                      max_tokens=request.max_tokens)
    timeout = caller.policy.summarizer_timeout
    try:
        text = await asyncio.wait_for(caller.summarize(params), timeout)
        return text if text and text.strip() else None
    except TimeoutError:
        log.warning("ctx/summarize: no answer within %.1f s; offline summary used", timeout)
    except Exception as exc:
        log.warning("ctx/summarize failed (%s); offline summary used", exc)
    return None


async def run_assembly(caller: Caller, session_id: str, **kwargs: Any) -> Any:
    """Assemble, asking the caller for a summary when the core needs one."""
    state = caller.state
    can = caller.summarize is not None
    out = await state.work(state.sessions.assemble, caller.workspace, session_id,
                           client_summarizer=can, **kwargs)
    if out.needs_summary is not None:
        text = await ask_summary(caller, out.needs_summary)
        out = await state.work(state.sessions.assemble, caller.workspace, session_id,
                               client_summarizer=can, summary_text=text, offline=text is None,
                               **kwargs)
    return out


async def assemble(caller: Caller, p: protocol.AssembleParams) -> protocol.AssembleResult:
    system = await session_layers(caller, p.session_id, p.system_prompt)
    out = await run_assembly(caller, p.session_id, budget=p.budget, system=system)
    result = out.result
    # everything this assembly did: what it cut, shortened and summarized
    caller.state.last_assembly_audit[(caller.workspace, p.session_id)] = list(
        out.audit or [*result.dropped, *result.truncated])
    log.info("assemble %s: %d messages, %d/%d tokens%s", p.session_id, len(result.messages),
             result.tokens.total, result.budget, ", compacted" if result.compacted else "")
    state = caller.state
    model = await state.work(state.sessions.model_of, caller.workspace, p.session_id)
    forms = await state.work(state.sessions.stored_for, caller.workspace, p.session_id,
                             result.messages)
    result = msgspec.structs.replace(result, notice=assembly_notice(result))
    # an assembly is a request of this chat: it becomes the workspace's live chat
    from ctxlayer.state.requests.budgets import publish

    budget = await state.work(state.sessions.budget, caller.workspace, p.session_id)
    publish(caller, msgspec.structs.replace(
        budget, used=result.tokens.total, limit=result.budget,
        percent=round(100 * result.tokens.total / max(1, result.budget), 1), source="session",
        compacted=result.compacted, notice=result.notice), request=True)
    return await in_format(caller, p.format, result, model, forms)


def assembly_notice(result: protocol.AssembleResult) -> str | None:
    """The one line an editor shows when an assembly summarized, dropped or shortened."""
    did = []
    if result.compacted:
        did.append("summarized older turns")
    if result.dropped:
        did.append(f"dropped {len(result.dropped)} messages")
    if result.truncated:
        did.append(f"shortened {len(result.truncated)} messages")
    if not did:
        return None
    return (f"ctxlayer: {' and '.join(did)} to fit {result.tokens.total:,} / "
            f"{result.budget:,} tokens")


async def in_format(caller: Caller, fmt: str, result: protocol.AssembleResult, model: str,
                    forms: list | None = None) -> protocol.AssembleResult:
    """The assembled messages written in `fmt`, ready to send: the system layers as its
    system (anthropic) or system messages (openai), alternation repaired and every repair
    audited. A message stored in this format goes out as it came (`forms`: its stored
    provider form, core/formats/stored.py); one stored in another is written from its text
    and tool calls, and what it loses is named in `truncated`."""
    from ctxlayer.core import formats
    from ctxlayer.core.formats import stored

    forms = forms if forms is not None else [None] * len(result.messages)
    if fmt == "ctxlayer" and not any(forms):
        return result

    def write(counter: Any) -> Any:
        decoded, kept, back, lost = stored.rebuild(fmt, result.messages, forms, counter)
        if fmt == "ctxlayer":
            return None, [], lost
        if fmt not in ("openai", "anthropic"):  # a format kept in no session: text as before
            decoded = formats.decode(fmt, {formats.codec(fmt).conversation: []},  # type: ignore
                                     counter)
            kept = result.messages
        out = formats.encode(decoded, kept)
        return out, stored.mapped_back(out.audit, back), lost

    # counted with the session's model
    out, repairs, lost = await caller.state.tokenizers.run(model, write, size=1 << 62)
    truncated = [*result.truncated, *lost, *[e for e in repairs if e.action != "dropped"]]
    dropped = [*result.dropped, *[e for e in repairs if e.action == "dropped"]]
    if out is None:
        return msgspec.structs.replace(result, truncated=truncated)
    from ctxlayer.state.requests.messages import unwrap

    messages, system = unwrap(fmt, out.payload)
    return msgspec.structs.replace(result, messages=messages, system=system, dropped=dropped,
                                   truncated=truncated)


async def compact(caller: Caller, p: protocol.SessionCompactParams) -> protocol.SessionCompactResult:
    if p.keep_recent is not None and p.keep_recent < 0:
        raise ContextError("invalid", "must not be negative", field="keepRecent")
    state = caller.state
    system = await session_layers(caller, p.session_id)
    before, _ = await state.work(state.sessions.summary_of, caller.workspace, p.session_id)
    await run_assembly(caller, p.session_id, system=system, force=True, keep_recent=p.keep_recent)
    after, summary = await state.work(state.sessions.summary_of, caller.workspace, p.session_id)
    if summary is None:
        summary = protocol.Message(role="user", content="", id="ctx:summary:none", kind="summary")
    budget = await state.work(state.sessions.budget, caller.workspace, p.session_id)
    state.events.budget(caller.workspace, budget, caller)
    return protocol.SessionCompactResult(summary=summary, replaced=after - before)
