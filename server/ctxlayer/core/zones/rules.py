"""Zone A: long-term rules.

Owns the placement of rules: highest weight first, the top-weight rules marked with a prefix
(``__RULE__``), at most ``max_rules`` kept in zone A and the rest demoted to zone B, and the
warning for a rule written descriptively instead of in the imperative. Rules are never
summarized, compressed or decayed; this module never drops one, it only demotes.
Must not: touch storage, count tokens, or know about wire structs beyond their shape.
"""

from __future__ import annotations

import re

import msgspec


class Rule(msgspec.Struct, kw_only=True):
    """One long-term rule. ``seq`` is its insertion order and breaks weight ties (oldest first)."""

    id: str
    text: str
    weight: float = 1.0
    seq: int = 0


class RulePolicy(msgspec.Struct, frozen=True, kw_only=True):
    max_rules: int = 12
    prefix: str = "__RULE__"


DEFAULT_RULE_POLICY = RulePolicy()


class RulePlacement(msgspec.Struct, frozen=True):
    """Rules kept in zone A, in order, and rules demoted to zone B (highest weight first)."""

    active: list[Rule]
    demoted: list[Rule]


def place_rules(rules: list[Rule], policy: RulePolicy = DEFAULT_RULE_POLICY) -> RulePlacement:
    """Order rules by weight (ties: oldest first) and cut at ``max_rules``."""
    ordered = sorted(rules, key=lambda r: (-r.weight, r.seq))
    cap = max(0, policy.max_rules)
    return RulePlacement(active=ordered[:cap], demoted=ordered[cap:])


def render_rules(active: list[Rule], policy: RulePolicy = DEFAULT_RULE_POLICY) -> str:
    """Zone A as one text: one line per rule, the top-weight ones carrying the prefix."""
    if not active:
        return ""
    top = max(r.weight for r in active)
    lines = ["# Rules (always follow these)"]
    for rule in active:
        text = " ".join(rule.text.split())
        lines.append(f"- {policy.prefix} {text}" if rule.weight == top else f"- {text}")
    return "\n".join(lines)


def render_demoted(rule: Rule) -> str:
    """A demoted rule as it appears in zone B: whole, never compressed."""
    return "Rule (demoted from the rule zone): " + " ".join(rule.text.split())


_HEDGES = re.compile(
    r"\b(usually|typically|generally|normally|often|tends? to|mostly|prefers|preferred|"
    r"ideally|it would be (nice|good)|we like)\b"
    r"|通常|一般|往往|倾向|最好|尽量",
    re.IGNORECASE,
)
_DESCRIPTIVE_START = re.compile(
    r"^(the|this|our|we|it|there|they|most|some|code|project|team|people)\b", re.IGNORECASE
)
_IMPERATIVE_START = re.compile(
    r"^(never|always|do|don't|dont|use|avoid|keep|prefer|write|put|run|make|add|remove|"
    r"must|only|no|ensure|return|call|name|reply|answer|ask|check|follow|respect|禁止|必须|"
    r"不要|不得|务必|请|始终|永远|一律)",
    re.IGNORECASE,
)


def imperative_warning(text: str) -> str | None:
    """A warning when a rule reads as a description rather than an order, else None.

    Rules in the imperative ("Never use `any`") are followed more reliably than descriptions
    ("the project usually avoids `any`"), so the warning suggests the imperative form.
    """
    stripped = text.strip().lstrip("-*• ").strip()
    if not stripped:
        return "the rule is empty"
    hedged = _HEDGES.search(stripped) is not None
    if hedged or (_DESCRIPTIVE_START.match(stripped) and not _IMPERATIVE_START.match(stripped)):
        return (
            "this rule reads as a description; rules are followed best in the imperative, "
            "e.g. 'Never use `any`' rather than 'the project usually avoids `any`'"
        )
    return None
