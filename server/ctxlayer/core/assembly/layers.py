"""The non-history layers of an assembly and what they leave for history.

Layers, in prompt order and in order of precedence:
1. system layers (the caller's system prompt and workspace segment): never cut; alone over the
   budget is ContextError("pinned_over_budget"). When the prompt has a dynamic section (the
   messages from ``system_cache_boundary`` on), that section is placed after the history, so
   that the history stays inside the provider's cached prefix;
2. zone A, the rules: one message, never summarized; with zone B limited by the mode's shares
   and cap (modes.py). Rules are always shown whole, borrowing from zone B when over their share;
   system layers and rules together over the budget are ContextError("pinned_over_budget") too
   (never a silent overflow);
3. zone B, the working items: the required ones (``optional = false``) first, then the
   hottest, until the zone's limit, shown in insertion order (stable text, so the prompt cache
   survives heat changes); optional items that do not fit this time are reported as dropped,
   not deleted; required ones are shortened to the room left (compressed, never removed:
   only a zone with no room at all leaves one out, said);
4. history: the rest (``share``).
Must not: look at history (assemble.py does).
"""

from __future__ import annotations

import msgspec

from ctxlayer.core.assembly.compaction import CompactionPolicy
from ctxlayer.core.compress.shorten import shorten
from ctxlayer.core.errors import ContextError
from ctxlayer.core.text import describe
from ctxlayer.core.tokens import OPENAI_FORMAT, Tokenizer, message_tokens
from ctxlayer.core.zones.modes import ModeSpec, zone_limits
from ctxlayer.core.zones.rules import Rule, RulePolicy, place_rules, render_demoted, render_rules
from ctxlayer.core.zones.working import WorkingItem, render_item
from ctxlayer.protocol import AuditEntry, Message

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
    policy: CompactionPolicy = CompactionPolicy()
    previous: Fingerprint | None = None
    client_summarizer: bool = False
    summary_text: str | None = None
    offline: bool = False  # the client summarizer failed or timed out: use the offline one
    force_compaction: bool = False
    keep_recent: int | None = None
    #: the working zone's tokens at most, below its share: set when the newest question needs
    #: the room (assemble.py), so optional working notes give way before the session fails
    working_cap: int | None = None

    @property
    def stable_system(self) -> list[Message]:
        b = self.system_cache_boundary
        return self.system if b is None else self.system[:b]

    @property
    def dynamic_system(self) -> list[Message]:
        b = self.system_cache_boundary
        return [] if b is None else self.system[b:]


class Layout(msgspec.Struct, kw_only=True):
    """Token accounting of the non-history layers and the history share."""

    system_tokens: int
    rules_msg: Message | None
    rules_tokens: int
    working_msg: Message | None
    working_tokens: int
    working_dropped: list[AuditEntry]
    working_truncated: list[AuditEntry] = msgspec.field(default_factory=list)
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
    why = f"working zone over its share of the mode ({working_limit} tokens); kept in the session"
    if inp.working_cap is not None and inp.working_cap < working_limit:
        working_limit = inp.working_cap
        why = (f"working zone cut to {working_limit} tokens: the newest user message needs the "
               "room; kept in the session")
    chosen, dropped, shortened = _working(inp, working_limit, why, counter)
    working_msg = None
    working_tokens = 0
    if chosen:
        chosen.sort(key=lambda c: c[0])  # in insertion order: stable text for the cache
        text = "# Working notes (current task material)\n\n" + "\n\n".join(c[2] for c in chosen)
        working_msg = Message(role="system", content=text, id="ctx:working", kind="memory")
        working_tokens = message_tokens(working_msg, counter)
    share = max(0, room - rules_tokens - working_tokens)
    return Layout(system_tokens=system_tokens, rules_msg=rules_msg, rules_tokens=rules_tokens,
                  working_msg=working_msg, working_tokens=working_tokens,
                  working_dropped=dropped, working_truncated=shortened, share=share)



#: what every audit entry of a working item says first (`is_working_item` reads it)
WORKING_ITEM = "working item "
#: tokens of text a required working item keeps at the least: below, it is left out (said)
REQUIRED_LEAST = 16
_HEADER = 8  # the zone's heading and per-message overhead, roughly


def is_working_item(entry: AuditEntry) -> bool:
    """Whether an audit entry of an assembly is about a working item (not a message)."""
    return entry.summary.startswith(WORKING_ITEM)


def _working(inp: AssemblyInput, limit: int, why: str, counter: Tokenizer
             ) -> tuple[list[tuple[int, str, str, str]], list[AuditEntry], list[AuditEntry]]:
    """Zone B within ``limit`` tokens: (the blocks shown as (seq, id, text, what), the items
    left out, the required items shortened). The required items come first, each shortened
    to its part of the room when together they are over it (a hotter optional note took the
    room of a required spec, which was left out whole); then the rules demoted to zone B and
    the optional items, hottest first, in what they leave."""
    placement = place_rules(inp.rules, inp.rule_policy)
    blocks = [(-len(placement.demoted) + k, rule.id, render_demoted(rule), rule.text)
              for k, rule in enumerate(placement.demoted)]
    required = [it for it in inp.items if not it.optional]
    optional = sorted((it for it in inp.items if it.optional), key=lambda it: (-it.heat, -it.seq))
    chosen: list[tuple[int, str, str, str]] = []
    dropped: list[AuditEntry] = []
    shortened: list[AuditEntry] = []

    def said(item_id: str, what: str) -> str:
        return f"{WORKING_ITEM}{item_id}: {describe(Message(role='user', content=what))}"

    room = max(0, limit - _HEADER)
    costs = [counter.count(render_item(it)) + 2 for it in required]
    whole = sum(costs) <= room
    for it, cost in zip(required, costs, strict=True):
        part = cost if whole else room * cost // max(1, sum(costs))
        short = None if whole else _shortened(it, part - 2, counter)
        if short is None and not whole:
            dropped.append(AuditEntry(
                action="dropped", reason=f"required, but its part of the working zone "
                f"({part} of {limit} tokens) cannot hold even a shortened form; kept in the "
                "session", summary=said(it.id, it.content), tokens_before=cost, tokens_after=0,
                message_id=it.id))
            continue
        text = render_item(it) if short is None else short
        chosen.append((it.seq, it.id, text, it.content))
        if short is not None:
            shortened.append(AuditEntry(
                action="truncated", reason=f"required working item shortened to its part of "
                f"the working zone ({part} of {limit} tokens): required items are compressed, "
                "never removed", summary=said(it.id, it.content), tokens_before=cost,
                tokens_after=counter.count(short) + 2, message_id=it.id))
    used = sum(counter.count(c[2]) + 2 for c in chosen)
    for seq, item_id, text, what in blocks + [(it.seq, it.id, render_item(it), it.content)
                                              for it in optional]:
        cost = counter.count(text) + 2
        if used + cost + _HEADER <= limit:
            chosen.append((seq, item_id, text, what))
            used += cost
        else:
            dropped.append(AuditEntry(
                action="dropped", reason=why, summary=said(item_id, what),
                tokens_before=cost, tokens_after=0, message_id=item_id))
    return chosen, dropped, shortened


def _shortened(item: WorkingItem, cap: int, counter: Tokenizer) -> str | None:
    """A required item rendered within ``cap`` tokens, its text shortened (head and tail, the
    facts of the cut part named); None when even REQUIRED_LEAST tokens of it do not fit."""
    label = f"## [{item.kind}, shortened{f' from {item.source}' if item.source else ''}] " \
        f"({item.id})\n"
    room = cap - counter.count(label)
    if room < REQUIRED_LEAST:
        return None
    short = shorten(item.shown, room, counter)
    text = label + (short.text if short is not None else item.shown)
    return text if counter.count(text) <= cap else None
