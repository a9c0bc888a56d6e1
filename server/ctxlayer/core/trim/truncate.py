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


def truncate_blocks(text: str, head: int = 10, tail: int = 10, min_cut: int = 4,
                    numbered: bool = False) -> str | None:
    """The text with the middles of long blocks cut, or None when nothing was long enough.
    ``numbered``: each cut says which of its block's lines it keeps (`kept_lines`)."""
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
            mark = kept_lines(head, len(body) - tail, len(body)) if numbered else MARKER
            out.append(mark + ("\r" if body[0].endswith("\r") else ""))  # a CRLF text's
            out.extend(body[len(body) - tail :])
            changed = True
        else:
            out.extend(body)
        if j < n:
            out.append(lines[j])
        i = j + 1
    return "\n".join(out) if changed else None


def kept_lines(head: int, resume: int, total: int) -> str:
    """The line a block cut to its first ``head`` lines and the lines after ``resume`` (of
    ``total``) shows in place of its middle, naming both ranges by line number (from 1, the
    block's first line): an edit can quote the kept lines, and the model knows which are
    missing. Without them, a cut file read as whole code with a gap of unknown size."""
    return (f"[... lines {head + 1}-{resume} cut: lines 1-{head} and {resume + 1}-{total} of "
            f"{total} kept ...]")


def cut_lines(text: str, head: int, tail: int) -> str:
    """Head and tail lines of any text with an omission note in between (for docs and prose)."""
    lines = text.split("\n")
    if len(lines) <= head + tail + 1:
        return text
    omitted = len(lines) - head - tail
    return "\n".join([*lines[:head], f"[... {omitted} lines omitted ...]", *lines[-tail:]])
