"""Task modes and the mode suggestion from trigger words.

A mode gives the share of the zone cap each zone may use and the cap itself: short
(A 0.2, B 0.5, 2,000 tokens), deep (A 0.4, B 0.8, 8,000), debug (A 0.1, B 0.9, 4,000).
The rules are always shown whole (only the budget limits them, assembly/layers.py): zone A's
share limits nothing, and what the rules take comes out of zone B's room, which is at most its
share of the cap and what the rules leave of the cap. Rules alone over the cap pass it.
The daemon only suggests a mode; it never switches by itself: the user knows
what the next question is, trigger words only guess.
Must not: read config files (the caller passes the table in).
"""

from __future__ import annotations

import re
import typing

import msgspec

from ctxlayer.protocol import Mode, ModeSuggestion


class ModeSpec(msgspec.Struct, frozen=True, kw_only=True):
    rules_share: float
    working_share: float
    cap: int


#: The one mode table: the names are the wire's `Mode`, the values every default of a mode.
DEFAULT_MODES: dict[Mode, ModeSpec] = {
    "short": ModeSpec(rules_share=0.2, working_share=0.5, cap=2000),
    "deep": ModeSpec(rules_share=0.4, working_share=0.8, cap=8000),
    "debug": ModeSpec(rules_share=0.1, working_share=0.9, cap=4000),
}
#: The mode of a new session when the client names none.
DEFAULT_MODE: Mode = "deep"
assert set(DEFAULT_MODES) == set(typing.get_args(Mode)) and DEFAULT_MODE in DEFAULT_MODES


class ZoneLimits(msgspec.Struct, frozen=True):
    """Token limits of the two zones for one assembly."""

    rules: int
    working: int
    total: int


def zone_limits(spec: ModeSpec, room: int) -> ZoneLimits:
    """Limits of zone A and B when ``room`` tokens are left after the system layers."""
    total = max(0, min(spec.cap, room))
    return ZoneLimits(
        rules=int(total * spec.rules_share), working=int(total * spec.working_share), total=total
    )


#: trigger words -> mode, most specific first, so "fix this bug while
#: refactoring" suggests debug
TRIGGERS: tuple[tuple[Mode, re.Pattern[str]], ...] = (
    (
        "debug",
        re.compile(
            r"\b(bugs?|errors?|stack ?traces?|tracebacks?|exceptions?|crash(es|ed)?|"
            r"segfault|panic|failing|fails|broken)\b|报错|修\s*bug|异常|崩溃",
            re.IGNORECASE,
        ),
    ),
    (
        "deep",
        re.compile(
            r"\b(refactor\w*|implement\w*|redesign\w*|architect\w*|migrat\w*|rewrite)\b"
            r"|重构|实现|新功能|架构",
            re.IGNORECASE,
        ),
    ),
)


def suggest_mode(latest_user_text: str, current: str) -> ModeSuggestion | None:
    """The mode the latest user message's trigger words point to, when it is not the current."""
    for mode, pattern in TRIGGERS:
        match = pattern.search(latest_user_text)
        if match:
            if mode == current:
                return None
            word = match.group(0)
            return ModeSuggestion(
                mode=mode, reason=f"the latest user message mentions '{word}'; switch to {mode}?"
            )
    return None
