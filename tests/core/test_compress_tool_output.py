"""Tool-output compression: the method chosen, the cap always met, idempotence."""

from __future__ import annotations

import pytest
from test_compress_json import api_response
from test_compress_logs import PYTEST_FAILURE, server_log

from ctxlayer.core.compress import compress_tool_output, head_tail
from ctxlayer.core.compress.tool_output import ENDS_HEADER
from ctxlayer.core.tokens import CountCache, WordTokenizer

COUNTER = CountCache(WordTokenizer())

PLAIN = "\n".join(f"src/module_{i}.py: {i * 3} symbols indexed, cache warm" for i in range(2000))
ONE_LINE = "x" * 50_000 + " tail-marker"


def check(text: str, cap: int, method: str | None, present: tuple[str, ...] = ()):
    result = compress_tool_output(text, cap, COUNTER)
    if method is None:
        assert result is None
        return None
    assert result is not None
    assert result.method == method
    assert result.tokens_after == COUNTER.count(result.text) <= cap
    assert result.tokens_before == COUNTER.count(text) > cap
    for want in present:
        assert want in result.text, f"{want!r} missing from:\n{result.text}"
    assert compress_tool_output(result.text, cap, COUNTER) is None  # idempotent
    return result


CASES = [
    ("fits already", "ok done", 10, None, ()),
    ("json outline", api_response(), 300, "json", ("data: list[5,000] of object", "email")),
    (
        "json with prefix line",
        "HTTP/1.1 200 OK\n" + api_response(50),
        100,
        "json",
        ("HTTP/1.1 200 OK",),
    ),
    # 144 of 150 tokens: the log's first /health line is shown whole below the outline (a
    # tenth of the cap left, GROW_ROOM), the run counts the 399 others
    ("server log", server_log(), 150, "log", ("TypeError: unsupported operand", "(x399)")),
    ("pytest log", PYTEST_FAILURE, 60, "log", ("assert 500 == 201",)),
    (
        "plain lines",
        PLAIN,
        80,
        "headtail",
        ("src/module_0.py", "src/module_1999.py", "lines omitted"),
    ),
    ("tiny cap still fits", PLAIN, 3, "headtail", ()),
    ("zero cap", PLAIN, 0, "headtail", ()),
]


@pytest.mark.parametrize(
    ("text", "cap", "method", "present"), [c[1:] for c in CASES], ids=[c[0] for c in CASES]
)
def test_compress_tool_output(text, cap, method, present):
    check(text, cap, method, present)


def test_log_that_needs_more_than_sanitizing_is_still_cut_to_cap():
    result = check(server_log(3000), 20, "log")
    assert result.tokens_after <= 20


def test_head_tail_marks_what_it_omits():
    out = head_tail(PLAIN, 400)
    assert out.startswith("src/module_0.py")
    assert out.rstrip().endswith("cache warm")
    assert "lines omitted ...]" in out
    assert len(out) <= 400 + 40


def test_head_tail_cuts_one_huge_line_by_characters():
    out = head_tail(ONE_LINE, 300)
    assert "chars omitted" in out and out.endswith("tail-marker")


def test_head_tail_marks_a_line_it_cuts():
    """A first (or last) line too long for its room is cut, and the cut is marked: a path cut
    to "raw_building.p" with nothing after it read as another file."""
    first = "diff --git a/astroid/raw_building.py b/astroid/raw_building.py " * 3
    last = "+    return getattr(sys.modules[modname], name, None)  # the warning's line " * 3
    text = "\n".join([first, *(f"context line {k}" for k in range(30)), last])
    out = head_tail(text, 200)
    head, tail = out.split("\n")[0], out.split("\n")[-1]
    assert head.endswith("…") and first.startswith(head[:-1]) and len(head) < len(first)
    assert tail.startswith("…") and last.endswith(tail[1:]) and len(tail) < len(last)


def test_head_tail_keeps_both_ends_of_a_long_line_between_short_ones():
    """An intro line, one pasted line of 64,000 characters and a question: the two short lines
    were kept alone (54 characters of a room of 12,000, a question of 18,600 tokens sent as
    163 of a budget of 4,000); the long line keeps its start and its end in the room left."""
    pasted = " ".join(f"Sentence {i} explains a detail of the bug." for i in range(1500))
    out = head_tail(f"Please review:\n{pasted}\nWhat is wrong?", 12_000)
    lines = out.split("\n")
    assert lines[0] == "Please review:" and lines[-1] == "What is wrong?"
    assert lines[1].endswith("…") and pasted.startswith(lines[1][:-1])
    assert lines[-2].startswith("…") and pasted.endswith(lines[-2][1:])
    assert "chars omitted" in lines[2] and 11_000 < len(out) <= 12_000
    # two long lines: the end of the first, the start of the second, and what is between
    two = head_tail("a\n" + "x" * 5000 + "\n" + "y" * 5000 + "\nb", 3000)
    assert two.split("\n")[1].startswith("xxx") and two.split("\n")[-2].endswith("yyy")
    assert "[... 7,048 chars omitted ...]" in two


@pytest.mark.parametrize("cap", [20, 24])
def test_a_users_text_cut_inside_its_first_line_keeps_its_first_words(cap):
    """A task in a room too small for its first line kept a cut start of it and the omission
    mark ("diff --git a/astroid/raw_building.p" and "[... 26 lines omitted ...]" in 20 tokens,
    less than in 16): its first words alone keep more of what was asked."""
    from ctxlayer.core.compress.shorten import shorten
    from ctxlayer.tokenizers import counter_for

    counter = counter_for("gpt-4o")
    first = "diff --git a/astroid/raw_building.py b/astroid/raw_building.py"
    text = "\n".join([first, "index cc3aa015..db9b5d19 100644",
                     *(f"+    line {k} of the patch, with some words on it" for k in range(25))])
    out = shorten(text, cap, counter, keep_head=True)
    assert out is not None and out.tokens_after <= cap
    assert out.text.startswith(first) and out.text.endswith("…")
    assert "omitted" not in out.text


def test_head_tail_returns_short_text_unchanged():
    assert head_tail("a\nb", 100) == "a\nb"


@pytest.mark.parametrize("cap", [3, 5, 8])
def test_a_cap_about_the_markers_size_keeps_the_first_words(cap):
    """With room for little more than the omission marker, the text keeps its first words
    and an ellipsis: a bare marker (it was "[... 63 lines omitted ...", cut) said nothing of
    the message, which was a question the model was to answer."""
    text = "Please fix the parser so that it accepts trailing commas\n" + PLAIN
    result = check(text, cap, "headtail")
    assert result.text.startswith("Please") and result.text.endswith("…")
    assert "omitted" not in result.text


@pytest.mark.parametrize("cap", [8, 10, 12, 14])
def test_a_log_cut_to_about_its_marks_keeps_its_first_words(cap):
    """A log's outline in a room about the size of its gap marks kept nothing but them
    ("[... 113 lines]\n[... 3 lines omitted ...]" for a 1,491-token task cut to 16 tokens):
    its first words say what it was."""
    text = "Please support header rows in the table writer output\n" + server_log()
    result = check(text, cap, "log")
    assert result.text.startswith("Please support")
    assert "lines]" not in result.text and "omitted" not in result.text


@pytest.mark.parametrize("cap", [60, 120, 400])
def test_shorten_stays_within_its_cap_and_names_what_the_cut_part_held(cap):
    from ctxlayer.core.compress.shorten import shorten

    lines = [f"ok line {k} of the run" for k in range(300)]
    lines[150] = 'File "src/pay/ledger.py", line 88, in post'
    lines[151] = "LedgerImbalanceError: debit and credit differ"
    text = "\n".join(lines)
    out = shorten(text, cap, COUNTER)
    assert out is not None and out.tokens_after <= cap
    assert out.tokens_after == COUNTER.count(out.text)
    assert "LedgerImbalanceError" in out.text  # errors first: a small cap names them alone
    assert cap < 100 or "src/pay/ledger.py" in out.text
    assert shorten(out.text, cap, COUNTER) is None  # shortened once, it fits: nothing again


@pytest.mark.parametrize("keep_head", [False, True])
def test_an_outline_with_its_note_tests_once_whether_a_text_is_a_log(monkeypatch, keep_head):
    """An outline is made again in the room its note leaves (and, for a user's text, beside its
    first lines): whether the text reads as a log is asked once, and its lines are read once,
    not for each of them (a few milliseconds a long output, several times a step). A user's
    text sent after its first lines has what follows them outlined (so that the outline does
    not show them again) from the lines read of the whole: read again, a 100k-line log's
    shortening took 1.5 s where 0.8 s."""
    from ctxlayer.core.compress import shorten as shortening
    from ctxlayer.core.compress import tool_output

    asked: list[str] = []
    test = tool_output.looks_like_log
    monkeypatch.setattr(tool_output, "looks_like_log", lambda t: asked.append(t) or test(t))
    read: list[str] = []
    outline = tool_output.LogOutline
    monkeypatch.setattr(tool_output, "LogOutline", lambda t: read.append(t) or outline(t))
    text = "please look at why the run fails\n" + "\n".join(
        f"2026-01-01 12:00:{k % 60:02d} INFO step {k} ok in src/m{k % 7}.py" for k in range(300))
    text += "\nTraceback (most recent call last):\n  File \"src/m3.py\", line 8, in run\n"
    text += "KeyError: 'bad item 4999'"
    out = shortening.shorten(text, 200, WordTokenizer(), keep_head=keep_head)
    assert out is not None and out.method == "log" and "bad item 4999" in out.text
    assert asked.count(text) == 1
    assert read == [text]
    assert len(asked) == (2 if keep_head else 1)  # and whether what follows them reads as one


def test_a_note_full_after_the_errors_never_reads_the_paths(monkeypatch):
    """A note names the cut part's errors first, then tests, paths, lines and commands, and
    ends at the first that does not fit: each kind is read when the note comes to it, so a
    note the errors fill never reads the paths of the output (a 30 KB listing took longer to
    read for its paths than the note it named)."""
    from ctxlayer.core.compress import facts
    from ctxlayer.core.compress.shorten import shorten

    read: list[str] = []
    paths = facts._paths
    monkeypatch.setattr(facts, "_paths",
                        lambda text, words=None: read.append(text) or paths(text, words))
    errors = [f"E{4000 + k}: check {k} failed in src/pkg/mod_{k}.py" for k in range(60)]
    text = "\n".join(f"ok step {k}" for k in range(200)) + "\n" + "\n".join(errors)
    out = shorten(text, 120, COUNTER)
    assert out is not None and "[cut from this message: " in out.text
    assert "E4000" in out.text.split("[cut from this message: ")[1]
    assert read == [], "the paths were read although the errors filled the note"
    # a note with room left after the errors does read them, and names them
    few = "\n".join(f"ok step {k}" for k in range(200)) + "\nE4001 in src/pkg/mod_1.py\n" + \
        "\n".join(f"ok step {k}" for k in range(200))
    out = shorten(few, 120, COUNTER)
    assert out is not None and "src/pkg/mod_1.py" in out.text and read == [few]


BUILD = "\n".join(["2026-01-01 10:00:00 INFO starting build of zebra-service",
                   *(f"2026-01-01 10:00:{k % 60:02d} INFO compiled module m{k}.c"
                     for k in range(400)),
                   "2026-01-01 10:07:00 ERROR link failed: undefined reference to zebra_init",
                   "2026-01-01 10:07:01 INFO build finished with 1 error"])


@pytest.mark.parametrize("cap", [300, 600, 1200])
def test_a_log_grown_with_its_first_and_last_lines_shows_each_line_once(cap):
    """A sanitized log with room to spare shows the log's first and last lines as they were
    below its outline; the outline leaves those out. Before, it showed the first line, the
    run collapsed from the second ("compiled module m0.c (x400)"), the error and the last
    line, and the same four lines again verbatim below."""
    result = check(BUILD, cap, "log", ("ERROR link failed",))
    outline, header, ends = result.text.partition(ENDS_HEADER)
    assert header and "10:00:00 INFO starting build" in ends and "(x400)" not in outline
    middle = [line for line in outline.split("\n") if line and not line.startswith("[")]
    for line in middle:  # the lines of the middle, denoised
        assert line.removesuffix(" (x400)") not in ends, line


def _name(k: int) -> str:  # letters: a digit would make every line one run
    return "".join("abcdefghijklmnopqrstuvwxyz"[d] for d in (k // 26, k % 26))


JOBS = "\n".join(["2026-01-01 10:00:00 INFO starting the jobs",
                  *(f"2026-01-01 10:00:{k % 60:02d} INFO loaded module {_name(k)}"
                    for k in range(150)),
                  *(f"2026-01-01 10:01:{k % 60:02d} ERROR KeyError: 'job{k}' in worker {k % 7}"
                    for k in range(57)),
                  "2026-01-01 10:02:00 INFO 57 jobs failed"])


@pytest.mark.parametrize("cap", [600, 1000])
def test_a_run_beside_the_last_lines_counts_only_the_lines_it_stands_for(cap):
    """The outline above a log's last lines collapsed the KeyErrors into one run counted
    "(x57)", though 14 of them (31 at 1,000 tokens) were among the last lines shown whole
    below it: read together, 71 errors where the log has 57."""
    result = check(JOBS, cap, "log", ("KeyError",))
    outline, header, ends = result.text.partition(ENDS_HEADER)
    run, last = [line for line in outline.split("\n") if "KeyError" in line]
    shown = ends.count("KeyError")
    assert header and shown and run.endswith(f" (x{57 - shown})"), (run, shown)
    # the last of the run above the last lines, not the log's last (among those lines)
    assert last.endswith(f"'job{56 - shown}' in worker {(56 - shown) % 7} "
                         f"(the last of {57 - shown})"), last


def _key_errors(ids: list[str], lines_vary: bool = True) -> str:
    """A worker's log: its first KeyError (a traceback) among its first lines, 26 more alike
    (numbers differing: the key, the frames' line numbers when ``lines_vary``) in its
    middle, the rest noise."""
    def traceback(k: int) -> list[str]:
        at = k if lines_vary else 0
        return ["Traceback (most recent call last):",
                f'  File "/srv/app/worker.py", line {100 + at}, in run', "    handle(job)",
                f'  File "/srv/app/jobs.py", line {40 + at % 9}, in handle',
                "    value = table[key]", f"KeyError: '{ids[k]}'"]

    lines = ["2026-01-01 10:00:00 INFO starting worker", *traceback(0)]
    for k in range(1, 27):
        lines += [f"2026-01-01 10:00:00 INFO processed batch {_name(12 * k + j)} ok"
                  for j in range(12)]
        lines += traceback(k)
    lines += [f"2026-01-01 10:30:00 INFO processed batch {_name(400 + j)} ok"
              for j in range(200)]
    return "\n".join([*lines, "2026-01-01 11:00:00 INFO worker stopped"])


#: keys differing in their digits; and job ids that read as ids ("<id>" once the noise is out)
KEYS = [f"job-{1000 + 37 * k}" for k in range(27)]
JOB_IDS = [f"{0xa3f9c2e1b7d4e5f60718 + 7919 * k:x}" for k in range(27)]


@pytest.mark.parametrize("cap", [1000, 1500])
@pytest.mark.parametrize(("ids", "lines_vary"), [(KEYS, True), (JOB_IDS, True),
                                                 (JOB_IDS, False)],
                         ids=["keys", "job ids", "job ids alone"])
def test_a_run_whose_first_is_among_the_first_lines_shows_its_first_and_last_between(
        ids, lines_vary, cap):
    """The log's first KeyError is among its first lines shown whole; the outline of the
    lines between merged the 26 there into it, so it never showed them: they said nowhere
    but in "150 repeats collapsed" (job ids alone differing); or only in the log's last
    KeyError, "(the last of 23)", the first between missing. Now the outline between counts them
    itself: the first there "(xN)", the last "(the last of N)", none of the first lines'
    shown again."""
    result = check(_key_errors(ids, lines_vary), cap, "log", ("KeyError",))
    outline, header, ends = result.text.partition(ENDS_HEADER)
    above = ends.split("[... ")[0]
    shown = above.count("KeyError")
    assert header and 0 < shown < 27 and "KeyError" not in ends.split("omitted ...]")[1]
    between = [line for line in outline.split("\n") if line.startswith("KeyError")]
    key = (lambda k: ids[k]) if ids is KEYS else (lambda k: "<id>")  # an id is noise
    if not lines_vary:  # the same lines once the ids are out: the first, counting them
        assert between == [f"KeyError: '<id>' (x{27 - shown})"], between
        return
    # the first and last between by their frames' line numbers (the ids read alike)
    assert between == [f"KeyError: '{key(shown)}' (x{27 - shown})",
                       f"KeyError: '{key(26)}' (the last of {27 - shown})"], between
    assert f"worker.py\", line {100 + shown}," in outline and \
        f"worker.py\", line {100 + shown - 1}," not in outline
