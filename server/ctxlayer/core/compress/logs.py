"""Log sanitizing: noise out, errors and the key stack lines in, repeats counted.

Owns `looks_like_log` and `sanitize_log`. Pure and linear: every regex here is anchored or
bounded (no nested quantifiers), each line is visited a constant number of times, and nothing
raises on any string.

What `sanitize_log` does, in order:
1. Noise goes: ANSI colours, timestamps (ISO 8601, syslog, bare times and epochs at the start
   of a line), pid/thread ids, uuids and long hex ids (as `<uuid>`/`<id>`), hex addresses
   (`0x…`), durations ("took 12ms", "(3.2s)"), and `key=value` fields known to be noise
   (request_id, trace_id, duration_ms, ...). JSON log lines keep level, logger, message and
   error fields; a stack field is expanded into lines.
2. Stack traces become one unit each: Python tracebacks, JS/Java `at ...` runs. Inside a unit
   the first and last frames and every frame outside library paths (site-packages,
   node_modules, /usr/lib, node:internal, java.*) are kept with their source lines; the rest
   become "[... N library frames]". The exception message line stays with its unit.
3. Units (lines or stacks) that are the same once digits are masked collapse into their first
   occurrence with a count "(x42)"; an error's last occurrence, when its numbers differ, is
   kept too, "(the last of 42)". An outline of the lines between the log's first and last
   ones (shown whole beside it) counts and quotes a run by its units among those lines.
4. Units are ranked: errors/exceptions/stacks/pytest failure lines, then warnings and section
   headers and summaries, then the rest. Up to `keep_lines` output lines are kept, a tier at a
   time; a tier that does not fit keeps its first and last units alternately (head and tail).
5. Kept units come out in their original order, gaps as "[... N lines]", and a last line says
   how many lines went in, how many came out, and how many repeats were collapsed.
"""

from __future__ import annotations

import bisect
import re

import msgspec

from ctxlayer.core.text import split_lines

__all__ = ["error_lines", "looks_like_log", "sanitize_log"]

# ---------------------------------------------------------------------------------------------
# Noise

_ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]|\x1b\][^\x07\x1b]{0,200}(?:\x07|\x1b\\)")
# Patterns start with a character class or a literal where they can: Python's re then skips
# ahead quickly instead of trying every alternative at every position.
_ISO_TS = re.compile(
    r"\d{4}[-/]\d\d[-/]\d\d[T ]\d\d:\d\d(?::\d\d)?(?:[.,]\d{1,9})?"
    r"(?: ?(?:Z|[+-]\d\d:?\d\d|UTC|GMT))?"
)
_LEAD_TS = re.compile(
    r"^\s*(?:"
    r"\[?(?:Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec) [ \d]\d \d\d:\d\d:\d\d\]?"
    r"|\[?\d\d:\d\d:\d\d(?:[.,]\d{1,9})?\]?"
    r"|\[?\d{10}(?:\d{3})?(?:\.\d{1,9})?\]?"
    r"|\[\s*\d{1,7}\.\d{3,9}\]"  # dmesg
    r")(?=\s|$|[|:,\]])"
)
_UUID = re.compile(
    r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}(?![0-9a-fA-F])"
)
_HEX_ADDR = re.compile(r"0x[0-9a-fA-F]{6,16}\b")
_HEX_ID = re.compile(r"\b[0-9a-fA-F]{20,64}\b")
# The key's run is possessive (`{0,30}+`), as a duration's digits are (`_DURATION`): what must
# follow either is never a word character, so giving characters back never leads to a match,
# and a word that is no key is given up at once (a tenth and a quarter less time)
_KV = re.compile(
    r"(?<![\w./@-])([A-Za-z@][\w-]{0,30}+)\s?[=:]\s?(?:\"[^\"]{0,200}\"|'[^']{0,200}'|[^\s,;\]\)]+)[,;]?"
)
_NOISE_KEYS = frozenset(
    [
        "pid",
        "ppid",
        "tid",
        "thread",
        "threadid",
        "thread_id",
        "threadname",
        "thread_name",
        "request_id",
        "requestid",
        "req_id",
        "reqid",
        "x-request-id",
        "trace_id",
        "traceid",
        "span_id",
        "spanid",
        "correlation_id",
        "correlationid",
        "session_id",
        "sessionid",
        "conn_id",
        "connid",
        "connection_id",
        "duration",
        "duration_ms",
        "durationms",
        "elapsed",
        "elapsed_ms",
        "latency",
        "latency_ms",
        "took",
        "time_ms",
        "timems",
        "ts",
        "timestamp",
        "time",
        "@timestamp",
        "hostname",
        "host",
        "uptime",
    ]
)
# a bare number in brackets is a pid where it stands alone ("[1234] started") or as syslog
# writes it ("sshd[1234]:"); after a name, a bracket or a paren it is an index or a list the
# line means ("items[1234]", "matrix[12][34]", "f([12])"), which the outline quotes as it came
_PID_BRACKET = re.compile(
    r"\[(?:pid|PID|tid|TID)\s*\d{2,8}(?::\d{1,8})?\]"
    r"|(?<!\S)\[\d{2,8}(?::\d{1,8})?\]|(?<=\w)\[\d{2,8}(?::\d{1,8})?\](?=:)"
    r"|\[(?:Main)?Thread[^\]]{0,60}\]|\[pool-\d+-thread-\d+\]"
)
_PID_WORD = re.compile(r"\b(?:pid|PID)[\s=]?\d{1,8}\b")
_DURATION = re.compile(r"(?<![\w.])\d++(?:\.\d+)?+(?:\s?(?:ms|us|µs|ns|sec|secs|seconds)|s)\b")
_DANGLING = re.compile(r"\s(?:in|took|after|elapsed)(?=\s*$|\s+[=_-]{3})")
_SPACES = re.compile(r"[ \t]{2,}")
_DIGIT = re.compile(r"\d").search
#: what a removal leaves behind until the line is whole again: brackets that only held removed
#: noise ("[pid 12]", "(3.2s)") go with it, a line's own empty brackets (`do()`) stay
_GONE = "\x00"
_EMPTY_BRACKETS = re.compile(r"\[[\s\x00]*\x00[\s\x00]*\]|\([\s\x00]*\x00[\s\x00]*\)")
_LEAD_JUNK = re.compile(r"^[\s\-|:,\x00]+(?=[^\s\x00])")
#: the characters but white space a leading run of junk starts with (`_LEAD_JUNK`)
_JUNK_FIRST = frozenset("-|:," + _GONE)


def _hex_id(m: re.Match[str]) -> str:
    s = m.group(0)
    has_digit = any(c.isdigit() for c in s)
    has_alpha = any(c.isalpha() for c in s)
    return "<id>" if has_digit and has_alpha else s


def _noise_kv(m: re.Match[str]) -> str:
    return _GONE if m.group(1).lower() in _NOISE_KEYS else m.group(0)


def _denoise(line: str) -> str:
    """One line without timestamps, ids, addresses and durations; indentation kept."""
    if "\x1b" in line:
        line = _ANSI.sub("", line)
    indent_len = len(line) - len(line.lstrip(" \t"))
    indent, body = line[:indent_len], line[indent_len:]
    # the line's own NUL bytes are not our marks: they stand aside as a character the line
    # lacks and come back at the end (dropped, "nul\x00byte" was quoted as "nulbyte")
    own = _stand_in(body) if _GONE in body else None
    if own:
        body = body.replace(_GONE, own)
    head = body[:48]
    # timestamps, durations and hex ids all hold a digit: a line without one (code, prose,
    # a listing) skips their patterns, each of which would try every position of the line
    digits = _DIGIT(body) is not None
    if digits:
        body = _ISO_TS.sub(_GONE, _LEAD_TS.sub(_GONE, body, count=1))
    if body[:48] != head:  # a timestamp left its separators behind: "- ", "| ", ": "
        if "[" in body or "(" in body:
            body = _EMPTY_BRACKETS.sub("", body)
        body = body.lstrip(" \t" + _GONE)
        if body[:1] in _JUNK_FIRST or body[:1].isspace():
            body = _LEAD_JUNK.sub("", body)
    if "-" in body:
        body = _UUID.sub("<uuid>", body)
    if "0x" in body:
        body = _HEX_ADDR.sub("0x…", body)
    if digits:
        body = _HEX_ID.sub(_hex_id, body)
    if "=" in body or ":" in body:
        body = _KV.sub(_noise_kv, body)
    if "[" in body:
        body = _PID_BRACKET.sub(_GONE, body)
    if "pid" in body or "PID" in body:
        body = _PID_WORD.sub(_GONE, body)
    if digits:
        body = _DURATION.sub(_GONE, body)
    if _GONE in body:
        if "[" in body or "(" in body:
            body = _EMPTY_BRACKETS.sub("", body)
        body = body.replace(_GONE, "")
    if "  " in body or "\t" in body:
        body = _SPACES.sub(" ", body)
    body = body.strip()
    if "in" in body or "took" in body or "after" in body or "elapsed" in body:
        body = _DANGLING.sub("", body)
    if own:
        body = body.replace(own, _GONE)
    return (indent + body) if body else ""


#: what a line's own NUL bytes stand as while `_denoise` marks its removals with NULs: the
#: Unicode noncharacters, which no text means to hold
_STAND_INS = tuple(map(chr, range(0xFDD0, 0xFDF0)))


def _stand_in(body: str) -> str:
    """A character ``body`` does not hold to stand for its NUL bytes ("": none, and they go)."""
    return next((c for c in _STAND_INS if c not in body), "")


# ---------------------------------------------------------------------------------------------
# JSON log lines

_JSON_NOISE_KEYS = frozenset(
    [
        "time",
        "ts",
        "timestamp",
        "@timestamp",
        "date",
        "datetime",
        "pid",
        "ppid",
        "tid",
        "thread",
        "thread_id",
        "threadName",
        "thread_name",
        "process",
        "processName",
        "hostname",
        "host",
        "request_id",
        "requestId",
        "req_id",
        "trace_id",
        "traceId",
        "span_id",
        "spanId",
        "correlation_id",
        "duration",
        "duration_ms",
        "elapsed",
        "latency",
        "uptime",
        "v",
        "@version",
        "version",
        "caller",
        "source_location",
        "line_no",
        "lineno",
        "seq",
        "sequence",
    ]
)
_JSON_LEVEL_KEYS = ("level", "severity", "levelname", "lvl", "log.level")
_JSON_MSG_KEYS = ("msg", "message", "event", "text")
_JSON_STACK_KEYS = ("stack", "stacktrace", "stack_trace", "exc_info", "traceback", "exception")


def _json_line(line: str) -> list[str] | None:
    """A JSON log record as a text line plus expanded stack lines, or None if not JSON."""
    try:
        record = msgspec.json.decode(line)
    except Exception:
        return None
    if not isinstance(record, dict):
        return None
    parts: list[str] = []
    stack: list[str] = []
    for key in _JSON_LEVEL_KEYS:
        v = record.get(key)
        if isinstance(v, (str, int)):
            parts.append(str(v).upper())
            break
    logger = record.get("logger") or record.get("name") or record.get("logger_name")
    if isinstance(logger, str):
        parts.append(logger + ":")
    for key in _JSON_MSG_KEYS:
        v = record.get(key)
        if isinstance(v, str):
            parts.append(v)
            break
    skip = set(_JSON_LEVEL_KEYS) | set(_JSON_MSG_KEYS) | {"logger", "name", "logger_name"}
    for key, v in record.items():
        if key in skip or key in _JSON_NOISE_KEYS:
            continue
        if key in _JSON_STACK_KEYS or (isinstance(v, str) and "\n" in v):
            if isinstance(v, str):
                stack.extend(split_lines(v))
            elif isinstance(v, list):
                stack.extend(str(x) for x in v[:200])
            elif isinstance(v, dict):
                for k2 in ("message", "type", "stack"):
                    if isinstance(v.get(k2), str):
                        stack.extend(split_lines(v[k2]))
            continue
        if isinstance(v, (dict, list)):
            text = msgspec.json.encode(v).decode()
            v = text if len(text) <= 120 else text[:119] + "…"
        parts.append(f"{key}={v}")
    return [" ".join(parts)] + stack


# ---------------------------------------------------------------------------------------------
# Classification

_ERROR = re.compile(
    r"\b(?:ERROR|ERR|FATAL|CRITICAL|CRIT|EMERG|ALERT|SEVERE|PANIC|FAILED|FAILURE|FAIL)\b"
    r"|\b(?:error|fatal|panic|failed|failure|exception|segfault|abort(?:ed)?)\b"
    r"|\b(?:Error|Exception|Traceback|Fatal|Failed|Panic)\b"
    r"|\w(?:Error|Exception|Exit|Interrupt|Fault)\b|Segmentation fault|\bKilled\b|\bOOM\b"
    r"|^(?:E|>)\s|^\S+\.\w{1,5}:\d+:\s"
)
# A separator line (`=== 2 passed ===`, `___ test_x ___`, `----- log -----`) is matched with
# no run that can give characters back to the next: `^={3,}.*={3,}$` tried every split of a
# long run of "=" between its three parts, and a 10,000-character line of them not ending in
# "=" took 9 minutes (a 1,000-character one 0.6 s)
_WARN = re.compile(
    r"\b(?:WARN|WARNING|Warning|warning|DEPRECATED|[Dd]eprecat\w*)\b|^===.*===$"
    r"|^_{3,}+ .* _{3,}+$|\b\d+ (?:passed|failed|errors?|skipped)\b|^-{5,}+ .* -{5,}+$"
)
_PY_TB = "Traceback (most recent call last):"
_PY_FRAME = re.compile(r'^\s*File "([^"]{1,500})", line \d+')
_AT_FRAME = re.compile(r"^\s+at\s+\S")
_AT_PATH = re.compile(r"\(([^()]{1,500})\)\s*$|at\s+(\S{1,500})\s*$")
_LIBRARY = re.compile(
    r"site-packages|dist-packages|node_modules|/lib/python\d|<frozen |\binternal/|node:|"
    r"^/usr/(?:local/)?lib/|\\Lib\\|^(?:java|javax|jdk|sun|kotlin|scala)\.|"
    r"\((?:java|javax|jdk|sun)\.|^org\.(?:springframework|apache|junit)\.|<anonymous>|"
    r"/rustc/|/\.cargo/registry/|/go/src/runtime/|^runtime\."
)
_MASK_DIGITS = re.compile(r"\d+")


class _Unit:
    """One line, or one stack trace, of the sanitized log."""

    __slots__ = ("count", "end", "last_of", "lines", "members", "score", "start")

    def __init__(self, lines: list[str], start: int, end: int, score: int) -> None:
        self.lines = lines
        self.start = start  # first original line index
        self.end = end  # one past the last original line index
        self.score = score
        self.count = 1
        self.last_of = 0  # an error's last repeat kept beside its first: how many there were
        # the first of a run: where its units are among the units as read (None: alone)
        self.members: list[int] | None = None


_ERROR_HINTS = (
    "err",
    "fail",
    "fatal",
    "panic",
    "exception",
    "crit",
    "emerg",
    "alert",
    "severe",
    "segment",
    "killed",
    "oom",
    "abort",
    "traceback",
    "interrupt",
    "exit",
    "fault",
)
_WARN_HINTS = ("warn", "deprecat", "===", "___", "---", "passed", "failed", "error", "skipped")
#: each list as one search of a lower-cased line: a third of the time of a test per hint
_HAS_ERROR_HINT = re.compile("|".join(map(re.escape, _ERROR_HINTS))).search
_HAS_WARN_HINT = re.compile("|".join(map(re.escape, _WARN_HINTS))).search


def _score(line: str) -> int:
    low = line.lower()
    first = line[:1]
    pytest_like = (first in "E>" and line[1:2] in (" ", "\t")) or ".py:" in line or ".ts:" in line
    if pytest_like and _ERROR.search(line):
        return 3
    if _HAS_ERROR_HINT(low) and _ERROR.search(line):
        return 3
    if _HAS_WARN_HINT(low) and _WARN.search(line):
        return 2
    return 0


def _is_library(frame: str, path: str) -> bool:
    return bool(_LIBRARY.search(path)) or bool(_LIBRARY.search(frame.strip()[3:]))


def _compress_frames(frames: list[tuple[str, list[str], str]]) -> list[str]:
    """Frames as (frame line, continuation lines, path): first, last and non-library kept."""
    out: list[str] = []
    skipped = 0
    last = len(frames) - 1
    kept_own = 0
    for i, (frame, cont, path) in enumerate(frames):
        own = not _is_library(frame, path)
        if i == 0 or i == last or (own and kept_own < 8):
            kept_own += own and 0 < i < last
            if skipped:
                out.append(f"  [... {skipped} library frame{'s' if skipped > 1 else ''}]")
                skipped = 0
            out.append(frame)
            out.extend(cont)
        else:
            skipped += 1
    return out


def _python_traceback(lines: list[str], i: int, prefix: str) -> tuple[list[str], int]:
    """Parse a traceback starting at lines[i] (its header); return its lines and the end index."""
    n = len(lines)
    out = [lines[i].strip()]
    frames: list[tuple[str, list[str], str]] = []
    j = i + 1
    while j < n:
        raw = lines[j]
        if prefix and raw.startswith(prefix):
            raw = raw[len(prefix) :]
        m = _PY_FRAME.match(raw)
        if m:
            frames.append((raw.rstrip(), [], m.group(1)))
        elif raw.startswith((" ", "\t")) and raw.strip():
            if frames:
                frames[-1][1].append(raw.rstrip())
            else:
                out.append(raw.rstrip())
        elif raw.startswith("[Previous line repeated"):
            if frames:
                frames[-1][1].append(raw.rstrip())
        else:
            break
        j += 1
    out.extend(_compress_frames(frames))
    if j < n:  # the exception line, plus its indented continuation (e.g. notes, multi-line msg)
        raw = lines[j][len(prefix) :] if prefix and lines[j].startswith(prefix) else lines[j]
        if raw.strip():
            out.append(raw.rstrip())
            j += 1
    return out, j


def _at_stack(lines: list[str], i: int) -> tuple[list[str], int]:
    """A run of `at ...` frames (JS, Java) starting at lines[i], with `Caused by` and `... N more`."""
    n = len(lines)
    out: list[str] = []
    frames: list[tuple[str, list[str], str]] = []
    j = i
    while j < n:
        raw = lines[j]
        if _AT_FRAME.match(raw):
            m = _AT_PATH.search(raw)
            path = (m.group(1) or m.group(2) or "") if m else ""
            frames.append((raw.rstrip(), [], path))
        elif raw.lstrip().startswith("Caused by:") or raw.strip().startswith("... "):
            out.extend(_compress_frames(frames))
            frames = []
            out.append(raw.rstrip())
        else:
            break
        j += 1
    out.extend(_compress_frames(frames))
    return out, j


def _prepare(text: str) -> tuple[list[str], list[int]]:
    """Lines with noise removed (JSON records rendered, their stacks expanded), and where each
    raw line's lines start among them (one more entry: their end)."""
    out: list[str] = []
    starts: list[int] = []
    for raw in split_lines(text):
        starts.append(len(out))
        stripped = raw.strip()
        if len(stripped) > 1 and stripped[0] == "{" and stripped[-1] == "}":
            rendered = _json_line(stripped)
            if rendered is not None:
                out.extend(_denoise(x) for x in rendered)
                continue
        out.append(_denoise(raw))
    starts.append(len(out))
    return out, starts


def _units(lines: list[str]) -> list[_Unit]:
    """The units of ``lines``: each line alone, a stack trace (the message line before an
    `at ...` stack with it) as one."""
    units: list[_Unit] = []
    i, n = 0, len(lines)
    while i < n:
        i = _next_unit(lines, i, units)
    return units


def _next_unit(lines: list[str], i: int, units: list[_Unit]) -> int:
    """Read the unit at ``lines[i]`` into ``units`` (none for a blank line); where the next
    starts. What it reads depends on ``lines[i:]`` and the last unit alone (`_rest_units`)."""
    line = lines[i]
    if not line:
        return i + 1
    pos = line.find(_PY_TB)
    if pos >= 0:
        block, j = _python_traceback(lines, i, line[:pos])
        units.append(_Unit(block, i, j, 3))
        return j
    if _AT_FRAME.match(line):
        block, j = _at_stack(lines, i)
        # The message line just before the stack belongs to it.
        if units and units[-1].end == i and len(units[-1].lines) == 1:
            head = units.pop()
            block = head.lines + block
            start = head.start
        else:
            start = i
        units.append(_Unit(block, start, j, 3))
        return j
    units.append(_Unit([line], i, i + 1, _score(line)))
    return i + 1


def _rest_units(rest: list[str], fresh: int, offset: int, units: list[_Unit]
                ) -> tuple[list[_Unit], int]:
    """`_units` of ``rest``: lines whose first ``fresh`` are new and the others
    ``lines[offset + fresh:]`` of a log whose units are ``units``. They are read only until a
    unit read past the new lines comes out as one of ``units`` (the same lines at the same
    place); from there the two reads go alike (`_next_unit` looks at the lines ahead and the
    last unit alone), and the rest are ``units``' own, moved. Also how many were read."""
    read: list[_Unit] = []
    i, n = 0, len(rest)
    while i < n:
        i = _next_unit(rest, i, read)
        if i < fresh or not read or read[-1].end != i:
            continue
        last = read[-1]
        k = bisect.bisect_left(units, last.start + offset, key=_start)
        if k < len(units) and units[k].end == i + offset and units[k].lines == last.lines:
            moved = [_Unit(u.lines, u.start - offset, u.end - offset, u.score)
                     for u in units[k + 1:]]
            return read + moved, len(read)
    return read, len(read)


def _start(u: _Unit) -> int:
    return u.start


def _end(u: _Unit) -> int:
    return u.end


def _masked(u: _Unit) -> str:
    """What `_collapse` compares a unit by: its lines, digits masked."""
    return _MASK_DIGITS.sub("#", "\n".join(u.lines))


def _collapse(units: list[_Unit], keys: list[str]) -> tuple[list[_Unit], int]:
    """Units equal once digits are masked (``keys``: each unit's `_masked`) merge into the
    first; returns (units, repeats). Counts the repeats on ``units`` themselves, and puts on
    each run's first where its units are (`members`: a part of the log outlined alone finds
    its own first and last of a run there).
    An error's last repeat, when its numbers differ from the first's, stays too (`last_of`
    its count): merged, four errors of four jobs named the first job alone, and a later step
    looking for the last one's path or step found only its name in the cut part's note."""
    first: dict[str, _Unit] = {}
    at: dict[str, int] = {}
    last: dict[str, _Unit] = {}
    out: list[_Unit] = []
    repeats = 0
    for i, (u, key) in enumerate(zip(units, keys, strict=True)):
        seen = first.get(key)
        if seen is None:
            first[key] = u
            at[key] = i
            out.append(u)
        else:
            if seen.members is None:
                seen.members = [at[key]]
            seen.members.append(i)
            seen.count += 1
            repeats += len(u.lines)
            if u.score == 3:
                last[key] = u
    kept = [(key, u) for key, u in last.items() if u.lines != first[key].lines]
    for key, u in kept:
        u.last_of = first[key].count
        repeats -= len(u.lines)
    if kept:
        out = sorted(out + [u for _, u in kept], key=_start)
    return out, repeats


def _run_within(read: list[_Unit], members: list[int], lo: int, hi: int) -> list[_Unit]:
    """What a run (its units as read at ``members``) shows of itself among the units as read
    from ``lo`` to before ``hi``, as `_collapse` would show it of those alone: its first there
    counting them, and an error's last there when its numbers differ ("the last of")."""
    a, b = bisect.bisect_left(members, lo), bisect.bisect_left(members, hi)
    if a == b:
        return []
    first = read[members[a]]
    if a == 0 and b == len(members):  # the whole run: as collapsed
        whole = read[members[-1]]
        return [first, whole] if whole.last_of else [first]
    shown = _Unit(first.lines, first.start, first.end, first.score)
    shown.count = b - a
    final = read[members[b - 1]]
    if b - a < 2 or final.score != 3 or final.lines == first.lines:
        return [shown]
    again = _Unit(final.lines, final.start, final.end, final.score)
    again.last_of = b - a
    return [shown, again]


def _select(units: list[_Unit], keep_lines: int) -> list[tuple[_Unit, list[str]]]:
    """Up to keep_lines output lines, best tier first; a tier that overflows keeps its ends.
    Each chosen unit with the lines it shows (a long stack cut to its head and message): the
    units are left as they are, so one log's units serve outlines of several sizes."""
    chosen: list[tuple[_Unit, list[str]]] = []
    room = keep_lines
    for tier in (3, 2, 0):
        members = [u for u in units if u.score == tier]
        size = sum(len(u.lines) for u in members)
        if size <= room:
            chosen.extend((u, u.lines) for u in members)
            room -= size
            continue
        lo, hi = 0, len(members) - 1
        take_low = True
        while lo <= hi and room > 0:
            u = members[lo] if take_low else members[hi]
            if take_low:
                lo += 1
            else:
                hi -= 1
            take_low = not take_low
            if len(u.lines) <= room:
                chosen.append((u, u.lines))
                room -= len(u.lines)
            elif len(u.lines) > 2 and room >= 2:  # a long stack: keep its head and message
                chosen.append((u, u.lines[: room - 1] + u.lines[-1:]))
                room = 0
        if room <= 0:
            break
    chosen.sort(key=lambda c: c[0].start)
    return chosen


def _gap(n: int) -> str:
    return f"[... {n:,} line{'' if n == 1 else 's'}]"


class LogOutline:
    """What `sanitize_log` works out of a log whatever the number of lines it keeps: its lines
    with the noise out, its units (lines and stack traces) with repeats merged, and how many
    non-blank lines come before each line. An outline tried at several sizes (the tool-output
    outline shrinks the lines kept until it fits) reads and denoises the log once."""

    __slots__ = ("_keys", "_read_units", "lines", "nonblank", "repeats", "starts", "total",
                 "units")

    def __init__(self, text: str) -> None:
        lines, starts = _prepare(text)
        units = _units(lines)
        self._take(lines, starts, units, [_masked(u) for u in units])

    def _take(self, lines: list[str], starts: list[int], units: list[_Unit],
              keys: list[str]) -> None:
        self.lines, self.starts, self.total = lines, starts, len(starts) - 1
        # every unit as read, and its digits masked: what `after` takes over
        self._read_units, self._keys = units, keys
        self.units, self.repeats = _collapse(units, keys)
        # gaps count the non-blank lines skipped: blank lines are dropped silently
        nonblank = [0]
        for line in lines:
            nonblank.append(nonblank[-1] + (1 if line else 0))
        self.nonblank = nonblank

    def after(self, raw_lines: int, lead: str | None = None) -> LogOutline:
        """The outline of the log without its first ``raw_lines`` lines (``lead`` before
        them: the end of the line before, where a text is cut inside a line), from what was
        read here: its lines, and its units and their masked digits past the first ones read
        again alike (`_rest_units`). A user's pasted log outlined after its first lines (sent
        whole before it) was read and denoised twice, a 100k-line log's shortening 0.8 s to
        1.5 s; its units were then scanned and masked again: 0.35 s of CPU, now 0.12 s."""
        rest = object.__new__(LogOutline)
        # the lead is one line, empty or not (the end of one cut just before its line break)
        new, new_starts = _prepare(lead + "\n") if lead is not None else ([], [0])
        first = self.starts[raw_lines]
        offset = first - len(new)
        lines = new + self.lines[first:]
        units, read = _rest_units(lines, len(new), offset, self._read_units)
        moved = len(units) - read
        keys = [_masked(u) for u in units[:read]] + self._keys[len(self._keys) - moved:]
        starts = new_starts[:-1] + [s - offset for s in self.starts[raw_lines:]]
        rest._take(lines, starts, units, keys)
        return rest

    def _between(self, lo: int, hi: int) -> list[_Unit]:
        """The units of lines ``lo`` to ``hi`` as if they were outlined alone: a run collapsed
        across their ends shows its first and last there, counting only its units there.
        Counted whole, a run above the log's last lines said "KeyError ... (x57)" with 14 of
        the 57 among those lines; and one whose first lay in the lines shown whole above
        vanished from the outline of those between, 26 KeyErrors there said nowhere but in
        the count of repeats collapsed."""
        read = self._read_units
        inside = bisect.bisect_right(read, lo, key=_end)
        past = bisect.bisect_left(read, hi, key=_start)
        out: list[_Unit] = []
        for u in self.units:
            if u.members is not None:
                out.extend(_run_within(read, u.members, inside, past))
            elif not u.last_of and u.end > lo and u.start < hi:
                out.append(u)  # alone; a run's last comes with its first
        # in order again (a run's last came with its first): a tier that overflows keeps
        # its first and last units
        out.sort(key=_start)
        return out

    def render(self, keep_lines: int = 60, shown: tuple[int, int] | None = None) -> str:
        """The sanitized log with at most ``keep_lines`` lines of it. ``shown``: the log's
        first lines up to the first index and its lines from the second on are shown whole
        beside the outline: it outlines the lines between (a line, or a run collapsed from
        it, kept in both read twice), their runs counted among them alone (`_between`)."""
        head, tail = shown if shown is not None else (0, self.total)
        lo, hi = self.starts[head], self.starts[tail]
        units = self.units if shown is None else self._between(lo, hi)
        nonblank = self.nonblank
        out: list[str] = []
        pos = lo
        emitted = head + self.total - tail  # the lines shown whole are kept
        for u, body in _select(units, max(0, keep_lines)):
            gap = nonblank[u.start] - nonblank[pos] if u.start > pos else 0
            if gap:
                out.append(_gap(gap))
            if u.count > 1:
                body = body[:-1] + [f"{body[-1]} (x{u.count})"]
            elif u.last_of > 1:
                body = body[:-1] + [f"{body[-1]} (the last of {u.last_of})"]
            out.extend(body)
            emitted += len(body)
            pos = u.end
        gap = nonblank[hi] - nonblank[pos] if hi > pos else 0
        if gap:
            out.append(_gap(gap))
        dropped = max(0, self.total - emitted)
        summary = f"[log sanitized: {self.total:,} lines in, {emitted:,} kept, {dropped:,} dropped"
        if self.repeats:
            summary += f", {self.repeats:,} repeats collapsed"
        out.append(summary + "]")
        return "\n".join(out)


def sanitize_log(text: str, keep_lines: int = 60) -> str:
    """A short version of a log: noise out, errors and key stack lines kept, repeats counted."""
    if not isinstance(text, str) or not text:
        return ""
    return LogOutline(text).render(keep_lines)


# ---------------------------------------------------------------------------------------------
# Detection

# A line reads like a log line when it starts like one (a timestamp, a level, a stack frame, a
# compiler location, pytest's markers) or holds a level word, a level field or a test outcome
# anywhere. The two are apart so that the first is tried at the line's start only, and the
# second starts with literals the regex engine scans for (`I(?<!\wI)NFO` is `\bINFO`) instead
# of being tried at every character of every line.
_LOG_START = re.compile(
    r"\s*\[?(?:\d{4}[-/]\d{2}[-/]\d{2}[T ]\d{2}:\d{2}|\d{2}:\d{2}:\d{2}"
    r"|(?:Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec) [ \d]\d \d{2}:)"
    r"|\s*\[?(?:TRACE|DEBUG|INFO|NOTICE|WARN|WARNING|ERROR|FATAL|CRITICAL)\b"
    r'|\s*File "[^"]+", line \d+|\s+at\s+\S+.*[:(]\d+|\s*\w+\.\w{1,5}:\d+:\s'
    r"|(?:E|>)\s{3,}|\s*\d+ (?:passed|failed)"
)
_LOG_ANYWHERE = re.compile(  # every alternative starts with a literal: the scan jumps to them
    r"I(?<!\wI)NFO\b[\]:]?\s|W(?<!\wW)ARN(?:ING)?\b[\]:]?\s|E(?<!\wE)RROR\b[\]:]?\s"
    r"|D(?<!\wD)EBUG\b[\]:]?\s|F(?<!\wF)ATAL\b[\]:]?\s|C(?<!\wC)RITICAL\b[\]:]?\s"
    r"|level=\w+|\"(?:level|severity)\"\s*:|PASSED|FAILED"
)


def _log_line(line: str) -> bool:
    return _LOG_START.match(line) is not None or _LOG_ANYWHERE.search(line) is not None


# `=(?<![^\n]=)=*` is `^=+` (MULTILINE) with its first character first, for the fast scan
_STRONG = re.compile(
    r"Traceback \(most recent call last\):|=(?<![^\n]=)=* test session starts =+$"
    r"|=(?<![^\n]=)=* (?:FAILURES|ERRORS|short test summary info) =+$"
    r"|g(?<![^\n]g)oroutine \d+ \[",
    re.MULTILINE,
)


def looks_like_log(text: str) -> bool:
    """Whether a text reads like a log, a stack trace or test-runner output."""
    if not isinstance(text, str) or not text.strip():
        return False
    sample = text[:65536] if len(text) <= 98304 else text[:65536] + "\n" + text[-32768:]
    if _STRONG.search(sample):
        return True
    lines = [ln for ln in split_lines(sample)[:600] if ln.strip()]
    if not lines:
        return False
    hits = sum(1 for ln in lines if _log_line(ln))
    return hits >= 3 and hits >= 0.3 * len(lines) or (len(lines) < 3 and hits == len(lines))


# ---------------------------------------------------------------------------------------------
# Error lines

#: what a line that reports an error holds, one of them at least: the words are looked for
#: first (a text without any is not read line by line)
_ERROR_WORDS = ("ERROR", "FATAL", "CRITICAL", "PANIC", "FAILED", "Error", "Exception", "error:",
                "panic:")
#: a line that reports an error: a log's level, a test run's FAILED, an exception's own line
#: (a traceback's last: "KeyError: 'x'"), a compiler's or a program's "error:". A level
#: is a word of its own followed by what it reports, "error:" opens the line (or follows a
#: compiler's location): code's "except ValueError as error:" and prose's "I get the
#: following error:" are none; nor are an agent's instructions, "<CRITICAL>" and
#: "**CRITICAL REQUIREMENTS:**" (ranked as the user's words, they took the ledger's room
#: from 9 needed facts of a replayed chat)
_ERROR_LINE = re.compile(
    # a level where a log line has it: first, in brackets, or after a stamp (a field holding a
    # digit: a date, a time, a pid) and a logger's name; anywhere, prose and code had it ("The
    # ERROR handling in ...", "if state == FAILED and ...", a table's "| ERROR |" row)
    r"(?:^\s*|\[|<|^(?:\S+\s+)?\S*\d\S*(?:\s+(?:-\s+)?\S+){0,3}?\s+(?:-\s+)?)"
    r"(?:ERROR|FATAL|CRITICAL|PANIC|FAILED)(?:\]|>|:|\s+-)?\s+(?![A-Z]{3,}\b)\S"
    # an exception's own line (pytest's `E` before it) says what went wrong after it (a bare
    # name is code: an except)
    r"|^\s*(?:E\s+)?(?:[\w.]*\.)?\w*(?:Error|Exception):\s+\S"
    r"|^\s*(?:\S+:\d+(?::\d+)?:\s*)?(?:fatal )?error(?:\[\w+\])?:|^panic:"
)
#: the longest line taken as an error line: a longer one is a blob (a minified bundle, a JSON
#: record) that happens to hold the word
ERROR_LINE_MAX = 400


def error_lines(text: str, limit: int = 40) -> list[str]:
    """The distinct lines of ``text`` that report an error, verbatim (stripped), in order, at
    most ``limit``: lines equal once their numbers are masked are one, the first of them. What
    a summary keeps of a log it takes: its sentences are its newest (a log's last INFO lines),
    and "ERROR step 300 failed: disk full at /var/lib/db (errno 28)" left only the path.
    Only the lines holding one of the words are read (found by `str.find`, a few
    milliseconds a megabyte; read line by line, 74 ms)."""
    seen: set[str] = set()
    out: list[str] = []
    for start in _lines_with(text, _ERROR_WORDS, CANDIDATES_MAX):
        end = text.find("\n", start)
        line = text[start:end if end >= 0 else len(text)].strip()
        if len(line) > ERROR_LINE_MAX or not _ERROR_LINE.search(line):
            continue
        key = _MASK_DIGITS.sub("#", line)
        if key in seen:
            continue
        seen.add(key)
        out.append(line)
        if len(out) >= limit:
            break
    return out


#: the most places of each word `error_lines` looks at: a log of thousands of errors has
#: its distinct ones among its first
CANDIDATES_MAX = 2000


def _lines_with(text: str, words: tuple[str, ...], most: int) -> list[int]:
    """Where the lines holding any of ``words`` start, in order (at most ``most`` places of
    each word)."""
    starts: set[int] = set()
    for w in words:
        at = text.find(w)
        n = 0
        while at >= 0 and n < most:
            start = text.rfind("\n", 0, at) + 1
            starts.add(start)
            n += 1
            end = text.find("\n", at)
            at = text.find(w, end) if end >= 0 else -1
    return sorted(starts)
