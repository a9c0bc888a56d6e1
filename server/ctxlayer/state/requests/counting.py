"""ctx/count and ctx/trim: tokens of texts and messages; a conversation fitted into a budget.

`count`: `tokens` lists the texts' counts, then one per message as the client sent it (each
with its per-message overhead), the system prompt a format keeps apart counted apart; `total`
is their sum, plus the reply priming when messages were given (protocol.CountResult).
`trim`: the core's trim on a worker thread; going over budget is reported, not an error.
Both are plain functions the requests table places (a small count runs on the loop).
"""

from __future__ import annotations

import logging

from ctxlayer import protocol
from ctxlayer.core.errors import ContextError
from ctxlayer.state.caller import Caller
from ctxlayer.state.requests.messages import attachments, decode, encode, unwrap

log = logging.getLogger(__name__)


def inline(caller: Caller, p: protocol.CountParams) -> tuple[str | None, int]:
    """(the model, about how many characters): a small count runs on the loop."""
    return caller.model(p.model), sum(map(len, p.texts or [])) + sum(map(_size, p.messages or []))


def count(caller: Caller, p: protocol.CountParams) -> protocol.CountResult:
    """Small inputs on the loop, large ones on a worker thread (the table's `inline`)."""
    from ctxlayer.core.formats import sent_tokens
    from ctxlayer.core.tokens import OPENAI_FORMAT

    model = caller.model(p.model)
    counter = caller.state.tokenizers.guarded(model)
    raw = p.messages or []
    tokens = [counter.count(t) for t in p.texts or []]
    system, priming = None, 0
    if raw or p.system is not None:
        decoded = decode(p.format, raw, p.system, counter, model=model)
        # in the client's terms: the engine reads some messages as several, some as one
        sent = sent_tokens(decoded, counter)
        tokens += sent.messages
        system = sent.system
        priming = OPENAI_FORMAT.reply_priming if decoded.messages else 0
    return protocol.CountResult(tokens=tokens, total=sum(tokens) + (system or 0) + priming,
                                system_tokens=system, reply_priming=priming)


def _size(message: object) -> int:
    """About how much a message costs to count, without rendering it: its text content; parts
    and anything else are never small (they go to a worker thread)."""
    from ctxlayer.state.tokens import INLINE_CHARS

    content = message.get("content") if isinstance(message, dict) else None
    return len(content) if isinstance(content, str) else INLINE_CHARS + 1


def trim(caller: Caller, p: protocol.TrimParams) -> protocol.TrimResult:
    from ctxlayer.core.formats import written
    from ctxlayer.core.trim import trim as trim_messages
    from ctxlayer.tokenizers import memo_for

    model = caller.model(p.model)
    if p.reserve_output is not None and p.reserve_output < 0:
        raise ContextError("invalid", "must not be negative", field="reserveOutput")
    budget = p.budget if p.budget is not None else caller.default_budget(model, p.reserve_output)
    memo = memo_for(model)  # derived texts shared by every trim with this tokenizer
    counter = caller.state.tokenizers.guarded(model)
    decoded = decode(p.format, p.messages, p.system, counter, model=model)
    options = trim_options(caller, p.strategy, p.format, decoded)
    files = attachments(caller, decoded.messages)
    # the caller's last trim, when no other trim of it holds it: a warm re-trim
    warm = caller.trim_lock.acquire(blocking=False)
    try:
        report = trim_messages(decoded.messages, budget, counter, options=options,
                               docs=tuple(p.docs or ()), memo=memo, attachments=files,
                               cache=caller.trim_cache if warm else None)
    finally:
        if warm:
            caller.trim_lock.release()
    out = encode(decoded, report.messages)
    # counted from what goes back, after the codec's repairs, as `ctxlayer trim` counts it
    sent, tokens = written(decoded, out)
    log.info("trim: %d messages in, %d kept, %d/%d tokens", len(p.messages),
             len(sent.messages), tokens, budget)
    dropped, truncated = list(report.dropped), list(report.truncated)
    for entry in out.audit:  # what the codec changed to keep the request valid
        (dropped if entry.action == "dropped" else truncated).append(entry)
    messages, system = unwrap(p.format, out.payload)
    return protocol.TrimResult(messages=messages, system=system, tokens=tokens,
                               budget=report.budget, dropped=dropped, truncated=truncated,
                               percent=round(100 * tokens / max(1, report.budget), 1))


def trim_options(caller: Caller, strategy: str | None, fmt: str, decoded=None):
    """The trim options of this workspace's `[trim]` settings for a conversation in `fmt`
    (the request's strategy first; `decoded`, the request as read: its format's rules)."""
    from ctxlayer.config import TrimConfig

    cfg = getattr(caller.policy.config, "trim", None) or TrimConfig()
    return cfg.options(strategy, fmt, decoded)
