"""One assembly of a session into a budget: system layers, rules, working zone, history.

Layers, in prompt order and in order of precedence:
1. system layers (the caller's system prompt and workspace segment): never cut; alone over the
   budget is ContextError("pinned_over_budget");
2. zone A, the rules: one message, never summarized; with zone B limited by the mode's shares
   and cap (modes.py). Rules are always shown whole, borrowing from zone B when over their share;
   system layers and rules together over the budget are ContextError("pinned_over_budget") too
   (never a silent overflow). ``measure`` never raises: it reports ``used`` over ``limit``,
   because it answers requests (append, setMode) whose change is already committed;
3. zone B, the working items: hottest first until the zone's limit, shown in insertion order
   (stable text, so the prompt cache survives heat changes); items that do not fit this time
   are reported as dropped, not deleted;
4. history: the rest. Past ``trigger`` of its share it is compacted (compaction.py).

The summarizer is data: when a compaction needs a summary, the caller declared a client
summarizer and passed no ``summary_text``, the result is ``needs_summary`` (the messages to
summarize); the caller asks its client and calls again with the text, or with ``offline=True``
after a timeout. The core stays pure and synchronous.

Cache awareness: ``cache_boundary`` is the index of the first message after the stable prefix
(the system prompt's own boundary when it has one, else after the rules), and the predicted
reuse is the number of leading tokens identical to the previous assembly's, compared by a
fingerprint of (key, tokens) per message, where a history message's key is its seq.
"""

from __future__ import annotations

import msgspec

from ctxlayer.core.assembly import compaction as cp
from ctxlayer.core.assembly.history import History
from ctxlayer.core.assembly.summary import SUMMARY_INSTRUCTIONS
from ctxlayer.core.errors import ContextError
from ctxlayer.core.text import content_hash, describe
from ctxlayer.core.tokens import OPENAI_FORMAT, Tokenizer, message_tokens
from ctxlayer.core.trim import TrimOptions, trim
from ctxlayer.core.zones.modes import ModeSpec, suggest_mode, zone_limits
from ctxlayer.core.zones.rules import Rule, RulePolicy, place_rules, render_demoted, render_rules
from ctxlayer.core.zones.working import WorkingItem, render_item
from ctxlayer.protocol import (
    AssembleResult,
    AssembleTokens,
    AuditEntry,
    Budget,
    ByLayer,
    Message,
)

Fingerprint = list[tuple[str, int]]


class AssemblyInput(msgspec.Struct, kw_only=True):
    budget: int
    mode: str
    mode_spec: ModeSpec
    system: list[Message] = msgspec.field(default_factory=list)
    system_cache_boundary: int | None = None
    workspace_tokens: int = 0  # of the system tokens, those of the workspace segment
    rules: list[Rule] = msgspec.field(default_factory=list)
    items: list[WorkingItem] = msgspec.field(default_factory=list)
    rule_policy: RulePolicy = RulePolicy()
    policy: cp.CompactionPolicy = cp.CompactionPolicy()
    previous: Fingerprint | None = None
    client_summarizer: bool = False
    summary_text: str | None = None
    offline: bool = False  # the client summarizer failed or timed out: use the offline one
    force_compaction: bool = False
    keep_recent: int | None = None


class SummaryRequest(msgspec.Struct, kw_only=True):
    messages: list[Message]
    instructions: str
    max_tokens: int


class Assembly(msgspec.Struct, kw_only=True):
    result: AssembleResult | None = None
    needs_summary: SummaryRequest | None = None
    compaction: cp.Compaction | None = None  # the new state when it changed, else None
    audit: list[AuditEntry] = msgspec.field(default_factory=list)
    fingerprint: Fingerprint = msgspec.field(default_factory=list)
    next_compaction_at: int = 0


class Layout(msgspec.Struct, kw_only=True):
    """Token accounting of the non-history layers and the history share."""

    system_tokens: int
    rules_msg: Message | None
    rules_tokens: int
    working_msg: Message | None
    working_tokens: int
    working_dropped: list[AuditEntry]
    share: int  # tokens left for history


def layout(inp: AssemblyInput, counter: Tokenizer, *, strict: bool = True) -> Layout:
    """The non-history layers. ``strict``: pinned content over the budget is an error, else
    it is only reported (``share`` 0, the totals over the budget)."""
    fmt = OPENAI_FORMAT
    system_tokens = fmt.reply_priming + sum(message_tokens(m, counter) for m in inp.system)
    if strict and system_tokens > inp.budget:
        raise ContextError(
            "pinned_over_budget",
            f"the system layers alone take {system_tokens} tokens, over the budget of {inp.budget}",
        )
    room = max(0, inp.budget - system_tokens)
    limits = zone_limits(inp.mode_spec, room)
    placement = place_rules(inp.rules, inp.rule_policy)
    rules_text = render_rules(placement.active, inp.rule_policy)
    rules_msg: Message | None = None
    rules_tokens = 0
    if rules_text:
        rules_msg = Message(role="system", content=rules_text, id="ctx:rules", kind="rule",
                            pinned=True)
        rules_tokens = message_tokens(rules_msg, counter)
    if strict and rules_tokens > room:
        raise ContextError(
            "pinned_over_budget",
            f"the system layers ({system_tokens} tokens) and the {len(placement.active)} rules "
            f"({rules_tokens} tokens) are over the budget of {inp.budget}; rules are never cut: "
            "remove rules or raise the budget",
        )
    working_limit = max(0, min(limits.working, limits.total - rules_tokens, room - rules_tokens))
    blocks: list[tuple[int, str, str, str]] = []  # (seq, id, text, summary)
    for k, rule in enumerate(placement.demoted):
        blocks.append((-len(placement.demoted) + k, rule.id, render_demoted(rule), rule.text))
    chosen: list[tuple[int, str, str, str]] = []
    dropped: list[AuditEntry] = []
    used = 0
    header = 8  # the zone's heading and per-message overhead, roughly
    hottest = sorted(inp.items, key=lambda it: (-it.heat, -it.seq))
    candidates = blocks + [(it.seq, it.id, render_item(it), it.content) for it in hottest]
    for seq, item_id, text, what in candidates:
        cost = counter.count(text) + 2
        if used + cost + header <= working_limit:
            chosen.append((seq, item_id, text, what))
            used += cost
        else:
            dropped.append(AuditEntry(
                action="dropped", reason="working zone over its share of the mode "
                f"({working_limit} tokens); kept in the session",
                summary=f"working item {item_id}: {describe(Message(role='user', content=what))}",
                tokens_before=cost, tokens_after=0, message_id=item_id,
            ))
    working_msg = None
    working_tokens = 0
    if chosen:
        chosen.sort(key=lambda c: c[0])
        text = "# Working notes (current task material)\n\n" + "\n\n".join(c[2] for c in chosen)
        working_msg = Message(role="system", content=text, id="ctx:working", kind="memory")
        working_tokens = message_tokens(working_msg, counter)
    share = max(0, room - rules_tokens - working_tokens)
    return Layout(system_tokens=system_tokens, rules_msg=rules_msg, rules_tokens=rules_tokens,
                  working_msg=working_msg, working_tokens=working_tokens,
                  working_dropped=dropped, share=share)


def sizes(policy: cp.CompactionPolicy, share: int) -> tuple[int, int, int]:
    """(summary tokens, summary characters, ledger characters) for a history share."""
    summary_tokens = max(64, min(policy.summary_max_tokens, int(share * policy.summary_share)))
    ledger_chars = max(400, int(share * policy.ledger_share) * policy.chars_per_token)
    return summary_tokens, summary_tokens * policy.chars_per_token, ledger_chars


def assemble(history: History, state: cp.Compaction, inp: AssemblyInput,
             counter: Tokenizer) -> Assembly:
    """Assemble the session; see the module docstring. ``state`` is not mutated."""
    lay = layout(inp, counter)
    policy = inp.policy
    keep = inp.keep_recent if inp.keep_recent is not None else policy.keep_recent
    trigger_at = int(lay.share * policy.trigger)
    summary_tokens, summary_chars, ledger_chars = sizes(policy, lay.share)
    audit: list[AuditEntry] = []
    changed = False
    work = state
    if work.replaced and work.ledger_chars != ledger_chars:
        work = msgspec.structs.replace(work, rewrites=dict(work.rewrites))
        cp.rerender(work, ledger_chars, counter)
        changed = True

    compacted = False
    if inp.force_compaction or cp.history_tokens(history, work) > trigger_at:
        stop = max(cp.verbatim_start(history, work), len(history) - keep)
        if stop > cp.verbatim_start(history, work):
            # the cheap stages only when they can work: with history past its whole share,
            # shortening older messages one by one cannot bring it back, the summary must
            if not inp.force_compaction and cp.history_tokens(history, work) <= lay.share:
                if not changed:
                    work = msgspec.structs.replace(work, rewrites=dict(work.rewrites))
                before = len(work.rewrites)
                audit += cp.run_cheap_stages(history, work, stop, int(lay.share * policy.target),
                                             counter, policy, history.latest_user_text())
                changed = changed or len(work.rewrites) != before
            if inp.force_compaction or cp.history_tokens(history, work) > int(
                    lay.share * policy.target):
                if inp.client_summarizer and inp.summary_text is None and not inp.offline:
                    covered = cp.covered_messages(history, work, stop)
                    prev = cp.summary_message(work)
                    return Assembly(needs_summary=SummaryRequest(
                        messages=([prev] if prev else []) + covered,
                        instructions=SUMMARY_INSTRUCTIONS, max_tokens=summary_tokens))
                work, summarized = cp.apply_summary(history, work, stop, inp.summary_text,
                                                    summary_chars, ledger_chars, counter)
                audit += summarized
                changed = True
            compacted = True

    # build the history layer
    start = cp.verbatim_start(history, work)
    hist_msgs: list[Message] = []
    hist_keys: list[str] = []
    summ = cp.summary_message(work)
    if summ is not None:
        hist_msgs.append(summ)
        hist_keys.append(f"s{work.upto_seq}:{content_hash(work.rendered)}")
    for i in range(start, len(history)):
        hist_msgs.append(cp.shown_message(history, work, i))
        seq = history.seqs[i]
        hist_keys.append(f"h{seq}" + ("r" if seq in work.rewrites else ""))
    hist_tokens = cp.history_tokens(history, work)
    dropped = list(lay.working_dropped)
    truncated: list[AuditEntry] = []
    summary_tokens_now = work.rendered_tokens if summ is not None else 0
    if summ is not None and work.rendered_tokens > lay.share:
        # the summary alone is over the share (a small budget, many constraints): shorten its
        # ledger, then its decided/open part, for this assembly; the state keeps everything
        fitted = cp.fitted_summary(work, lay.share, counter)
        if fitted is None:
            raise ContextError(
                "pinned_over_budget",
                f"the user's {len(work.constraints)} hard constraints, kept verbatim in the "
                f"summary, do not fit in the {lay.share} tokens left for history of the budget "
                f"of {inp.budget}; raise the budget",
            )
        hist_msgs[0], summary_tokens_now = fitted
        hist_keys[0] = f"s{work.upto_seq}:{content_hash(hist_msgs[0].content)}"
        hist_tokens += summary_tokens_now - work.rendered_tokens
        truncated.append(AuditEntry(
            action="truncated", reason=f"summary over the history share ({lay.share} tokens): "
            "facts ledger and decided/open shortened for this assembly, hard constraints kept",
            summary=describe(summ), tokens_before=work.rendered_tokens,
            tokens_after=summary_tokens_now, message_id=summ.id))
    if hist_tokens > lay.share:
        # the newest messages alone are over the share: the trim engine fits them
        fixed = hist_msgs[:1] if summ is not None else []
        fixed_tokens = summary_tokens_now
        room = lay.share - fixed_tokens
        rest = hist_msgs[len(fixed):]
        if room > OPENAI_FORMAT.reply_priming:
            report = trim(rest, room + OPENAI_FORMAT.reply_priming, counter,
                          options=TrimOptions(recent=keep, keep_question=False))
            keys = dict(zip(map(id, rest), hist_keys[len(fixed):], strict=True))
            trimmed_keys = [keys.get(id(m), f"t{content_hash(m.content)}") for m in report.messages]
            hist_msgs = fixed + report.messages
            hist_keys = hist_keys[: len(fixed)] + trimmed_keys
            dropped += report.dropped
            truncated += report.truncated
        else:
            dropped += [AuditEntry(action="dropped", reason="no room left for history",
                                   summary=describe(m), tokens_before=message_tokens(m, counter),
                                   tokens_after=0, message_id=m.id) for m in rest]
            hist_msgs, hist_keys = fixed, hist_keys[: len(fixed)]
        hist_tokens = sum(message_tokens(m, counter) for m in hist_msgs)

    # the whole prompt, its fingerprint and cache boundary
    messages: list[Message] = list(inp.system)
    keys = [f"y{content_hash(m.content)}" for m in inp.system]
    if inp.system_cache_boundary is not None:
        boundary: int | None = inp.system_cache_boundary
    else:
        boundary = None
    if lay.rules_msg is not None:
        messages.append(lay.rules_msg)
        keys.append(f"r{content_hash(lay.rules_msg.content)}")
    if boundary is None and messages:
        boundary = len(messages)
    if lay.working_msg is not None:
        messages.append(lay.working_msg)
        keys.append(f"w{content_hash(lay.working_msg.content)}")
    messages += hist_msgs
    keys += hist_keys
    token_list = [message_tokens(m, counter) for m in messages[: len(messages) - len(hist_msgs)]]
    fingerprint = list(zip(keys[: len(token_list)], token_list, strict=True))
    fingerprint += _history_fingerprint(hist_keys, hist_msgs, history, work, counter)
    reuse = _reuse(inp.previous, fingerprint)

    total = lay.system_tokens + lay.rules_tokens + lay.working_tokens + hist_tokens
    tokens = AssembleTokens(
        total=total, system=lay.system_tokens - inp.workspace_tokens,
        workspace=inp.workspace_tokens, rules=lay.rules_tokens, working=lay.working_tokens,
        history=hist_tokens,
    )
    result = AssembleResult(
        messages=messages, cache_boundary=boundary, tokens=tokens, budget=inp.budget,
        dropped=dropped, truncated=truncated, compacted=compacted,
        mode_suggestion=suggest_mode(history.latest_user_text(), inp.mode),
        cache_reuse_tokens=reuse,
    )
    next_at = total - hist_tokens + trigger_at
    return Assembly(result=result, compaction=work if changed else None,
                    audit=audit + truncated + dropped, fingerprint=fingerprint,
                    next_compaction_at=next_at)


def _history_fingerprint(keys: list[str], msgs: list[Message], history: History,
                         state: cp.Compaction, counter: Tokenizer) -> Fingerprint:
    """(key, tokens) of history messages, from cached counts where the key is a seq."""
    out: Fingerprint = []
    for key, msg in zip(keys, msgs, strict=True):
        if key.startswith("h") and not key.endswith("r"):
            i = history.index_of_seq(int(key[1:]))
            out.append((key, history.tokens[i]))
        else:
            out.append((key, message_tokens(msg, counter)))
    return out


def _reuse(previous: Fingerprint | None, current: Fingerprint) -> int:
    if not previous:
        return 0
    reused = 0
    for a, b in zip(previous, current, strict=False):
        if a != b:
            break
        reused += b[1]
    return reused


def measure(history: History, state: cp.Compaction, inp: AssemblyInput, counter: Tokenizer,
            *, model: str, session_id: str | None, error_band: float | None) -> Budget:
    """The session's budget now, without compacting: what ``ctx/budgetChanged`` carries.

    ``used`` may pass the trigger: ``next_compaction_at`` says where the next assembly
    compacts, in the same units (tokens of the whole prompt).
    """
    lay = layout(inp, counter, strict=False)
    hist = cp.history_tokens(history, state)
    used = lay.system_tokens + lay.rules_tokens + lay.working_tokens + hist
    return Budget(
        used=used, limit=inp.budget, percent=round(100.0 * used / max(1, inp.budget), 2),
        by_layer=ByLayer(system=lay.system_tokens - inp.workspace_tokens,
                         workspace=inp.workspace_tokens, rules=lay.rules_tokens,
                         working=lay.working_tokens, history=hist),
        model=model, session_id=session_id,
        next_compaction_at=used - hist + int(lay.share * inp.policy.trigger),
        error_band=error_band,
    )
