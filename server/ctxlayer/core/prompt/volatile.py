"""Spotting volatile text (timestamps, clock times, uuid-like ids) in cacheable sections.

Owns the patterns only. The builder never reads a clock, but cacheable text comes from
outside (workspace parts, skills, an identity override); one timestamp in it changes the
cached prefix every time it changes. Such text is REPORTED (SystemPrompt.warnings), not
refused: agent files and READMEs legitimately quote log lines and ids, and a prompt that
works with a slightly worse cache hit rate is better than a request that fails.
"""

from __future__ import annotations

import re

_ISO = r"\b\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}(?::\d{2}(?:\.\d+)?)?(?:Z|[+-]\d{2}:?\d{2})?"
_CLOCK = r"(?<![\d:.])\d{1,2}:\d{2}:\d{2}(?![\d:])"
_HEX = "[0-9a-fA-F]"
_UUID = rf"\b{_HEX}{{8}}-{_HEX}{{4}}-{_HEX}{{4}}-{_HEX}{{4}}-{_HEX}{{12}}\b"

_PATTERNS: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("ISO timestamp", re.compile(_ISO)),
    ("clock time", re.compile(_CLOCK)),
    ("uuid-like id", re.compile(_UUID)),
)


def volatile_findings(text: str) -> list[str]:
    """What in `text` looks volatile: one entry per kind found, naming its first match.

    A clock time inside an ISO timestamp counts once, as the timestamp.
    """
    found: list[str] = []
    covered: list[tuple[int, int]] = []
    for kind, pattern in _PATTERNS:
        for m in pattern.finditer(text):
            if any(a <= m.start() and m.end() <= b for a, b in covered):
                continue
            found.append(f"{kind} {m.group(0)!r}")
            break
        covered += [m.span() for m in pattern.finditer(text)]
    return found
