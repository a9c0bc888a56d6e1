"""Data-driven tests of the trim engine, with the word-count fake tokenizer.

A conversation is written as rows: (id, role, words-or-text, extras). `check` trims it and
compares the kept ids and the audit actions by id.
"""

from __future__ import annotations

import re

import pytest

from ctxlayer.core.errors import ContextError
from ctxlayer.core.tokens import CONTENT_ONLY, WordTokenizer, conversation_tokens
from ctxlayer.core.trim import TrimOptions, trim
from ctxlayer.protocol import Message, ToolCall

WORDS = WordTokenizer()


def code(lines: int, tag: str = "x") -> str:
    body = "\n".join(f"{tag}{k} = {k}" for k in range(lines))
    return f"Here is the code:\n```python\n{body}\n```\ndone"


def conv(*rows) -> list[Message]:
    out = []
    for row in rows:
        mid, role, content, *extra = row
        if isinstance(content, int):
            content = " ".join(f"w{k}" for k in range(content))
        kw = extra[0] if extra else {}
        calls = kw.pop("calls", None)
        if calls:
            kw["tool_calls"] = [ToolCall(id=c, name="shell", arguments="ls") for c in calls]
        out.append(Message(role=role, content=content, id=mid, **kw))
    return out


def check(rows, budget, kept, actions=None, strategy="pipeline", **opts):
    msgs = conv(*rows)
    report = trim(msgs, budget, WORDS,
                  options=TrimOptions(strategy=strategy, fmt=CONTENT_ONLY, **opts))
    assert [m.id for m in report.messages] == kept
    assert report.tokens <= budget
    assert report.tokens == conversation_tokens(report.messages, WORDS, CONTENT_ONLY)
    if actions is not None:
        got = {e.message_id: e.action for e in (*report.dropped, *report.truncated)}
        assert got == actions
    return report


# --- limit ------------------------------------------------------------------------------------

LIMIT_CASES = [
    # everything fits: nothing happens
    ([("s", "system", 5), ("u1", "user", 5), ("a1", "assistant", 5)], 20, ["s", "u1", "a1"], {}),
    # oldest history goes first, system kept
    ([("s", "system", 5), ("u1", "user", 5), ("a1", "assistant", 5), ("u2", "user", 5)], 15,
     ["s", "a1", "u2"], {"u1": "dropped"}),
    # a group that does not fit is skipped; an older, smaller one still fits (gptme stops)
    ([("s", "system", 2), ("u1", "user", 3), ("a1", "assistant", 50), ("u2", "user", 4)], 10,
     ["s", "u1", "u2"], {"a1": "dropped"}),
    # pinned messages survive anywhere
    ([("s", "system", 2), ("p", "user", 4, {"pinned": True}), ("u1", "user", 5),
      ("u2", "user", 5)], 11, ["s", "p", "u2"], {"u1": "dropped"}),
]


@pytest.mark.parametrize("rows,budget,kept,actions", LIMIT_CASES)
def test_limit(rows, budget, kept, actions):
    check(rows, budget, kept, actions)


# --- tool groups ------------------------------------------------------------------------------

TOOL_CASES = [
    # the call and its two results are dropped together
    ([("u1", "user", 2), ("a1", "assistant", 2, {"calls": ["c1", "c2"]}),
      ("t1", "tool", 10, {"tool_call_id": "c1"}), ("t2", "tool", 10, {"tool_call_id": "c2"}),
      ("u2", "user", 3)], 8, ["u1", "u2"],
     {"a1": "dropped", "t1": "dropped", "t2": "dropped"}),
    # a result whose call is not in the conversation is an orphan
    ([("t0", "tool", 3, {"tool_call_id": "gone"}), ("u1", "user", 2)], 100, ["u1"],
     {"t0": "dropped"}),
    # the group fits whole: kept whole
    ([("u1", "user", 20), ("a1", "assistant", 2, {"calls": ["c1"]}),
      ("t1", "tool", 3, {"tool_call_id": "c1"}), ("u2", "user", 3)], 10,
     ["a1", "t1", "u2"], {"u1": "dropped"}),
]


@pytest.mark.parametrize("rows,budget,kept,actions", TOOL_CASES)
def test_tool_groups(rows, budget, kept, actions):
    check(rows, budget, kept, actions)


# --- reduce -----------------------------------------------------------------------------------

def test_reduce_cuts_the_longest_block_and_keeps_ids():
    rows = [("s", "system", 3), ("a1", "assistant", code(100)), ("u", "user", 3)]
    r = check(rows, 200, ["s", "a1", "u"], {"a1": "truncated"})
    body = r.messages[1].content
    # the cut names the line ranges it keeps (a file's cut said only "[...]")
    assert re.search(r"\n\[\.\.\. lines (\d+)-\d+ cut: lines 1-\d+ and \d+-100 of 100 kept "
                     r"\.\.\.\]\n", body)
    assert "x0 = 0" in body and "x99 = 99" in body and "x50 = 50" not in body


def test_reduce_skips_an_uncuttable_longest_message_and_goes_on():
    # the longest message is prose (cannot be cut); gptme stalls here, we cut the next one
    rows = [("p", "user", 300), ("a1", "assistant", code(120)), ("u", "user", 3)]
    # 392: the numbered cut's line takes 12 words more than "[...]" did at 380
    check(rows, 392, ["p", "a1", "u"], {"a1": "truncated"})


def test_assistant_with_tool_calls_is_never_truncated():
    rows = [("a1", "assistant", code(200), {"calls": ["c1"]}),
            ("t1", "tool", 2, {"tool_call_id": "c1"}), ("u", "user", 2)]
    check(rows, 50, ["u"], {"a1": "dropped", "t1": "dropped"})


def test_pinned_over_budget_is_an_error():
    with pytest.raises(ContextError) as e:
        check([("s", "system", 50, {"pinned": True}), ("u", "user", 2)], 10, [])
    assert e.value.kind == "pinned_over_budget" and e.value.field == "budget"


def test_bad_budget_names_the_field():
    with pytest.raises(ContextError) as e:
        trim(conv(("u", "user", 2)), 0, WORDS)
    assert e.value.field == "budget"


# --- ephemeral --------------------------------------------------------------------------------

def test_ephemeral_dropped_after_ttl_assistant_turns_only():
    rows = [("think", "assistant", 4, {"ephemeral_ttl": 1}), ("a1", "assistant", 3),
            ("keep", "assistant", 4, {"ephemeral_ttl": 5}), ("u", "user", 2)]
    check(rows, 1000, ["a1", "keep", "u"], {"think": "dropped"})


def test_pinned_ephemeral_is_kept():
    rows = [("t", "assistant", 4, {"ephemeral_ttl": 0, "pinned": True}), ("a", "assistant", 2)]
    check(rows, 1000, ["t", "a"], {})


# --- dedup ------------------------------------------------------------------------------------

def _tool_pair(n, text):
    return [(f"a{n}", "assistant", 1, {"calls": [f"c{n}"]}),
            (f"t{n}", "tool", text, {"tool_call_id": f"c{n}"})]


def test_repeated_tool_output_becomes_a_reference_to_the_first():
    out = " ".join(f"line{k}" for k in range(60))
    rows = [*_tool_pair(1, out), *_tool_pair(2, out.replace(" ", "  ")), ("u", "user", 2)]
    r = check(rows, 1000, ["a1", "t1", "a2", "t2", "u"], {"t2": "deduplicated"})
    assert r.messages[3].content == "[identical to the output of shell(ls) above (call c1)]"


def test_outputs_alike_at_their_ends_are_copies_only_when_alike_throughout():
    """Outputs are compared whole only when their first and last words agree: one that
    differs in its middle is no copy, and a later copy of it refers to it, not to the first."""
    ends = " ".join(f"word{k}" for k in range(20))
    first, other = f"{ends} MIDDLE {ends}", f"{ends} CENTRE {ends}"
    rows = [*_tool_pair(1, first), *_tool_pair(2, other), *_tool_pair(3, "\n".join(other.split())),
            ("u", "user", 2)]
    r = check(rows, 1000, ["a1", "t1", "a2", "t2", "a3", "t3", "u"], {"t3": "deduplicated"})
    assert r.messages[5].content == "[identical to the output of shell(ls) above (call c2)]"


def test_dedup_restores_the_copy_when_the_original_is_dropped():
    out = " ".join(f"line{k}" for k in range(60))
    rows = [*_tool_pair(1, out), ("big", "user", 100), *_tool_pair(2, out), ("u", "user", 2)]
    r = check(rows, 70, ["a2", "t2", "u"])
    assert r.messages[1].content == out


# --- priority and the document caps -----------------------------------------------------------

def test_priority_cuts_docs_before_history():
    rows = [("s", "system", 3), ("u1", "user", 10), ("a1", "assistant", 10),
            ("d", "user", 30, {"kind": "doc"}), ("u2", "user", 5)]
    check(rows, 30, ["s", "u1", "a1", "u2"], {"d": "dropped"}, strategy="priority",
          doc_share=1.0)


def test_priority_drops_older_history_before_recent():
    rows = [("s", "system", 3), *[(f"h{k}", "user", 10) for k in range(6)], ("u", "user", 5)]
    check(rows, 30, ["s", "h4", "h5", "u"], strategy="priority", recent=3)


def test_priority_shortens_a_call_output_that_sits_older_than_its_recent_result():
    """The recent window ended between a call's two results: the group took P1, its long
    output was put in no class, never shortened, and the whole group dropped from a budget it
    fitted once outlined; its later copy, restored, went too (47 of 10,000 tokens used)."""
    log = "\n".join(f"INFO step {k} ok" for k in range(700))
    rows = [("s", "system", 3), ("u1", "user", 5),
            ("a1", "assistant", "", {"calls": ["c1", "c2"]}),
            ("t1", "tool", log, {"tool_call_id": "c1"}), ("t2", "tool", 2, {"tool_call_id": "c2"}),
            ("a2", "assistant", 3), ("u2", "user", 5),
            ("a3", "assistant", "", {"calls": ["c3", "c4"]}),
            ("t3", "tool", log, {"tool_call_id": "c3"}), ("t4", "tool", 2, {"tool_call_id": "c4"}),
            ("a4", "assistant", 3), ("u3", "user", 5)]
    for strategy in ("priority", "pipeline"):
        r = check(rows, 1500, [row[0] for row in rows], strategy=strategy)
        assert r.tokens > 750 and not r.dropped, strategy

@pytest.mark.parametrize("strategy", ["pipeline", "priority"])
def test_a_restored_copy_is_shortened_before_anything_is_dropped_for_it(strategy):
    """The newest tool output, a copy of an old one (deduplicated to a reference), got its
    content back when the old one was dropped, and went whole from a budget its outline fitted
    with 1,492 tokens left."""
    log = "\n".join(f"INFO step {k} ok" for k in range(700))
    rows = [("s", "system", 3), ("u0", "user", 5), ("a0", "assistant", "", {"calls": ["c0"]}),
            ("t0", "tool", log, {"tool_call_id": "c0"})]
    rows += [row for k in range(30) for row in ((f"u{k + 1}", "user", 40),
                                                  (f"r{k + 1}", "assistant", 40))]
    rows += [("a9", "assistant", "", {"calls": ["c9"]}), ("t9", "tool", log,
                                                          {"tool_call_id": "c9"}), ("q", "user", 5)]
    r = trim(conv(*rows), 1500, WORDS, options=TrimOptions(strategy=strategy, fmt=CONTENT_ONLY))
    kept = {m.id: m for m in r.messages}
    assert "t9" in kept and "t0" not in kept and r.tokens <= 1500
    assert "INFO step 0 ok" in kept["t9"].content  # its outline, not a reference

def test_priority_caps_documents_in_number_and_size():
    docs = [f"doc{k} " + " ".join(f"word{j}\n" for j in range(100)) for k in range(4)]
    msgs = conv(("u", "user", 3))
    r = trim(msgs, 1000, WORDS, docs=docs,
             options=TrimOptions(strategy="priority", fmt=CONTENT_ONLY, max_docs=2,
                                 doc_share=0.05))
    kept_docs = [m for m in r.messages if m.kind == "doc"]
    assert [m.id for m in kept_docs] == ["ctx:doc:0", "ctx:doc:1"]
    assert all(WORDS.count(m.content) <= 50 for m in kept_docs)
    assert r.messages[-1].id == "u"  # documents sit before the latest user message


def test_a_document_already_in_the_conversation_is_not_added_again():
    msgs = [Message(role="user", content="doc text\nsecond line\nhello", id="u")]
    r = trim(msgs, 1000, WORDS, docs=["doc text\nsecond line", "other doc"])
    assert [m.id for m in r.messages] == ["ctx:doc:1", "u"]
    [entry] = r.dropped
    assert entry.message_id == "ctx:doc:0" and "word for word" in entry.reason


# --- enrich -----------------------------------------------------------------------------------

def test_enrich_embeds_files_and_references_an_unchanged_second_attachment():
    msgs = [Message(role="user", content="look", id="u1", files=["a.py"]),
            Message(role="user", content="again", id="u2", files=["a.py", "missing.py"])]
    r = trim(msgs, 1000, WORDS, attachments={"a.py": "print(1)\nprint(2)"})
    assert "```a.py\nprint(1)\nprint(2)\n```" in r.messages[0].content
    assert "unchanged, lines 1-2 as attached in u1" in r.messages[1].content
    assert "`missing.py`: (not available)" in r.messages[1].content


# --- density and extractive compression in the priority strategy ------------------------------

def _prose(n: int, topic: str) -> str:
    return " ".join(f"The {topic} step {k} updates the index of shard {k * 7}." for k in range(n))


def test_priority_condenses_repeated_prose_before_dropping_history():
    repeated = _prose(40, "cache")
    rows = [("s", "system", 3), ("u1", "user", repeated), ("a1", "assistant", repeated),
            ("u2", "user", "Now fix the bug in the parser please"), ("a2", "assistant", 5)]
    r = check(rows, 560, ["s", "u1", "a1", "u2", "a2"], strategy="priority", recent=2)
    entry = next(e for e in r.truncated if e.message_id == "a1")
    assert entry.action == "compressed" and "mostly repeats" in entry.reason
    assert "fix task" in entry.reason or "novelty" in entry.reason
    assert len(r.messages[2].content) < len(repeated) / 3  # a fix task keeps about 17%


def test_priority_leaves_new_information_whole():
    rows = [("s", "system", 3), ("u1", "user", _prose(40, "cache")),
            ("a1", "assistant", _prose(40, "router")), ("u2", "user", 3), ("a2", "assistant", 3)]
    r = check(rows, 200, ["s", "u2", "a2"], strategy="priority", recent=2)
    assert not any(e.action == "compressed" for e in r.truncated)


LOG = "\n".join(f"step {k}: queue drained" for k in range(400))


@pytest.mark.parametrize("who", ["user", "assistant"])
def test_a_long_plain_message_comes_back_shortened_in_the_room_the_fit_left(who):
    """A message with no code block to cut and no outline (a pasted log, long prose) went
    whole: a 2,400-token message from a budget of 800 with 793 left, and the request went out
    with 12 tokens."""
    other = "assistant" if who == "user" else "user"
    rows = [("u1", "user", "run it"), ("m", who, LOG), ("a", other, "ok"), ("q", "user", "?")]
    if who == "user":
        rows = [("m", who, LOG), ("a", other, "ok"), ("q", "user", "?")]
    report = trim(conv(*rows), 800, WORDS, options=TrimOptions(fmt=CONTENT_ONLY))
    kept = {m.id: m.content for m in report.messages}
    assert "m" in kept and report.tokens >= 0.85 * 800, report.tokens
    assert kept["m"].startswith("step 0: queue drained") and "step 399" in kept["m"]
    assert not report.dropped
    (entry,) = [e for e in report.truncated if e.message_id == "m"]
    assert entry.action == "truncated" and entry.tokens_before > 800 >= entry.tokens_after
    # trimmed again, it stays as it is
    again = trim(report.messages, 800, WORDS, options=TrimOptions(fmt=CONTENT_ONLY))
    assert [m.content for m in again.messages] == [m.content for m in report.messages]


def test_a_message_dropped_with_its_tool_call_does_not_come_back_alone():
    rows = [("u1", "user", "run it"), ("c", "assistant", LOG, {"calls": ["t1"]}),
            ("r", "tool", "done", {"tool_call_id": "t1"}), ("q", "user", "?")]
    report = trim(conv(*rows), 800, WORDS, options=TrimOptions(fmt=CONTENT_ONLY))
    assert [m.id for m in report.messages] == ["u1", "q"]


def test_a_cut_code_block_keeps_as_many_lines_as_the_room_left_holds():
    """A 400-line block was cut to 10+10 lines whatever the room: 146 of an 800-token
    budget used."""
    rows = [("u1", "user", "run it"), ("a", "assistant", code(400)), ("q", "user", "?")]
    report = trim(conv(*rows), 800, WORDS, options=TrimOptions(fmt=CONTENT_ONLY))
    (kept,) = [m.content for m in report.messages if m.id == "a"]
    assert report.tokens >= 0.85 * 800, report.tokens
    assert "x0 = 0" in kept and "x399 = 399" in kept and "x30 = 30" in kept
    (entry,) = [e for e in report.truncated if e.message_id == "a"]
    assert "the room the fit left" in entry.reason
    again = trim(report.messages, 800, WORDS, options=TrimOptions(fmt=CONTENT_ONLY))
    assert [m.content for m in again.messages] == [m.content for m in report.messages]


def test_a_cut_block_regrows_from_no_lines_kept_at_its_ends_too():
    rows = [("u1", "user", "run it"), ("a", "assistant", code(400)), ("q", "user", "?")]
    report = trim(conv(*rows), 800, WORDS, options=TrimOptions(fmt=CONTENT_ONLY, head_lines=0,
                                                                tail_lines=0))
    (kept,) = [m.content for m in report.messages if m.id == "a"]
    assert report.tokens >= 0.85 * 800 and "x0 = 0" in kept and "x399 = 399" in kept


def test_each_dropped_turn_is_described_by_its_own_call_and_parts():
    """Two turns with the same words calling the same tool on other files are two summaries
    ("assistant: run_tests(a.py) + 'Let me check.'"), and so are two messages with the same
    words and other images: the summaries of a trim were memoised by the text and the tools'
    names, and the audit named the first turn's file for both."""
    turns = [Message(role="assistant", id=f"a{k}", content="Let me check.",
                     tool_calls=[ToolCall(id=f"c{k}", name="run_tests", arguments=f'"{f}"')])
             for k, f in enumerate(("a.py", "b.py"))]
    results = [Message(role="tool", id=f"t{k}", tool_call_id=f"c{k}", content="ok " * 50)
               for k in range(2)]
    shots = [Message(role="user", id=f"u{k}", content="look", parts=[p], parts_tokens=500)
             for k, p in enumerate(("image 10x10 (500 tokens)", "image 20x20 (500 tokens)"))]
    chat = [turns[0], results[0], turns[1], results[1], *shots,
            Message(role="user", id="q", content="so?")]
    r = trim(chat, 30, WordTokenizer())
    summaries = {e.message_id: e.summary for e in r.dropped}
    assert "run_tests(a.py)" in summaries["a0"] and "run_tests(b.py)" in summaries["a1"]
    assert "10x10" in summaries["u0"] and "20x20" in summaries["u1"]
