"""The OpenAI Responses codec: what it reads (instructions, a string or items, calls and
outputs paired by call_id, reasoning costed, errors naming the field), what it writes back (the
client's own items, untouched ones byte for byte), and properties over generated requests:
an untouched request comes back identical; under any budget the result is valid for the
strict stand-in and the official SDK's input type, pairs whole, reasoning intact, the
question kept."""

from __future__ import annotations

import base64
import json

import msgspec
import pydantic
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from openai.types.responses import ResponseInputParam
from providers.standin_responses import encrypted, problems

from ctxlayer.core.errors import ContextError
from ctxlayer.core.formats import decode, detect, encode
from ctxlayer.core.prepare import prepare_turn
from ctxlayer.core.tokens import WordTokenizer, conversation_tokens
from ctxlayer.core.trim import TrimOptions, trim
from ctxlayer.protocol import Message
from ctxlayer.tokenizers import counter_for

WORDS = WordTokenizer()
AS_SENT = TrimOptions(rewrite_when_fits=False)
SDK_INPUT = pydantic.TypeAdapter(ResponseInputParam)


def agent_request() -> dict:
    return {"model": "gpt-5", "instructions": "Be terse.", "store": False, "input": [
        {"role": "user", "content": "list the files"},
        {"type": "reasoning", "id": "rs_1", "summary": [{"type": "summary_text",
                                                         "text": "I should call ls"}],
         "encrypted_content": encrypted("one")},
        {"type": "function_call", "id": "fc_1", "call_id": "call_1", "name": "ls",
         "arguments": "{}"},
        {"type": "function_call", "id": "fc_2", "call_id": "call_2", "name": "pwd",
         "arguments": "{}"},
        {"type": "function_call_output", "call_id": "call_1", "output": "a.py b.py"},
        {"type": "function_call_output", "call_id": "call_2", "output": [
            {"type": "input_text", "text": "/work"}]},
        {"type": "message", "role": "assistant", "id": "msg_1", "content": [
            {"type": "output_text", "text": "two files in /work", "annotations": []}]},
        {"type": "web_search_call", "id": "ws_1", "status": "completed"},
        {"role": "user", "content": [{"type": "input_text", "text": "and the tests?"},
                                     {"type": "input_image", "detail": "low",
                                      "image_url": "https://example.com/a.png"}]},
    ]}


def test_items_become_engine_messages_paired_by_call_id():
    d = decode("responses", agent_request(), WORDS)
    roles = [m.role for m in d.messages]
    assert roles == ["system", "user", "assistant", "tool", "tool", "assistant", "user"]
    run = d.messages[2]
    assert [c.id for c in run.tool_calls] == ["call_1", "call_2"] and run.id == "rs_1"
    # gpt-5 renders no earlier turn's reasoning again: its summary only; with every turn's
    # rendered, the larger of the summary and the sealed content's estimate (never both)
    assert run.parts_tokens == 4
    every = decode("responses", {**agent_request(), "reasoning": {"context": "all_turns"}}, WORDS)
    assert every.messages[2].parts_tokens == max(4, len(encrypted("one")) * 3 // 16)
    assert [m.tool_call_id for m in d.messages[3:5]] == ["call_1", "call_2"]
    assert d.messages[4].content == "/work"
    # the model's message and the item this version does not know are one assistant turn
    assert d.messages[5].content == "two files in /work" and d.messages[5].parts_tokens
    assert d.messages[6].content == "and the tests?" and d.messages[6].parts_tokens == 85


def test_untouched_request_is_the_very_payload():
    body = agent_request()
    d = decode("responses", body, WORDS)
    assert encode(d, d.messages).payload is body
    assert encode(d, trim(d.messages, 10_000, WORDS, options=AS_SENT).messages).payload == body


def test_a_string_input_stays_a_string():
    body = {"model": "gpt-4o", "input": "hello there " * 50, "max_output_tokens": 99}
    d = decode("responses", body, WORDS)
    assert [m.role for m in d.messages] == ["user"]
    kept = trim(d.messages, 40, WORDS, options=AS_SENT)
    out = encode(d, kept.messages).payload
    assert isinstance(out["input"], str) and len(out["input"]) < len(body["input"])
    assert out["max_output_tokens"] == 99


def test_an_output_without_its_call_is_dropped_and_audited():
    body = agent_request()
    d = decode("responses", body, WORDS)
    kept = [m for m in d.messages if m.id != "rs_1"]  # the run with both calls goes
    out = encode(d, kept)
    items = out.payload["input"]
    assert not any(i.get("type") == "function_call_output" for i in items)
    assert [e.summary for e in out.audit] == ["output of call_1", "output of call_2"]
    assert problems(out.payload, []) == []


def test_previous_response_id_is_audited_as_not_fitted():
    body = {"model": "gpt-4o", "previous_response_id": "resp_1", "input": "go on"}
    d = decode("responses", body, WORDS)
    out = encode(d, d.messages)
    assert out.payload is body and [e.action for e in out.audit] == ["notFitted"]


def test_a_compaction_item_is_pinned_and_costed_as_encrypted_content():
    """Codex's compaction item is the client's own summary of the earlier history: kept
    whole, its cost estimated from its size as encrypted reasoning's is."""
    secret = encrypted("the history so far") * 20
    d = decode("responses", {"model": "gpt-5", "input": [
        {"type": "compaction", "id": "cmp_1", "encrypted_content": secret},
        {"type": "reasoning", "id": "rs_1", "summary": []},
        {"role": "user", "content": "go on"}]}, WORDS)
    compaction, run, user = d.messages
    assert compaction.pinned and not run.pinned and not user.pinned
    assert compaction.parts_tokens == len(secret) * 3 // 16 + 1


def codex_default_model_request(turns: int) -> dict:
    """A request shaped as Codex 0.171 sends on its default model: its tools not in `tools`
    but as the first input item, `additional_tools` (role developer), then its developer
    messages, the environment, the question, and ``turns`` long exchanges."""
    tool = {"type": "function", "name": "sleep", "strict": False,
            "description": " ".join(f"rule{k} of the clock" for k in range(300)),
            "parameters": {"type": "object", "properties": {"duration_ms": {"type": "number"}}}}
    said = [{"type": "message", "role": "developer", "content": [
        {"type": "input_text", "text": "You are Codex, an agent. " + "Be careful. " * 200}]},
        {"type": "message", "role": "developer", "content": [
            {"type": "input_text", "text": "<permissions>full access</permissions>"}]},
        {"type": "message", "role": "user", "content": [
            {"type": "input_text", "text": "<environment_context>cwd /repo</environment_context>"}
        ]}]
    for t in range(turns):
        said += [{"type": "message", "role": "user", "content": [
                     {"type": "input_text", "text": f"TURN{t} note: " + "word " * 600}]},
                 {"type": "message", "role": "assistant", "id": f"msg_{t}", "content": [
                     {"type": "output_text", "text": f"noted {t}", "annotations": []}]}]
    said.append({"type": "message", "role": "user", "content": [
        {"type": "input_text", "text": "and now?"}]})
    return {"model": "gpt-6.2-sol", "store": False, "input": [
        {"type": "additional_tools", "id": "at_1", "role": "developer",
         "tools": [{"type": "namespace", "name": "clock", "description": "", "tools": [tool]}]},
        *said]}


def test_codex_additional_tools_item_is_a_system_item_kept_whole_at_a_summary_step():
    """Codex's default model takes its tools from an `additional_tools` item (role developer)
    at the head of the input: a system item, pinned, so the developer messages after it are
    the lead too, and a summary step keeps all of them as they came. It was read as the
    model's words: the first step summarized it and the developer messages after it (the
    real Codex's request went upstream with neither its tools nor "You are Codex")."""
    body = codex_default_model_request(6)
    d = decode("responses", body, WORDS)
    assert [m.role for m in d.messages[:4]] == ["system", "system", "system", "user"]
    assert d.messages[0].pinned and d.messages[0].parts_tokens > 1000
    total = conversation_tokens(d.messages, WORDS)
    turn = prepare_turn(None, d.messages, total // 2, WORDS)
    assert turn.state.chunks, "a summary step was expected"
    out = encode(d, turn.messages).payload["input"]
    assert out[:3] == body["input"][:3]  # the tools and "You are Codex", as sent
    assert problems({**body, "input": out}, []) == []


def test_a_configuration_update_is_a_system_item_and_a_role_less_unknown_item_is_not():
    """A `configuration_update` sets how the model answers from there on: kept as a system
    item where it is; an item of a type this version does not know, with no role, is still
    the model's (its run)."""
    d = decode("responses", {"model": "gpt-5", "input": [
        {"role": "user", "content": "go"},
        {"type": "configuration_update", "id": "cu_1", "reasoning": {"effort": "high"}},
        {"type": "future_thing", "id": "ft_1"},
        {"role": "user", "content": "on"}]}, WORDS)
    assert [(m.role, m.pinned) for m in d.messages] == [
        ("user", False), ("system", True), ("assistant", False), ("user", False)]


def test_a_generated_image_is_costed_as_an_image_not_as_its_base64():
    png = base64.b64encode(b"\x89PNG\r\n\x1a\n" + bytes(60000)).decode()
    item = {"type": "image_generation_call", "id": "ig_1", "status": "completed", "result": png}
    d = decode("responses", {"model": "gpt-5", "input": [
        {"role": "user", "content": "draw it"}, item,
        {"role": "user", "content": "again"}]}, counter_for("gpt-5"))
    made = d.messages[1].parts_tokens
    assert 0 < made < 2000 < counter_for("gpt-5").count(png)  # an image, not 80 KB of text
    assert encode(d, d.messages).payload["input"][1] is item


@pytest.mark.parametrize(("body", "field"), [
    ({"input": 3}, "input"),
    ({"input": [{"role": "robot", "content": "x"}]}, "input[0].role"),
    ({"input": [{"role": "user", "content": 5}]}, "input[0].content"),
    ({"input": [{"type": "function_call", "name": "f", "arguments": "{}"}]}, "input[0].call_id"),
    ({"input": [{"type": "function_call", "call_id": None, "name": "f", "arguments": "{}"}]},
     "input[0].call_id"),
    ({"input": [{"type": "reasoning", "id": "r", "summary": [], "encrypted_content": 1},
                {"role": "user", "content": "x"}]}, "input[0].encrypted_content"),
    ({"instructions": ["no"], "input": "x"}, "instructions"),
    ({"input": [{"type": "compaction", "encrypted_content": None},
                {"role": "user", "content": "x"}]}, "input[0].encrypted_content"),
    ({"input": [{"role": "user", "content": "a", "id": "m"},
                {"role": "user", "content": "b", "id": "m"}]}, "input[1].id"),
])
def test_bad_fields_are_named(body, field):
    with pytest.raises(ContextError) as err:
        decode("responses", {"model": "gpt-4o", **body}, WORDS)
    assert err.value.field == field


def test_detect_and_the_format_name():
    assert detect({"model": "x", "input": "hi"}) == "responses"
    assert detect({"model": "x", "messages": []}) != "responses"


# ---- properties over generated requests --------------------------------------------------

_words = st.lists(st.sampled_from("alpha beta gamma delta error test path line".split()),
                  min_size=1, max_size=60).map(" ".join)


@st.composite
def requests(draw) -> dict:
    """Valid Responses requests: user turns, then rounds of (reasoning?) + calls + outputs,
    assistant messages, unknown items, ending in a user question."""
    items: list[dict] = []
    n = 0
    for _ in range(draw(st.integers(1, 6))):
        items.append({"role": "user", "content": draw(st.one_of(
            _words, st.builds(lambda t: [{"type": "input_text", "text": t}], _words)))})
        for _ in range(draw(st.integers(0, 3))):
            if draw(st.booleans()):
                items.append({"type": "reasoning", "id": f"rs_{n}", "summary": [],
                              "encrypted_content": encrypted(f"r{n}")})
            calls = []
            for _ in range(draw(st.integers(1, 2))):
                n += 1
                calls.append(f"call_{n}")
                items.append({"type": "function_call", "id": f"fc_{n}", "call_id": f"call_{n}",
                              "name": "read", "arguments": json.dumps({"n": n})})
            for cid in calls:
                items.append({"type": "function_call_output", "call_id": cid,
                              "output": draw(_words)})
        for phase in draw(st.sampled_from([(), ("final_answer",), ("commentary",
                                                                 "final_answer")])):
            n += 1  # the model's messages: a final answer, after a commentary (gpt-5, Codex)
            if draw(st.booleans()):
                items.append({"type": "reasoning", "id": f"rm_{n}", "summary": [],
                              "encrypted_content": encrypted(f"m{n}")})
            parts = [{"type": "output_text", "text": draw(_words), "annotations": []}]
            if draw(st.booleans()):  # a refusal: alone, or after the text
                parts = draw(st.sampled_from([[], parts])) + [
                    {"type": "refusal", "refusal": "I can't share that part."}]
            items.append({"type": "message", "role": "assistant", "id": f"msg_{n}",
                          "status": "completed", "phase": phase, "content": parts})
    items.append({"role": "user", "content": "the question " + draw(_words)})
    body = {"model": "gpt-4o", "input": items, "store": False}
    if draw(st.booleans()):
        body["instructions"] = "you are " + draw(_words)
    return body


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(requests())
def test_round_trip_of_an_untouched_request_is_identical(body):
    before = json.dumps(body)
    d = decode("responses", body, WORDS)
    assert json.dumps(encode(d, d.messages).payload) == before
    kept = trim(d.messages, conversation_tokens(d.messages, WORDS) + 10, WORDS,
                options=AS_SENT).messages
    assert json.dumps(encode(d, kept).payload) == before


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(requests(), st.integers(30, 400))
def test_under_any_budget_the_result_is_valid(body, budget):
    d = decode("responses", body, WORDS)
    try:
        report = trim(d.messages, budget, WORDS, options=AS_SENT)
    except ContextError as err:
        assert err.kind == "pinned_over_budget"
        return
    out = encode(d, report.messages).payload
    assert problems(out, []) == []
    SDK_INPUT.validate_python(out["input"])
    assert out["input"][-1] == body["input"][-1] or "the question" in json.dumps(
        out["input"][-1])
    originals = {json.dumps(i) for i in body["input"]}
    for item in out["input"]:
        if item.get("type") in ("reasoning", "function_call"):
            assert json.dumps(item) in originals  # byte for byte
    # each of the model's messages is sent with its own phase, or its run was dropped (the
    # trim's audit names the run), or the writer's audit names it
    group = {body["input"][k].get("id"): m.id for m, source in zip(d.messages, d.sources,
                                                                   strict=True)
             if isinstance(source, list) for k in source}
    kept = {m.id for m in report.messages}
    named = {e.summary for e in encode(d, report.messages).audit}
    came = {i.get("id"): i for i in out["input"]}
    for item in body["input"]:
        if item.get("type") != "message":
            continue
        if item["id"] in came:
            assert came[item["id"]]["phase"] == item["phase"]
        else:
            assert group[item["id"]] not in kept or f"message {item['id']}" in named


def test_messages_the_engine_made_are_written_as_items():
    from ctxlayer.protocol import Message, ToolCall

    d = decode("responses", {"model": "gpt-4o", "input": []}, WORDS)
    made = [Message(role="system", content="rules"), Message(role="user", content="go"),
            Message(role="assistant", content="", tool_calls=[ToolCall(id="c1", name="ls")]),
            Message(role="tool", content="a.py", tool_call_id="c1"),
            Message(role="assistant", content="one file"),
            Message(role="user", content="thanks")]
    out = encode(d, made).payload
    assert [i.get("type") for i in out["input"]] == [
        "message", "message", "function_call", "function_call_output", "message", "message"]
    assert problems(out, []) == []
    SDK_INPUT.validate_python(out["input"])


def test_an_output_of_a_referenced_call_goes_with_the_reference():
    """The call behind an `item_reference` is not in the request: its output is paired with
    the reference (one message of the engine's calls it), so they are kept or dropped
    together; a reference left without the output goes, said."""
    items = [{"role": "user", "content": "read it"},
             {"type": "item_reference", "id": "fc_1"},
             {"type": "function_call_output", "call_id": "call_1", "output": "def f(): ..."},
             {"role": "user", "content": "and now?"}]
    decoded = decode("responses", {"model": "gpt-5.4", "input": items}, WORDS)
    ref, out = decoded.messages[1], decoded.messages[2]
    assert [c.id for c in ref.tool_calls or ()] == ["call_1"] and out.tool_call_id == "call_1"
    kept = trim(decoded.messages, 1000, WORDS, options=AS_SENT).messages
    assert encode(decoded, kept).payload["input"] == items
    lost = encode(decoded, [decoded.messages[0], ref, decoded.messages[3]])
    assert lost.payload["input"] == [items[0], items[3]]
    assert [e.summary for e in lost.audit] == ["item_reference fc_1"]


def test_a_string_input_with_a_message_added_is_written_as_items():
    """A string `input` with a message the engine added before it (a summary, a document):
    both go as items (on 4a98baf this crashed, a string joined to a list)."""
    decoded = decode("responses", {"model": "gpt-5.4", "input": "hello there"}, WORDS)
    added = Message(role="user", content="[Summary of 2 earlier messages]")
    assert encode(decoded, [added, *decoded.messages]).payload["input"] == [
        {"type": "message", "role": "user", "content": added.content},
        {"type": "message", "role": "user", "content": "hello there"}]


# ---- a run of several messages of the model's, shortened ---------------------------------

def _said(mid: str, text: str, phase: str | None = None, refusal: bool = False) -> dict:
    parts = [{"type": "output_text", "text": text, "annotations": []}] if text else []
    if refusal:
        parts.append({"type": "refusal", "refusal": "I can't share that part."})
    return {"type": "message", "role": "assistant", "id": mid, "status": "completed",
            **({"phase": phase} if phase else {}), "content": parts}


def _shortened(items: list[dict], new: str):
    """The request of `items` (a user, the model's run, a question), written back with the
    run's text replaced by `new`, as a fit that shortened it would."""
    body = {"model": "gpt-5", "store": False, "input": [
        {"role": "user", "content": "go"}, *items, {"role": "user", "content": "and now?"}]}
    d = decode("responses", body, WORDS)
    user, run, question = d.messages
    out = encode(d, [user, msgspec.structs.replace(run, content=new), question])
    assert problems(out.payload, []) == []
    SDK_INPUT.validate_python(out.payload["input"])
    return out.payload["input"][1:-1], out.audit


def test_a_commentary_and_a_final_answer_each_keep_their_own_text_and_phase():
    """gpt-5 and Codex send a commentary message then the final answer, one run: shortened,
    the commentary stays as it was and the final answer gets the rest (before, both texts
    went into the commentary and the final answer was removed, unsaid)."""
    items = [_said("msg_c", "Let me look.", "commentary"),
             _said("msg_f", "the answer " * 50, "final_answer")]
    sent, audit_ = _shortened(items, "Let me look.\nthe answer [... cut]")
    assert sent[0] == items[0]
    assert sent[1] == {**items[1], "content": [{**items[1]["content"][0],
                                                 "text": "the answer [... cut]"}]}
    assert audit_ == []


def test_a_refusal_then_an_answer_writes_no_part_the_api_refuses():
    """A message holding only a refusal, then the answer: the answer's message gets the new
    text (before, it went into the refusal's message as a `text` part, which the Responses
    API refuses: 400 on every later turn)."""
    items = [_said("msg_r", "", refusal=True), _said("msg_f", "the answer " * 50)]
    sent, _ = _shortened(items, "the answer [... cut]")
    assert sent[0] == items[0]
    assert sent[1]["content"][0]["text"] == "the answer [... cut]"
    assert sent[1]["content"][0]["type"] == "output_text"


def test_a_message_whose_text_went_into_a_later_one_goes_with_its_reasoning_said():
    """Neither message's text is whole in the shortened one: it goes to the last (the final
    answer); the commentary, left with nothing, goes with the reasoning that led to it, and
    the audit names both."""
    items = [{"type": "reasoning", "id": "rs_c", "summary": [],
              "encrypted_content": encrypted("c")},
             _said("msg_c", "Let me look " * 40, "commentary"),
             {"type": "reasoning", "id": "rs_f", "summary": [],
              "encrypted_content": encrypted("f")},
             _said("msg_f", "the answer " * 50, "final_answer")]
    sent, audit_ = _shortened(items, "Let me look [... cut] the answer")
    assert [i["id"] for i in sent] == ["rs_f", "msg_f"]
    assert sent[1]["phase"] == "final_answer"
    assert sent[1]["content"][0]["text"] == "Let me look [... cut] the answer"
    assert [(e.action, e.summary) for e in audit_] == [("dropped", "reasoning rs_c"),
                                                       ("dropped", "message msg_c")]


def test_a_text_written_where_there_was_none_is_the_items_own_kind():
    items = [_said("msg_r", "", refusal=True)]
    sent, _ = _shortened(items, "a note")
    assert sent[0]["content"][0] == {"type": "output_text", "annotations": [], "text": "a note"}


PROGRAM_CODE = ("const r = await tools.lookup({ key: 'src/parser/lexer.py' });\n"
                "out.push(r);")


def program_request() -> dict:
    return {"model": "gpt-5", "input": [
        {"role": "user", "content": "look the lexer up"},
        {"type": "program", "id": "prg_1", "call_id": "call_p1", "code": PROGRAM_CODE,
         "fingerprint": "fp_0123456789abcdef"},
        {"type": "program_output", "id": "pro_1", "call_id": "call_p1", "result": "found"},
        {"role": "user", "content": "and then?"}]}


def test_a_programs_code_is_its_calls_arguments_for_summaries_and_the_ledger():
    """A `program`'s call had empty arguments inside the engine: its summary line said
    `program()` and the ledger never read its code (the file it names, the calls it makes).
    Its code is the call's arguments now, its other fields (the fingerprint) a part; it still
    goes back as it came, and costs what it did."""
    from ctxlayer.core.compress.ledger import add_messages
    from ctxlayer.core.text import describe

    body = program_request()
    d = decode("responses", body, WORDS)
    [call] = [c for m in d.messages for c in m.tool_calls or ()]
    assert (call.id, call.name, call.arguments) == ("call_p1", "program", PROGRAM_CODE)
    caller = next(m for m in d.messages if m.tool_calls)
    assert "program(const r = await tools.lookup" in describe(caller)
    ledger = add_messages(None, [caller])
    assert [e.value for e in ledger.kinds.get("paths", [])] == ["src/parser/lexer.py"], ledger
    assert "tools.lookup()" in [e.value for e in ledger.kinds.get("identifiers", [])]
    # the code is counted once: as the call's arguments, no longer in the parts as well
    assert caller.parts_tokens == WORDS.count('{"fingerprint":"fp_0123456789abcdef"}')
    out = encode(d, d.messages).payload
    assert out == body  # the program goes back byte for byte


@pytest.mark.parametrize("budget", [400, 1500, 8000])
def test_a_program_whose_code_reads_as_a_json_object_is_sent_as_counted(budget):
    """A call's arguments are outlined when they are a JSON object, and the writer never
    rewrites a program: code that was a dict literal was counted outlined (1,328 tokens of a
    1,500 budget) while it went whole (3,179). Its code is costed as a part then: the request
    written counts what the trim said, and the program goes as it came or not at all."""
    code = json.dumps({"text": " ".join(f"word{j}" for j in range(3000))})
    items = program_request()["input"]
    body = {**program_request(), "input": [
        {"role": "user", "content": "look it up " * 50}, {**items[1], "code": code}, *items[2:]]}
    d = decode("responses", body, WORDS)
    got = trim(d.messages, budget, WORDS)
    out = encode(d, got.messages).payload
    assert conversation_tokens(decode("responses", out, WORDS).messages, WORDS) == got.tokens
    assert got.tokens <= budget
    sent = [it for it in out["input"] if it.get("type") == "program"]
    assert sent in ([], [body["input"][1]])
