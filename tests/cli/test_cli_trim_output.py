"""What `ctxlayer trim` writes, as a user runs it (real processes, the real tokenizers): a body
ready to send as it is, with nothing of the engine's in it; trimmed again it stays the same;
its audit counts what goes out."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
from providers.rules import anthropic_problems, openai_problems

CLI = [sys.executable, "-m", "ctxlayer"]

DOC = "Design doc\nThe cache must be flushed every hour.\n"


def run(*args: str, stdin: str = "") -> subprocess.CompletedProcess:
    return subprocess.run([*CLI, *args], input=stdin, capture_output=True, text=True,
                          timeout=120)


def sent(out: dict) -> dict:
    """The body as it goes to the provider: the audit removed."""
    return {k: v for k, v in out.items() if k != "ctxlayer"}


@pytest.mark.parametrize("fmt", [[], ["--format", "openai"]])
def test_a_document_goes_out_as_role_and_content_and_is_added_once(tmp_path, fmt):
    doc = tmp_path / "doc.txt"
    doc.write_text(DOC)
    body = {"model": "gpt-4o", "messages": [{"role": "system", "content": "s"},
                                            {"role": "user", "content": "hello"}]}
    first = run("trim", "-q", *fmt, "--doc", str(doc), stdin=json.dumps(body))
    assert first.returncode == 0, first.stderr
    out = json.loads(first.stdout)
    assert out["messages"][1] == {"role": "user", "content": DOC}  # no id, kind, priority
    assert openai_problems(sent(out)) == []
    again = run("trim", "-q", *fmt, "--doc", str(doc), stdin=first.stdout)
    assert again.returncode == 0, again.stderr
    redone = json.loads(again.stdout)
    assert redone["messages"] == out["messages"]
    [entry] = redone["ctxlayer"]["dropped"]
    assert "already in the conversation word for word" in entry["reason"]


def test_a_document_merged_into_an_anthropic_question_is_not_added_again(tmp_path):
    doc = tmp_path / "doc.txt"
    doc.write_text(DOC)
    body = {"model": "claude-sonnet-4-5", "max_tokens": 100, "system": "s",
            "messages": [{"role": "user", "content": "hello"}]}
    first = run("trim", "-q", "--doc", str(doc), stdin=json.dumps(body))
    out = json.loads(first.stdout)
    assert anthropic_problems(sent(out)) == []
    again = json.loads(run("trim", "-q", "--doc", str(doc), stdin=first.stdout).stdout)
    assert again["messages"] == out["messages"]


UNANSWERED_CALL = {"model": "gpt-4o", "messages": [
    {"role": "user", "content": "q"},
    {"role": "assistant", "content": None, "tool_calls": [
        {"id": "c1", "type": "function", "function": {"name": "f", "arguments": "{}"}}]},
    {"role": "user", "content": "final"}]}

CONSECUTIVE_USERS = {"model": "claude-sonnet-4-5", "max_tokens": 100, "system": "s",
                     "messages": [{"role": "user", "content": "first question"},
                                  {"role": "user", "content": "second question"}]}


@pytest.mark.parametrize("body,repair,summary", [
    (UNANSWERED_CALL, "lost their results", "assistant: f()"),
    (CONSECUTIVE_USERS, "merged", "user: 'second question'")])
def test_the_audit_counts_what_goes_out_after_the_encoders_repairs(body, repair, summary):
    """Its line names what was repaired (it said "assistant: 1 tool calls", "user: text")."""
    p = run("trim", stdin=json.dumps(body))
    assert p.returncode == 0, p.stderr
    out = json.loads(p.stdout)
    audit = out["ctxlayer"]
    assert any(repair in e["reason"] and e["summary"] == summary
               for e in audit["dropped"] + audit["truncated"])
    counted = run("count", "--json", stdin=json.dumps(sent(out)))
    assert audit["tokens"] == json.loads(counted.stdout)["total"]
    assert f"{len(json.loads(counted.stdout)['tokens'])} kept" in p.stderr
    assert f" {audit['tokens']}/{audit['budget']} tokens" in p.stderr


def test_an_anthropic_request_without_a_user_message_is_refused_in_one_line():
    body = {"model": "claude-sonnet-4-5", "max_tokens": 100, "system": "s",
            "messages": [{"role": "assistant", "content": "Once upon a time"}]}
    p = run("trim", stdin=json.dumps(body))
    assert p.returncode == 2 and p.stdout == ""
    assert p.stderr.count("\n") == 1 and "Traceback" not in p.stderr
    assert "an Anthropic request needs a user message first" in p.stderr


def test_an_anthropic_request_with_no_message_is_refused_in_one_line():
    """`messages: []` beside a system prompt went out (exit 0, and through the gateway to the
    provider, which refuses it)."""
    body = {"model": "claude-sonnet-4-5", "max_tokens": 100, "system": "be nice",
            "messages": []}
    p = run("trim", stdin=json.dumps(body))
    assert p.returncode == 2 and p.stdout == ""
    assert "needs at least one message" in p.stderr and p.stderr.count("\n") == 1


@pytest.mark.parametrize("body,args,field", [
    ({"model": "gpt-4o", "max_tokens": 128_000, "messages": [{"role": "user", "content": "q"}]},
     [], "max_tokens"),
    ([{"role": "user", "content": "q"}], ["--reserve-output", "200k"], "--reserve-output"),
])
def test_an_output_reserve_that_fills_the_window_is_refused_naming_it(body, args, field):
    """It made a budget of one token, which the question alone was then said to be over."""
    p = run("trim", *args, stdin=json.dumps(body))
    assert p.returncode == 2 and "Traceback" not in p.stderr
    assert p.stderr.startswith(f"ctxlayer trim: {field}: ")
    assert "leave no room for the prompt in the 128,000-token window of gpt-4o" in p.stderr
    assert p.stderr.rstrip().endswith(f"pass --budget or a smaller {field}")
    # a budget given makes the reserve irrelevant, as in the daemon
    assert run("trim", "--budget", "500", *args, stdin=json.dumps(body)).returncode == 0


def test_a_long_text_document_the_user_attached_is_outlined_to_the_room_never_dropped_whole():
    """It was a part of its message, never shortened: a 3,000-line file attached earlier in an
    Anthropic chat went whole with the question beside it, and the answer after it (a leading
    assistant turn) too, leaving 14 of 8,000 tokens used."""
    lines = [f"def handler_{i}(x):  # step {i} of the pipeline" for i in range(3000)]
    body = {"model": "claude-sonnet-4-5", "max_tokens": 1000, "messages": [
        {"role": "user", "content": [
            {"type": "document", "title": "handlers.py", "context": "the service's handlers",
             "source": {"type": "text", "media_type": "text/plain", "data": "\n".join(lines)}},
            {"type": "text", "text": "What does handler_12 do?"}]},
        {"role": "assistant", "content": "It runs step 12."},
        {"role": "user", "content": "And the last one?"}]}
    p = run("trim", "--budget", "8000", stdin=json.dumps(body))
    assert p.returncode == 0, p.stderr
    out = json.loads(p.stdout)
    assert anthropic_problems(sent(out)) == []
    first, answer, question = out["messages"]
    document, asked = first["content"]
    assert asked == body["messages"][0]["content"][1] and answer == body["messages"][1]
    assert {k: v for k, v in document.items() if k != "source"} == {
        "type": "document", "title": "handlers.py", "context": "the service's handlers"}
    kept = document["source"]["data"].split("\n")
    assert kept[:3] == lines[:3] and kept[-1] == lines[-1]  # quoted as they were
    assert any("lines omitted" in line for line in kept)
    audit = out["ctxlayer"]
    assert audit["dropped"] == [] and audit["tokens"] > 8000 * 0.85
    [entry] = audit["truncated"]
    assert entry["tokensBefore"] > 8000 > entry["tokensAfter"]
