"""Truncating long blocks inside one message: the middle of every long fenced code block
and every long <details> block becomes a `[...]` line, or, ``numbered``, a line naming the
ranges kept by line number (`kept_lines`: the trim engine's cuts and a user's files, so an
edit can quote them); `head` and `tail` lines stay.

A block is long when cutting it would remove at least `min_cut` lines, so truncating a
truncated text changes nothing (idempotent). Prose outside blocks is never touched here.
`blocks` says where each block opens and closes: a file fenced with ``` that holds its own
fenced code (a README's ```python examples) closes at its own fence, not at its first
example's; a file aider wraps in a tag (`TAG_FENCES`) closes at the closing tag. A file with
no final newline gets its closing fence or tag on its last line ("line 60```"): that line
closes its block and is the file's, counted and kept.
"""

from __future__ import annotations

import re

MARKER = "[...]"

#: the tags aider wraps its files in, each alone on its line, when one of them holds lines
#: starting with ``` (its `choose_fence`: a markdown file with its own code blocks); a tag
#: block's ``` lines are the file's own
TAG_FENCES = ("source", "code", "pre", "codeblock", "sourcecode")
_TAG_CLOSERS = {f"<{t}>": f"</{t}>" for t in TAG_FENCES}
_OPENERS = ("```", "~~~", "<details", *_TAG_CLOSERS)


def _fence(line: str) -> str | None:
    """The fence string (``` or ~~~, any length) when the line opens or closes a code block."""
    s = line.lstrip()
    if s.startswith(("```", "~~~")):
        ch = s[0]
        n = len(s) - len(s.lstrip(ch))
        return ch * n
    return None


def blocks(lines: list[str], details: bool = True) -> list[tuple[int, int]]:
    """The blocks of ``lines``, each as the indices of its opening and closing lines (the
    closing one ``len(lines)`` when the block runs to the end). ``details``: <details> blocks
    count too."""
    out: list[tuple[int, int]] = []
    i, n = 0, len(lines)
    while i < n:
        end = _block_end(lines, i, details)
        if end is None:
            i += 1
            continue
        out.append((i, end))
        i = end + 1
    return out


def _block_end(lines: list[str], i: int, details: bool) -> int | None:
    """Where the block opened by ``lines[i]`` closes; None when that line opens none. A file's
    fence or tag (under its path, as aider sends files) pairs the fences inside it and closes
    at its tag; any other block closes where CommonMark closes it, and a lone <pre> or <code>
    line of pasted HTML that no closing tag follows opens none (it ran to the text's end, the
    prose after it cut as code)."""
    fence = _fence(lines[i])
    if fence is not None:
        return _fence_end(lines, i, fence, paired=_under_a_path(lines, i))
    s = lines[i].strip()
    closer = _TAG_CLOSERS.get(s)
    if closer is not None and not _under_a_path(lines, i):
        return None
    if closer is None:
        if not (details and s.startswith("<details")):
            return None
        closer = "</details>"
    for j in range(i + 1, len(lines)):
        if lines[j].strip().startswith(closer) or _tag_closes(lines, j, closer):
            return j
    return len(lines) if closer == "</details>" else None


def _under_a_path(lines: list[str], i: int) -> bool:
    """Whether the block opening at ``lines[i]`` is a file's, as aider sends files: its path
    alone on the line before (one word, naming a file: a dot or a slash in it)."""
    if i == 0:
        return False
    above = lines[i - 1].strip()
    return bool(above) and len(above.split()) == 1 and ("." in above or "/" in above) \
        and not above.startswith(("```", "~~~", "<"))


def _tag_closes(lines: list[str], j: int, closer: str) -> bool:
    """Whether ``lines[j]`` ends a tag block by ending with its closing tag: aider writes it
    right after the file's text, on its last line when the file has no final newline; then a
    blank line or the message's end follows (an HTML line ending with </code> is the file's)."""
    return lines[j].rstrip().endswith(closer) and (j + 1 == len(lines) or not lines[j + 1].strip())


def _fence_end(lines: list[str], i: int, fence: str, paired: bool = True) -> int:
    """Where the code block opened at ``lines[i]`` with ``fence`` closes: at the first bare
    fence as long, as CommonMark reads it; with ``paired`` (a file's block), past the pairs
    of the fences inside it that name a language (an opening fence with an info string never
    closes a block: a markdown file's ```python examples, its own blocks, fenced with ``` in
    aider's message), at the first bare fence when those pairs do not close (a stray ```js
    line), or on the file's last line when the fence ends it (`_fence_closes`). Not paired in
    other text: a stray ```python line in a chat's block took the prose after the block, up to
    the next block's opening fence, for code."""
    depth, first = 0, None
    for j in range(i + 1, len(lines)):
        s = lines[j].strip()  # "```\r" of a CRLF text closes its block too
        if not s.startswith(fence):
            if paired and depth == 0 and _fence_closes(lines, j, fence):
                return j
            continue
        info = s.lstrip(fence[0])
        if not info:
            if first is None:
                first = j
            if depth == 0 or not paired:
                return j
            depth -= 1
        elif "`" not in info:  # an inner block naming its language: ```python
            depth += 1
    return first if first is not None else len(lines)


def _fence_closes(lines: list[str], j: int, fence: str) -> bool:
    """Whether ``lines[j]``, not itself a fence line, closes a file's block by ending with its
    fence: aider writes the fence right after the file's text (`prompt += content; prompt +=
    fence[1]`), on its last line when the file has no final newline, and a blank line or the
    message's end follows, as after a tag (`_tag_closes`). Before, such a file ran on to the
    next file's opening fence, and that file was read as prose, never cut."""
    s = lines[j].strip()
    return not s.startswith(fence) and s.endswith(fence) \
        and (j + 1 == len(lines) or not lines[j + 1].strip())


def _last_line_closing(line: str, opener: str) -> tuple[str, str] | None:
    """(the file's last line, the fence or tag after it) when the line closing the block that
    ``opener`` opened holds the file's last line too (`_fence_closes`, `_tag_closes`); None
    for a closing line of its own, and for a <details> block's (a chat's, never a file's: its
    closing line stays whole, as it was). That last line is the file's: counted and kept."""
    closer = _fence(opener) or _TAG_CLOSERS.get(opener.strip())
    s = line.rstrip()
    if closer is None or not s.endswith(closer) or line.lstrip().startswith(closer):
        return None
    text = s[: len(s) - len(closer)]
    return text, line[len(text):]


def truncate_blocks(text: str, head: int = 10, tail: int = 10, min_cut: int = 4,
                    numbered: bool = False) -> str | None:
    """The text with the middles of long blocks cut, or None when nothing was long enough.
    ``numbered``: each cut says which of its block's lines it keeps (`kept_lines`)."""
    if not any(m in text for m in _OPENERS):
        return None
    lines = text.split("\n")
    out: list[str] = []
    at, n, changed = 0, len(lines), False
    for start, end in blocks(lines):
        out.extend(lines[at : start + 1])
        body = lines[start + 1 : end]
        closing = lines[end] if end < n else None
        joined = _last_line_closing(closing, lines[start]) if closing is not None else None
        if joined is not None:  # "line 60```", "line 59</source>": the file's last line
            body.append(joined[0])
            closing = joined[1]
        if len(body) - head - tail >= min_cut:
            first, mark, last = _numbered(body, head, tail) if numbered else (
                head, MARKER, len(body) - tail)
            out.extend(body[:first])
            out.append(mark + ("\r" if body[0].endswith("\r") else ""))  # a CRLF text's
            out.extend(body[last:])
            changed = True
            joined = joined if last < len(body) else None  # its last line cut: a bare fence
        else:
            out.extend(body)
        if joined is not None:
            out[-1] += closing
        elif closing is not None:
            out.append(closing)
        at = end + 1
    out.extend(lines[at:])
    return "\n".join(out) if changed else None


#: the line `kept_lines` writes: a block cut before, cut again, keeps counting its file's lines
_KEPT = re.compile(r"\[\.\.\. lines \d+-\d+ cut: lines 1-(\d+) and (\d+)-(\d+) of (\d+) kept \.\.\.\]")


def _numbered(body: list[str], head: int, tail: int) -> tuple[int, str, int]:
    """(lines kept first, the line naming the ranges kept, where the kept last lines start) of
    a block's ``body`` cut to ``head`` and ``tail`` lines. A body cut before (a file aider's
    user added, cut to its share, then cut again by the trim engine) holds that cut's line:
    the new cut takes it in, and names the lines of the file, not of the text it was given
    ("lines 11-49 cut ... of 59 kept" for a file of 2,000 lines, its kept tail 1,991-2,000)."""
    for k, line in enumerate(body):
        m = _KEPT.fullmatch(line.strip()) if line.startswith("[... lines ") else None
        if m is None or int(m.group(1)) != k or int(m.group(3)) != int(m.group(4)) \
                or len(body) - k - 1 != int(m.group(3)) - int(m.group(2)) + 1:
            continue
        head, tail = min(head, k), min(tail, len(body) - k - 1)
        resume = int(m.group(2)) + len(body) - tail - k - 1  # the first kept last line's number
        return head, kept_lines(head, resume - 1, int(m.group(4))), len(body) - tail
    return head, kept_lines(head, len(body) - tail, len(body)), len(body) - tail


def kept_lines(head: int, resume: int, total: int) -> str:
    """The line a block cut to its first ``head`` lines and the lines after ``resume`` (of
    ``total``) shows in place of its middle, naming both ranges by line number (from 1, the
    block's first line): an edit can quote the kept lines, and the model knows which are
    missing. Without them, a cut file read as whole code with a gap of unknown size."""
    kept = [f"1-{head}"] if head > 0 else []
    if resume < total:
        kept.append(f"{resume + 1}-{total}")
    # a setting of no head or no tail lines (`head_lines = 0`) keeps one range or none: "lines
    # 1-0 and 201-200 of 200 kept" named ranges that are empty
    said = f"lines {' and '.join(kept)} of {total}" if kept else f"none of {total} lines"
    return f"[... lines {head + 1}-{resume} cut: {said} kept ...]"


def cut_lines(text: str, head: int, tail: int) -> str:
    """Head and tail lines of any text with an omission note in between (for docs and prose)."""
    lines = text.split("\n")
    if len(lines) <= head + tail + 1:
        return text
    omitted = len(lines) - head - tail
    # lines[-0:] is every line: no tail lines is none of them
    return "\n".join([*lines[:head], f"[... {omitted} lines omitted ...]",
                      *lines[len(lines) - tail:]])
