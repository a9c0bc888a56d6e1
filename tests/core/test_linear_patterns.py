"""Patterns rewritten so that no run gives characters back to the next (possessive runs, a start
only where a run starts) find what they found as first written. Each plain spelling is kept here
as the reference; the inputs are short, where the plain ones are quick. On long runs the plain
ones took time growing with the square or the cube of the run: a 10,000-character line of "="
not ending in "=" took 9 minutes to score as a log line, a 40 KB "a-a-a-..." 4.7 s to condense
as prose (the figures of the commits that rewrote them)."""

from __future__ import annotations

import re

from hypothesis import given, settings
from hypothesis import strategies as st

from ctxlayer.core.assembly import actions
from ctxlayer.core.compress import extractive, ledger, logs
from ctxlayer.core.compress import fact_patterns as pat
from ctxlayer.core.zones import references

#: the plain spellings, as the patterns were first written
WARN = re.compile(
    r"\b(?:WARN|WARNING|Warning|warning|DEPRECATED|[Dd]eprecat\w*)\b|^={3,}.*={3,}$"
    r"|^_{3,} .* _{3,}$|\b\d+ (?:passed|failed|errors?|skipped)\b|^-{5,} .* -{5,}$")
KV = re.compile(r"(?<![\w./@-])([A-Za-z@][\w-]{0,30})\s?[=:]\s?"
                r"(?:\"[^\"]{0,200}\"|'[^']{0,200}'|[^\s,;\]\)]+)[,;]?")
DURATION = re.compile(r"(?<![\w.])\d+(?:\.\d+)?(?:\s?(?:ms|us|µs|ns|sec|secs|seconds)|s)\b")
FILE_NAME = re.compile(
    r"(?:^|[\s(\"'`])(?:\.{0,2}/)?[\w.-]+/[\w./-]+|\b[\w-]+\.(?:py|js|ts|tsx|go|rs|java|"
    r"json|toml|yaml|yml|md|c|h|cpp|rb|sh|lua|sql|html|css)\b")
FENCE = re.compile(r"^[ \t]{0,3}(```+|~~~+)[ \t]*([\w+-]*)[^\n]*\n(.*?)"
                   r"(?:^[ \t]{0,3}\1[ \t]*$|\Z)", re.MULTILINE | re.DOTALL)
FENCED = re.compile(r"^[ \t]{0,3}(```+|~~~+)[^\n]*\n.*?(?:^[ \t]{0,3}\1[ \t]*$|\Z)",
                    re.MULTILINE | re.DOTALL)
FAILED_AFTER = re.compile(r"^(\S+::\S+)\s+(?:FAILED|ERROR)\b", re.MULTILINE)
PATH = re.compile(r"(?:[\w.-]+/)+[\w.-]+|\b[\w-]+\.(?:py|ts|js|tsx|rs|go|java|c|h|cpp|md|toml"
                  r"|json|ya?ml|sql|lua|sh|txt|cfg|ini)\b")

# pieces that make the patterns match, miss by a character, and sit at line ends and word edges
PIECES = ["=", "===", "====== 2 passed in 0.1s ======", "___ test_a ___", "_", "___",
          "----- log -----", "-----", "-", "--", " ", "\t", "\n", "x", "é", "a.py", "x-y.md",
          "-a.py", "src/", "a/b", "./", "../", "/", ".", "..", "`", "```", "````", "```py\n",
          "~~~", "~~~\n", "\n```\n", "a.py::test_b", "::", ":", " FAILED", " ERROR", "FAILED",
          "pid=7", "took 12ms", "3.5s", "1.2.3", "key: v", '"q"', "'q'", "elapsed", "WARN",
          "deprecated", "1", "12", "ms", "s", "@", "_x", "a", "b1", "A", "(", ")", ";", ","]
texts = st.lists(st.sampled_from(PIECES), max_size=30).map("".join)


@settings(max_examples=500, deadline=None)
@given(texts)
def test_the_log_patterns_find_what_their_plain_spelling_finds(text):
    for line in text.split("\n"):
        assert (logs._WARN.search(line) is None) == (WARN.search(line) is None), line
        assert [(m.span(), m.groups()) for m in logs._KV.finditer(line)] == \
            [(m.span(), m.groups()) for m in KV.finditer(line)], line
        assert [m.span() for m in logs._DURATION.finditer(line)] == \
            [m.span() for m in DURATION.finditer(line)], line


@settings(max_examples=500, deadline=None)
@given(texts)
def test_fences_file_names_and_failed_tests_are_found_as_before(text):
    assert [(m.span(), m.groups()) for m in pat.FENCE.finditer(text)] == \
        [(m.span(), m.groups()) for m in FENCE.finditer(text)]
    assert ledger._FENCED.sub(" ", text) == FENCED.sub(" ", text)
    assert actions._FAILED_AFTER.findall(text) == FAILED_AFTER.findall(text)
    # a sentence is scored by whether it names a file: the same yes or no
    assert (extractive._FACT_PATTERNS[0].search(text) is None) == \
        (FILE_NAME.search(text) is None)


@settings(max_examples=500, deadline=None)
@given(st.lists(st.sampled_from(PIECES), max_size=30).map(" ".join))
def test_paths_and_file_names_in_words_apart_are_the_same_reference_keys(text):
    """Words apart, the same keys. Glued to a file name before it (`a.py-b.py`), a name was
    also read from the dash on (`-b.py`); it now starts at its first word character (a
    difference found on drawn strings only: the dev transcripts' 22,088 texts
    give the same keys)."""
    found = []
    for m in PATH.finditer(text):
        found.append(m.group(0).strip("."))
    assert [t for t in found if len(t) >= 4] == [
        m.group(m.lastindex or 0).strip(".") for m in references._PATH.finditer(text)
        if len(m.group(m.lastindex or 0).strip(".")) >= 4]


def test_a_long_run_is_read_once():
    """The inputs that took minutes: a long run scored, condensed, looked for fences, tests
    and names. Each finds what it should (the timings are the commits' and the note's: speed
    is measured, never asserted)."""
    line = "=" * 2_000 + " x"
    assert logs._score(line) == 0 and logs._score("=== 2 passed ===") == 2
    assert "ERROR boom" in logs.sanitize_log(f"{line}\nERROR boom\n")
    assert references.reference_keys("a-" * 2_000 + " src/app.py")[0] == "src/app.py"
    assert extractive.compress_prose("a-" * 2_000, 0.5)
    words = actions._FAILED_AFTER.findall("::" * 2_000 + " FAILED\na.py::t FAILED")
    assert words == ["::" * 2_000, "a.py::t"]
