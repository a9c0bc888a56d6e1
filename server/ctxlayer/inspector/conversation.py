"""The inspector's data for a conversation: trim it with the real engine (pipeline strategy)
and join each message's count with what the trim did, and trim it again at the slider's
budgets. Pure: the counter is injected, and the caller (the ctx/inspect handler,
`ctxlayer inspect --html`) does the I/O.
"""

from __future__ import annotations

from collections.abc import Sequence

from ctxlayer.core.assembly.compaction import CompactionPolicy
from ctxlayer.core.memo import Memo
from ctxlayer.core.tokens import OPENAI_FORMAT, Tokenizer, message_tokens
from ctxlayer.core.trim import TrimOptions, trim
from ctxlayer.inspector.data import InspectorData, build_inspector_data
from ctxlayer.inspector.steps import after_tools, engine_steps, step_budgets
from ctxlayer.protocol import Message

#: where a session would start compacting this conversation: the default policy's trigger
COMPACTION_SHARE = CompactionPolicy().trigger


def inspect_conversation(
    messages: Sequence[Message],
    budget: int,
    counter: Tokenizer,
    *,
    model: str,
    window: int,
    title: str = "ctxlayer context",
    cache_boundary: int | None = None,
    tools: int = 0,
    user_first: bool = False,
) -> InspectorData:
    """Trim `messages` into `budget` and describe the outcome for the page, with the trim's
    outcome at each of the slider's budgets. `tools` is what the request's tool definitions
    cost: they share every budget (the messages are trimmed into what they leave, as
    `ctxlayer trim` and the gateway do) and count in the system layer. `user_first`: the
    request's format starts with a user turn (TrimOptions.user_first), as `trim` fits it."""
    memo = Memo()  # the trims at the other budgets shorten the same outputs again
    options = TrimOptions(strategy="pipeline", user_first=user_first)

    def run(b: int):
        r = after_tools(b, tools, lambda room: trim(
            messages, room, counter, options=options, memo=memo))
        return r.dropped, r.truncated, r.tokens + tools

    dropped, truncated, result_tokens = run(budget)
    steps = engine_steps(messages, [b for b in step_budgets(window, budget) if b != budget], run)
    tokens = [message_tokens(m, counter) for m in messages]
    if cache_boundary is None:
        cache_boundary = next((i for i, m in enumerate(messages) if m.role != "system"), None)
    return build_inspector_data(
        messages,
        tokens,
        model=model,
        window=window,
        budget=budget,
        dropped=dropped,
        truncated=truncated,
        cache_boundary=cache_boundary,
        compaction_at=int(budget * COMPACTION_SHARE),
        title=title,
        overhead=OPENAI_FORMAT.reply_priming,
        steps=steps,
        result_tokens=result_tokens,
        tools=tools,
    )
