"""The cheap compaction stages, run on older verbatim messages before any summary.

In order, each stopping once history is back under its target: a tool output over
``tool_output_cap`` tokens becomes its outline; a later copy of content already shown becomes
a reference to the first copy; long prose is compressed extractively to the task's ratio. The
results are kept as rewrites in the compaction state (the same text on every later assembly,
so the provider's cached prefix survives).
Must not: replace messages by a summary (compaction.py does) or touch storage.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import msgspec

from ctxlayer.core.assembly.compacted import (
    Compaction,
    Rewrite,
    history_tokens,
    shown_message,
    tokens_of,
    verbatim_start,
)
from ctxlayer.core.assembly.history import History, kept_whole
from ctxlayer.core.compress.extractive import KEEP_RATIO, classify_task, compress_prose
from ctxlayer.core.compress.tool_output import compress_tool_output
from ctxlayer.core.groups import is_output
from ctxlayer.core.text import describe, normalized_hash
from ctxlayer.core.tokens import Tokenizer, message_tokens
from ctxlayer.protocol import AuditEntry, Message

if TYPE_CHECKING:
    from ctxlayer.core.assembly.policy import CompactionPolicy


def _audit(msg: Message, index: int, action: str, reason: str, before: int, after: int):
    return AuditEntry(
        action=action, reason=reason, summary=describe(msg), tokens_before=before,
        tokens_after=after, message_id=msg.id, index=index,
    )


def run_cheap_stages(
    history: History, state: Compaction, stop: int, target_tokens: int, counter: Tokenizer,
    policy: CompactionPolicy, task_text: str,
) -> list[AuditEntry]:
    """Stages 1 to 3 on messages [verbatim start, stop); stop early once under the target."""
    audit: list[AuditEntry] = []
    start = verbatim_start(history, state)
    if stop <= start:
        return audit

    whole = set(state.restored)

    def rewrite(i: int, content: str, action: str, reason: str) -> None:
        msg = history.messages[i]
        if history.seqs[i] in whole or kept_whole(msg):
            return  # brought back whole on request, or the client's instruction or pin
        before = tokens_of(history, state, i)
        new_msg = msgspec.structs.replace(msg, content=content)
        after = message_tokens(new_msg, counter)
        if after < before:
            state.rewrites[history.seqs[i]] = Rewrite(content=content, tokens=after,
                                                      action=action, reason=reason)
            audit.append(_audit(msg, i, action, reason, before, after))

    # 1. tool outputs over their cap
    for i in range(start, stop):
        msg = history.messages[i]
        if is_output(msg) and history.seqs[i] not in state.rewrites:
            if history.tokens[i] > policy.tool_output_cap:
                short = compress_tool_output(msg.content, policy.tool_output_cap, counter)
                if short is not None:
                    rewrite(i, short.text, "compressed", f"tool output over its cap of "
                            f"{policy.tool_output_cap} tokens ({short.method})")
    if history_tokens(history, state) <= target_tokens:
        return audit
    # 2. dedup: later copies of content already shown become references
    first_seen: dict[str, Message] = {}
    for i in range(start, len(history)):
        msg = shown_message(history, state, i)
        if history.tokens[i] < policy.dedup_min_tokens or msg.tool_calls:
            continue
        key = normalized_hash(msg.content)
        first = first_seen.get(key)
        if first is None:
            first_seen[key] = msg
        elif i < stop:
            ref = f"[same content as message {first.id or 'above'}, omitted]"
            rewrite(i, ref, "deduplicated", "already in context")
    if history_tokens(history, state) <= target_tokens:
        return audit
    # 3. extractive compression of long prose, to the task's ratio; never to nothing: prose
    # that is one long run without a sentence end kept no sentence, and the message (an
    # agent's task) came back empty
    ratio = KEEP_RATIO[classify_task(task_text)]
    for i in range(start, stop):
        msg = history.messages[i]
        if (msg.role in ("user", "assistant") and not msg.tool_calls and not msg.pinned
                and msg.kind in (None, "chat") and history.seqs[i] not in state.rewrites
                and history.tokens[i] >= policy.extractive_min_tokens):
            short = compress_prose(msg.content, ratio, ())
            if short.strip():
                rewrite(i, short, "compressed",
                        f"extractive compression to {ratio:.0%} of its prose")
        if history_tokens(history, state) <= target_tokens:
            break
    return audit


