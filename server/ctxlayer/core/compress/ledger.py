"""The facts ledger of a compaction: facts ranked by how much the conversation relies on them.

Owns ``Ledger`` (persisted with the compaction state), ``add_messages`` and ``render_ledger``.
A fact's score grows with every message that mentions it, most when the user or the assistant
says it in prose (outside code blocks): those are the facts the conversation reasons about; a
value seen once in a tool output or a code block ranks below them, and one seen only in a
listing (a tool output naming more than ``LISTING`` values of its kind) ranks last; a test the
output reports failing ranks as if said in prose, and of a run listing its passing tests by the
score only the first few are kept (``FAILED_SCORE``, ``PASSED_KEPT``). Commands
come from an agent's shell calls, from code blocks and backticks, and from the user's own words
(``prose_commands``: "please look at pytest -k retry"), which rank highest: they are asked for.
Paths of installed libraries (site-packages, the interpreter's own frames) are left out: a
traceback passes there, the work happens in the project; so are paths of one-letter parts
(`/a/`) and a data dump's serials taken for identifiers (`v7_22032`) that no one says in their
own words. Within a kind, higher scores come
first, then the most recently mentioned. Kinds are rendered in a fixed order (paths, commands,
errors, tests, lines, numbers, identifiers), each capped to a share of the space, the rest of
the space then filled in the same order; duplicates and values contained in a longer value of
the same kind are merged into it (a path keeping the better place of the two). Facts the caller
says are already shown (a client summary that names them) are left out.
Pure: extraction is ``extract_facts``; sizes are characters.
"""

from __future__ import annotations

import bisect
import re

import msgspec

from ctxlayer.core.compress.facts import (
    Facts,
    Named,
    NamedFacts,
    extract_facts,
    format_item,
    prose_commands,
)
from ctxlayer.core.compress.logs import error_lines
from ctxlayer.core.text import split_lines
from ctxlayer.protocol import Message

__all__ = ["CUT_HEAD", "KINDS", "Ledger", "add_messages", "facts_cut", "from_facts", "merge_ledgers",
           "render_ledger", "text_of"]

#: (Facts field, label, share of the ledger it may take before the rest is shared out)
KINDS = (
    ("paths", "paths", 0.24),
    ("commands", "commands", 0.18),
    ("error_codes", "errors", 0.14),
    ("tests", "tests", 0.12),
    ("line_numbers", "lines", 0.12),
    ("numbers", "numbers", 0.08),
    ("identifiers", "identifiers", 0.12),
)
_SHARE = {kind: share for kind, _, share in KINDS}
#: the lines a log or an output wrote to report an error (`logs.error_lines`), verbatim: the
#: ledger's first line, within ERROR_LINES_SHARE of it; the kinds share what they leave. A
#: summarized log kept only its error's codes and paths ("errno 28", "/var/lib/db"). Read
#: from what the user and the assistant wrote (a pasted log, a quoted error), not from tool
#: outputs: their error lines in the chunks grew them, and the replay's dev set lost 9 needed
#: facts at 25% (655 to 646) and 11 at 10%, a chat's test names summarized to make room
ERROR_LINES = "error_lines"
ERROR_LINES_SHARE = 0.3
ERROR_LINE_ITEM_MAX = 240
PROSE_SCORE = 3  # a mention in the user's or the assistant's own words
MENTION_SCORE = 1  # any other mention (tool output, code block)
#: a command the user names in their own words ("please look at pytest -k retry"): what they
#: ask to be run outranks a command an agent ran once, not one it keeps running
SAID_SCORE = PROSE_SCORE + 1
#: a tool output naming more values of one kind than this is a listing (a directory tree, a
#: `find`, a grep over the repository): each of its values is one of many, so a mention there
#: scores LISTED_SCORE, below a value a traceback or a diff names among a few. Ranked by score,
#: a listing read last crowded a traceback's locations out of a small summary's ledger.
LISTING = 20
LISTED_SCORE = 0
#: a test a tool output reports failing (pytest's "FAILED tests/a.py::test_x", "tests/a.py::
#: test_x FAILED"): what the work is about, ranked as if said in prose. Among the 120 ids of a
#: run it scored as each passing one, came last in the listing's order, and a summary's
#: "tests:" listed 62 passing ids and not the failing one
FAILED_SCORE = PROSE_SCORE
#: the passing ids one output listing more than LISTING of them may add: a run's passes by the
#: hundred are noise (they took 73% of a Codex session's summary)
PASSED_KEPT = 3
_FAILED_TEST = re.compile(r"^(?:FAILED|ERROR)\s+(\S+)|^(?=\S+::\S)(\S++)\s+(?:FAILED|ERROR)\b",
                          re.MULTILINE)
_PASSED_TEST = re.compile(r"^PASSED\s+(\S+)|^(?=\S+::\S)(\S++)\s+PASSED\b", re.MULTILINE)
MAX_PER_KIND = 300  # facts kept per kind in the state: the lowest-ranked give way
# commands may hold spaces and commas: quoted; other kinds are single words (quoting each costs
# tokens a small budget cannot spare)
_CODE_KINDS = frozenset({"commands"})
# paths of installed libraries and the interpreter's frames: where a traceback passes, not the
# project's files; they would crowd the project's paths out of the ledger. Also the system's
# devices and programs (`> /dev/null`, `#!/usr/bin/env`), the placeholders of instructions
# (`/path/to/file`), a bare `name/` (a diff's `a/`, a regex's `False/`) and a sed substitution
# (`12s/old/new/`): never the work's files.
_LIBRARY_WORDS = ("site-packages", "dist-packages", "conda", "node_modules", "/path/to/")
_LIBRARY_STARTS = ("<", "/dev/", "/proc/", "/bin/", "/usr/lib/", "/usr/local/lib/", "/usr/bin/",
                   "/usr/local/bin/", "path/to/")
_LIB_PYTHON = re.compile(r"/lib/python\d")
_NOT_A_FILE = re.compile(r"[^/]+/$|\d*s/[^/]*/[^/]*/")


def _is_library(value: str) -> bool:
    """Whether a path or location is one of those: substring and prefix tests first, the two
    shapes by pattern (one search of a pattern of all of them a value was most of the
    ledger's time on a listing of paths; a property test holds this to that pattern)."""
    return (any(w in value for w in _LIBRARY_WORDS) or value.startswith(_LIBRARY_STARTS)
            or ("/lib/python" in value and _LIB_PYTHON.search(value) is not None)
            or _NOT_A_FILE.match(value) is not None)


#: a data file's serial, not a name: one or two letters, digits, a part of 3 digits or more
#: after an underscore (`v7_22032` of a CSV a tool printed; `x86_64` is not one). A dump's
#: serials took a summary's identifiers by the dozen; one the user or the assistant writes in
#: their own words, or one the ledger holds already, is kept as any identifier
_SERIAL = re.compile(r"[A-Za-z]{1,2}\d*(?:_\d+)*_\d{3,}(?:_\d+)*")
#: a path of one-letter parts (`/a/`, `a/b`: a diff's prefixes, a data file's column): no file
_ONE_LETTER_PATH = re.compile(r"/?(?:[^/]/)*[^/]?/?")


_LOCATED = frozenset({"paths", "line_numbers"})
_INLINE_SCRIPT = "<string> line "  # a `python -c` script's traceback location
# the opening line's runs possessive, as in fact_patterns.FENCE (a long line of backticks)
_FENCED = re.compile(r"^[ \t]{0,3}(```++|~~~++)[^\n]*+\n.*?(?:^[ \t]{0,3}\1[ \t]*$|\Z)",
                     re.MULTILINE | re.DOTALL)


class Entry(msgspec.Struct, array_like=True):
    value: str
    score: int
    last: int  # order of its latest mention (higher is newer)


class Ledger(msgspec.Struct, kw_only=True):
    kinds: dict[str, list[Entry]] = msgspec.field(default_factory=dict)
    mentions: int = 0  # messages read so far: the ``last`` of the next one

    def __len__(self) -> int:
        return sum(len(v) for v in self.kinds.values())


def from_facts(facts: Facts) -> Ledger:
    """A ledger from an unranked Facts (a state saved before facts were ranked)."""
    led = Ledger()
    for kind, _, _ in KINDS:
        led.kinds[kind] = [Entry(v, MENTION_SCORE, 0) for v in getattr(facts, kind, ())]
    return led


def text_of(msg: Message) -> str:
    """What facts are read from: the content and the arguments of its tool calls (a command, a
    file an agent writes)."""
    if not msg.tool_calls:
        return msg.content
    return msg.content + "".join("\n" + arguments_text(c.arguments) for c in msg.tool_calls)


def arguments_text(arguments: str) -> str:
    """A tool call's arguments as the text they carry: the string values of the JSON, one per
    line. Read raw, a script's escaped newlines glue words together ("\\nimport os" would
    yield an identifier "nimport"); arguments that are not JSON are read as they are."""
    if not arguments or arguments[0] not in "{[":
        return arguments or ""
    try:
        value = msgspec.json.decode(arguments)
    except (msgspec.DecodeError, RecursionError):  # RecursionError: nested past a decoder
        return arguments
    out: list[str] = []
    stack = [value]
    while stack:
        v = stack.pop()
        if isinstance(v, str):
            out.append(v)
        elif isinstance(v, dict):
            stack.extend(reversed(list(v.values())))
        elif isinstance(v, list):
            stack.extend(reversed(v))
        elif v is not None and not isinstance(v, bool):
            out.append(str(v))
    return "\n".join(out)


#: argument keys under which agents' shell tools take the command they run
_COMMAND_KEYS = ("command", "cmd", "script")
_COMMAND_MAX = 200


def shell_commands(msg: Message) -> list[str]:
    """The commands an assistant ran through its shell tools (bash, shell, Bash ...): the
    first line of a `command` / `cmd` / `script` argument, a list of words joined. What an
    agent already ran matters to the rest of its work as much as what the user typed."""
    out: list[str] = []
    for call in msg.tool_calls or ():
        try:
            args = msgspec.json.decode(call.arguments or "{}")
        except (msgspec.DecodeError, TypeError, RecursionError):
            continue
        if not isinstance(args, dict):
            continue
        for key in _COMMAND_KEYS:
            value = args.get(key)
            if isinstance(value, list) and all(isinstance(v, str) for v in value):
                value = " ".join(value)
            if isinstance(value, str) and value.strip():
                line = split_lines(value.strip())[0].strip()
                if 2 < len(line) <= _COMMAND_MAX:
                    out.append(line)
                break
    return out


def _prose(text: str) -> str:
    return _FENCED.sub(" ", text) if ("```" in text or "~~~" in text) else text


def add_messages(ledger: Ledger | None, messages: list[Message],
                 extracted: list[Facts] | None = None) -> Ledger:
    """A new ledger: ``ledger`` plus the facts of ``messages`` (``extracted``: their
    ``extract_facts``, when the caller has them already)."""
    led = Ledger(kinds={k: list(v) for k, v in (ledger.kinds if ledger else {}).items()},
                 mentions=ledger.mentions if ledger else 0)
    index: dict[str, dict[str, int]] = {
        k: {e.value: i for i, e in enumerate(led.kinds.get(k, []))}
        for k in (*(k for k, _, _ in KINDS), ERROR_LINES)}
    for n, msg in enumerate(messages):
        facts = extracted[n] if extracted is not None else extract_facts(text_of(msg))
        led.mentions += 1
        speaker = msg.role in ("user", "assistant") and msg.kind not in ("toolOutput", "doc")
        if speaker:  # see ERROR_LINES: a tool's output has its outline and the action log
            _add(led, index, ERROR_LINES, error_lines(msg.content), PROSE_SCORE)
        ran = shell_commands(msg) if msg.tool_calls else []
        said = prose_commands(msg.content) if speaker and msg.role == "user" else []
        if ran or said:
            facts = msgspec.structs.replace(
                facts, commands=tuple(dict.fromkeys((*ran, *facts.commands, *said))))
        if facts.is_empty():
            continue
        prose = _prose(msg.content) if speaker else ""
        if facts.tests and not speaker:
            failed, facts = _run_results(msg.content, facts)
        else:
            failed = frozenset()
        for kind, _, _ in KINDS:
            values = getattr(facts, kind)
            if not values:
                continue
            entries = led.kinds.setdefault(kind, [])
            where = index[kind]
            plain = MENTION_SCORE if speaker or len(values) <= LISTING else LISTED_SCORE
            for value in values:
                if kind == "line_numbers" and value.startswith(_INLINE_SCRIPT):
                    value = value[len("<string> "):]  # no file to name: the line alone
                elif kind in _LOCATED and _is_library(value):
                    continue
                elif kind == "paths" and _ONE_LETTER_PATH.fullmatch(value):
                    continue
                elif kind == "identifiers" and _SERIAL.fullmatch(value) and value not in where \
                        and not (speaker and value in prose):
                    continue
                if kind == "commands" and value in said:
                    score = SAID_SCORE
                elif kind == "tests" and value in failed:
                    score = FAILED_SCORE
                elif speaker and (value in prose or value in ran):
                    score = PROSE_SCORE
                else:
                    score = plain
                i = where.get(value)
                if i is None:
                    where[value] = len(entries)
                    entries.append(Entry(value, score, led.mentions))
                else:
                    e = entries[i]
                    e.score += score
                    e.last = led.mentions
    for kind, entries in led.kinds.items():
        if len(entries) > MAX_PER_KIND:
            led.kinds[kind] = sorted(entries, key=_rank)[:MAX_PER_KIND]
    return led


def _run_results(text: str, facts: Facts) -> tuple[frozenset[str], Facts]:
    """The test ids a tool output reports failing, and its facts with the ids it reports
    passing cut to PASSED_KEPT when it lists more than LISTING of them (and the identifiers
    that are the names of those cut)."""
    failed = frozenset(a or b for a, b in _FAILED_TEST.findall(text)) \
        if "FAILED" in text or "ERROR" in text else frozenset()
    passed = {a or b for a, b in _PASSED_TEST.findall(text)} if "PASSED" in text else set()
    if len(passed) > LISTING:
        seen = 0
        kept: list[str] = []
        cut: set[str] = set()
        for value in facts.tests:
            if value in passed and value not in failed:
                seen += 1
                if seen > PASSED_KEPT:
                    cut.add(value.rsplit("::", 1)[-1])
                    continue
            kept.append(value)
        facts = msgspec.structs.replace(facts, tests=tuple(kept), identifiers=tuple(
            v for v in facts.identifiers if v not in cut))
    return failed, facts


def _add(led: Ledger, index: dict[str, dict[str, int]], kind: str, values: list[str],
         score: int) -> None:
    """``values`` mentioned in the message ``led`` read last, each adding ``score``."""
    if not values:
        return
    entries = led.kinds.setdefault(kind, [])
    where = index[kind]
    for value in values:
        i = where.get(value)
        if i is None:
            where[value] = len(entries)
            entries.append(Entry(value, score, led.mentions))
        else:
            entries[i].score += score
            entries[i].last = led.mentions


def merge_ledgers(ledgers: list[Ledger]) -> Ledger:
    """One ledger for several read one after the other (oldest first): a value's scores add
    up, and its latest mention is counted after everything the older ledgers read."""
    out = Ledger()
    index: dict[str, dict[str, int]] = {}
    for led in ledgers:
        for kind, entries in led.kinds.items():
            mine = out.kinds.setdefault(kind, [])
            where = index.setdefault(kind, {})
            for e in entries:
                last = out.mentions + e.last
                i = where.get(e.value)
                if i is None:
                    where[e.value] = len(mine)
                    mine.append(Entry(e.value, e.score, last))
                else:
                    mine[i].score += e.score
                    mine[i].last = max(mine[i].last, last)
        out.mentions += led.mentions
    for kind, entries in out.kinds.items():
        if len(entries) > MAX_PER_KIND:
            out.kinds[kind] = sorted(entries, key=_rank)[:MAX_PER_KIND]
    return out


def _rank(e: Entry) -> tuple[int, int]:
    return (-e.score, -e.last)


def _item(kind: str, value: str) -> str:
    return format_item(value, kind in _CODE_KINDS)


#: kinds whose values seen once in a tool output are noise (a log line's counters, timings,
#: `key=value` fields and versions): listed only once the conversation mentions them again
_NOISY = frozenset({"numbers"})


def holds(text: str, value: str) -> int:
    """Where the last place ``text`` holds ``value`` whole starts, -1 when it does not: not
    as the start or the end of a longer name or number (`test_parse_1` is not held by
    `test_parse_10`, `pytest -k case1` not by `pytest -k case12`, `line 3` not by `line 30`;
    `astroid/manager.py` is held by `a/astroid/manager.py`). A substring test merged the
    first into the second, and the summary lost them."""
    at = text.rfind(value)
    while at >= 0:
        end = at + len(value)
        if not (at and _joins(text[at - 1], value[0])) and not (
                end < len(text) and _joins(value[-1], text[end])):
            return at
        at = text.rfind(value, 0, end - 1)
    return -1


def _joins(a: str, b: str) -> bool:
    """Whether two characters side by side belong to one name or number."""
    return (a.isalnum() or a == "_") and (b.isalnum() or b == "_")


def _ranked(entries: list[Entry], shown: str, kind: str = "") -> list[str]:
    """Values best first, merged into longer values that contain them, minus those shown (and,
    for a noisy kind, minus those mentioned once outside prose). A value inside one taken
    before it is left out; one taken before a value that contains it gives way to that value,
    which takes its place in the order when it names a file by its directories.
    Inside is transitive, so both tests may look at every value taken, in one search over
    their NUL-joined text (one search a value, not one a pair: most of a long ledger's time)."""
    noisy = kind in _NOISY
    lines = kind == "line_numbers"
    taken: list[str] = []
    joined = ""
    for e in sorted(entries, key=_rank):
        v = e.value
        if not v.strip() or (shown and holds(shown, v) >= 0) or (
                noisy and e.score <= MENTION_SCORE) or (
                lines and e.score <= LISTED_SCORE and v.startswith("line ")):
            # a line with no file, seen only in listings (a log numbering its lines): "line
            # 1, line 2, ... line 249" filled a summary's ledger and said nothing
            continue
        if holds(joined, v) >= 0 if "\0" not in v else any(holds(t, v) >= 0 for t in taken):
            continue
        taken.append(v)
        joined += "\0" + v
    # from the last taken back: a value a later one contains gave way to it, and that one
    # takes its place in the order, the best ranked of the kept values holding it
    # (`astroid/manager.py`, named in 13 messages, gave way to `a/astroid/manager.py` of one
    # diff, and went with it to the end of a long list)
    out: list[str] = []
    place: list[int] = []  # the best rank each value of ``out`` stands for
    later = ""
    starts: list[int] = []  # where each value of ``out`` starts in ``later``, increasing
    for k in range(len(taken) - 1, -1, -1):
        v = taken[k]
        # where the latest kept value holding it starts, the best ranked of them (None: one
        # holds it, found one by one for a value holding a NUL); -1: none does
        if "\0" not in v:
            at: int | None = holds(later, v)
        else:
            at = None if any(holds(t, v) >= 0 for t in out) else -1
        if at == -1:
            out.append(v)
            place.append(k)
            starts.append(len(later) + 1)
            later += "\0" + v
        # a bare name (`__init__.py`, `test_a`, `line 3`) is held by many values and says
        # nothing of which: it gives way without passing its place on
        elif at is not None and "/" in v:
            j = bisect.bisect_right(starts, at) - 1
            place[j] = min(place[j], k)
    order = sorted(range(len(out)), key=place.__getitem__)
    return [out[j] for j in order]


def render_ledger(ledger: Ledger | None, max_chars: int, *, shown: str = "",
                  extra: tuple[str, list[str]] | None = None) -> str:
    """The ledger as one markdown line per kind within ``max_chars``, after the error lines
    (`ERROR_LINES`), one a line.

    ``shown``: text already in the summary (facts in it are left out). ``extra``: a (label,
    items) line rendered last with the space the kinds leave, e.g. constraints demoted from
    the verbatim part.
    """
    if max_chars <= 0:
        return ""
    ranked = {kind: _ranked(ledger.kinds.get(kind, []), shown, kind) if ledger else []
              for kind, _, _ in KINDS}
    # the error lines take what the kinds leave within their own shares, up to their own
    # (before the kinds, they pushed a tenth of the replay's needed facts out of the chunks)
    errors = _error_lines(ledger, shown, min(int(max_chars * ERROR_LINES_SHARE),
                                             max_chars - _own_size(ranked, max_chars) - 1))
    if errors:  # what they say already is not said again
        ranked = {k: [v for v in vs if holds(errors, v) < 0] for k, vs in ranked.items()}
        max_chars -= len(errors) + 1
    kinds = _kinds(ranked, max_chars, extra, max_chars + (len(errors) + 1 if errors else 0))
    return "\n".join(x for x in (errors, kinds) if x)


def _own_size(ranked: dict[str, list[str]], max_chars: int) -> int:
    """The characters the kinds take within their own shares of ``max_chars``."""
    return sum(_within([_item(kind, v) for v in ranked[kind][:64]], label,
                       int(max_chars * share), max_chars)[1] for kind, label, share in KINDS)


def _kinds(ranked: dict[str, list[str]], max_chars: int, extra: tuple[str, list[str]] | None,
           whole: int) -> str:
    """The ledger's kinds, a line each, within ``max_chars``, each first within its share of
    ``whole`` (the ledger's size: the kinds keep their shares beside the error lines)."""
    # a path that a location in the lines' own share says already ("src/a.py line 3" says
    # src/a.py) is left out of the paths, and its room goes to the facts after it: a small
    # summary listed a traceback's files twice and had no room left for the lines that failed
    if ranked["paths"] and ranked["line_numbers"]:
        lines = [_item("line_numbers", v) for v in ranked["line_numbers"]]
        located, _ = _within(lines, "lines", int(whole * _SHARE["line_numbers"]), max_chars)
        said = "\0".join(located)
        ranked["paths"] = [v for v in ranked["paths"] if v not in said]
    return _render(ranked, max_chars, extra, whole)


def _error_lines(ledger: Ledger | None, shown: str, max_chars: int) -> str:
    """The ledger's error lines, best first, one a line under their label, within
    ``max_chars``; those ``shown`` already left out. Empty when there are none."""
    entries = ledger.kinds.get(ERROR_LINES) if ledger else None
    if not entries:
        return ""
    head = "- error lines (verbatim):"
    out = [head]
    used = len(head)
    for e in sorted(entries, key=_rank):
        if shown and e.value in shown:
            continue
        item = "  - " + format_item(e.value, False, ERROR_LINE_ITEM_MAX)
        if used + 1 + len(item) > max_chars:
            continue  # a shorter one may fit
        out.append(item)
        used += 1 + len(item)
    return "\n".join(out) if len(out) > 1 else ""


def _within(items: list[str], label: str, own: int, room: int) -> tuple[list[str], int]:
    """The leading ``items`` of one line of the ledger that fit ``own`` characters (and
    ``room``), its label counted with the first, and the characters they take: what the first
    pass of `_render` takes of a kind, which never depends on the other kinds (their shares
    add up to the whole)."""
    taken: list[str] = []
    used = 0
    for item in items:
        c = len(item) + (2 if taken else len(label) + 5)
        if used + c > own or used + c > room:
            break
        taken.append(item)
        used += c
    return taken, used


def _render(ranked: dict[str, list[str]], max_chars: int,
            extra: tuple[str, list[str]] | None, whole: int) -> str:
    """The ledger's lines: each kind first within its own share (of ``whole``), then the
    space left, kinds in order."""
    lines_of: list[tuple[str, list[str], int]] = []  # (label, candidate items, own share)
    for kind, label, share in KINDS:
        values = ranked[kind]
        if values:
            lines_of.append((label, [_item(kind, v) for v in values], int(whole * share)))
    if extra and extra[1]:
        lines_of.append((extra[0], [" ".join(x.split()) for x in extra[1]], 0))
    chosen: list[list[str]] = [[] for _ in lines_of]
    size = 0

    def cost(k: int, item: str) -> int:
        return len(item) + (2 if chosen[k] else len(lines_of[k][0]) + 5)

    # first pass: each kind within its own share; second: the space left, kinds in order
    for k, (label, items, own) in enumerate(lines_of):
        chosen[k], used = _within(items, label, own, max_chars - size)
        size += used
    for k, (_, items, _) in enumerate(lines_of):
        for item in items[len(chosen[k]):]:
            c = cost(k, item)
            if size + c > max_chars:
                break
            chosen[k].append(item)
            size += c
    text = "\n".join(f"- {lines_of[k][0]}: " + ", ".join(items)
                     for k, items in enumerate(chosen) if items)
    return text[:max_chars]


#: how the line naming a shortened message's cut part starts (`facts_cut`)
CUT_HEAD = "[cut from this message: "
#: kinds a shortened message names when its cut part held them: the ones a later step looks up
#: by their exact text (identifiers and numbers are too many to list)
_CUT_KINDS = ("error_codes", "tests", "paths", "line_numbers", "commands")


_TRACEBACK_LOCATION = re.compile(r"(.+) line (\d+)")


#: what separates the words of a kept text whose set answers "shown" at once for most values
_WORD_GAP = re.compile(r"[\s,;()\[\]{}<>\"'`]+")


def _shows(text: str, kind: str, value: str, words: set[str] | frozenset[str] = frozenset()
           ) -> bool:
    """Whether ``text`` still shows the fact: verbatim, or a traceback's location as the
    traceback writes it (``File "a.py", line 3`` is the fact ``a.py line 3``). ``words``: some
    substrings of ``text`` (its words), looked up before the text is searched: most values an
    outline keeps are whole words of it, a set lookup instead of a search of the text."""
    if value in words or value in text:
        return True
    m = _TRACEBACK_LOCATION.fullmatch(value) if kind == "line_numbers" else None
    return bool(m) and f'"{m.group(1)}", line {m.group(2)}' in text


def facts_cut(original: str, kept: str, max_chars: int, facts: Named | None = None) -> str:
    """The facts of ``original`` that ``kept`` (a shortened copy) lost, as one line within
    ``max_chars`` (empty when none was lost): errors, tests, paths, lines and commands, in that
    order. A message shortened to fit loses the middle of a traceback or a listing; naming what
    was cut keeps the exception, the test and the file findable without its whole text."""
    if max_chars <= 0:
        return ""
    if facts is None:  # ``facts``: named_facts(original), read or being read by the caller
        facts = NamedFacts(original)  # each kind read when the line comes to it
    head = CUT_HEAD
    # the values named so far, NUL-separated: "inside one of them" is one search, not one a
    # value (most of a long note's time); a value holding a NUL is checked one by one
    lost: list[str] = []
    lost_text = ""
    words = set(_WORD_GAP.split(kept))
    kept_lines: set[str] | None = None
    out, size = [], len(head) + 1
    bare = 0  # lines named with no file: a log numbering its lines names them by the hundred
    for kind in _CUT_KINDS:
        # a NamedFacts reads a kind only as far as the line takes it
        values = facts.values(kind) if isinstance(facts, NamedFacts) else getattr(facts, kind)
        for value in values:
            if kind == "line_numbers" and value.startswith(_INLINE_SCRIPT):
                continue
            if kind in _LOCATED and _is_library(value):
                continue
            if kind == "line_numbers" and value.startswith("line "):
                bare += 1
                if bare > LISTING:  # a listing: "line 4, line 5, ... line 13" said nothing
                    if bare == LISTING + 1:
                        out = [i for i in out if not i.startswith("line ")]
                        size = len(head) + 1 + sum(len(i) + 2 for i in out)
                    continue
            if kind == "line_numbers" and kept_lines is None:
                # said alike, written otherwise ("Line 7", "#L12", "line\t0" are "line N"):
                # compared as read, so a line the shortened text still names is not called cut
                kept_lines = set(NamedFacts(kept).values("line_numbers"))
            if _shows(kept, kind, value, words) or (kind == "line_numbers" and value in
                                                    kept_lines) or (  # type: ignore[operator]
                    holds(lost_text, value) >= 0 if "\0" not in value
                    else any(holds(v, value) >= 0 for v in lost)):
                continue
            item = _item(kind, value)
            if size + len(item) + 2 > max_chars:
                # the first that does not fit ends the line: a listing of thousands of paths
                # is not read to its end for a note of a few names
                return head + ", ".join(out) + "]" if out else ""
            lost.append(value)
            lost_text += "\0" + value
            out.append(item)
            size += len(item) + 2
    return head + ", ".join(out) + "]" if out else ""
