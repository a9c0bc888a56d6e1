"""The facts reader's and the log test's patterns are written for speed (a leading ``\\b`` checked after the first
character, a pattern run only on the lines that hold its words): each must find exactly what
the plain spelling finds, on any text."""

from __future__ import annotations

import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ctxlayer.core.compress import fact_patterns as pat
from ctxlayer.core.compress import facts, logs

#: the plain spellings, as the patterns were first written
PLAIN = {
    "ERROR_CODE": r"\b[A-Z]{1,4}\d{3,5}\b",
    "JOINED_CODE": r"(?<![\w-])[A-Z][A-Z0-9]*(?:[-_][A-Z][A-Z0-9]*)*[-_]\d{2,6}(?![\w-])",
    "LINE_WORD": r"\b(?:[Ll]ines?|[Ll]n)\s?(\d+(?:\s?[-–]\s?\d+)?)\b|#L(\d+)(?:-L?(\d+))?",
    "ERRNO": r"\b" + pat.ERRNO.pattern.replace("(?<!\\wE)", "", 1),
    "CAMEL": r"\b[A-Z][a-z0-9]+(?:[A-Z][a-z0-9]+)+\b",
    "NUM_UNIT": rf"(?<![\w.])\d+(?:[.,]\d+)?\s?(?:{pat.UNITS})(?![\w/])",
}

# pieces that make the patterns match, miss by a character, and sit at line ends and word edges
PIECES = ["E1234", "ZEBRA-ERR-4411", "AUTH_ERR_17", "ERR-5", "X-", "A_", "TS2345", "ISO9001", "line 42", "Line 3-7", "ln12", "#L5-L9", "lines 1 – 4",
          "ENOENT", "EACCES", "xENOENT", "_E1234", "é", "ſ", "İ", "ı", "K", "\n", " ", "\t", ".",
          "/", ":", "(", ")", "_", "-", "test_run", "tests/test_a.py::test_b[1-2]", "TestCase",
          "TestFoo::test_bar", "a.py::Klass::meth", "ValueError", "pkg.mod.KeyError",
          "StopIteration", "src/a.py:12:4", "C:\\x\\y.py:3", "exit code 2", "EXITED WITH 1",
          "HTTP/1.1 404", "status: 500", "ORA-12345", "SQLSTATE 42000", "foo_bar", "x.foo_bar(",
          "call(x)", "a.b(c, d)", "9", "x", "Ω", "٣", "INFO ", "xINFO ", "[WARNING]: ", "ERROR:",
          "DEBUG\t", "FATAL", "CRITICAL ", "level=warn", '"severity": ', "PASSED", "FAILED",
          "2026-01-02 03:04", "12:00:01", "Jan  2 03:", "  at foo (a.js:3)", "E    ", ">   ",
          "3 passed", "  File \"a.py\", line 9", "mod.py:3: ", "Traceback (most recent call last):",
          "==== test session starts ====", "== FAILURES ==", "x= FAILURES ==", "goroutine 7 [",
          "agoroutine 7 [", "=", "Port: 8080", "TIMEOUT = 30", "max of 5", "top_K=3", "xmax 4",
          "12 ms", "3,5 MB", "x12ms", "Temperature\n0.7", "WorkspaceSegment", "aFooBar",
          "Exited with code 3", "<returncode>1</returncode>", "Return code: -2", "xexit 1",
          "FAIL", "line 9", "a.py:3", "Traceback", "Exception", "returned 404", "RESPONSE: 503",
          "Status code=201", "http 200", "x", "exit", "http", "status", "response"]
texts = st.lists(st.sampled_from(PIECES), max_size=40).map("".join)


@settings(max_examples=400, deadline=None)
@given(texts)
def test_the_rewritten_patterns_find_what_their_plain_spelling_finds(text):
    for name, plain in PLAIN.items():
        rx = getattr(pat, name)
        assert [m.span() for m in rx.finditer(text)] == \
            [m.span() for m in re.compile(plain).finditer(text)], name


@pytest.mark.parametrize("dense", [0, 10**9])  # by the line always / never
@settings(max_examples=400, deadline=None)
@given(text=texts)
def test_a_pattern_run_on_the_lines_with_its_words_finds_what_a_whole_run_finds(dense, text):
    pat.DENSE_CHARS, before = dense, pat.DENSE_CHARS
    try:
        _same_by_lines(text)
    finally:
        pat.DENSE_CHARS = before


def _same_by_lines(text: str) -> None:
    for rx, needles in ((pat.TEST, ("test_", ".py::", "Test")),
                        (pat.EXCEPTION, pat.EXCEPTION_WORDS),
                        (pat.CALL, ("(",)),
                        (pat.SNAKE, ("_",))):
        assert [m.span() for m in pat.in_lines(rx, text, needles)] == \
            [m.span() for m in rx.finditer(text)], rx.pattern[:40]


@settings(max_examples=400, deadline=None)
@given(texts)
def test_a_case_blind_pattern_is_skipped_only_where_it_cannot_match(text):
    low = text.lower()
    for rx, words in ((pat.HTTP, pat.HTTP_WORDS), (pat.EXIT, ("exit",))):
        if text.isascii() and not any(w in low for w in words):
            assert rx.search(text) is None
    if not any(w in text for w in pat.ORA_WORDS):
        assert pat.ORA.search(text) is None


@settings(max_examples=400, deadline=None)
@given(texts)
def test_the_lowered_http_and_exit_patterns_find_what_the_case_blind_ones_find_on_ascii(text):
    if text.isascii():
        for lowered, blind in ((pat.HTTP_LOWER, pat.HTTP), (pat.EXIT_LOWER, pat.EXIT)):
            assert [(m.span(), m.groups()) for m in lowered.finditer(text.lower())] == \
                [(m.span(), m.groups()) for m in blind.finditer(text)], blind.pattern[:30]


#: how a log line was first told, in one pattern searched anywhere in the line
LOGLIKE = re.compile(
    r"^\s*\[?(?:\d{4}[-/]\d{2}[-/]\d{2}[T ]\d{2}:\d{2}|\d{2}:\d{2}:\d{2}"
    r"|(?:Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec) [ \d]\d \d{2}:)"
    r"|^\s*\[?(?:TRACE|DEBUG|INFO|NOTICE|WARN|WARNING|ERROR|FATAL|CRITICAL)\b"
    r"|\b(?:INFO|WARN|WARNING|ERROR|DEBUG|FATAL|CRITICAL)\b[\]:]?\s"
    r"|level=\w+|\"(?:level|severity)\"\s*:"
    r'|^\s*File "[^"]+", line \d+|^\s+at\s+\S+.*[:(]\d+|^\s*\w+\.\w{1,5}:\d+:\s'
    r"|^(?:E|>)\s{3,}|PASSED|FAILED|^\s*\d+ (?:passed|failed)")
STRONG = re.compile(
    r"Traceback \(most recent call last\):|^=+ test session starts =+$"
    r"|^=+ (?:FAILURES|ERRORS|short test summary info) =+$|^goroutine \d+ \[", re.MULTILINE)


@settings(max_examples=400, deadline=None)
@given(texts)
def test_the_log_tests_patterns_tell_what_their_plain_spelling_tells(text):
    for line in text.split("\n"):
        assert logs._log_line(line) == (LOGLIKE.search(line) is not None), line
    assert (logs._STRONG.search(text) is None) == (STRONG.search(text) is None)


@settings(max_examples=400, deadline=None)
@given(texts)
def test_the_lowered_context_pattern_finds_what_the_case_blind_one_finds_on_ascii(text):
    if text.isascii():
        assert [m.span() for m in pat.NUM_CONTEXT_LOWER.finditer(text.lower())] == \
            [m.span() for m in pat.NUM_CONTEXT.finditer(text)]


@settings(max_examples=400, deadline=None)
@given(texts)
def test_the_lowered_exit_pattern_finds_what_the_case_blind_one_finds_on_ascii(text):
    from ctxlayer.core.assembly import actions

    if text.isascii():
        got = actions._EXIT_LOWER.search(text.lower())
        want = actions._EXIT.search(text)
        assert (got and (got.span(), got.groups())) == (want and (want.span(), want.groups()))


@settings(max_examples=400, deadline=None)
@given(texts)
def test_the_signal_lines_are_the_lines_a_search_each_finds(text):
    from ctxlayer.core.prepare import recall

    plain = re.compile(r"Error|Exception|FAIL|Traceback|\bline \d|\.\w{1,5}:\d|\btest_")
    assert recall._signal_lines(text) == "\n".join(
        line for line in text.split("\n") if plain.search(line))


def _ranked_pair_by_pair(entries, shown: str, noisy: bool) -> list[str]:
    """The ledger's rule as first written: a value inside a kept one is left out, a kept one
    inside a new value gives way to it, each pair tested in turn; then each value that gave
    way and names a path by its directories (a "/", no NUL) hands its rank to the best ranked
    value left that holds it, and the values left go in the order of the best rank they
    hold. Inside means whole (`holds`: `test_1` is not inside `test_10`)."""
    from ctxlayer.core.compress.ledger import MENTION_SCORE, _rank, holds

    def inside(v: str, t: str) -> bool:
        return holds(t, v) >= 0

    out: list[str] = []
    taken: list[str] = []
    for e in sorted(entries, key=_rank):
        v = e.value
        if not v.strip() or (shown and inside(v, shown)) or (noisy and e.score <= MENTION_SCORE):
            continue
        if any(inside(v, kept) for kept in out):
            continue
        out = [kept for kept in out if not inside(kept, v)]
        out.append(v)
        taken.append(v)
    rank = {v: k for k, v in enumerate(taken)}
    best = dict(rank.items())
    for k, v in enumerate(taken):
        if v in out or "/" not in v or "\0" in v:
            continue
        holder = min((w for w in out if inside(v, w)), key=rank.__getitem__)
        best[holder] = min(best[holder], k)
    return sorted(out, key=best.__getitem__)


values = st.lists(st.text(alphabet="ab/.\0 c1_", max_size=6), max_size=30)


@settings(max_examples=500, deadline=None)
@given(values, st.sampled_from(["", "a/b", "c"]), st.booleans())
def test_the_ledgers_merge_of_values_is_the_pair_by_pair_rule(vals, shown, noisy):
    from ctxlayer.core.compress.ledger import Entry, _ranked

    entries = [Entry(v, score=k % 3, last=k) for k, v in enumerate(vals)]
    assert _ranked(entries, shown, "numbers" if noisy else "paths") == \
        _ranked_pair_by_pair(entries, shown, noisy)


# path-like pieces and every kind of gap a word can end at: spaces str.split takes (a no-break
# space, a record separator, a line separator) and the marks a path stops at
PATH_PIECES = ["src/a.py", "./run.sh", "../x", "~/.cfg", "/usr/lib/", "a/b", "I/O", "x.py",
               "a.tar.gz", "README.md:", "C:\\x\\y.py", "D:\\", "\\\\srv\\share", "@scope/pkg",
               "a+b/c", "-", ".", "..", "/", "\\", ":", "@", "~", "+", "_", "x", "é", "9", "a.b",
               "(", ")", "'", '"', ",", "`", " ", "\t", "\n", "\u00a0", "\x1c", "\u2028", "\u200b",
               "https://e.com/a.py", "File \"a.py\", line 3", "foo.py-", "v1.2.3", "x.pyc",
               "a.py:12", "src/b.ts:3:9", "C:\\w\\c.go:7", ":4", "x.md:1:", "12345"]


@settings(max_examples=600, deadline=None)
@given(st.lists(st.sampled_from(PATH_PIECES), max_size=30).map("".join))
def test_paths_and_file_lines_found_word_by_word_are_what_the_whole_run_finds(text):
    assert list(facts._path_matches(text)) == \
        [(m.start(), m.group(0)) for m in pat.PATH.finditer(text)]
    assert [(at + m.start(), m.groups())
            for at, m in facts._word_matches(text, facts._file_loc_pattern)] == \
        [(m.start(), m.groups()) for m in pat.FILE_LOC.finditer(text)]


#: the ledger's test of a library path as first written, one pattern searched
LIBRARY = re.compile(r"site-packages|dist-packages|/lib/python\d|^/usr/(?:local/)?lib/|conda|"
                     r"node_modules|^<|^/dev/|^/proc/|^/usr/(?:local/)?bin/|^/bin/|(?:^|/)path/to/"
                     r"|^[^/]+/$|^\d*s/[^/]*/[^/]*/")
LIBRARY_PIECES = ["site-packages", "dist-packages", "/lib/python3", "/lib/python", "/lib/pythonx",
                  "/usr/", "local/", "lib/", "bin/", "conda", "node_modules", "<", "/dev/", "/proc",
                  "/", "path/to/", "a", "12", "s/", "x/", "\n", "٣", " ", ".py", "src", "/path"]


@settings(max_examples=1000, deadline=None)
@given(st.lists(st.sampled_from(LIBRARY_PIECES), max_size=8).map("".join))
def test_a_library_path_is_told_as_the_one_pattern_tells_it(value):
    from ctxlayer.core.compress.ledger import _is_library

    assert _is_library(value) == (LIBRARY.search(value) is not None)


#: the prose-command finder's pattern as first written, tried at every character
PROSE_PROGRAM = re.compile(r"(?<![\w./`-])(pytest|python3?|npm|make|git|cargo|go)(?= )")
PROGRAM_PIECES = ["pytest", "python", "python3", "3", "npm", "make", "git", "cargo", "go",
                  "gogo", "xgo", "_", ".", "/", "`", "-", " ", "\n", "\t", "é", "٣", "(", "x",
                  "run ", "git status", "a-go ", "cargo test", "python3x"]


@settings(max_examples=600, deadline=None)
@given(st.lists(st.sampled_from(PROGRAM_PIECES), max_size=30).map("".join))
def test_program_words_found_by_substring_are_what_the_pattern_finds(text):
    assert facts.program_words(text) == [m.span() for m in PROSE_PROGRAM.finditer(text)]


CUE_PIECES = ["todo", "TODO", "open question", "not yet", "still", "STILL", "pending", "why",
              "need to", "next step", "to do", "later", "?", "？", "待定", "decided", "Decision",
              "agreed", "we will", "we'll", "WE'LL", "going with", "chose", "chosen", "settled",
              "use", "Using", "fixed", "done", "resolved", "confirmed", "switched to", "merged",
              "implemented", "决定", "ſtill", "Kelvin", "K", "ı", "İ", "é", "_", "x", "9", " ",
              "\n", ".", "-", "'", "abuse", "undone", "unused", "whys"]


@settings(max_examples=600, deadline=None)
@given(st.lists(st.sampled_from(CUE_PIECES), max_size=20).map("".join))
def test_the_summary_cues_skipped_by_their_words_are_what_the_patterns_find(text):
    from ctxlayer.core.assembly import summary

    assert summary._is_open(text) == (summary._OPEN.search(text) is not None)
    assert summary._is_decided(text) == (summary._DECIDED.search(text) is not None)
