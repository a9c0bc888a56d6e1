"""Tool-output compression: fit one tool result into a token cap.

Owns `compress_tool_output` and `CompressedOutput`. The strategy is fixed and in this order:
a JSON outline (`json_outline`), a sanitized log (`logs`), else head and tail lines around a
"[... N lines omitted ...]" marker. Whatever the strategy, the result is cut further until the
injected counter says it fits, so `tokens_after <= cap_tokens` always holds; that also makes the
function idempotent in the way the trim engine needs: a compressed output fits its cap, so
compressing it again returns None.

Pure: the counter is injected (anything with `.count(text) -> int`); each attempt is counted
once, and the number of attempts is bounded (a few shrinking rounds, then a binary search over a
prefix of at most PREFIX_CHARS_PER_TOKEN characters a token of the cap), so the cost is linear
in the input plus a logarithmic number of counts of cap-sized text.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Literal, Protocol

import msgspec

from ctxlayer.core.compress.json_outline import JsonOutline
from ctxlayer.core.compress.logs import LogOutline, looks_like_log
from ctxlayer.core.text import counted, split_lines

__all__ = ["OMITTED", "CompressedOutput", "Counter", "Reading", "compress_tool_output",
           "first_words", "head_tail"]

Method = Literal["json", "log", "headtail"]

#: Share of the head/tail budget given to the head: the command and first errors usually lead,
#: the summary and final error trail.
HEAD_SHARE = 0.6
ROUNDS = 6
#: the share of the input's chars-per-token guess the first cut is made to when that cut is
#: FIRST_CUT_FROM characters or more: a cut at the whole guess often comes out a few tokens
#: over (its omission mark, the runs cut at both ends) and each try is counted; a pasted 3 MB
#: run of one letter cut to 89k tokens counted two cuts of 700k characters, 0.27 s beside the
#: 1 s count of the whole, where one suffices. A shorter cut is tried at the whole guess: a
#: second try costs a millisecond there, and the first, when it fits, keeps 5% more
FIRST_CUT = 0.95
FIRST_CUT_FROM = 100_000
#: the most characters a token is taken to hold where a prefix within a cap is searched for:
#: the search looks at the first cap * this characters only, so a cap of a few tokens is not
#: looked for in halves of a 3 MB text (a longer token only leaves the prefix a little shorter)
PREFIX_CHARS_PER_TOKEN = 64


class Counter(Protocol):
    def count(self, text: str) -> int: ...


class CompressedOutput(msgspec.Struct, frozen=True):
    """A tool output cut to fit: the text, how it was made, and its cost before and after."""

    text: str
    method: Method
    tokens_before: int
    tokens_after: int


def _omitted(n: int, unit: str) -> str:
    return f"[... {counted(n, unit)} omitted ...]"


#: the fewest characters of a long line the room left beside whole lines takes of it: less
#: says nothing, and the whole lines read better alone
PART_MIN = 80


def head_tail(text: str, max_chars: int) -> str:
    """The first and last lines of `text` within about `max_chars` (`ends`)."""
    return ends(text, max_chars)[0]


def ends(text: str, max_chars: int) -> tuple[str, int, int]:
    """The first and last lines of `text` within about `max_chars`, a marker between them.

    Lines longer than the room left are cut by characters, the cut marked by an ellipsis (a
    path cut to "raw_building.p" read as another file): the line where the head stops keeps
    its start, the one where the tail starts its end, when at least PART_MIN characters of
    room are left for it (an intro line, a pasted line of 60,000 characters and a question
    kept the two short lines alone, 54 characters of a room of 12,000); a single huge line
    becomes its head and tail characters around a "[... N chars omitted ...]" marker.
    With the text, how many of its first lines (split at "\n") it shows whole, and from which
    line on it shows all whole.
    """
    lines = text.split("\n")
    if len(text) <= max_chars:
        return text, len(lines), len(lines)
    if max_chars <= 0:
        return "", 0, len(lines)
    if len(lines) < 3:
        return _chars_head_tail(text, max_chars), 0, len(lines)
    head_room = int(max_chars * HEAD_SHARE)
    tail_room = max_chars - head_room - 40
    k, used = 0, 0  # lines[:k] go whole in the head
    while k < len(lines) and used + len(lines[k]) + 1 <= head_room:
        used += len(lines[k]) + 1
        k += 1
    head_part = _part(lines, k, head_room - used, bool(k))
    j, used = len(lines), 0  # lines[j:] go whole in the tail
    while j > k and used + len(lines[j - 1]) + 1 <= tail_room:
        used += len(lines[j - 1]) + 1
        j -= 1
    tail_part = _part(lines, j - 1, tail_room - used, j < len(lines)) if j - 1 >= k else 0
    if k == j:
        return text[:max_chars], 0, len(lines)
    head = lines[:k] + ([lines[k][:head_part] + "…"] if head_part else [])
    tail = (["…" + lines[j - 1][len(lines[j - 1]) - tail_part:]] if tail_part else []) \
        + lines[j:]
    whole = (j - 1 if tail_part else j) - (k + 1 if head_part else k)
    if whole > 0:
        marker = _omitted(whole, "line")
    elif j - 1 == k:  # only the middle of the one line both ends cut
        marker = _omitted(len(lines[k]) - head_part - tail_part, "char")
    else:  # only the end of one line and the start of the next
        marker = _omitted(len(lines[k]) - head_part + len(lines[j - 1]) - tail_part, "char")
    return "\n".join([*head, marker, *tail]), k, j


def _part(lines: list[str], i: int, room: int, beside: bool) -> int:
    """How many characters of line i (too long for ``room``) go in, beside whole lines
    (``beside``) or alone; 0: none."""
    if i < 0 or i >= len(lines):
        return 0
    least = PART_MIN if beside else 3
    return max(0, room - 2) if room - 2 >= least else 0


def _chars_head_tail(text: str, max_chars: int) -> str:
    """A line or two too long for ``max_chars``: its first and last characters around a
    "[... N chars omitted ...]" marker, each end cut between words when a blank is near (in
    the second half of its room). The marker's room is its own length: 40 characters kept
    for it left a 20-token question no tail at all, and a cut by characters alone ended the
    kept head in "parse" and started the tail at "IL_OF_Q3". A room the marker would take
    most of keeps the ends around an ellipsis alone: a 168-character pasted line beside a
    screenshot went out as the marker and nothing of itself, its tokens free."""
    marker = len(_omitted(len(text), "char")) + 2
    short = max_chars - marker < marker
    room = max(0, max_chars - (1 if short else marker))
    head_n = int(room * HEAD_SHARE)
    tail_n = room - head_n
    head = _words_up_to(text, head_n)
    tail = _words_from(text, len(text) - tail_n) if tail_n else ""
    if short:
        return f"{head}…{tail}"
    return f"{head}\n{_omitted(len(text) - len(head) - len(tail), 'char')}\n{tail}"


def _words_up_to(text: str, n: int) -> str:
    """``text[:n]``, ended at the last blank within it when that is in its second half."""
    if n >= len(text) or text[n].isspace():
        return text[:n].rstrip()
    cut = max(text.rfind(c, n // 2, n) for c in " \n\t")  # no further: a blob has none
    return text[:cut].rstrip() if cut >= n // 2 else text[:n]


def _words_from(text: str, start: int) -> str:
    """``text[start:]``, started after the first blank from there when that is in its first
    half (so the tail starts at a word)."""
    if start <= 0 or text[start - 1].isspace():
        return text[start:].lstrip()
    end = start + (len(text) - start) // 2 + 1
    found = [k for k in (text.find(c, start, end) for c in " \n\t") if k >= 0]
    return text[min(found) + 1:].lstrip() if found else text[start:]


def _fit_prefix(text: str, cap: int, counter: Counter) -> str:
    """The longest prefix (by binary search over characters, among the first
    PREFIX_CHARS_PER_TOKEN characters a token of the cap) that counts within `cap`."""
    lo, hi = 0, min(len(text), (cap + 1) * PREFIX_CHARS_PER_TOKEN)
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if counter.count(text[:mid]) <= cap:
            lo = mid
        else:
            hi = mid - 1
    cut = text[:lo]
    return cut if counter.count(cut) <= cap else ""


def _shrink(
    make: Callable[[int], str | None], start_chars: int, cap: int, counter: Counter,
    words: str | None = None,
) -> str | None:
    """make(max_chars) with a char budget adjusted until its text fits `cap` tokens.

    The budget starts from the input's chars-per-token (FIRST_CUT of it for a long cut); it
    shrinks in proportion while the text is over, and grows once when the first fitting text
    uses under 70% of the cap (outlines and sanitized logs are denser than their input). When nothing made fits (a cap about the size
    of the omission marker), ``words``, when given, gives the result: its first words and an
    ellipsis (a marker alone said nothing of what was cut), else the last text's prefix.
    """
    chars = max(1, int(start_chars * FIRST_CUT) if start_chars >= FIRST_CUT_FROM else start_chars)
    last: str | None = None
    grown = False
    for _ in range(ROUNDS):
        text = make(chars)
        if text is None:
            return None
        n = counter.count(text)
        if n <= cap:
            if grown or n >= 0.7 * cap or n == 0:
                return text
            grown = True
            bigger = make(int(chars * cap / n * 0.9))
            if bigger is not None and counter.count(bigger) <= cap:
                return bigger
            return text
        last = text
        chars = max(1, int(chars * cap / max(n, 1) * 0.9))
    return first_words(words, cap, counter) or _fit_prefix(last or "", cap, counter)


def first_words(text: str | None, cap: int, counter: Counter) -> str | None:
    """The start of ``text`` within ``cap`` tokens, an ellipsis after it, ended between
    words when a blank is near."""
    if text is None:
        return None
    start = _words_up_to(text, len(_fit_prefix(text, max(0, cap - 1), counter))).rstrip()
    return start + "…" if start and counter.count(start + "…") <= cap else None


#: an omission mark as ctxlayer writes it (`_omitted` here, the trim engine's block cut, a
#: session's long request): "[... 52 lines omitted ...]", "[... 1,204 characters omitted ...]"
OMITTED = re.compile(r"\[\.\.\. [\d,]+ (?:line|char|character)s? omitted \.\.\.\]")


#: what an outline writes about what it cut: omission marks, a log's gaps ("[... 113 lines]")
#: and its closing count
MARKS = re.compile(rf"{OMITTED.pattern}|\[\.\.\. [\d,]+ lines?\]|\[log sanitized: [^\]\n]*\]")


def _mostly_marker(short: str) -> bool:
    """Whether the marks of what was cut are longer than what the text kept around them."""
    marks = sum(len(m) for m in MARKS.findall(short))
    return marks > 0 and len(short) - marks < marks


#: a sanitized log that leaves this share of its cap or more unused also shows the log's own
#: first and last lines in it (under half only, a 1,560-line log's outline of 21 lines took
#: 5,160 of an 8,000-token room and left the rest empty)
GROW_ROOM = 0.1
ENDS_HEADER = "[the log's first and last lines, as they were:]"


def _grown_log(text: str, log: LogOutline, keep: int, cap: int, chars_per_token: float,
               counter: Counter) -> str:
    """A sanitized log (``log`` rendered to ``keep`` lines) that leaves some of its room unused
    (repeats collapsed, noise gone) gets the log's first and last lines verbatim in that room:
    an outline grows with the room. The outline beside them leaves out the lines they show:
    it showed a log's first line, its last ones and a run collapsed from its second line
    ("compiled m0.c (x400)"), and the same lines again verbatim below."""
    sanitized = log.render(keep)
    n = counter.count(sanitized)
    if cap - n < GROW_ROOM * cap:
        return sanitized
    chars = int((cap - n) * chars_per_token * 0.9)
    # the outline's lines are the text's split as `split_lines` splits it ("\r" too): only
    # when both agree can the lines the ends show be left out of it
    aligned = len(text.split("\n")) - text.endswith("\n") == log.total
    best, most = sanitized, n
    for _ in range(4):  # the ends sized to the room the outline of the rest leaves them
        shown, head, tail = ends(text, chars)
        between = _between_ends(log, keep, (min(head, log.total), min(tail, log.total)),
                                n, counter) if aligned else None
        middle, m = between or (sanitized, n)
        grown = f"{middle}\n{ENDS_HEADER}\n{shown}"
        k = counter.count(grown)
        if most < k <= cap:
            best, most = grown, k
        more = int(chars * (cap - m) / max(1, k - m) * 0.9)
        if k <= cap and more <= chars:
            break
        chars = more
    return best


def _between_ends(log: LogOutline, keep: int, shown: tuple[int, int], most: int,
                  counter: Counter) -> tuple[str, int] | None:
    """The outline of the lines between the ends ``shown`` and its tokens, in no more tokens
    than ``most`` (what the outline of the whole log took); None when fewer lines do not get
    it there (then the whole log's outline goes beside the ends, a few lines shown twice).
    It picks its lines among others, and at the same number of lines it took a
    13,000-character error line the whole log's outline had left out: 4,000 tokens over a
    room of 2,560, and the log went out as an outline of 117 tokens, without the ends."""
    for _ in range(ROUNDS):
        middle = log.render(keep, shown)
        m = counter.count(middle)
        if m <= most:
            return middle, m
        if keep <= 1:
            return None
        keep = max(1, min(keep - 1, int(keep * most / m * 0.9)))
    return None


class Reading:
    """What an outline of one text reads of it whatever its size: its JSON outline, whether it
    reads as a log, its log outline; each read when first asked. A text outlined at several
    sizes (again beside the note naming its cut part, after its first lines) is read once: the
    dev replay at a 25% budget read 77 logs' lines 160 times, and a task's shortening up to
    four times."""

    __slots__ = ("_json", "_log", "_outline", "text")

    def __init__(self, text: str) -> None:
        self.text = text
        self._json: JsonOutline | None | bool = False  # False: not decoded yet
        self._log: bool | None = None
        self._outline: LogOutline | None = None

    @staticmethod
    def of(text: str, kept: Reading | None) -> Reading:
        """``kept`` when it is a reading of this very text, else a new one."""
        return kept if kept is not None and kept.text is text else Reading(text)

    def json(self) -> JsonOutline | None:
        if self._json is False:
            self._json = JsonOutline.of(self.text)
        return self._json  # type: ignore[return-value]

    def is_log(self) -> bool:
        if self._log is None:
            self._log = looks_like_log(self.text)
        return self._log

    def log(self) -> LogOutline:
        if self._outline is None:
            self._outline = LogOutline(self.text)
        return self._outline

    def after(self, start: int) -> Reading:
        """A reading of the text from ``start`` on (what follows its first lines, or its
        leading blanks), taking over the log's lines already read here: only the line
        ``start`` falls in, or none when it starts one, is read again."""
        rest = Reading(self.text[start:])
        if self._outline is None or not 0 < start < len(self.text):
            return rest  # nothing read, or nothing left to read
        before = self.text[:start]
        # where a line break falls between ``start`` and the character before it (one
        # `split_lines` reads as one: "\r\n" is one, cut between the two it is not)
        if before.endswith("\r") and self.text.startswith("\n", start):
            return rest
        done = len(split_lines(before))
        if before.endswith(("\n", "\r")):
            rest._outline = self._outline.after(done)
        else:
            end = _LINE_BREAK.search(self.text, start)
            lead = self.text[start:end.start() if end else len(self.text)]
            rest._outline = self._outline.after(done, lead)
        return rest


#: what `split_lines` breaks a text at
_LINE_BREAK = re.compile("\r\n|[\n\r]")


def compress_tool_output(text: str, cap_tokens: int, counter: Counter, *,
                         reading: Reading | None = None, tokens: int | None = None
                         ) -> CompressedOutput | None:
    """Fit a tool output into `cap_tokens`: JSON outline, sanitized log or head+tail; None if it fits.
    ``reading``: what an outline of the same text at another size read of it (a long output's
    test for a log is a few milliseconds, its lines more). ``tokens``: a guess of the text's
    tokens (a long value inside a call's counted arguments: `shorten_arguments`), taken as its
    count when it is over twice the cap, where the text is cut anyway and the guess only
    sizes the first cut; nearer the cap the text is counted, so one that fits stays whole."""
    cap = max(0, cap_tokens)
    before = tokens if tokens is not None and tokens > 2 * cap else counter.count(text)
    if before <= cap:
        return None
    chars_per_token = len(text) / max(before, 1)
    budget_chars = max(1, int(cap * chars_per_token))
    read = Reading.of(text, reading)

    method: Method
    result: str | None = None
    outline = read.json()  # decoded and walked once for every size tried
    if outline is not None:
        method = "json"
        result = _shrink(outline.render, budget_chars, cap, counter)
    elif read.is_log():
        method = "log"
        keep = 60
        log_outline = read.log()  # read once for every size tried
        result = log_outline.render(keep)
        n = counter.count(result)
        while n > cap and keep > 1:
            keep = max(1, min(keep - 1, int(keep * cap / n * 0.9)))
            result = log_outline.render(keep)
            n = counter.count(result)
        if counter.count(result) > cap:
            sanitized = result
            result = _shrink(lambda c: head_tail(sanitized, c), budget_chars, cap, counter)
        else:
            result = _grown_log(text, log_outline, keep, cap, chars_per_token, counter)
        # a cap about the size of the marks: "[... 113 lines]\n[... 3 lines omitted ...]"
        # quoted nothing of a 1,491-token task cut to 16 tokens; its first words say something
        if result is not None and _mostly_marker(result):
            result = first_words(text, cap, counter) or result
    else:
        method = "headtail"
        result = _shrink(lambda c: head_tail(text, c), budget_chars, cap, counter, text)
        if result is not None and _mostly_marker(result):  # a cap about the marker's size
            result = first_words(text, cap, counter) or result
    result = result or ""
    return CompressedOutput(result, method, before, counter.count(result))
