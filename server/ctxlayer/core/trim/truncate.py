"""Truncating long blocks inside one message: the middle of every long fenced code block
and every long <details> block becomes a `[...]` line; `head` and `tail` lines stay.

A block is long when cutting it would remove at least `min_cut` lines, so truncating a
truncated text changes nothing (idempotent). Prose outside blocks is never touched here.
"""

from __future__ import annotations

MARKER = "[...]"


def _fence(line: str) -> str | None:
    """The fence string (``` or ~~~, any length) when the line opens or closes a code block."""
    s = line.lstrip()
    if s.startswith(("```", "~~~")):
        ch = s[0]
        n = len(s) - len(s.lstrip(ch))
        return ch * n
    return None


def truncate_blocks(text: str, head: int = 10, tail: int = 10, min_cut: int = 4) -> str | None:
    """The text with the middles of long blocks cut, or None when nothing was long enough."""
    if "```" not in text and "~~~" not in text and "<details" not in text:
        return None
    lines = text.split("\n")
    out: list[str] = []
    i, n, changed = 0, len(lines), False
    while i < n:
        line = lines[i]
        fence = _fence(line)
        closer: str | None = None
        if fence is not None:
            closer = fence
        elif line.lstrip().startswith("<details"):
            closer = "</details>"
        if closer is None:
            out.append(line)
            i += 1
            continue
        # find the end of the block
        j = i + 1
        while j < n:
            s = lines[j].strip()  # "```\r" of a CRLF text closes its block too
            if (closer == "</details>" and s.startswith("</details>")) or (
                closer != "</details>" and s.startswith(closer) and s.strip(closer[0]) == ""
            ):
                break
            j += 1
        body = lines[i + 1 : j]
        out.append(line)
        if len(body) - head - tail >= min_cut:
            out.extend(body[:head])
            out.append(MARKER + ("\r" if body[0].endswith("\r") else ""))  # a CRLF text's
            out.extend(body[len(body) - tail :])
            changed = True
        else:
            out.extend(body)
        if j < n:
            out.append(lines[j])
        i = j + 1
    return "\n".join(out) if changed else None


def cut_lines(text: str, head: int, tail: int) -> str:
    """Head and tail lines of any text with an omission note in between (for docs and prose)."""
    lines = text.split("\n")
    if len(lines) <= head + tail + 1:
        return text
    omitted = len(lines) - head - tail
    return "\n".join([*lines[:head], f"[... {omitted} lines omitted ...]", *lines[-tail:]])
