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
3. zone B, the working items: hottest first until the zone's limit, shown in insertion order
   (stable text, so the prompt cache survives heat changes); items that do not fit this time
   are reported as dropped, not deleted;
4. history: the rest (``share``).
Must not: look at history (assemble.py does).
"""

from __future__ import annotations

import msgspec

from ctxlayer.core.assembly.compaction import CompactionPolicy
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
                action="dropped", reason=why,
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

