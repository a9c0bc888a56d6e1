"""Structured facts: what a summary must keep, and the compact ledger."""

from __future__ import annotations

import pytest

from ctxlayer.core.compress import Facts, extract_facts, format_ledger

REPORT = """Running `pytest tests/test_api.py -x` fails with ValueError at src/app/orders.py:57.
The handler `create_order()` calls compute_total(cart.items, coupon) in app.pricing and
returns HTTP 500; see https://example.com/docs/a/b.py for details. Error TS2345 and E0382 too.
File "/srv/shop/app/pricing.py", line 23, in compute_total
Also check line 42 and the timeout=30 setting (30 s), port 8080, budget of 8000 tokens.
Upgraded to Python 3.11.2. The WorkspaceSegment and TrimReport classes matter.
I/O and and/or are words, not paths. errno ENOENT; the job exited with code 2. 第 12 行 有问题。
$ make test
```bash
git status --short
# a comment, not a command
npm run build
```
```python
import os
print(os.path.join("a", "b"))
```
"""


def check(text: str, kind: str, present: list[str], absent: list[str] = ()):
    got = getattr(extract_facts(text), kind)
    for want in present:
        assert want in got, f"{want!r} not in {kind} {got}"
    for bad in absent:
        assert bad not in got, f"{bad!r} should not be in {kind} {got}"


CASES = [
    (
        "paths",
        ["tests/test_api.py", "src/app/orders.py", "/srv/shop/app/pricing.py"],
        ["I/O", "and/or", "https://example.com/docs/a/b.py", "//example.com/docs/a/b.py"],
    ),
    (
        "commands",
        ["pytest tests/test_api.py -x", "make test", "git status --short", "npm run build"],
        ["# a comment, not a command", "import os"],
    ),
    ("error_codes", ["ValueError", "HTTP 500", "TS2345", "E0382", "ENOENT", "exit 2"], []),
    (
        "line_numbers",
        ["src/app/orders.py:57", "/srv/shop/app/pricing.py line 23", "line 42", "line 12"],
        ["line 23", "/srv/shop/app/pricing.py:23"],
    ),  # a traceback's location in its own words, once
    (
        "identifiers",
        [
            "create_order()",
            "compute_total()",
            "cart.items",
            "app.pricing",
            "WorkspaceSegment",
            "TrimReport",
            "os.path.join()",
        ],
        ["compute_total", "ValueError", "Python", "example.com", "e.g"],
    ),
    (
        "numbers",
        ["timeout=30", "30 s", "port 8080", "budget of 8000", "8000 tokens", "Python 3.11.2"],
        ["57", "2"],
    ),
]


@pytest.mark.parametrize(("kind", "present", "absent"), CASES, ids=[c[0] for c in CASES])
def test_report_facts(kind, present, absent):
    check(REPORT, kind, present, absent)


@pytest.mark.parametrize(
    ("text", "kind", "present", "absent"),
    [
        ("error[E0382]: borrow of moved value at src/main.rs:10:5", "error_codes", ["E0382"], []),
        (
            "error[E0382]: borrow of moved value at src/main.rs:10:5",
            "line_numbers",
            ["src/main.rs:10"],
            [],
        ),
        (
            "requests.exceptions.ConnectionError: refused",
            "error_codes",
            ["requests.exceptions.ConnectionError"],
            [],
        ),
        (
            "java.lang.NullPointerException at Foo.bar",
            "error_codes",
            ["java.lang.NullPointerException"],
            [],
        ),
        ("status code 404 from the API", "error_codes", ["HTTP 404"], []),
        ("ISO8601 dates and UTF8 text", "error_codes", [], ["ISO8601", "UTF8"]),
        # a code of joined words naming an error was in no kind
        ("deploy aborted: ZEBRA-ERR-4411 (then AUTH_ERROR_17, ERR-503)", "error_codes",
         ["ZEBRA-ERR-4411", "AUTH_ERROR_17", "ERR-503"], []),
        ("JIRA-1234, SHA-256, ISO-8859-1 and run_step_120 name no error", "error_codes", [],
         ["JIRA-1234", "SHA-256", "ISO-8859-1"]),
        # an error word that is not the one before the number: names, not codes
        ("ERROR-REPORT-2024, TERROR-2023, MIRROR_ERR_BACKUP_01, MAX_ERROR_RETRIES_10 and "
         "FATAL-BOOK-2019 are names", "error_codes", [],
         ["ERROR-REPORT-2024", "TERROR-2023", "MIRROR_ERR_BACKUP_01", "MAX_ERROR_RETRIES_10",
          "FATAL-BOOK-2019"]),
        ("see L42 and #L10-L20 in the diff", "line_numbers", ["line 10-20"], []),
        ("lines 10-20 changed", "line_numbers", ["line 10-20"], []),
        ("C:\\Users\\ada\\proj\\main.py is open", "paths", ["C:\\Users\\ada\\proj\\main.py"], []),
        (
            "edit ~/.config/ctxlayer/config.toml and ./run.sh",
            "paths",
            ["~/.config/ctxlayer/config.toml", "./run.sh"],
            [],
        ),
        ("the README.md and package.json files", "paths", ["README.md", "package.json"], []),
        (
            "TCP/IP, km/h and 2024/01/02 are not paths",
            "paths",
            [],
            ["TCP/IP", "km/h", "2024/01/02"],
        ),
        ("use `uv pip install -e .` then `ls`", "commands", ["uv pip install -e .", "ls"], []),
        ("use `the thing` carefully", "commands", [], ["the thing"]),
        (
            "```console\n$ cargo test\nrunning 3 tests\n```",
            "commands",
            ["cargo test"],
            ["running 3 tests"],
        ),
        (
            "call `trim_messages` with keep_lines set",
            "identifiers",
            ["trim_messages", "keep_lines"],
            [],
        ),
        (
            "JavaScript and TypeScript on GitHub",
            "identifiers",
            [],
            ["JavaScript", "TypeScript", "GitHub"],
        ),
        (
            "It took 1.5 s and 200 MB, 3 retries, 40% of 8 files",
            "numbers",
            ["1.5 s", "200 MB", "3 retries", "40%", "8 files"],
            [],
        ),
        ("We have 3 options and 2 people", "numbers", [], ["3", "2"]),
    ],
)
def test_fact_cases(text, kind, present, absent):
    check(text, kind, present, absent)


def test_first_seen_order_and_dedup():
    facts = extract_facts("b.py then a.py then b.py again, b.py:3 and a.py:1 and b.py:3")
    assert facts.paths == ("b.py", "a.py")
    assert facts.line_numbers == ("b.py:3", "a.py:1")


def test_merge_keeps_order_and_drops_repeats():
    a = extract_facts("E501 in a.py:1")
    b = extract_facts("TS2345 and E501 in b.ts:2")
    merged = a.merge(b)
    assert merged.error_codes == ("E501", "TS2345")
    assert merged.line_numbers == ("a.py:1", "b.ts:2")
    assert Facts().merge(Facts()).is_empty() and len(merged) == len(set(merged.paths)) + 4


def test_ledger_lists_every_kind_when_it_fits():
    ledger = format_ledger(extract_facts(REPORT), 4000)
    assert ledger.splitlines()[0].startswith("- errors: ValueError, HTTP 500")
    for label in ("errors", "lines", "paths", "commands", "identifiers", "numbers"):
        assert f"- {label}: " in ledger
    assert "`src/app/orders.py`" in ledger and "more)" not in ledger


@pytest.mark.parametrize("cap", [0, 10, 40, 80, 160, 300, 600])
def test_ledger_fits_its_cap_and_counts_what_it_left_out(cap):
    ledger = format_ledger(extract_facts(REPORT), cap)
    assert len(ledger) <= cap
    if 0 < len(ledger) and cap < 600:
        assert "more)" in ledger
    if cap >= 80:
        assert "ValueError" in ledger  # errors come first


def test_empty_text_has_no_facts():
    assert extract_facts("").is_empty() and format_ledger(Facts(), 100) == ""


@pytest.mark.parametrize("text", [REPORT, "", "no facts here at all",
                                  "Traceback (most recent call last):\n  File \"a/b.py\", "
                                  "line 3, in f\nKeyError: 'x'\nFAILED tests/test_a.py::test_b"])
def test_named_part_of_extracted_facts_is_what_named_facts_reads(text):
    """An outline step passes the facts read ahead of need (`extract_facts`) instead of reading
    `named_facts` again: the two must name the same."""
    from ctxlayer.core.compress.facts import named_facts, named_part

    assert named_part(extract_facts(text)) == named_facts(text)


@pytest.mark.parametrize("text", [REPORT, "", "no facts here at all", "see https://x.io/a/b.py "
                                  "and port=8080, v1.2.3, FooBarError at pkg/mod.py:12"])
def test_extracting_with_the_named_facts_read_before_finds_the_same(text):
    """A summary of a message an outline read passes the outline's `named_facts`: only
    identifiers and numbers are read again, and the facts are the same."""
    from ctxlayer.core.compress.facts import named_facts

    assert extract_facts(text, named_facts(text)) == extract_facts(text)


@pytest.mark.parametrize("text", [REPORT, "", "no facts here at all", "see https://x.io/a/b.py "
                                  "and port=8080, v1.2.3, FooBarError at pkg/mod.py:12"])
def test_named_facts_read_kind_by_kind_are_the_same(text):
    """`NamedFacts` reads each kind when asked, in any order: the same values as reading them
    all at once, and `extract_facts` given it finds the same."""
    from ctxlayer.core.compress.facts import NamedFacts, named_facts

    lazy = NamedFacts(text)
    whole = named_facts(text)
    for kind in ("tests", "paths", "commands", "line_numbers", "error_codes"):
        assert getattr(lazy, kind) == getattr(whole, kind)
    assert lazy.read() == whole
    assert extract_facts(text, NamedFacts(text)) == extract_facts(text)


def test_a_kind_read_on_two_threads_at_once_gives_each_the_same_values(monkeypatch):
    """A conversation's state is read on two threads at once (its facts read ahead on a worker
    while its next request arrives): a reader that finds the stream being read elsewhere reads
    one of its own past what it had, in the same order. Here the second reader comes from
    inside the first one's read, the moment a thread switch would give it."""
    from ctxlayer.core.compress import facts
    from ctxlayer.core.compress.facts import NamedFacts, named_facts

    text = "\n".join(f"see src/pkg/mod_{k}.py and lib/util_{k}.py at line {k}" for k in range(40))
    whole = named_facts(text).paths
    shared = NamedFacts(text)
    meanwhile: list[list[str]] = []
    paths = facts._paths

    def interrupted(plain: str, words=None):
        for n, found in enumerate(paths(plain, words)):
            if n == 7 and not meanwhile:
                meanwhile.append([])  # the second reader, once
                meanwhile[0] = list(shared.values("paths"))
                meanwhile.append(list(shared.paths))  # and the whole kind, as extract_facts asks
            yield found

    monkeypatch.setattr(facts, "_paths", interrupted)
    first = list(shared.values("paths"))
    assert meanwhile and meanwhile[0] == list(whole) and meanwhile[1] == list(whole)
    assert first == list(whole) and shared.paths == whole


def test_pythons_builtins_are_not_identifiers_of_the_code_at_hand():
    text = ("for i, seg in enumerate(segments):\n    if isinstance(seg, str) and len(seg) > 2:\n"
            "        total = sum(map(abs, values)) + check_still_complete(seg)\n"
            "        super().__init__()\n")
    ids = extract_facts(text).identifiers
    assert "check_still_complete()" in ids, ids
    assert not {"enumerate()", "isinstance()", "len()", "sum()", "map()", "super()"} & set(ids)
