"""An audit reason names a message by what its client sent: the tool call (its name,
arguments and id), the client's own message id, or where the request had it
(`messages[3]`), never the id a codec made up for a message that came without one.

Before: `ctxlayer trim` of an Anthropic request whose test log was read four times said
"same content as an2.0.920618240910" of the three later copies, and a dropped call's entry
"(kept with oa11.a74082f059da)": ids in no message the user or the model sees."""

from __future__ import annotations

import json
import re

import pytest

from ctxlayer.core.formats import decode, trim_options
from ctxlayer.core.text import client_place
from ctxlayer.core.tokens import WordTokenizer
from ctxlayer.core.trim import trim

#: the shape of an id a codec makes up (formats/common.py `derive_id`)
MADE_UP = re.compile(r"\b(cx|oa|an|rs)[0-9si.]*\.[0-9a-f]{12}\b")
LOG = "\n".join(f"line {j}: step ok value={j} path src/mod.py" for j in range(120))


def openai_chat(runs: int = 4) -> dict:
    msgs: list[dict] = [{"role": "system", "content": "be terse"}]
    for k in range(runs):
        msgs += [{"role": "user", "content": f"please run step {k} " + "word " * 50},
                 {"role": "assistant", "content": None, "tool_calls": [{
                     "id": f"call_{k}", "type": "function", "function": {
                         "name": "bash", "arguments": json.dumps({"cmd": "make test"})}}]},
                 {"role": "tool", "tool_call_id": f"call_{k}", "content": LOG},
                 {"role": "assistant", "content": f"step {k} done " + "ok " * 40}]
    msgs.append({"role": "user", "content": "what now?"})
    return {"model": "gpt-4o", "messages": msgs}


def anthropic_chat(runs: int = 4) -> dict:
    msgs: list[dict] = []
    for k in range(runs):
        msgs.append({"role": "user", "content": [
            *([{"type": "tool_result", "tool_use_id": f"toolu_{k - 1}", "content": LOG}]
              if k else []), {"type": "text", "text": f"please run step {k} " + "word " * 50}]})
        msgs.append({"role": "assistant", "content": [
            {"type": "text", "text": f"running {k}"},
            {"type": "tool_use", "id": f"toolu_{k}", "name": "bash",
             "input": {"cmd": "make test"}}]})
    msgs.append({"role": "user", "content": [
        {"type": "tool_result", "tool_use_id": f"toolu_{runs - 1}", "content": LOG},
        {"type": "text", "text": "what now?"}]})
    return {"model": "claude-sonnet-4", "system": "be terse", "max_tokens": 100,
            "messages": msgs}


def responses_chat(runs: int = 4) -> dict:
    items: list[dict] = []
    for k in range(runs):
        items += [{"role": "user", "content": f"please run step {k} " + "word " * 50},
                  {"type": "function_call", "call_id": f"fc_{k}", "name": "bash",
                   "arguments": json.dumps({"cmd": "make test"})},
                  {"type": "function_call_output", "call_id": f"fc_{k}", "output": LOG}]
    items.append({"role": "user", "content": "what now?"})
    return {"model": "gpt-4o", "instructions": "be terse", "input": items}


CHATS = {"openai": (openai_chat, "call_0"), "anthropic": (anthropic_chat, "toolu_0"),
         "responses": (responses_chat, "fc_0")}


def trimmed(fmt: str, payload: dict, budget: int):
    counter = WordTokenizer()
    decoded = decode(fmt, payload, counter)  # type: ignore[arg-type]
    return trim(decoded.messages, budget, counter, options=trim_options(fmt, decoded))  # type: ignore[arg-type]


@pytest.mark.parametrize("fmt", sorted(CHATS))
def test_a_deduplicated_output_names_the_call_of_its_first_copy(fmt):
    make, first = CHATS[fmt]
    report = trimmed(fmt, make(), 3000)
    reasons = [e.reason for e in report.truncated if e.action == "deduplicated"]
    assert len(reasons) == 3, [e.reason for e in report.truncated]
    assert set(reasons) == {f"same content as the output of bash(make test) (call {first})"}


@pytest.mark.parametrize("fmt", sorted(CHATS))
def test_what_is_dropped_with_a_message_names_it_as_the_client_sent_it(fmt):
    make, _ = CHATS[fmt]
    report = trimmed(fmt, make(8), 700)
    reasons = [e.reason for e in [*report.dropped, *report.truncated]]
    assert any("(kept with " in r for r in reasons), reasons
    assert not [r for r in reasons if MADE_UP.search(r)], reasons


def test_a_made_up_id_says_where_the_client_had_the_message():
    counter = WordTokenizer()
    chat = anthropic_chat(2)
    decoded = decode("anthropic", chat, counter)
    places = {client_place(m.id) for m in decoded.messages}
    assert places == {"system", "messages[0]", "messages[1]", "messages[2]", "messages[3]",
                      "messages[4]"}
    plain = decode("openai", openai_chat(1), counter)
    assert [client_place(m.id) for m in plain.messages] == [
        f"messages[{k}]" for k in range(len(plain.messages))]
    items = decode("responses", responses_chat(1), counter)
    assert {client_place(m.id) for m in items.messages} == {
        "instructions", "input[0]", "input[1]", "input[2]", "input[3]"}
    # a client's own id is its name: no place is made up for it
    assert client_place("u1") is None and client_place("oa3") is None


def test_a_copy_of_a_document_names_the_clients_own_id():
    counter = WordTokenizer()
    doc = "the design says every cache key holds the model " * 30
    payload = {"messages": [
        {"id": "d1", "role": "user", "kind": "doc", "content": doc},
        {"id": "q1", "role": "user", "content": "read it " + "word " * 40},
        {"id": "d2", "role": "user", "kind": "doc", "content": doc},
        {"id": "q2", "role": "user", "content": "and now?"}]}
    decoded = decode("ctxlayer", payload, counter)
    report = trim(decoded.messages, 1000, counter,
                  options=trim_options("ctxlayer", decoded))
    assert [e.reason for e in report.truncated if e.action == "deduplicated"] == [
        "same content as d1"]


def test_a_file_attached_again_names_where_it_was_attached_as_the_client_sent_it():
    """A body without ids (`ctxlayer trim` of role-and-content messages): the reference the
    model reads names the request's own place, not "as attached in cx0.4f1c...". """
    counter = WordTokenizer()
    payload = {"messages": [{"role": "user", "content": "look", "files": ["a.py"]},
                            {"role": "user", "content": "again", "files": ["a.py"]}]}
    decoded = decode("ctxlayer", payload, counter)
    report = trim(decoded.messages, 1000, counter, options=trim_options("ctxlayer", decoded),
                  attachments={"a.py": "print(1)\nprint(2)"})
    assert "unchanged, lines 1-2 as attached in messages[0]" in report.messages[1].content
