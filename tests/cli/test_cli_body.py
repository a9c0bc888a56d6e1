"""`ctxlayer trim` and `ctxlayer count` on a whole request body, as a user runs them (real
processes, the real tokenizers): the body comes back ready to send, counted for its own model
and with its tools, as the gateway counts it; bad bytes are one line naming their position."""

from __future__ import annotations

import json
import subprocess
import sys
import typing

import pydantic
import pytest
from anthropic.types.message_create_params import MessageCreateParamsNonStreaming
from openai.types.chat.completion_create_params import CompletionCreateParamsNonStreaming
from providers.rules import anthropic_problems, openai_problems

from ctxlayer import protocol
from ctxlayer.commands.trim import AUDIT_KEY
from ctxlayer.state import Caller, State
from ctxlayer.state.requests import chats

CLI = [sys.executable, "-m", "ctxlayer"]


def run(*args: str, stdin: str | bytes = b"") -> subprocess.CompletedProcess:
    data = stdin.encode() if isinstance(stdin, str) else stdin
    p = subprocess.run([*CLI, *args], input=data, capture_output=True, timeout=120)
    return subprocess.CompletedProcess(p.args, p.returncode, p.stdout.decode(),
                                       p.stderr.decode())


def tools_openai(n: int) -> list[dict]:
    return [{"type": "function", "function": {
        "name": f"tool_{k}", "description": f"Tool number {k}: reads the file it is given.",
        "parameters": {"type": "object", "properties": {"path": {"type": "string"}},
                       "required": ["path"]}}} for k in range(n)]


def tools_anthropic(n: int) -> list[dict]:
    return [{"name": f"tool_{k}", "description": f"Tool number {k}: reads the file it is given.",
             "input_schema": {"type": "object", "properties": {"path": {"type": "string"}}}}
            for k in range(n)]


OPENAI_BODY = {
    "model": "gpt-4o", "temperature": 0.7, "top_p": 0.95, "max_completion_tokens": 800,
    "tools": tools_openai(3), "tool_choice": "auto", "parallel_tool_calls": False,
    "response_format": {"type": "text"}, "seed": 7, "user": "ann",
    "messages": [
        {"role": "developer", "content": "Answer briefly."},
        {"role": "user", "content": "read a.py"},
        {"role": "assistant", "content": None, "tool_calls": [{"id": "c1", "type": "function",
         "function": {"name": "tool_0", "arguments": "{\"path\": \"a.py\"}"}}]},
        {"role": "tool", "tool_call_id": "c1", "content": "print('hi')"},
        {"role": "user", "content": [{"type": "text", "text": "what does it print?"}]},
    ],
}

ANTHROPIC_BODY = {
    "model": "claude-sonnet-4-5", "max_tokens": 1024, "service_tier": "auto",
    "system": [{"type": "text", "text": "Answer briefly."}],
    "tools": tools_anthropic(3), "tool_choice": {"type": "auto"},
    "metadata": {"user_id": "ann"}, "stop_sequences": ["END"],
    "messages": [
        {"role": "user", "content": "read a.py"},
        {"role": "assistant", "content": [{"type": "tool_use", "id": "t1", "name": "tool_0",
                                           "input": {"path": "a.py"}}]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1",
                                      "content": "print('hi')"},
                                     {"type": "text", "text": "what does it print?"}]},
    ],
}

SDK_TYPES = {"openai": CompletionCreateParamsNonStreaming,
             "anthropic": MessageCreateParamsNonStreaming}


def sdk_accepts(fmt: str, body: dict) -> None:
    """The official SDK's request type takes every field of the body, and knows each one."""
    kind = SDK_TYPES[fmt]
    pydantic.TypeAdapter(kind).validate_python(body)
    known = set(typing.get_type_hints(kind))
    assert set(body) <= known, f"not {fmt} request fields: {set(body) - known}"


# ---- bad bytes ---------------------------------------------------------------------------

BAD = b'[{"role": "user", "content": "caf\xc3\xa9 ' + b"x" * 1200 + b'\xff\xfe"}]'
AT = BAD.index(b"\xff")


@pytest.mark.parametrize("args", [["count"], ["trim", "--format", "openai"], ["count", "--text"]])
@pytest.mark.parametrize("via", ["stdin", "file"])
def test_bad_utf8_is_one_line_naming_the_byte_and_exit_2(args, via, tmp_path):
    if via == "file":
        path = tmp_path / "chat.json"
        path.write_bytes(BAD)
        p, source = run(*args, str(path)), str(path)
    else:
        p, source = run(*args, stdin=BAD), "stdin"
    assert p.returncode == 2, p.stderr
    assert p.stderr == f"ctxlayer {args[0]}: {source} is not valid UTF-8 at byte {AT}\n"
    assert p.stdout == ""


def test_a_bad_byte_in_a_doc_is_named_too(tmp_path):
    doc = tmp_path / "doc.txt"
    doc.write_bytes(b"fine text \x80 then more")
    p = run("trim", "--doc", str(doc), stdin=json.dumps([{"role": "user", "content": "hi"}]))
    assert p.returncode == 2
    assert p.stderr == f"ctxlayer trim: {doc} is not valid UTF-8 at byte 10\n"


# ---- trim: the whole body, ready to send -------------------------------------------------

@pytest.mark.parametrize("fmt,body", [("openai", OPENAI_BODY), ("anthropic", ANTHROPIC_BODY)])
def test_a_body_that_fits_comes_back_field_for_field_with_the_audit_beside(fmt, body):
    p = run("trim", "--budget", "10k", stdin=json.dumps(body))
    assert p.returncode == 0, p.stderr
    out = json.loads(p.stdout)
    audit = out.pop(AUDIT_KEY)
    assert list(out) == list(body), "every field, in its place"
    for key, value in body.items():
        assert json.dumps(out[key]) == json.dumps(value), key
    assert set(audit) == {"tokens", "budget", "dropped", "truncated"}
    assert audit["budget"] == 10_000 and 0 < audit["tokens"] <= 10_000
    assert audit["dropped"] == audit["truncated"] == []
    sdk_accepts(fmt, out)
    assert AUDIT_KEY not in typing.get_type_hints(SDK_TYPES[fmt]), "the key never collides"


def test_a_body_over_budget_keeps_its_other_fields_and_fits_with_its_tools():
    body = {**OPENAI_BODY, "tools": tools_openai(20), "messages": [
        *({"role": "user" if k % 2 == 0 else "assistant", "content": f"turn {k} " + "word " * 80}
          for k in range(30)),
        {"role": "user", "content": "the question"}]}
    p = run("trim", "--budget", "2000", "-q", stdin=json.dumps(body))
    assert p.returncode == 0, p.stderr
    out = json.loads(p.stdout)
    audit = out.pop(AUDIT_KEY)
    assert {k: v for k, v in out.items() if k != "messages"} == {
        k: v for k, v in body.items() if k != "messages"}
    assert out["messages"][-1] == body["messages"][-1]
    assert len(out["messages"]) < len(body["messages"]) and audit["dropped"]
    # the tools share the budget: the count of what goes out is what the audit says
    counted = run("count", "--json", stdin=json.dumps(out))
    assert json.loads(counted.stdout)["total"] == audit["tokens"] <= 2000
    assert openai_problems(out) == []
    sdk_accepts("openai", out)


def test_trimming_a_result_again_replaces_its_audit():
    first = run("trim", "--budget", "10k", "-q", stdin=json.dumps(ANTHROPIC_BODY))
    again = run("trim", "--budget", "9k", "-q", stdin=first.stdout)
    assert again.returncode == 0, again.stderr
    out = json.loads(again.stdout)
    assert out[AUDIT_KEY]["budget"] == 9000
    assert AUDIT_KEY not in json.dumps(out.pop(AUDIT_KEY))
    assert out == ANTHROPIC_BODY
    assert anthropic_problems(out) == []


def test_a_bare_list_keeps_the_trim_result_shape():
    p = run("trim", "-q", stdin=json.dumps(OPENAI_BODY["messages"]))
    assert p.returncode == 0, p.stderr
    out = json.loads(p.stdout)
    assert list(out) == ["messages", "tokens", "budget", "dropped", "truncated"]
    assert out["messages"] == OPENAI_BODY["messages"]


def test_tool_definitions_over_the_budget_are_one_line():
    p = run("trim", "--budget", "100", stdin=json.dumps({**OPENAI_BODY,
                                                         "tools": tools_openai(20)}))
    assert p.returncode == 2
    assert p.stderr.startswith("ctxlayer trim: the tool definitions alone need ")
    assert len(p.stderr.splitlines()) == 1


# ---- the body's own model ----------------------------------------------------------------

def test_the_body_model_is_counted_with_unless_model_is_given():
    body = json.dumps(ANTHROPIC_BODY)  # claude-sonnet-4-5
    own = json.loads(run("count", "--json", stdin=body).stdout)
    assert own["model"] == "claude-sonnet-4-5" and own["encoding"].startswith("cl100k")
    forced = json.loads(run("count", "--json", "--model", "gpt-4o", stdin=body).stdout)
    assert forced["model"] == "gpt-4o" and forced["encoding"] == "o200k_base"
    assert own["total"] != forced["total"]
    p = run("trim", "--budget", "10k", stdin=body)
    assert "(claude-sonnet-4-5, pipeline, anthropic)" in p.stderr
    p = run("trim", "--budget", "10k", "--model", "gpt-4o", stdin=body)
    assert "(gpt-4o, pipeline, anthropic)" in p.stderr


def test_without_a_budget_the_body_max_tokens_is_the_reserve():
    p = run("trim", "-q", stdin=json.dumps(ANTHROPIC_BODY))  # a 200k window, 1024 reserved
    assert json.loads(p.stdout)[AUDIT_KEY]["budget"] == 200_000 - 1024


# ---- count: as the gateway counts a request ----------------------------------------------

async def prepared_tokens(tmp_path, fmt: str, body: dict) -> int:
    """The tokens ctx/prepare (the gateway's path) says the same body costs."""
    state = State(tmp_path / "state")
    try:
        caller = Caller(state, source="gateway", options=protocol.InitializationOptions())
        res = await chats.prepare(caller, protocol.PrepareParams(format=fmt, request=body,
                                                                 budget=100_000))
        assert res.dropped == [] and res.truncated == []
        return res.tokens
    finally:
        state.close()


@pytest.mark.parametrize("fmt,body,tools", [("openai", OPENAI_BODY, tools_openai),
                                            ("anthropic", ANTHROPIC_BODY, tools_anthropic)])
async def test_count_is_the_gateway_count_and_tools_add_to_it(tmp_path, fmt, body, tools):
    bare = {k: v for k, v in body.items() if k not in ("tools", "tool_choice")}
    totals = []
    for n, each in enumerate((bare, {**body, "tools": tools(20)}, {**body, "tools": tools(21)})):
        p = run("count", "--json", stdin=json.dumps(each))
        assert p.returncode == 0, p.stderr
        total = json.loads(p.stdout)["total"]
        assert total == await prepared_tokens(tmp_path / str(n), fmt, each)
        totals.append(total)
    assert totals[0] < totals[1] < totals[2]


@pytest.mark.parametrize("fmt,body,tools,auto,forced", [
    ("openai", OPENAI_BODY, tools_openai, "auto", {"type": "function", "function": {"name": "tool_1"}}),
    ("anthropic", ANTHROPIC_BODY, tools_anthropic, {"type": "auto"}, {"type": "tool", "name": "tool_1"}),
])
async def test_count_and_the_gateway_count_tool_choice_as_billed(tmp_path, fmt, body, tools, auto,
                                                                 forced):
    """OpenAI bills a named choice as more prompt; Anthropic's tool-use system prompt is 346
    tokens with auto and 313 with a forced tool (Claude 4 models)."""
    totals = []
    for n, choice in enumerate((auto, forced)):
        each = {**body, "tools": tools(5), "tool_choice": choice}
        p = run("count", "--json", stdin=json.dumps(each))
        assert p.returncode == 0, p.stderr
        total = json.loads(p.stdout)["total"]
        assert total == await prepared_tokens(tmp_path / str(n), fmt, each)
        totals.append(total)
    if fmt == "openai":
        assert totals[1] > totals[0]
    else:
        assert totals[0] - totals[1] == 346 - 313
