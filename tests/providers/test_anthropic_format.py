"""The Anthropic codec: system blocks as pinned messages, a user message split per tool_result
and merged back, repairs (first message from the user, alternation, lone tool halves), cache
breakpoints; and properties over generated payloads: equal under an ample budget, valid
(rules.py and the official SDK types) with the question under any budget."""

from __future__ import annotations

import copy

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from payloads import anthropic_payloads, b64, pdf, png
from providers.rules import anthropic_problems
from sdk import anthropic_sdk_accepts

from ctxlayer.core.errors import ContextError
from ctxlayer.core.formats import decode, encode
from ctxlayer.core.tokens import OPENAI_FORMAT, WordTokenizer, conversation_tokens
from ctxlayer.core.trim import TrimOptions, trim
from ctxlayer.core.trim.fit import MIN_QUESTION

WORDS = WordTokenizer()
AS_SENT = TrimOptions(rewrite_when_fits=False)  # provider payloads: a fit changes nothing


def assert_too_small(body: dict, budget: int) -> None:
    """pinned_over_budget only when the pinned messages, the question's parts and the fewest
    tokens a shortened question keeps are over the budget."""
    msgs = decode("anthropic", body, WORDS).messages
    fixed = [m for m in msgs if m.pinned or m.role == "system"]
    question = [m for m in msgs if m.role == "user"][-1]
    # the question's own framing as the engine counts it (a hard-coded 3 went stale when a
    # message came to cost 4: a budget the engine rightly refused was said to fit)
    floor = conversation_tokens(fixed, WORDS) + OPENAI_FORMAT.per_message + \
        (question.parts_tokens or 0) + MIN_QUESTION
    assert floor > budget, (floor, budget)
USE = {"type": "tool_use", "id": "t1", "name": "ls", "input": {"path": "."}}
USE2 = {"type": "tool_use", "id": "t2", "name": "cat", "input": {"path": "a"}}


def request(*messages, system=None) -> dict:
    body: dict = {"model": "claude-sonnet-4-5", "max_tokens": 256}
    if system is not None:
        body["system"] = system
    return body | {"messages": list(messages)}


def test_system_blocks_are_pinned_and_tool_results_are_split():
    body = request(
        {"role": "user", "content": "list"},
        {"role": "assistant", "content": [{"type": "text", "text": "ok"}, USE, USE2]},
        {"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": "t1", "content": "a.py b.py"},
            {"type": "tool_result", "tool_use_id": "t2", "content": [
                {"type": "text", "text": "print(1)"},
                {"type": "image", "source": {"type": "base64", "media_type": "image/png",
                                             "data": b64(png(1000, 1000))}}]},
            {"type": "text", "text": "which is longer?"}]},
        system=[{"type": "text", "text": "be brief"}, {"type": "text", "text": "use tools"}])
    d = decode("anthropic", body, WORDS)
    assert [(m.role, m.pinned) for m in d.messages] == [
        ("system", True), ("system", True), ("user", False), ("assistant", False),
        ("tool", False), ("tool", False), ("user", False)]
    assert [c.id for c in d.messages[3].tool_calls] == ["t1", "t2"]
    assert d.messages[3].tool_calls[0].arguments == '{"path":"."}'
    assert d.messages[5].parts_tokens == 1334  # 1000x1000 / 750
    assert d.messages[6].content == "which is longer?"
    assert encode(d, d.messages).payload == body


def test_documents_and_thinking_are_counted_never_shortened():
    body = request({"role": "user", "content": [
        {"type": "document", "source": {"type": "base64", "media_type": "application/pdf",
                                        "data": b64(pdf(4))}},
        {"type": "document", "source": {"type": "text", "media_type": "text/plain",
                                        "data": "five words of plain text"}},
        {"type": "text", "text": "summarize"}]},
        {"role": "assistant", "content": [
            {"type": "thinking", "thinking": "let me think about it", "signature": "sig"},
            {"type": "text", "text": "done"}]})
    d = decode("anthropic", body, WORDS)
    assert d.messages[0].parts_tokens == 4 * 3000 + 5
    assert d.messages[1].parts_tokens == 5 and d.messages[1].content == "done"


def test_a_text_document_attached_before_the_question_is_a_piece_of_its_own():
    """Read as a tool output is (outlined when long, never the user's own words); the
    question's own documents stay with it (above), so a turn's file is never dropped apart
    from it. Read alike when the chat's previous turn, where it was the question, is reused."""
    first = {"role": "user", "content": [
        {"type": "text", "text": "read this"},
        {"type": "document", "title": "notes", "source": {
            "type": "text", "media_type": "text/plain", "data": "five words of plain text"}},
        {"type": "document", "source": {"type": "base64", "media_type": "application/pdf",
                                        "data": b64(pdf(2))}}]}
    asked = decode("anthropic", request(first), WORDS)
    body = request(first, {"role": "assistant", "content": "read"},
                   {"role": "user", "content": "what does it say?"})
    for d in (decode("anthropic", body, WORDS), decode("anthropic", body, WORDS, previous=asked)):
        question, document, answer, _ = d.messages
        assert (document.role, document.kind) == ("user", "toolOutput")
        assert document.content == "five words of plain text" and not document.parts_tokens
        assert (question.content, question.parts_tokens) == ("read this", 2 * 3000)
        assert answer.content == "read"
        assert encode(d, d.messages).payload == body


def test_a_shortened_question_leaves_its_document_as_it_came():
    """The question's text, cut to fit, was written into its document's source (a property
    test found it: the writer took a question that opens with a document for a document
    piece)."""
    code = "\n".join(f"line{i} = {i}" for i in range(40))
    body = request({"role": "user", "content": [
        {"type": "document", "title": "notes", "source": {
            "type": "text", "media_type": "text/plain", "data": "a plain text document"}},
        {"type": "text", "text": f"why?\n```py\n{code}\n```\nplease"}]})
    d = decode("anthropic", body, WORDS)
    report = trim(d.messages, 40, WORDS, options=TrimOptions(rewrite_when_fits=False))
    assert report.truncated  # the question was cut
    document, text = encode(d, report.messages).payload["messages"][0]["content"]
    assert document == body["messages"][0]["content"][0]
    assert "omitted" in text["text"]


@pytest.mark.parametrize("body,field", [
    ({"messages": [{"role": "tool", "content": "x"}]}, "messages[0].role"),
    ({"messages": [{"role": "user", "content": 3}]}, "messages[0].content"),
    ({"messages": [{"role": "user", "content": [{"text": "x"}]}]}, "messages[0].content[0].type"),
    ({"messages": [{"role": "user", "content": [{"type": "tool_result"}]}]},
     "messages[0].content[0].tool_use_id"),
    ({"messages": [{"role": "assistant", "content": [{"type": "tool_use", "name": "x"}]}]},
     "messages[0].content[0].id"),
    ({"system": [{"type": "image"}], "messages": []}, "system[0].type"),
    ({"system": 3, "messages": []}, "system"),
])
def test_what_cannot_be_read_names_the_field(body, field):
    with pytest.raises(ContextError) as err:
        decode("anthropic", body, WORDS)
    assert err.value.field == field


def test_a_fit_that_starts_with_the_assistant_is_repaired_and_audited():
    body = request({"role": "user", "content": "old question " * 50},
                   {"role": "assistant", "content": "old answer"},
                   {"role": "user", "content": "new question"})
    d = decode("anthropic", body, WORDS)
    out = encode(d, d.messages[1:])
    assert out.payload["messages"] == [{"role": "user", "content": "new question"}]
    assert out.audit[0].action == "dropped" and "start with a user" in out.audit[0].reason


def test_neighbours_of_the_same_role_are_merged_losslessly():
    body = request({"role": "user", "content": "a"},
                   {"role": "assistant", "content": [USE]},
                   {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1",
                                                 "content": "r"},
                                                {"type": "text", "text": "b"}]})
    d = decode("anthropic", body, WORDS)
    kept = [m for m in d.messages if m.role == "user"]  # the call and its result dropped
    out = encode(d, kept)
    assert out.payload["messages"] == [{"role": "user", "content": [
        {"type": "text", "text": "a"}, {"type": "text", "text": "b"}]}]
    assert anthropic_problems(out.payload) == []
    assert "alternate" in out.audit[0].reason


def test_cache_breakpoints_at_most_four_and_never_over_the_clients_own():
    msgs = []
    for k in range(6):
        msgs += [{"role": "user", "content": f"q{k}"}, {"role": "assistant", "content": f"a{k}"}]
    msgs.append({"role": "user", "content": "last"})
    body = request(*msgs, system="sys")
    d = decode("anthropic", body, WORDS)
    out = encode(d, d.messages, cache_breakpoints=[0, 2, 4, 6, 8, 10])
    assert out.payload["system"][0]["cache_control"] == {"type": "ephemeral"}
    assert out.breakpoints == [1, 3, 5] and out.system_breakpoints == 1
    assert anthropic_problems(out.payload) == []
    own = copy.deepcopy(body)
    own["messages"][0]["content"] = [{"type": "text", "text": "q0",
                                      "cache_control": {"type": "ephemeral"}}]
    d = decode("anthropic", own, WORDS)
    out = encode(d, d.messages, cache_breakpoints=[0, 2, 4])
    assert out.payload == own and out.breakpoints == [0]


def test_a_request_level_cache_control_is_the_clients_own_breakpoint():
    """A top-level `cache_control` asks the provider to place a breakpoint itself (automatic
    caching), and it counts among the four: the gateway added its own beside it all the same,
    on the system and the messages, a request the client meant with one."""
    msgs = []
    for k in range(3):
        msgs += [{"role": "user", "content": f"q{k}"}, {"role": "assistant", "content": f"a{k}"}]
    msgs.append({"role": "user", "content": "last"})
    body = {**request(*msgs, system="sys"), "cache_control": {"type": "ephemeral"}}
    d = decode("anthropic", body, WORDS)
    out = encode(d, d.messages, cache_breakpoints=[0, 2, 4])
    assert out.payload == body and out.system_breakpoints == 0
    # none of the gateway's, but the provider places one on the last block: that is the
    # breakpoint a client reads in ctx/prepare's cacheBreakpoints (it said [] before)
    assert out.breakpoints == [6]
    # four marks of the client's and the request's own: five for the provider, one too many;
    # the client's last three stay beside the request's
    marked = copy.deepcopy(body)
    for n in (0, 2, 4, 6):
        marked["messages"][n]["content"] = [{"type": "text", "text": msgs[n]["content"],
                                             "cache_control": {"type": "ephemeral"}}]
    assert anthropic_problems(marked)  # the rules count the request's one too
    d = decode("anthropic", marked, WORDS)
    out = encode(d, d.messages, cache_breakpoints=[0, 2, 4])
    assert out.breakpoints == [2, 4, 6] and out.payload["cache_control"] == {"type": "ephemeral"}
    assert anthropic_problems(out.payload) == []
    assert sum("cache_control" in e.reason for e in out.audit) == 1


def test_a_thinking_block_never_gets_the_breakpoint():
    body = request({"role": "user", "content": "q"}, {"role": "assistant", "content": [
        {"type": "text", "text": "a"},
        {"type": "thinking", "thinking": "t", "signature": "s"}]},
        {"role": "user", "content": "q2"})
    d = decode("anthropic", body, WORDS)
    out = encode(d, d.messages, cache_breakpoints=[1])
    assert out.payload["messages"][1]["content"][0]["cache_control"] == {"type": "ephemeral"}
    assert "cache_control" not in out.payload["messages"][1]["content"][1]


def test_the_long_question_is_kept_shortened_with_its_image():
    img = {"type": "image", "source": {"type": "base64", "media_type": "image/png",
                                       "data": b64(png(800, 600))}}
    body = request({"role": "user", "content": "what is 2+2"},
                   {"role": "assistant", "content": "4"},
                   {"role": "user", "content": [img, {"type": "text", "text": "Summarize: " +
                                                      " ".join(["w"] * 20_000) + " END"}]},
                   system="sys")
    for strategy in ("pipeline", "priority"):
        d = decode("anthropic", body, WORDS)
        report = trim(d.messages, 8000, WORDS, options=TrimOptions(strategy=strategy, rewrite_when_fits=False))
        out = encode(d, report.messages)
        msgs = out.payload["messages"]
        assert msgs[:2] == body["messages"][:2]
        assert msgs[2]["content"][0] == img and msgs[2]["content"][1]["text"].endswith("END")
        assert anthropic_problems(out.payload) == [] and report.tokens <= 8000


def _question_text(body: dict) -> list:
    last = body["messages"][-1]["content"]
    return [b for b in last if b.get("type") != "tool_result"] if isinstance(last, list) \
        else [last]


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(body=anthropic_payloads())
def test_an_ample_budget_gives_the_payload_back_equal(body):
    original = copy.deepcopy(body)
    d = decode("anthropic", body, WORDS)
    out = encode(d, trim(d.messages, 10_000_000, WORDS, options=AS_SENT).messages)
    assert out.payload == original and out.audit == []
    assert body == original


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(body=anthropic_payloads(), budget=st.integers(30, 4000),
       strategy=st.sampled_from(["pipeline", "priority"]), marks=st.lists(st.integers(0, 30),
                                                                          max_size=6))
def test_any_budget_gives_a_valid_payload_with_the_question(body, budget, strategy, marks):
    assert anthropic_problems(body) == []  # the generator draws valid payloads
    anthropic_sdk_accepts(body)
    d = decode("anthropic", body, WORDS)
    try:
        report = trim(d.messages, budget, WORDS, options=TrimOptions(strategy=strategy, rewrite_when_fits=False))
    except ContextError as exc:
        assert exc.kind == "pinned_over_budget"
        assert_too_small(body, budget)
        return
    marks = [k for k in marks if k < len(report.messages)]
    out = encode(d, report.messages, cache_breakpoints=marks)
    assert anthropic_problems(out.payload) == [], out.payload
    anthropic_sdk_accepts(out.payload)
    assert {k: v for k, v in out.payload.items() if k not in ("messages", "system")} == \
        {k: v for k, v in body.items() if k not in ("messages", "system")}
    # the question: its non-text blocks all there, its text present (perhaps shortened)
    # (an earlier user turn may have been merged in front of it when the turns between went)
    want, got = _question_text(body), _question_text(out.payload)
    want_parts = [b for b in want if b.get("type") != "text"]
    got_parts = [b for b in got if b.get("type") != "text"]
    assert got_parts[len(got_parts) - len(want_parts):] == want_parts
    assert any(b.get("type") == "text" for b in got)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(body=anthropic_payloads(), cut=st.integers(0, 12), edit=st.booleans())
def test_decoding_with_the_previous_turn_gives_the_same_result(body, cut, edit):
    earlier = {**body, "messages": copy.deepcopy(body["messages"][:cut])}
    if edit and earlier["messages"]:
        earlier["messages"][-1] = {"role": "user", "content": "an edited turn"}
    previous = decode("anthropic", earlier, WORDS)
    fresh = decode("anthropic", body, WORDS)
    again = decode("anthropic", body, WORDS, previous=previous)
    assert again.messages == fresh.messages and again.index == fresh.index
    assert again.derived_ids == fresh.derived_ids and again.sources == fresh.sources
    assert again.extra == fresh.extra
    assert encode(again, again.messages).payload == body


def test_a_shortened_message_keeps_its_cache_marker():
    long_text = "intro\n```py\n" + "\n".join(f"x{k} = {k}" for k in range(400)) + "\n```\nend"
    body = request({"role": "user", "content": [
        {"type": "text", "text": long_text},
        {"type": "text", "text": "and more", "cache_control": {"type": "ephemeral"}}]})
    d = decode("anthropic", body, WORDS)
    report = trim(d.messages, 200, WORDS, options=AS_SENT)
    out = encode(d, report.messages)
    blocks = out.payload["messages"][0]["content"]
    # each block keeps its own text and fields: the marker stays on the block it was on (the
    # blocks were joined into the first, the marker moved onto it)
    assert blocks[1] == body["messages"][0]["content"][1], blocks
    assert len(blocks) == 2 and "cache_control" not in blocks[0]
    assert "x0 = 0" in blocks[0]["text"] and len(blocks[0]["text"]) < len(long_text)


# --- system messages between turns (the mid-conversation-system beta) ------------------------

MID_BETA = ["mid-conversation-system-2026-04-07"]
NOTE = {"role": "system", "content": "from now on answer in French"}


def test_a_system_message_between_turns_is_read_pinned_and_written_back_in_place():
    body = request({"role": "user", "content": "hi"}, NOTE,
                   {"role": "assistant", "content": "bonjour"},
                   {"role": "user", "content": "and now?"}, system="be brief")
    d = decode("anthropic", body, WORDS)
    assert [(m.role, m.pinned) for m in d.messages] == [
        ("system", True), ("user", False), ("system", True), ("assistant", False),
        ("user", False)]
    out = encode(d, d.messages).payload
    assert out == body and out["messages"][1] is NOTE


def test_trimmed_system_messages_between_turns_stay_valid_and_are_audited_when_moved():
    from standin_checks import problems

    filler = " ".join(["word"] * 400)
    body = request({"role": "user", "content": filler}, NOTE,
                   {"role": "assistant", "content": filler},
                   {"role": "user", "content": "q1"},
                   {"role": "system", "content": [{"type": "text", "text": "be formal"}]},
                   {"role": "assistant", "content": "a1"},
                   {"role": "user", "content": "the question"})
    d = decode("anthropic", body, WORDS)
    report = trim(d.messages, 80, WORDS, options=AS_SENT)
    assert [m.content for m in report.messages if m.role == "system"] == [
        NOTE["content"], "be formal"]  # pinned: kept whole
    enc = encode(d, report.messages)
    assert problems("anthropic", enc.payload, MID_BETA) == []
    texts = [m.get("content") for m in enc.payload["messages"] if m["role"] == "system"]
    assert NOTE["content"] in str(texts) and "be formal" in str(texts)
    moved = [e for e in enc.audit if "system message" in e.reason]
    assert moved, enc.audit  # the first one lost the user turn it followed: said so


def test_an_empty_system_message_between_turns_is_left_out_and_said():
    """Claude Code sends one after its own `/compact` (content `[]`, between its summary and
    the turn after); the provider refuses it as every message but a final assistant one
    needs content. Left out, with an audit entry; the rest goes as it came."""
    from standin_checks import problems

    empty = {"role": "system", "content": []}
    body = request({"role": "user", "content": "the summary"}, empty,
                   {"role": "assistant", "content": "ok"},
                   {"role": "user", "content": "go on"}, NOTE,
                   {"role": "assistant", "content": "d'accord"},
                   {"role": "user", "content": "the question"})
    assert problems("anthropic", body, MID_BETA)  # as it came: refused
    d = decode("anthropic", body, WORDS)
    enc = encode(d, d.messages)
    assert enc.payload["messages"] == [m for m in body["messages"] if m is not empty]
    assert problems("anthropic", enc.payload, MID_BETA) == []
    (said,) = enc.audit
    assert said.action == "dropped" and "empty system message" in said.reason


def test_without_the_beta_the_stand_in_refuses_them():
    from standin_checks import problems

    body = request({"role": "user", "content": "hi"}, NOTE,
                   {"role": "assistant", "content": "ok"})
    assert problems("anthropic", body) != []
    assert problems("anthropic", body, MID_BETA) == []
    assert problems("anthropic", request({"role": "user", "content": "hi"},
                                         {"role": "assistant", "content": "ok"}, NOTE,
                                         {"role": "user", "content": "x"}), MID_BETA)


def test_a_step_that_leaves_a_thinking_turn_no_room_for_its_words_sends_no_blank_block():
    """An assistant turn of thinking, words and calls, outlined by a step whose cap its
    thinking took all of: its words were cut to a newline, and Anthropic refuses a text block
    of whitespace (found by sending generated chats through the gateway). Then the words went
    and the client's cache marker moved to a call; now the thinking no longer takes the cap
    from the words (an outline keeps an answer's first words beside its thinking), so the
    words keep their head, never blank, with the marker where the client put it."""
    from ctxlayer.core.prepare import prepare_turn
    from ctxlayer.tokenizers import counter_for

    counter = counter_for("gpt-4o")  # the word counter's one token is a word, not a newline
    words = " ".join(f"w{k}" for k in range(120))
    think = {"type": "thinking", "thinking": " ".join(f"t{k}" for k in range(400)),
             "signature": "c2ln"}
    said = {"type": "text", "text": words, "cache_control": {"type": "ephemeral"}}
    result = {"type": "tool_result", "tool_use_id": "t1", "content": "\n".join(
        f"file_{k}.py" for k in range(600))}
    body = request({"role": "user", "content": "list the files"},
                   {"role": "assistant", "content": [think, said, USE]},
                   {"role": "user", "content": [result]},
                   {"role": "assistant", "content": "done"},
                   {"role": "user", "content": "and now?"}, system="be brief")
    d = decode("anthropic", body, counter)
    turn = prepare_turn(None, d.messages, 2000, counter)
    out = encode(d, turn.messages, cache_breakpoints=turn.breakpoints).payload
    assert anthropic_problems(out) == [], out
    turns = [m for m in out["messages"] if m["role"] == "assistant" and
             isinstance(m["content"], list)]
    assert turns and turns[0]["content"][0] == think
    blocks = turns[0]["content"]
    assert [b["type"] for b in blocks] == ["thinking", "text", "tool_use"]
    assert blocks[1]["text"].strip() and words.startswith(blocks[1]["text"][:20])
    assert blocks[1]["cache_control"] == {"type": "ephemeral"}


@pytest.mark.parametrize("strategy", ["pipeline", "priority"])
def test_an_earlier_turn_that_was_only_reasoning_leaves_no_blank_text_block(strategy):
    """An earlier assistant turn of `<think> end` is stripped to nothing; a question with a
    PDF dropped between it and the next assistant turn merged the two into one whose first
    block was `{"type": "text", "text": ""}`: Anthropic refuses text blocks of whitespace
    (the property test above drew this at budget 30). The blank block is left out."""
    pdf_block = {"type": "document", "source": {"type": "base64", "media_type": "application/pdf",
                                                "data": b64(pdf(3))}}
    body = {"model": "claude-sonnet-4-5", "max_tokens": 1024, "messages": [
        {"role": "user", "content": [{"type": "text", "text": "alpha0"}]},
        {"role": "assistant", "content": [{"type": "text", "text": "<think> end"}]},
        {"role": "user", "content": [pdf_block, {"type": "text", "text": "alpha0"}]},
        {"role": "assistant", "content": [
            {"type": "redacted_thinking", "data": "ZW5jcnlwdGVkZW5jcnlwdGVk"},
            {"type": "text", "text": "alpha0"}]},
        {"role": "user", "content": [{"type": "text", "text": "alpha0"}]}]}
    d = decode("anthropic", body, WORDS)
    report = trim(d.messages, 30, WORDS,
                  options=TrimOptions(strategy=strategy, rewrite_when_fits=False))
    out = encode(d, report.messages)
    assert anthropic_problems(out.payload) == [], out.payload
    anthropic_sdk_accepts(out.payload)
    turns = [m for m in out.payload["messages"] if m["role"] == "assistant"]
    assert {"type": "redacted_thinking", "data": "ZW5jcnlwdGVkZW5jcnlwdGVk"} in turns[-1]["content"]
    assert out.payload["messages"][-1]["content"] == [{"type": "text", "text": "alpha0"}]


def _encoded(body: dict) -> dict:
    d = decode("anthropic", body, WORDS)
    return encode(d, trim(d.messages, 100_000, WORDS,
                          options=TrimOptions(rewrite_when_fits=False)).messages).payload


def test_a_blank_question_goes_as_the_client_sent_it_not_dropped_into_a_prefill():
    """The newest turn of whitespace alone is the client's to answer for (the provider says
    what is wrong): dropped, the request ended with the assistant's answer, which the model
    then went on writing."""
    for blank in ("   ", [{"type": "text", "text": "  "}]):
        out = _encoded({"model": "claude-sonnet-4-5", "max_tokens": 100, "messages": [
            {"role": "user", "content": "hello"},
            {"role": "assistant", "content": "hi there"},
            {"role": "user", "content": blank}]})
        assert [m["role"] for m in out["messages"]] == ["user", "assistant", "user"]


def test_a_cache_breakpoint_on_a_blank_block_moves_to_the_block_before_it():
    out = _encoded({"model": "claude-sonnet-4-5", "max_tokens": 100, "messages": [
        {"role": "user", "content": [{"type": "text", "text": "long context " * 50},
                                     {"type": "text", "text": "\n",
                                      "cache_control": {"type": "ephemeral"}}]},
        {"role": "assistant", "content": "ok"},
        {"role": "user", "content": "question?"}]})
    assert anthropic_problems(out) == []
    assert out["messages"][0]["content"] == [
        {"type": "text", "text": "long context " * 50, "cache_control": {"type": "ephemeral"}}]
