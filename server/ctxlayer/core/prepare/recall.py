"""Facts that come back, come back: when this turn's new messages name something an earlier
message said that the result now shows only summarized or outlined (an error, a test, a
`file:line`, a command, or a path the user or the assistant names), the exact lines of the
original that hold it are brought back.

Where: appended to the newest message of the request, as a marked note. That message is new
this turn (never cached), and the note is kept with it as a rewrite, so later turns repeat it
unchanged: the prefix the provider cached never moves for a recall.
Bounded: the originals are searched newest first within RECALL_SCAN_CHARS, at most
RECALL_LINES lines come back, within `recall_share` of the budget.
Must not: change any message but the newest one, or recall what the result shows already.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable

import msgspec

from ctxlayer.core.compress.facts import extract_facts
from ctxlayer.core.text import describe, mention
from ctxlayer.core.tokens import Tokenizer, message_tokens
from ctxlayer.protocol import AuditEntry, Message

RECALL_SCAN_CHARS = 100_000
RECALL_ONE_CHARS = 1_000_000
NAMED_CHARS = 2_000  # of a new message, its head and tail are read for what it names
RECALL_LINES = 24
RECALL_MIN_CHARS = 4  # shorter values ("a.c") name too much to look for
RECALL_VALUES = 10  # values looked for, the first named first
#: the lines of a tool output that name what a later step looks up: errors, failures, locations
#: (every alternative starts with a literal, so the engine scans for them: `l(?<!\wl)ine` is
#: `\bline`; a match never spans lines)
_SIGNAL = re.compile(r"Error|Exception|FAIL|Traceback|l(?<!\wl)ine \d|\.\w{1,5}:\d|t(?<!\wt)est_")
HEADER = "[ctxlayer: earlier lines this names, exact, from messages shown summarized or outlined]"
REASON = "recalled: this message names facts of earlier messages the result no longer shows"


#: what this turn names, and the paths an original must name too for it to be looked for there
Wanted = tuple[str, tuple[str, ...]]


def named(messages: Iterable[Message]) -> list[Wanted]:
    """The facts this turn names that a later step looks up by their exact text: errors,
    tests, `file:line` locations and commands anywhere; paths only in the user's or the
    assistant's own words (a tool output lists paths by the hundred). A line number without
    its file (`line 42`) only beside a path its message names, and then only looked for in
    an original naming that path: alone it matched any log's `line 42`, and brought another
    file's lines into a tool result."""
    out: dict[str, tuple[str, ...]] = {}
    for m in messages:
        text = m.content
        if m.role == "tool" or m.tool_call_id is not None:  # an output names in its signal lines
            text = _signal_lines(text)
        if len(text) > NAMED_CHARS:  # a long text names what matters at its ends
            text = text[:NAMED_CHARS // 2] + "\n" + text[-NAMED_CHARS // 2:]
        f = extract_facts(text)
        paths = tuple(p for p in f.paths if len(p) >= RECALL_MIN_CHARS)
        for v in (*f.error_codes, *f.tests, *f.line_numbers, *f.commands):
            if not _BARE_LINE.match(v):
                out.setdefault(v, ())
            elif paths:
                out.setdefault(v, paths)
        if m.role in ("user", "assistant") and m.tool_call_id is None:
            for v in f.paths:
                out.setdefault(v, ())
    return [(v, needs) for v, needs in out.items() if len(v) >= RECALL_MIN_CHARS][:RECALL_VALUES]


#: a line number as `extract_facts` reads it from prose, with no file: `line 42`, `line 3-5`
_BARE_LINE = re.compile(r"line \d")


def _word(value: str) -> re.Pattern[str]:
    """``value`` where it stands as a whole: `line 3` not in `line 30`, `test_a` not in
    `test_ab` (a path's tail, `mod.py` in `src/mod.py`, still is)."""
    return re.compile(rf"(?<!\w){re.escape(value)}(?!\w)")


def _signal_lines(text: str) -> str:
    """The lines of ``text`` that hold a _SIGNAL match, in order, found by searching the whole
    text and skipping to the next line after each (not one search a line)."""
    out: list[str] = []
    pos = 0
    while (m := _SIGNAL.search(text, pos)) is not None:
        end = text.find("\n", m.end())
        end = len(text) if end < 0 else end
        out.append(text[text.rfind("\n", 0, m.start()) + 1:end])
        pos = end + 1
    return "\n".join(out)


def _lines_with(text: str, value: re.Pattern[str], room: int) -> list[str]:
    lines = text.split("\n")
    hits = [k for k, line in enumerate(lines) if value.search(line)][:3]
    out: list[str] = []
    for k in hits:
        for j in range(max(0, k - 1), min(len(lines), k + 2)):
            if len(out) >= room:
                return out
            out.append(lines[j])
    return out


def recall(messages: list[Message], shown: Callable[[int], str | None],
           candidates: Iterable[int], new_from: int, budget: int, counter: Tokenizer,
           share: float, fmt) -> tuple[str, int, AuditEntry] | None:
    """A rewrite of the newest message (its text with the recalled lines appended, its
    tokens, the audit entry), or None when it names nothing the result lost. ``shown(i)``:
    the text the result shows for earlier message i (the very string when it is shown whole;
    None when only a summary stands for it: a ledger that lists a name does not show the line
    it was on); ``candidates``: the earlier messages that may not be shown whole, newest
    first; ``new_from``: the first message that is new this turn."""
    last = len(messages) - 1
    if new_from > last or messages[last].role == "system":
        return None
    wanted = named(messages[max(new_from, 0):])
    if not wanted:
        return None
    words = {v: _word(v) for v, needs in wanted for v in (v, *needs)}

    def lost(value: str, needs: tuple[str, ...], original: str, now: str | None) -> bool:
        """Whether ``original`` said ``value`` (beside one of the paths it ``needs``) and
        its shown form ``now`` does not. A plain search first: the whole-word one, which the
        engine cannot skip ahead in, reads only the texts that hold the value at all."""
        return (value in original and words[value].search(original) is not None
                and (not needs or any(p in original and words[p].search(original)
                                      for p in needs))
                and (now is None or value not in now or words[value].search(now) is None))

    # where a value stood: a summarized or outlined original, newest first, whose shown form
    # (its outline; nothing for a summarized one) lost it
    notes: list[str] = []
    lines_left, scanned = RECALL_LINES, 0
    for i in candidates:
        if not wanted or lines_left <= 0 or scanned > RECALL_SCAN_CHARS:
            break
        original, now = messages[i].content, shown(i)
        if now is original:
            continue  # shown whole
        if scanned and scanned + len(original) > RECALL_SCAN_CHARS:
            break  # within its bound (the newest one is always read, up to RECALL_ONE_CHARS)
        original = original[:RECALL_ONE_CHARS]
        scanned += len(original)
        for value, needs in [w for w in wanted if lost(*w, original, now)]:
            got = _lines_with(original, words[value], lines_left)
            if got:
                notes.append(f"from {mention(messages, i)} ({value}):\n"
                             + "\n".join(got))
                lines_left -= len(got)
                wanted.remove((value, needs))
    if not notes:
        return None
    note = HEADER + "\n" + "\n\n".join(notes)
    cap = int(budget * share)
    if counter.count(note) > cap:  # whole excerpts, newest first, within the share
        while notes and counter.count(HEADER + "\n" + "\n\n".join(notes)) > cap:
            notes.pop()
        if not notes:
            return None
        note = HEADER + "\n" + "\n\n".join(notes)
    m = messages[last]
    text = f"{m.content}\n\n{note}" if m.content else note
    tokens = message_tokens(msgspec.structs.replace(m, content=text), counter, fmt)
    before = message_tokens(m, counter, fmt)
    entry = AuditEntry(action="restored", reason=REASON, summary=describe(m),
                       tokens_before=before, tokens_after=tokens, message_id=m.id or f"#{last}",
                       index=last)
    return text, tokens, entry
