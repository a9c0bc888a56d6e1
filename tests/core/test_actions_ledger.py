"""The action log and the ranked facts ledger of a compaction."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ctxlayer.core.assembly.actions import log_lines, outcome_of, render_actions
from ctxlayer.core.compress.ledger import PROSE_SCORE, add_messages, facts_cut, render_ledger
from ctxlayer.protocol import Message, ToolCall


def call(cid: str, name: str, **args) -> Message:
    return Message(role="assistant", content="", tool_calls=[
        ToolCall(id=cid, name=name, arguments=json.dumps(args))])


def result(cid: str, text: str) -> Message:
    return Message(role="tool", content=text, tool_call_id=cid)


OUTCOMES = [
    ("collected 3 items\nFAILED tests/test_a.py::test_x - AssertionError\n"
     "FAILED tests/test_a.py::test_y\n==== 2 failed, 1 passed in 0.1s ====\nexit code 1",
     ["exit 1", "failed: tests/test_a.py::test_x, tests/test_a.py::test_y", "2 failed, 1 passed"]),
    ("<returncode>0</returncode>\n<output>\nhello world\n</output>", ["exit 0", "hello world"]),
    ('Traceback (most recent call last):\n  File "a.py", line 3\nValueError: bad value',
     ["ValueError: bad value"]),
    ("", ["(empty output)"]),
    (None, ["no result"]),
]


@pytest.mark.parametrize(("text", "parts"), OUTCOMES)
def test_outcome_is_one_line_with_what_matters(text, parts):
    line = outcome_of(text)
    assert "\n" not in line
    for part in parts:
        assert part in line


def _every_pattern(result: str) -> str:
    """outcome_of as it reads with every pattern run on every text: what the word tests that
    skip a pattern must never change."""
    from ctxlayer.core.assembly import actions as a

    parts: list[str] = []
    m = a._EXIT.search(result)
    if m:
        parts.append(f"exit {next(g for g in m.groups() if g is not None)}")
    failed = list(dict.fromkeys(a._FAILED.findall(result) + a._FAILED_AFTER.findall(result)))
    if failed:
        more = f" (+{len(failed) - 3} more)" if len(failed) > 3 else ""
        parts.append("failed: " + ", ".join(failed[:3]) + more)
    summary = a._SUMMARY_LINE.findall(result)
    if summary:
        parts.append(a._flat(summary[-1].strip("= "), 80))
    errors = [e.strip() for e in a._ERROR_LINE.findall(result)]
    errors = a.said_errors(errors)
    if errors:
        parts.append(a._flat(errors[-1], 100))
    first = a.first_line(result)
    if len(parts) <= 1:
        parts.append(a._flat(first, 80) if first else "(empty output)")
    return "; ".join(parts)


@pytest.mark.parametrize("text", [
    "", "\n\n", "   \n\t\n", "<returncode>1</returncode>\n<output>\nok\n</output>",
    "Exit code: 2\nFAILED tests/a.py::test_b - assert 1\n==== 1 failed, 3 passed ====",
    "tests/a.py::test_c ERROR\nE   assert 0 == 1\n", "x\r\ny", "\r\n\r\nabc\x0bdef",
    "EXITED with 3", "ReturnCode=5", "E   assert 1\n", "  e\t\tfoo", "FATAL: x",
    "EXİT 3", "exıt 4", "Traceback (moſt recent call last):\n  File \"a.py\", line 1\nKeyError: 1",
    "ErrOr: bad", "Kelvin exceptionK", "def f():\n    return 1\n" * 50,
    "12:00 INFO done in 3 ms\n" * 30 + "ValueError: bad item 4999"])
def test_the_outcome_is_what_every_pattern_reads(text):
    assert outcome_of(text) == _every_pattern(text)


_PIECES = ["E", "e", " ", "  ", "\t", "\n", "\r", "\x0b", "x", "ValueError", "error:", "error[E1]:",
           "Exception", "Failure", "fatal:", "Traceback (most recent call last)", "İ", "ſ", ".",
           "assert 1", "E   assert 0"]


@settings(max_examples=600, deadline=None)
@given(st.lists(st.sampled_from(_PIECES), max_size=40).map("".join))
def test_the_line_patterns_find_after_newlines_what_they_find_in_multiline(text):
    """outcome_of finds pytest's `E   ...` lines and error lines past the first line with
    patterns that start at a newline (much faster on long outputs); they find what the
    MULTILINE patterns themselves find, in order."""
    from ctxlayer.core.assembly import actions as a

    assert a.line_matches(a._E_LINE, a._E_AFTER, text) == a._E_LINE.findall(text)
    assert a.line_matches(a._ERROR_LINE, a._ERROR_AFTER, text) == a._ERROR_LINE.findall(text)


def test_one_line_per_call_with_its_target_and_result():
    msgs = [call("c1", "bash", command="pytest tests/test_a.py -x\n# second line"),
            result("c1", "FAILED tests/test_a.py::test_x\nexit code 1"),
            call("c2", "read_file", path="src/app.py"), result("c2", "def main(): ..."),
            call("c1", "bash", command="ls"),  # an id used again answers the latest call
            result("c1", "README.md")]
    lines = log_lines(msgs)
    assert lines[0].startswith("bash pytest tests/test_a.py -x → exit 1")
    assert lines[1].startswith("read_file src/app.py → def main()")
    assert lines[2] == "bash ls → README.md"
    shown = render_actions(lines, 10_000)
    assert shown.index("bash ls") < shown.index("read_file")  # newest first
    short = render_actions(lines, 60)
    assert "bash ls" in short and "(+2 older calls)" in short


def test_prose_and_repeated_facts_outrank_a_value_seen_once_in_a_tool_output():
    msgs = [result("c", "listing: src/noise_1.py src/noise_2.py src/noise_3.py"),
            Message(role="user", content="The bug is in src/billing/core.py, see ValueError."),
            result("c", "src/cache/store.py:10 and again src/cache/store.py"),
            Message(role="assistant", content="Look at src/cache/store.py:10 next.")]
    ledger = add_messages(None, msgs)
    text = render_ledger(ledger, 10_000)
    paths = text.split("- paths: ")[1].split("\n")[0].split(", ")
    assert paths.index("src/billing/core.py") < paths.index("src/noise_1.py")
    # src/cache/store.py is named by its location, not listed again among the paths
    assert "src/cache/store.py" not in paths and "- lines: src/cache/store.py:10" in text
    tight = render_ledger(ledger, 60)
    assert len(tight) <= 60 and "src/billing/core.py" in tight and "noise" not in tight


def test_a_listing_read_last_does_not_crowd_a_tracebacks_files_out_of_a_small_ledger():
    # a directory listing after a traceback: its 40 paths, each seen once like the
    # traceback's, were the newer ones and filled a small summary's paths
    trace = ('Traceback (most recent call last):\n'
             '  File "/testbed/astropy/units/decorators.py", in wrapper\n'
             "AttributeError: 'NoneType' object has no attribute 'to'\n"
             "see also /testbed/astropy/utils/decorators.py")
    listing = "\n".join(f"astropy/io/misc/file_{k}.py" for k in range(40))
    ledger = add_messages(None, [result("c", trace), result("d", listing)])
    text = render_ledger(ledger, 160)
    assert "/testbed/astropy/units/decorators.py" in text, text
    assert "/testbed/astropy/utils/decorators.py" in text, text
    # the listing is still in the ledger, after them, where there is room
    roomy = render_ledger(ledger, 10_000)
    assert "astropy/io/misc/file_39.py" in roomy
    paths = roomy.split("- paths: ")[1].split("\n")[0].split(", ")
    assert paths.index("/testbed/astropy/utils/decorators.py") < paths.index(
        "astropy/io/misc/file_39.py")
    # a listing the user or the assistant writes out is theirs: every value ranks as said
    said = Message(role="assistant", content="Files to change: " + listing.replace("\n", ", "))
    ranked = add_messages(None, [result("c", trace), said]).kinds["paths"]
    assert {e.score for e in ranked if "file_" in e.value} == {PROSE_SCORE}


def test_a_path_merged_into_a_longer_one_keeps_its_place_in_the_order():
    # `astroid/manager.py`, named in many messages, gave way to `a/astroid/manager.py` of
    # one diff and went with it to the end of the list, out of a small ledger
    msgs = [result("d", "diff --git a/astroid/manager.py b/astroid/manager.py")]
    msgs += [result(f"r{k}", f"touched src/other_{k}.py") for k in range(8)]
    msgs += [Message(role="assistant", content=f"Checking astroid/manager.py again ({k}).")
             for k in range(5)]
    ledger = add_messages(None, msgs)
    paths = render_ledger(ledger, 10_000).split("- paths: ")[1].split("\n")[0].split(", ")
    assert paths[0] in ("a/astroid/manager.py", "b/astroid/manager.py"), paths
    assert "astroid/manager.py" in render_ledger(ledger, 60)
    # a bare name held by many paths passes its place to none of them
    names = [Message(role="assistant", content="Every __init__.py matters.")] * 5 + [
        result("x", "pkg/one/__init__.py"), result("y", "src/core.py")]
    order = render_ledger(add_messages(None, names), 10_000).split("- paths: ")[1]
    assert order.split("\n")[0].split(", ") == ["src/core.py", "pkg/one/__init__.py"]


@pytest.mark.parametrize("size", [300, 400, 600, 1000])
def test_a_path_a_location_says_is_not_listed_again_and_its_room_goes_to_other_facts(size):
    # a small summary listed a traceback's files among the paths and again in the lines
    # that name them, and had no room left for the lines that failed
    trace = ('Traceback (most recent call last):\n'
             '  File "/workspace/poc.py", line 12, in <module>\n    poc = PoC(1.*u.V)\n'
             '  File "/testbed/astropy/utils/decorators.py", line 824, in __init__\n'
             '    func = make_function_with_signature(func, name=name, **wrapped_args)\n'
             "AttributeError: 'NoneType' object has no attribute 'to'")
    ledger = add_messages(None, [result("c", trace), result(
        "d", "edited /testbed/astropy/units/core.py and /testbed/setup.cfg")])
    text = render_ledger(ledger, size)
    assert len(text) <= size
    kinds = {line.split(": ", 1)[0]: line.split(": ", 1)[1].split(", ")
             for line in text.splitlines()}
    lines, paths = kinds.get("- lines", []), kinds.get("- paths", [])
    assert not any(p in loc for loc in lines[:1] for p in paths), text
    if lines:  # each file named still, by its location or as a path
        assert "/workspace/poc.py" in text


def test_kinds_in_order_substrings_merged_library_paths_left_out():
    msgs = [Message(role="user", content=(
        "Run `pytest tests/test_x.py::test_one` on src/a.py; a.py fails with KeyError at "
        "src/a.py:12. Timeout 30 ms. File \"/usr/lib/python3.11/json/decoder.py\", line 3."))]
    text = render_ledger(add_messages(None, msgs), 10_000)
    labels = [line.split(":")[0] for line in text.splitlines()]
    order = ["- paths", "- commands", "- errors", "- tests", "- lines", "- numbers"]
    assert [lab for lab in labels if lab in order] == [o for o in order if o in labels]
    paths = text.split("- paths: ")[1].split("\n")[0].split(", ")
    assert "a.py" not in paths  # merged into the longer value
    assert "src/a.py:12" in text and "src/a.py" not in paths  # the location names it
    assert "decoder.py" not in text


@pytest.mark.parametrize("noise", [
    "/dev/null", "/usr/bin/env", "/path/to/working/dir", "path/to/file1", "a/", "False/",
    "1312s/ForeignKey/ManyToManyField/"])
def test_slashes_that_are_not_the_works_files_stay_out_of_the_ledger(noise):
    msg = Message(role="assistant", content=f"Edited src/app/models.py; see {noise} there.")
    paths = [e.value for e in add_messages(None, [msg]).kinds.get("paths", [])]
    assert "src/app/models.py" in paths and noise not in paths, paths


def test_facts_already_shown_are_left_out():
    ledger = add_messages(None, [Message(role="user", content="Fix src/a.py and src/b.py.")])
    text = render_ledger(ledger, 10_000, shown="we fixed src/a.py")
    assert "src/b.py" in text and "src/a.py" not in text


def test_commands_written_in_tool_call_arguments_are_facts():
    ledger = add_messages(None, [call("c", "bash", command="cat > verify_fix.py << 'EOF'")])
    assert "verify_fix.py" in render_ledger(ledger, 10_000)


@pytest.mark.parametrize(("arguments", "ran"), [
    ({"command": "python reproduce.py"}, "python reproduce.py"),
    ({"cmd": ["pytest", "-x", "tests/test_io.py"]}, "pytest -x tests/test_io.py"),
    ({"script": "make test\necho done"}, "make test"),  # the first line: what was run
])
def test_what_an_agent_ran_through_its_shell_tool_is_a_command_of_the_ledger(arguments, ran):
    msg = Message(role="assistant", content="Let me check.", id="a",
                  tool_calls=[ToolCall(id="c1", name="bash", arguments=json.dumps(arguments))])
    ledger = add_messages(None, [msg])
    assert ran in [e.value for e in ledger.kinds["commands"]]
    # and it ranks as the agent's own words, above a command only seen in some output
    seen = Message(role="tool", content="$ npm run lint\nok", id="r", tool_call_id="c1")
    ranked = add_messages(None, [msg, seen]).kinds["commands"]
    assert ranked[0].value == ran and ranked[0].score > min(e.score for e in ranked)


def test_a_script_written_through_tool_call_arguments_is_read_with_its_newlines():
    script = "cat > check.py << 'EOF'\nimport django\nprint(settings.FILE_UPLOAD_PERMISSIONS)\nEOF"
    ledger = add_messages(None, [call("c", "bash", command=script)])
    values = {e.value for v in ledger.kinds.values() for e in v}
    assert "check.py" in values
    # read raw, the escaped newline glues words into values nobody wrote
    assert not any(v.startswith(("nimport", "nprint")) for v in values), values


def test_facts_cut_names_what_a_shortened_copy_lost_within_its_room():
    original = ("collected 40 items\n" + "ok\n" * 50
                + 'File "app/models.py", line 12\nKeyError: total\nFAILED test_sum\n' + "ok\n" * 50)
    kept = "collected 40 items\nok\n[... 100 lines omitted ...]\nok\n"
    note = facts_cut(original, kept, 200)
    for fact in ("KeyError", "test_sum", "app/models.py"):
        assert fact in note
    assert facts_cut(original, original, 200) == ""  # nothing lost, nothing said
    assert len(facts_cut(original, kept, 40)) <= 40


def test_a_line_the_shortened_copy_still_names_is_not_said_cut_however_written():
    """"Line 7", "#L12" and "line<TAB>0" read as "line N": the note compared that form with the
    kept text as written, and told the model lines it could read were gone."""
    original = ("The crash is on Line 7 of app.py (see #L12 too).\nline\t0 start\n"
                + "filler words to take room\n" * 50 + "and line 40 is where it ends\n")
    kept = "The crash is on Line 7 of app.py (see #L12 too).\nline\t0 start\n[... cut ...]\n"
    note = facts_cut(original, kept, 200)
    assert "line 40" in note
    for said in ("line 7", "line 12", "line 0"):
        assert said not in note.replace("line 40", ""), note


def test_a_value_that_starts_a_longer_one_is_its_own_fact():
    """`test_parse_1` was merged into `test_parse_10` and `pytest -k case1` into
    `pytest -k case12` (a substring test): 40 summarized turns lost cases 1-3 of each, with
    room left in the ledger. A path held by a longer path still merges into it."""
    from ctxlayer.core.compress.ledger import Entry, _ranked

    values = ["test_parse_10", "test_parse_1", "pytest -k case12", "pytest -k case1",
              "a/astroid/manager.py", "astroid/manager.py", "line 30", "line 3"]
    kept = _ranked([Entry(v, score=1, last=k) for k, v in enumerate(values)], "")
    assert sorted(kept) == sorted(set(values) - {"astroid/manager.py"})
    assert _ranked([Entry("test_parse_1", score=1, last=0)], "ran test_parse_10") == \
        ["test_parse_1"]  # not shown by a longer name


def test_a_cut_note_leaves_out_the_line_numbers_of_a_log_that_numbers_its_lines():
    # every shortened log of a chat ended "[cut from this message: line 4, line 5, ... line
    # 13]", twelve times in one request; a line named among a few, and a file's, still is
    log = "\n".join(f"line {n}: step {n} passed" for n in range(200))
    kept = "line 0: step 0 passed\n[... 198 lines omitted ...]\nline 199: step 199 passed"
    note = facts_cut(log + "\nKeyError: 'x' in src/app.py:88", kept, 400)
    assert note.startswith("[cut from this message: KeyError") and "src/app.py:88" in note
    assert "line " not in note, note
    few = "Traceback: it failed at line 42\n" + "x\n" * 50 + "then again at line 77\nok"
    assert facts_cut(few, "Traceback: it failed", 400).endswith("line 42, line 77]")
