"""ctx/assemble and ctx/session/compact; a session's system layers.

Plain functions on a session thread, in the session's lane (the requests table places them).
The core decides whether a compaction needs a summary. When it does and the caller can write
one (a client that declared `capabilities.experimental.ctxlayer.summarize`), the function
returns an `Ask`: the dispatcher asks the caller on the loop, giving it at most `[session]
summarizer_timeout` seconds, and goes on with the answer; a slow, failing or absent answer
falls back to the offline summary, so the turn is never blocked longer than that.
The workspace segment is given by the loop at the start of an assembly: a change that lands
during one applies to the next. The system prompt a session was last assembled with is
remembered, so a workspace change re-measures the session with the same layers.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

import msgspec

from ctxlayer import protocol
from ctxlayer.core.assembly.layers import is_working_item
from ctxlayer.core.errors import ContextError
from ctxlayer.core.text import counted
from ctxlayer.state.caller import Caller
from ctxlayer.state.requests.budgets import fitted_to, lowered, publish
from ctxlayer.state.requests.place import Ask

log = logging.getLogger(__name__)


def segment_layers(caller: Caller, segment: protocol.WorkspaceSegment,
                   spec: protocol.SystemPromptParams | None = None, *,
                   model: str | None = None, session_id: str | None = None) -> Any:
    """The system layers of an assembly: the full layered prompt when asked, else the segment,
    counted with the session's model."""
    from ctxlayer.core.tokens import message_tokens
    from ctxlayer.state.session_service import SystemLayers

    model = model or caller.model(spec.model if spec is not None else None)
    counter = caller.state.tokenizers.guarded(model)
    if spec is None:
        if not segment.text:
            return SystemLayers()
        msg = protocol.Message(role="system", content=segment.text, id="ctx:workspace",
                               pinned=True, hide=True)
        return SystemLayers(messages=[msg], cache_boundary=None,
                            workspace_tokens=message_tokens(msg, counter))
    from ctxlayer.core.prompt import build_system_prompt, spec_from_params
    from ctxlayer.state.requests.workspace import session_history
    from ctxlayer.tokenizers import prompt_traits

    built_spec = spec_from_params(spec, traits=prompt_traits(model),
                                  workspace_parts=[(p.name, p.text) for p in segment.parts],
                                  history=session_history(caller, spec, session_id))
    built = build_system_prompt(built_spec, counter)
    ws = sum(message_tokens(m, counter) for m in built.messages if m.id == "ctx:workspace")
    return SystemLayers(messages=built.messages, cache_boundary=built.cache_boundary,
                        workspace_tokens=ws)


def session_layers(caller: Caller, session_id: str, segment: protocol.WorkspaceSegment,
                   spec: protocol.SystemPromptParams | None = None) -> Any:
    """This session's layers now: with `spec` when given (an assembly that succeeds with it
    keeps it: `SessionService.assemble`), else with the one it remembers."""
    svc = caller.state.sessions
    if spec is None:
        spec = svc.system_spec(caller.workspace, session_id)
    model = svc.model_of(caller.workspace, session_id)
    return segment_layers(caller, segment, spec, model=model, session_id=session_id)


def assembling(caller: Caller, session_id: str, then: Callable[[Any], Any],
               **kwargs: Any) -> Any:
    """Assemble, then `then(out)`; an `Ask` first when the core needs the caller's summary
    (the dispatcher asks, then assembles again with its answer, or offline without one)."""
    svc, workspace = caller.state.sessions, caller.workspace
    can = caller.summarize is not None
    out = svc.assemble(workspace, session_id, client_summarizer=can, **kwargs)
    if out.needs_summary is None:
        return then(out)

    def with_summary(text: str | None) -> Any:
        return then(svc.assemble(workspace, session_id, client_summarizer=can,
                                 summary_text=text, offline=text is None, **kwargs))

    return Ask(out.needs_summary, with_summary)


def assemble(caller: Caller, p: protocol.AssembleParams,
             segment: protocol.WorkspaceSegment) -> Any:
    system = session_layers(caller, p.session_id, segment, p.system_prompt)
    budget, lowered = kept_within_window(caller, p)
    # fitted as the format sends it: its parts, for the session's model, at this turn
    return assembling(caller, p.session_id, lambda out: _assembled(caller, p, out, lowered),
                      budget=budget, system=system, fmt=p.format, spec=p.system_prompt)


def kept_within_window(caller: Caller, p: protocol.AssembleParams) -> tuple[int | None, str | None]:
    """(the budget to assemble at, what to say of it). The session's own budget, when it is
    over the window its client now names, is lowered for this assembly to the model's default
    budget in that window (`budgets.lowered`), and the notice says so: at the kept budget the
    prompt was one the provider refuses, and nothing said it (100,000 assembled 30,000 tokens
    for a 16,000-token window). A one-off budget is the caller's own: taken, and said when
    over (`over_window`)."""
    if p.budget is not None:
        return p.budget, None
    low = lowered(caller, p.session_id)
    return (None, None) if low is None else (low.budget, low.said())


def _assembled(caller: Caller, p: protocol.AssembleParams, out: Any,
               lowered: str | None = None) -> protocol.AssembleResult:
    result = out.result
    # everything this assembly did: what it cut, shortened and summarized (ctx/why adds it to
    # what the session's compaction state says of the result: summaries made before it too)
    caller.state.sessions.keep_why(caller.workspace, p.session_id,
                                   out.audit or [*result.dropped, *result.truncated])
    log.info("assemble %s: %d messages, %d/%d tokens%s", p.session_id, len(result.messages),
             result.tokens.total, result.budget, ", compacted" if result.compacted else "")
    svc = caller.state.sessions
    model = svc.model_of(caller.workspace, p.session_id)
    forms = svc.stored_for(caller.workspace, p.session_id, result.messages)
    notice, over = assembly_notice(result), lowered or over_window(caller, p.budget, model)
    if over is not None:
        notice = f"{notice}; {over}" if notice else f"ctxlayer: {over}"
    result = msgspec.structs.replace(result, notice=notice)
    # an assembly is a request of this chat: it becomes the workspace's live chat. Its
    # budget is what it sent, layer by layer (ctx/session/budget answers it until a change)
    budget = svc.assembled(caller.workspace, p.session_id)
    publish(caller, msgspec.structs.replace(budget, source="session",
                                            compacted=result.compacted,
                                            notice=result.notice), request=True)
    result = in_format(caller, p.format, result, model, forms)
    # a usage report without an estimate compares the provider's count with what was sent
    svc.note_prompt(caller.workspace, p.session_id, result.tokens.total)
    return result


def over_window(caller: Caller, budget: int | None, model: str) -> str | None:
    """What to say of a one-off budget over the session's model's window. It is taken (a
    caller reads a whole history back with one, as tests do), but an open or a configure
    asking for it is refused: a prompt assembled at it may be one the provider refuses, and
    nothing said so (60,000 for gpt-3.5-turbo's 16,385 answered 30,128 tokens, notice null)."""
    window = caller.widest_window(model) if budget is not None else None
    if window is None or budget is None or budget <= window:
        return None
    return (f"budget {budget:,} is over the {window:,}-token context window of "
            f"{model}; {model} may refuse a prompt over it")


def assembly_notice(result: protocol.AssembleResult) -> str | None:
    """The one line an editor shows when an assembly summarized, dropped or shortened. The
    working items it left out or shortened are said apart, with why: counted as messages, a
    required item left out for the working zone's share read "dropped 1 message to fit 1,696
    / 100,000 tokens", though no message was dropped and the budget was far from full."""
    items = [e for e in (*result.dropped, *result.truncated) if is_working_item(e)]
    dropped = [e for e in result.dropped if not is_working_item(e)]
    # a restored message shown whole over its room is said in the audit, not shortened
    truncated = [e for e in result.truncated if not is_working_item(e)
                 and e.action != "restored"]
    did = []
    summary = result.summary
    if summary is not None and result.compacted:
        did.append(f"summarized older turns ({summary_said(summary)})")
    elif result.compacted:
        did.append("summarized older turns")
    if dropped:
        did.append(f"dropped {counted(len(dropped), 'message')}")
    if truncated:
        did.append(f"shortened {counted(len(truncated), 'message')}")
    said = [f"{' and '.join(did)} to fit {result.tokens.total:,} / {result.budget:,} tokens"
            ] if did else []
    if summary is not None and not result.compacted:
        # a summary written by an earlier assembly is sent again: said every time it is, the
        # second assembly of an unchanged session answered notice null over "[Summary of..."
        said.insert(0, f"the history opens with a summary of earlier turns "
                       f"({summary_said(summary)})")
    by_reason: dict[tuple[str, str], list[str]] = {}
    for e in items:
        by_reason.setdefault((e.action, e.reason), []).append(e.message_id or "?")
    for (action, reason), ids in by_reason.items():
        verb = "left out" if action == "dropped" else "shortened"
        names = ", ".join(ids[:5]) + (f" and {len(ids) - 5} more" if len(ids) > 5 else "")
        said.append(f"{verb} {'working item' if len(ids) == 1 else 'working items'} {names} "
                    f"({reason})")
    return f"ctxlayer: {'; '.join(said)}" if said else None


def summary_said(summary: protocol.SummaryShown) -> str:
    """What a summary replaced, in a few words: its messages, their first and last ids and the
    non-text parts they held (not sent)."""
    ids = (f", {summary.first_id} to {summary.last_id}" if summary.first_id
           and summary.first_id != summary.last_id else
           f", {summary.first_id}" if summary.first_id else "")
    parts = summary.parts
    lost = (f"; not sent: {', '.join(parts[:3])}"
            + (f" and {len(parts) - 3} more" if len(parts) > 3 else "")) if parts else ""
    return f"{counted(summary.replaced, 'message')}{ids}{lost}"


def in_format(caller: Caller, fmt: str, result: protocol.AssembleResult, model: str,
              forms: list | None = None) -> protocol.AssembleResult:
    """The assembled messages written in `fmt`, ready to send: the system layers as its
    system (anthropic) or system messages (openai), alternation repaired and every repair
    audited. A message stored in this format goes out as it came (`forms`: its stored
    provider form, core/formats/stored.py); one stored in another is written from its text
    and tool calls, and what it loses is named in `truncated`. The system prompt's dynamic
    section stays after the history: where the format keeps its system prompt before the
    conversation (anthropic), in the last user turn (`Codec.after_history`), and
    `cacheBoundary` then counts the `system` blocks of the stable prefix."""
    from ctxlayer.core import formats
    from ctxlayer.core.formats import stored

    forms = forms if forms is not None else [None] * len(result.messages)
    if fmt == "ctxlayer" and not any(forms):
        return result
    codec = formats.codec(fmt)
    assembled, dynamic = result.messages, []
    if codec.after_history is not None:
        assembled, dynamic = _without_dynamic(result.messages)
        forms = forms[:len(assembled)]
    counter = caller.state.tokenizers.guarded(model)  # counted with the session's model
    decoded, kept, back, lost = stored.rebuild(fmt, assembled, forms, counter)
    if fmt == "ctxlayer":
        return msgspec.structs.replace(result, truncated=[*result.truncated, *lost])
    out = formats.encode(decoded, kept)
    repairs = stored.mapped_back(out.audit, back)
    truncated = [*result.truncated, *lost, *[e for e in repairs if e.action != "dropped"]]
    dropped = [*result.dropped, *[e for e in repairs if e.action == "dropped"]]
    from ctxlayer.state.requests.messages import unwrap

    messages, system = unwrap(fmt, out.payload)
    if codec.after_history is not None:
        messages = codec.after_history(messages, [m.content for m in dynamic])
    return msgspec.structs.replace(result, messages=messages, system=system, dropped=dropped,
                                   truncated=truncated,
                                   tokens=sent_tokens(fmt, messages, system, result.tokens,
                                                      counter, model))


def sent_tokens(fmt: str, messages: list, system: Any, fitted: protocol.AssembleTokens,
                counter: Any, model: str) -> protocol.AssembleTokens:
    """The assembly's tokens as ctx/count counts what it sends: the encoder's repairs (turns
    merged, a call without its result removed) change the request after the fit, and what
    they change is history's. Reported as fitted, an assembly into another format said the
    parts the format does not carry (7,961 where 2,624 went)."""
    from ctxlayer.core.tokens import conversation_tokens
    from ctxlayer.state.requests.messages import decode

    try:
        total = conversation_tokens(
            decode(fmt, messages, system, counter, model=model).messages, counter)
    except ContextError as exc:  # a count of what is sent never costs the assembly itself
        log.warning("ctx/assemble: the %s request as sent could not be counted again (%s); "
                    "the fitted figure is reported", fmt, exc)
        return fitted
    if total == fitted.total:
        return fitted
    return msgspec.structs.replace(fitted, total=total,
                                   history=max(0, fitted.history + total - fitted.total))


def _without_dynamic(messages: list) -> tuple[list, list]:
    """(the assembled messages, the dynamic section the assembly put last)."""
    from ctxlayer.core.prompt import DYNAMIC_ID

    end = len(messages)
    while end and getattr(messages[end - 1], "id", None) == DYNAMIC_ID:
        end -= 1
    return messages[:end], messages[end:]


def compact(caller: Caller, p: protocol.SessionCompactParams,
            segment: protocol.WorkspaceSegment) -> Any:
    if p.keep_recent is not None and p.keep_recent < 0:
        raise ContextError("invalid", "must not be negative", field="keepRecent")
    svc, workspace = caller.state.sessions, caller.workspace
    system = session_layers(caller, p.session_id, segment)
    before, _ = svc.summary_of(workspace, p.session_id)

    def compacted(_: Any) -> protocol.SessionCompactResult:
        after, summary = svc.summary_of(workspace, p.session_id)
        if summary is None:
            summary = protocol.Message(role="user", content="", id="ctx:summary:none",
                                       kind="summary")
        publish(caller, fitted_to(caller, p.session_id))
        return protocol.SessionCompactResult(summary=summary, replaced=after - before)

    return assembling(caller, p.session_id, compacted, system=system, force=True,
                      keep_recent=p.keep_recent)
