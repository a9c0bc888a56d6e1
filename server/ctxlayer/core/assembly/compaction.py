"""Rolling compaction of a session's history (T7 to T10, seed 002), as data plus pure steps.

State (``Compaction``, persisted by the store as one JSON value):
- ``upto_seq``: history messages with a smaller seq are replaced by the summary;
- ``summary``: the decided/open part (from the client's summarizer or the offline one);
- ``constraints``: the user's hard constraints, verbatim, extracted deterministically;
- ``facts``: the facts ledger (paths, commands, error codes, line numbers, identifiers,
  numbers) extracted deterministically from every replaced message and merged;
- ``rewrites``: messages still shown verbatim that an earlier stage shortened (seq -> text).

When history passes ``trigger`` (70%) of its share, the stages run in order on the messages
older than the newest ``keep_recent``, each with its own budget, and stop as soon as history is
back under ``target`` of its share:
1. tool-output compression: an output over ``tool_output_cap`` tokens becomes its outline;
2. dedup: a later copy of content already shown becomes a reference to the first copy;
3. extractive compression of long prose to the task's ratio (T10);
4. the summarizer: everything older than the newest ``keep_recent`` is replaced by one
   summary message (decided / open / hard constraints + the facts ledger).
Rules and the working zone never enter compaction. Facts are extracted only from the messages
newly replaced, so a compaction costs the text it replaces, never the whole session.
Must not: call a model (the summary text is passed in) or touch storage.
"""

from __future__ import annotations

from collections.abc import Callable

import msgspec

from ctxlayer.core.assembly.history import History
from ctxlayer.core.assembly.summary import hard_constraints, offline_summary, render_summary
from ctxlayer.core.compress.extractive import KEEP_RATIO, classify_task, compress_prose
from ctxlayer.core.compress.facts import Facts, extract_facts, format_ledger
from ctxlayer.core.compress.tool_output import compress_tool_output
from ctxlayer.core.text import describe, normalized_hash
from ctxlayer.core.tokens import Tokenizer, message_tokens
from ctxlayer.protocol import AuditEntry, Message


class Rewrite(msgspec.Struct, kw_only=True):
    content: str
    tokens: int  # message tokens after the rewrite


class Compaction(msgspec.Struct, kw_only=True):
    upto_seq: int = 0
    replaced: int = 0
    summary: str = ""
    constraints: list[str] = msgspec.field(default_factory=list)
    facts: Facts | None = None
    rewrites: dict[int, Rewrite] = msgspec.field(default_factory=dict)
    # the rendered summary message and its tokens, kept with the ledger size they were made for
    rendered: str = ""
    rendered_tokens: int = 0
    ledger_chars: int = 0


class CompactionPolicy(msgspec.Struct, frozen=True, kw_only=True):
    trigger: float = 0.7
    target: float = 0.5
    keep_recent: int = 6
    tool_output_cap: int = 1000
    dedup_min_tokens: int = 32
    extractive_min_tokens: int = 200
    summary_max_tokens: int = 1000
    summary_share: float = 0.15  # of the history share, for decided/open
    ledger_share: float = 0.25  # of the history share, for the facts ledger
    chars_per_token: int = 3  # a conservative guess for sizing the ledger in characters


def summary_message(state: Compaction) -> Message | None:
    if not state.replaced:
        return None
    return Message(
        role="user", content=state.rendered, id=f"ctx:summary:{state.upto_seq}", kind="summary"
    )


def verbatim_start(history: History, state: Compaction) -> int:
    return history.index_of_seq(state.upto_seq)


def shown_message(history: History, state: Compaction, index: int) -> Message:
    msg = history.messages[index]
    rw = state.rewrites.get(history.seqs[index])
    return msg if rw is None else msgspec.structs.replace(msg, content=rw.content)


def history_tokens(history: History, state: Compaction) -> int:
    """Tokens of the history layer: the summary message plus every verbatim message."""
    start = verbatim_start(history, state)
    total = history.tokens_between(start, len(history)) + state.rendered_tokens
    if state.rewrites:
        seqs = history.seqs
        for i in range(start, len(history)):
            rw = state.rewrites.get(seqs[i])
            if rw is not None:
                total += rw.tokens - history.tokens[i]
    return total


def rerender(state: Compaction, ledger_chars: int, counter: Tokenizer) -> None:
    """Render the summary message for a ledger size (only when the state or the size changed)."""
    if not state.replaced:
        state.rendered, state.rendered_tokens, state.ledger_chars = "", 0, ledger_chars
        return
    ledger = format_ledger(state.facts, ledger_chars) if state.facts else ""
    state.rendered = render_summary(state.replaced, state.summary, state.constraints, ledger)
    state.ledger_chars = ledger_chars
    state.rendered_tokens = message_tokens(summary_message(state), counter)


def fitted_summary(state: Compaction, room: int,
                   counter: Tokenizer) -> tuple[Message, int] | None:
    """The summary message shortened to fit ``room`` tokens, and its tokens, for one assembly.

    The facts ledger gives way first, then the decided/open part; the user's hard constraints
    never do: None when they alone (with the header) do not fit.
    """
    def render(ledger_chars: int, summary_chars: int) -> tuple[Message, int]:
        ledger = format_ledger(state.facts, ledger_chars) if state.facts and ledger_chars else ""
        summary = state.summary
        if summary_chars < len(summary):
            summary = summary[:summary_chars].rstrip() + ("…" if summary_chars else "")
        msg = Message(role="user", content=render_summary(
            state.replaced, summary, state.constraints, ledger),
            id=f"ctx:summary:{state.upto_seq}", kind="summary")
        return msg, message_tokens(msg, counter)

    def largest(fits_at: Callable[[int], tuple[Message, int]], top: int):
        lo, best = 0, fits_at(0)
        hi = top
        while lo < hi:
            mid = (lo + hi + 1) // 2
            candidate = fits_at(mid)
            if candidate[1] <= room:
                lo, best = mid, candidate
            else:
                hi = mid - 1
        return best

    if render(0, 0)[1] > room:
        return None
    whole = len(state.summary)
    if render(0, whole)[1] <= room:
        return largest(lambda n: render(n, whole), state.ledger_chars)
    return largest(lambda n: render(0, n), whole)


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

    def rewrite(i: int, content: str, action: str, reason: str) -> None:
        msg = history.messages[i]
        before = _tokens_of(history, state, i)
        new_msg = msgspec.structs.replace(msg, content=content)
        after = message_tokens(new_msg, counter)
        if after < before:
            state.rewrites[history.seqs[i]] = Rewrite(content=content, tokens=after)
            audit.append(_audit(msg, i, action, reason, before, after))

    # 1. tool outputs over their cap
    for i in range(start, stop):
        msg = history.messages[i]
        if (msg.role == "tool" or msg.kind == "toolOutput") and history.seqs[i] not in state.rewrites:
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
    # 3. extractive compression of long prose, to the task's ratio
    ratio = KEEP_RATIO[classify_task(task_text)]
    for i in range(start, stop):
        msg = history.messages[i]
        if (msg.role in ("user", "assistant") and not msg.tool_calls and not msg.pinned
                and msg.kind in (None, "chat") and history.seqs[i] not in state.rewrites
                and history.tokens[i] >= policy.extractive_min_tokens):
            short = compress_prose(msg.content, ratio, ())
            rewrite(i, short, "compressed", f"extractive compression to {ratio:.0%} of its prose")
        if history_tokens(history, state) <= target_tokens:
            break
    return audit


def merge_all(many: list[Facts]) -> Facts:
    """Facts.merge over many at once: one dedup per kind instead of one per message."""
    fields = Facts.__struct_fields__
    return Facts(*(tuple(dict.fromkeys(v for f in many for v in getattr(f, name)))
                            for name in fields))


def _tokens_of(history: History, state: Compaction, i: int) -> int:
    rw = state.rewrites.get(history.seqs[i])
    return history.tokens[i] if rw is None else rw.tokens


def covered_messages(history: History, state: Compaction, stop: int) -> list[Message]:
    """The messages the summary stage would replace, as shown (rewrites applied)."""
    return [shown_message(history, state, i) for i in range(verbatim_start(history, state), stop)]


def apply_summary(
    history: History, state: Compaction, stop: int, summary_text: str | None,
    summary_chars: int, ledger_chars: int, counter: Tokenizer,
) -> tuple[Compaction, list[AuditEntry]]:
    """Stage 4: replace messages [verbatim start, stop) by the summary; return the new state.

    ``summary_text`` is the client's summary of (previous summary + covered messages); None
    means the offline extractive one. Constraints and facts are always extracted here.
    """
    start = verbatim_start(history, state)
    covered = covered_messages(history, state, stop)
    originals = history.messages[start:stop]
    if summary_text is None or not summary_text.strip():
        summary_text = offline_summary(covered, state.summary, summary_chars)
    facts = merge_all(([state.facts] if state.facts else [])
                      + [extract_facts(m.content) for m in originals])
    new = Compaction(
        upto_seq=history.seqs[stop - 1] + 1,
        replaced=state.replaced + len(covered),
        summary=summary_text.strip(),
        constraints=hard_constraints(originals, state.constraints),
        facts=facts,
        rewrites={s: r for s, r in state.rewrites.items() if s >= history.seqs[stop - 1] + 1},
    )
    rerender(new, ledger_chars, counter)
    audit = [
        _audit(msg, start + k, "summarized", "rolling compaction: history passed its trigger",
               _tokens_of(history, state, start + k), 0)
        for k, msg in enumerate(covered)
    ]
    return new, audit
