"""The action log of a compaction: every tool call of the replaced part as one line.

An agent conversation is mostly tool calls and their outputs; once they are summarized, what
the rest of the conversation needs is *what was run on what, and what came of it*. One line per
call: the tool, its path or command, and a one-line outcome read from its result (exit status,
failing test names, the error line, else the result's first line past the client's own header
lines). Lines are kept in call order; the summary shows the newest first within its share, the
failed calls' lines taken first when not all fit.
Pure: reads messages, never counts tokens (sizes are characters).
"""

from __future__ import annotations

import re

import msgspec

from ctxlayer.core.text import lines_of, split_lines
from ctxlayer.protocol import Message

MAX_LINES = 400  # lines kept in the compaction state; the oldest give way
NEWEST_KEPT = 2  # the lines a cut log shows first, before the failed calls' lines
_LINE_MAX = 220
_TARGET_KEYS = ("command", "cmd", "path", "file_path", "filename", "file", "pattern", "query",
                "url", "target", "name")
_EXIT = re.compile(r"\bexit(?:ed)?(?:\s(?:with|code|status)){0,3}[\s:=]{1,3}(-?\d{1,3})\b"
                   r"|<returncode>\s*(-?\d{1,3})\s*</returncode>|\breturn ?code[\s:=]{1,3}(-?\d{1,3})\b",
                   re.IGNORECASE)
# The same on lowered ASCII text, case-sensitive, each alternative starting with a literal
# the engine scans for (`e(?<!\we)xit` is `\bexit`): lowering ASCII keeps every position and
# digit, and on ASCII a case-blind match is a match of the lowered text
_EXIT_LOWER = re.compile(r"e(?<!\we)xit(?:ed)?(?:\s(?:with|code|status)){0,3}[\s:=]{1,3}(-?\d{1,3})\b"
                         r"|<returncode>\s*(-?\d{1,3})\s*</returncode>"
                         r"|r(?<!\wr)eturn ?code[\s:=]{1,3}(-?\d{1,3})\b")
_TAG_LINE = re.compile(r"^\s*</?[\w-]+>\s*$|^\s*<returncode>.*</returncode>\s*$")
_FAILED = re.compile(r"^(?:FAILED|ERROR)\s+(\S+)", re.MULTILINE)
# the line's first word holds "::" (a pytest node id): looked for once, the word then taken
# whole (trying each split of a long word of colons at "::" took 85 ms for 4,000 of them)
_FAILED_AFTER = re.compile(r"^(?=\S+::\S)(\S++)\s+(?:FAILED|ERROR)\b", re.MULTILINE)
_ERROR_LINE = re.compile(
    r"^[ \t]*(?:[\w.]+(?:Error|Exception|Failure)\b[^\n]*|error(?:\[\w+\])?:[^\n]*|"
    r"Traceback \(most recent call last\)|fatal:[^\n]*|E\s{2,}[^\n]+)",
    re.MULTILINE | re.IGNORECASE)
_SUMMARY_LINE = re.compile(r"^=+ .*(?:passed|failed|error)[^\n]*=+$", re.MULTILINE)
#: the words one of _ERROR_LINE's alternatives needs, lower-cased; without any of them only
#: its last alternative (pytest's `E   assert ...` lines) can match, at half the cost
_ERROR_WORDS = ("error", "exception", "failure", "traceback (most recent call last)", "fatal:")
_E_LINE = re.compile(r"^[ \t]*(?:E\s{2,}[^\n]+)", re.MULTILINE | re.IGNORECASE)
#: letters a case-blind pattern matches as i, s or k that lower() does not turn into them
_FOLDED = ("\u0130", "\u0131", "\u017f", "\u212a")
#: the two line patterns as they match after a newline: the engine then skips from newline to
#: newline, where `^` in MULTILINE is tried at every character; with the pattern itself at
#: the text's start they find the same lines (tests/core/test_actions_ledger.py). Over the
#: 830 file reads of a 5.3 MB Claude Code chat: 4.1 ms instead of 18.9
_ERROR_AFTER = re.compile(rf"\n({_ERROR_LINE.pattern.removeprefix('^')})", re.IGNORECASE)
_E_AFTER = re.compile(rf"\n({_E_LINE.pattern.removeprefix('^')})", re.IGNORECASE)


#: lines a client's shell tool writes around every output, whatever ran: Codex's ("Chunk ID:
#: 289a4b", "Wall time: 0.0002 seconds", "Process exited with code 0", "Original token count:
#: 11", "Output:", and over its cap "Warning: truncated output (original token count: 4609)",
#: "Total output lines: 116") and Qwen Code's ("Command: ...", "Directory: (root)", "Error: (none)",
#: "Exit Code: 0", "Signal: (none)"). Taken for the first line, "Chunk ID: 289a4b" was the
#: outcome of every successful call of a Codex session
_CLIENT_HEADER = re.compile(
    r"\s*(?:Chunk ID:|Wall time:|Wall seconds|Process exited with code|Original token count:|"
    r"Command:|Directory:|Exit Code:|Signal:|Process Group PGID:|Background PIDs:|"
    r"Warning: truncated output \(|Total output lines:|Output:\s*$)")
#: "Output: text" (Qwen Code, Codex): the text is the output's first line
_OUTPUT_FIELD = re.compile(r"\s*Output:\s*")
#: an error field with nothing in it: Qwen Code's "Error: (none)" on every shell result
_NO_ERROR = re.compile(r"error(?:\[\w+\])?:\s*(?:\(none\)|none|null|n/a|-)?\s*",
                       re.IGNORECASE)
#: an outcome that says the call failed: a non-zero exit status or failing tests
_FAILED_OUTCOME = re.compile(r"→ .*?\bfailed: ")


def _flat(text: str, width: int) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= width else flat[: width - 1] + "…"


def target_of(arguments: str) -> str:
    """The call's path or command: the first of the usual argument keys, else the raw text."""
    try:
        args = msgspec.json.decode(arguments)
    except (msgspec.DecodeError, TypeError, RecursionError):  # nested past a decoder: text
        return _flat(arguments, 120)
    if isinstance(args, dict):
        for key in _TARGET_KEYS:
            value = args.get(key)
            if isinstance(value, str) and value.strip():
                first = split_lines(value.strip())[0]
                return _flat(first, 120)
        return _flat(" ".join(f"{k}={v}" for k, v in args.items() if isinstance(v, (str, int))),
                     120)
    return _flat(str(args), 120)


def outcome_of(result: str | None) -> str:
    """One line on what a tool call gave: exit status, failing tests, error line, first line."""
    if result is None:
        return "no result"
    parts: list[str] = []
    # each pattern runs only where the words it needs are in the text (an agent's outputs are
    # mostly file listings and reads without them; the case-blind exit pattern was most of the
    # time of a compaction step of a 5 MB chat)
    low = result.lower()
    # no word test holds for those: run them all (never in ASCII text, known without a scan)
    every = not result.isascii() and any(c in result for c in _FOLDED)
    if not every and "exit" not in low and "return" not in low:
        m = None
    else:
        m = _EXIT_LOWER.search(low) if result.isascii() else _EXIT.search(result)
    if m:
        parts.append(f"exit {next(g for g in m.groups() if g is not None)}")
    failed = (list(dict.fromkeys(_FAILED.findall(result) + _FAILED_AFTER.findall(result)))
              if "FAILED" in result or "ERROR" in result else [])
    if failed:
        more = f" (+{len(failed) - 3} more)" if len(failed) > 3 else ""
        parts.append("failed: " + ", ".join(failed[:3]) + more)
    summary = (_SUMMARY_LINE.findall(result) if "=" in result and (
        "passed" in result or "failed" in result or "error" in result) else [])
    if summary:
        parts.append(_flat(summary[-1].strip("= "), 80))
    errors = [e.strip() for e in (
        line_matches(_ERROR_LINE, _ERROR_AFTER, result)
        if every or any(w in low for w in _ERROR_WORDS) else
        line_matches(_E_LINE, _E_AFTER, result))]
    errors = said_errors(errors)
    if errors:
        parts.append(_flat(errors[-1], 100))
    if len(parts) <= 1:  # no more than an exit status: say what it printed first
        first = first_line(result)
        parts.append(_flat(first, 80) if first else "(empty output)")
    return "; ".join(parts)


def said_errors(errors: list[str]) -> list[str]:
    """The error lines that say an error: a traceback's header only when nothing else does,
    an empty error field never (Qwen Code's "Error: (none)" on every shell result was taken
    for the error, and shadowed pytest's `E   AssertionError` above it)."""
    errors = [e for e in errors if not _NO_ERROR.fullmatch(e)]
    return [e for e in errors if not e.startswith("Traceback")] or errors


def first_line(result: str) -> str:
    """The first line the output itself printed: past blank lines, tags and the client's
    own header lines (`_CLIENT_HEADER`), an "Output:" field's label left out."""
    for ln in lines_of(result):
        if not ln.strip() or _TAG_LINE.match(ln) or _CLIENT_HEADER.match(ln) or \
                _NO_ERROR.fullmatch(ln.strip()):
            continue
        m = _OUTPUT_FIELD.match(ln)
        return ln[m.end():].strip() if m else ln.strip()
    return ""


def line_matches(first: re.Pattern[str], after: re.Pattern[str], text: str) -> list[str]:
    """What ``first`` (a MULTILINE pattern starting with ``^``) finds in ``text``, found with
    ``after`` (the same after a newline, one group) past the text's first line."""
    m = first.match(text)
    if m is None:
        return after.findall(text)
    return [m.group(0), *after.findall(text, m.end())]


def log_lines(messages: list[Message]) -> list[str]:
    """One line per tool call in ``messages``, in call order. A result answers the latest call
    with its id that has no result yet (some agents reuse call ids)."""
    calls: list[tuple[str, str, str]] = []  # (id, name, target)
    results: list[str | None] = []
    open_: dict[str, list[int]] = {}
    for msg in messages:
        for call in msg.tool_calls or ():
            open_.setdefault(call.id, []).append(len(calls))
            calls.append((call.id, call.name, target_of(call.arguments)))
            results.append(None)
        if msg.tool_call_id is not None and open_.get(msg.tool_call_id):
            results[open_[msg.tool_call_id].pop()] = msg.content
    return [_flat(f"{name} {target} → {outcome_of(result)}", _LINE_MAX)
            for (_, name, target), result in zip(calls, results, strict=True)]


def render_actions(lines: list[str], max_chars: int) -> str:
    """The newest lines first within ``max_chars``, with a count of those left out. When not
    all fit, the failed calls' lines (a non-zero exit, failing tests) are taken first after
    the newest NEWEST_KEPT (what the agent did last): a failing test run gave way to the
    newer reads after it, and the summary said only "(+3 older calls)" of the failure the
    session was about. (Taken before the newest too, an old `python -c` typo's line pushed a
    mini-swe-agent's last test run out, and the replay's dev set lost 8 test names at 10%.)"""
    newest_first = list(range(len(lines) - 1, -1, -1))
    failed: set[int] = set()
    if sum(len(line) + 3 for line in lines) > max_chars - 24:
        newest, rest = newest_first[:NEWEST_KEPT], newest_first[NEWEST_KEPT:]
        failed = {k for k in rest if _FAILED_OUTCOME.search(lines[k])}
        newest_first = [*newest, *(k for k in rest if k in failed),
                        *(k for k in rest if k not in failed)]
    kept: list[int] = []
    used = 0
    for k in newest_first:
        cost = len(lines[k]) + 3
        if used + cost > max_chars - 24:
            if k in failed:
                continue  # a shorter failed line, then the newest others, may still fit
            break
        kept.append(k)
        used += cost
    if not kept:
        return ""
    kept.sort(reverse=True)
    more = len(lines) - len(kept)
    older = more == kept[-1]  # those left out are the oldest ones
    tail = f"\n- (+{more} {'older' if older else 'other'} calls)" if more else ""
    return "\n".join(f"- {lines[k]}" for k in kept) + tail
