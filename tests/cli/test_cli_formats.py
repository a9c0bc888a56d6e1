"""`ctxlayer trim --format`: each format in, the same format out, as a user runs it (real
processes, the real tokenizer); bad input is one line on stderr and exit code 2."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
from providers.rules import anthropic_problems, openai_problems

CLI = [sys.executable, "-m", "ctxlayer"]


def run(*args: str, stdin: str | bytes) -> subprocess.CompletedProcess:
    data = stdin.encode() if isinstance(stdin, str) else stdin
    p = subprocess.run([*CLI, *args], input=data, capture_output=True, timeout=120)
    return subprocess.CompletedProcess(p.args, p.returncode, p.stdout.decode(),
                                       p.stderr.decode())


LONG = "Summarize this: " + " ".join(f"word{k}" for k in range(12_000)) + " THE END"

OPENAI_REQUEST = {"model": "gpt-4o", "temperature": 0, "messages": [
    {"role": "developer", "content": "Answer briefly."},
    {"role": "user", "content": "what is 2+2", "name": "ann"},
    {"role": "assistant", "content": "4"},
    {"role": "user", "content": [{"type": "text", "text": LONG},
                                 {"type": "image_url", "image_url": {"url": "https://e/x.png"}}]},
]}

ANTHROPIC_REQUEST = {"model": "claude-sonnet-4", "max_tokens": 512,
                     "system": [{"type": "text", "text": "Answer briefly."}], "messages": [
    {"role": "user", "content": "list the files"},
    {"role": "assistant", "content": [{"type": "tool_use", "id": "t1", "name": "ls",
                                       "input": {"path": "."}}]},
    {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1",
                                  "content": "a.py\nb.py"},
                                 {"type": "text", "text": "which is bigger?"}]},
]}


def test_openai_request_in_openai_out_with_the_long_question_shortened():
    p = run("trim", "--format", "openai", "--budget", "4000", stdin=json.dumps(OPENAI_REQUEST))
    assert p.returncode == 0, p.stderr
    out = json.loads(p.stdout)
    msgs = out["messages"]
    assert msgs[:3] == OPENAI_REQUEST["messages"][:3]  # kept whole, every field
    last = msgs[-1]["content"]
    assert last[0]["text"].startswith("Summarize this:") and last[0]["text"].endswith("THE END")
    assert last[1] == OPENAI_REQUEST["messages"][3]["content"][1]  # the image stays
    assert openai_problems({"messages": msgs}) == []
    audit = out.pop("ctxlayer")  # a body comes back whole, the audit beside it
    assert out["model"] == "gpt-4o" and out["temperature"] == 0
    assert audit["tokens"] <= 4000
    assert any("newest user message" in e["reason"] for e in audit["truncated"])


def test_anthropic_request_comes_back_whole_with_its_system():
    p = run("trim", "--budget", "2000", stdin=json.dumps(ANTHROPIC_REQUEST))  # detected
    assert p.returncode == 0, p.stderr
    out = json.loads(p.stdout)
    assert out["system"] == ANTHROPIC_REQUEST["system"]
    assert out["messages"] == ANTHROPIC_REQUEST["messages"]
    assert anthropic_problems({"system": out["system"], "messages": out["messages"]}) == []
    assert "anthropic" in p.stderr


def test_ctxlayer_format_refuses_an_unknown_field_by_name():
    p = run("trim", "--format", "ctxlayer", stdin='[{"role": "user", "content": "x", "pined": 1}]')
    assert p.returncode == 2 and "messages[0].pined" in p.stderr
    assert "Traceback" not in p.stderr


def test_a_byte_order_mark_is_accepted():
    p = run("trim", "-q", stdin=b"\xef\xbb\xbf" + json.dumps([{"role": "user", "content": "hi"}])
            .encode())
    assert p.returncode == 0, p.stderr
    assert json.loads(p.stdout)["messages"] == [{"role": "user", "content": "hi"}]


@pytest.mark.parametrize("stdin,args,expect", [
    ("[" * 100_000 + "]" * 100_000, ["trim"], "nested too deeply"),
    ("", ["trim"], "empty"),
    ("   \n", ["trim", "--format", "openai"], "empty"),
    ("{not json", ["trim"], "not valid JSON"),
    ('{"messages": 5}', ["trim", "--format", "openai"], "messages"),
    ('[{"role": "tool", "content": "x"}]', ["trim", "--format", "openai"],
     "messages[0].tool_call_id"),
    ('[{"role": "user", "content": [{"type": "text", "text": 3}]}]', ["trim", "--format", "openai"],
     "messages[0].content[0].text"),
    ('{"messages": [{"role": "user", "content": [{"type": "image"}]}]}',
     ["trim", "--format", "anthropic"], "messages[0].content[0].source"),
    ('{"system": 5, "messages": []}', ["trim"], "system"),
    ('[{"role": "user", "content": "x"}]', ["trim", "--format", "gemini"], "invalid choice"),
])
def test_bad_input_is_one_line_and_exit_2(stdin, args, expect):
    p = run(*args, stdin=stdin)
    assert p.returncode == 2, p.stdout
    assert expect in p.stderr
    assert "Traceback" not in p.stderr
    said = [line for line in p.stderr.splitlines() if line.startswith("ctxlayer trim")]
    assert len(said) == 1  # one line saying what to fix (argparse also prints its usage)


@pytest.mark.parametrize("command, fmt, body, missing, named", [
    # a Chat Completions body read as responses was 0 messages: counted as nothing, passed
    # through unfitted, exit 0
    ("count", "responses", OPENAI_REQUEST, "input:", "format ctxlayer, openai or anthropic"),
    ("trim", "responses", OPENAI_REQUEST, "input:", "format ctxlayer, openai or anthropic"),
    # the other way the error did not say the format was what was wrong
    ("count", "openai", {"model": "gpt-4o", "input": [{"role": "user", "content": "hi"}]},
     "messages:", "format responses"),
])
def test_a_body_of_another_format_is_refused_naming_its_format(command, fmt, body, missing,
                                                               named):
    budget = ["--budget", "2k"] if command == "trim" else []
    p = run(command, "--format", fmt, *budget, stdin=json.dumps(body))
    assert p.returncode == 2 and p.stdout == "", (p.returncode, p.stdout[:200])
    assert missing in p.stderr and named in p.stderr and "Traceback" not in p.stderr
    assert len(p.stderr.strip().splitlines()) == 1, p.stderr
