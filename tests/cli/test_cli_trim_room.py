"""`ctxlayer trim` uses the budget it is given, and says what it did in the request's own terms
(real processes, the real tokenizers): a question cut beside history that is then dropped gets
that room back; an Anthropic turn that cannot lead the request leaves its room to the rest; a
repeated tool output refers to the call the model sees; a refusal names the least budget."""

from __future__ import annotations

import base64
import json
import re
import subprocess
import sys

import pytest
from providers.payloads import png
from providers.rules import anthropic_problems, openai_problems

CLI = [sys.executable, "-m", "ctxlayer"]


def trim(body: dict, budget: int, fmt: str) -> subprocess.CompletedProcess:
    return subprocess.run([*CLI, "trim", "-q", "--format", fmt, "--budget", str(budget)],
                          input=json.dumps(body), capture_output=True, text=True, timeout=120)


def trimmed(body: dict, budget: int, fmt: str) -> dict:
    p = trim(body, budget, fmt)
    assert p.returncode == 0, p.stderr
    return json.loads(p.stdout)


def sent(out: dict) -> dict:
    return {k: v for k, v in out.items() if k != "ctxlayer"}


def log(n: int, what: str) -> str:
    """A pasted log of ``n`` lines ending in a traceback."""
    lines = [f"2024-01-01 12:{k // 60:02d}:{k % 60:02d} [INFO] {what}: step {k} of the run "
             f"went through worker-{k % 7} in {k * 13 % 997} ms" for k in range(n)]
    return "\n".join([*lines, "Traceback (most recent call last):",
                      f'  File "src/{what}.py", line 42, in run',
                      f"ValueError: {what} failed at step {n}"])


def code(n: int) -> str:
    body = "\n".join(f"    total_{k} = compute(items[{k}], factor={k % 9}) + offset_{k}"
                     for k in range(n))
    return f"```python\ndef run(items):\n{body}\n    return total_0\n```"


def test_a_question_cut_beside_a_tool_step_that_is_then_dropped_gets_its_room_back():
    """A 2,400-token question was cut to half the room for the tool step after it, which
    then did not fit and was dropped whole: the request went out with 491 of 1,000 tokens."""
    question = "fix the failing test. Context:\n" + "\n".join(
        f"note {k}: the widget {k} failed with code {k * 7} in module m{k % 11}"
        for k in range(120))
    calls = [{"id": f"c{k}", "type": "function",
              "function": {"name": "sh", "arguments": '{"cmd": "pytest"}'}} for k in range(3)]
    body = {"model": "gpt-4o", "messages": [
        {"role": "system", "content": "You are an agent."},
        {"role": "user", "content": question},
        {"role": "assistant", "content": None, "tool_calls": calls},
        *({"role": "tool", "tool_call_id": f"c{k}", "content": log(200, f"suite{k}")}
          for k in range(3))]}
    out = trimmed(body, 1000, "openai")
    audit = out["ctxlayer"]
    assert openai_problems(sent(out)) == []
    assert [m["role"] for m in out["messages"]] == ["system", "user"]  # the step went
    assert audit["tokens"] >= 950, audit
    [cut] = [e for e in audit["truncated"] if e["summary"].startswith("user")]
    assert cut["tokensAfter"] >= 900, cut


def test_an_anthropic_turn_that_cannot_lead_leaves_its_room_to_the_question():
    """The fit kept an assistant turn whose user turn it dropped; the encoder then dropped it
    (Anthropic starts with a user turn), and its room stayed empty: 296 of 600 tokens."""
    body = {"model": "claude-sonnet-4-5", "max_tokens": 100, "messages": [
        {"role": "user", "content": "please review:\n" + code(300)},
        {"role": "assistant", "content": "It looks fine overall. " + "The loop is ok. " * 50},
        {"role": "user", "content": "then why does it fail?\n" + log(400, "review")}]}
    out = trimmed(body, 600, "anthropic")
    audit = out["ctxlayer"]
    assert anthropic_problems(sent(out)) == []
    assert [m["role"] for m in out["messages"]] == ["user"]
    assert audit["tokens"] >= 480, audit  # it was 241
    leading = [e for e in audit["dropped"] if "must start with a user message" in e["reason"]]
    assert [e["summary"][:9] for e in leading] == ["assistant"]  # said once, by the fit


def test_the_room_of_turns_that_cannot_lead_goes_to_the_turns_dropped_before_them():
    """The fit kept three assistant answers whose 728-token user turns it had dropped; the
    three went as leading turns, and 900 tokens went out with 139: the question alone."""
    def said(tag: str, n: int) -> str:
        return " ".join(f"{tag}{k}" for k in range(n))
    msgs: list[dict] = []
    for i, n in enumerate((20, 20, 300, 20, 300, 300)):
        msgs += [{"role": "user", "content": said(f"u{i}w", n)},
                 {"role": "assistant", "content": said(f"a{i}w", 100)}]
    body = {"model": "claude-sonnet-4-5", "max_tokens": 100, "system": "Be terse.",
            "messages": [*msgs, {"role": "user", "content": "final " + said("f", 50)}]}
    whole = trimmed(body, 1_000_000, "anthropic")["ctxlayer"]["tokens"]
    out = trimmed(body, whole * 2 // 5, "anthropic")
    assert anthropic_problems(sent(out)) == []
    audit = out["ctxlayer"]
    assert audit["tokens"] >= audit["budget"] * 0.75, audit  # 67% of it before
    assert "u5w0" in json.dumps(out["messages"])  # the newest user turn before the question


def test_a_copy_whose_original_led_the_request_gets_its_content_back():
    """A tool output repeated word for word became "[identical to the output of
    read(views.py) above (call toolu_01)]", and the fit then dropped that call as a turn that
    would lead the request: the file was in the request nowhere."""
    view = "\n".join(f"line {i}: def handler_{i}(request): return render(request, "
                     f"'page_{i}.html')" for i in range(40))

    def read(i: str) -> list[dict]:
        return [{"role": "assistant", "content": [{"type": "tool_use", "id": f"toolu_{i}",
                                                   "name": "read",
                                                   "input": {"path": "views.py"}}]},
                {"role": "user", "content": [{"type": "tool_result",
                                              "tool_use_id": f"toolu_{i}", "content": view}]}]
    body = {"model": "claude-sonnet-4-5", "max_tokens": 200, "messages": [
        {"role": "user", "content": "background: " + " ".join(f"w{k}" for k in range(1500))},
        *read("01"), {"role": "assistant", "content": "I read views.py."},
        {"role": "user", "content": "Read it again please, I changed nothing."},
        *read("02"), {"role": "assistant", "content": "Same as before."},
        {"role": "user", "content": "Which handler renders page_17.html?"}]}
    out = trimmed(body, 1100, "anthropic")
    assert anthropic_problems(sent(out)) == []
    text = json.dumps(out["messages"])
    assert "handler_17" in text, out["messages"]


REPEATED = log(60, "make")


@pytest.mark.parametrize(("fmt", "call"), [("openai", "call_A"), ("anthropic", "toolu_A")])
def test_a_repeated_tool_output_refers_to_the_call_the_model_sees(fmt, call):
    """It referred to "tool output oa2.0f88bca738ec", an id the codec made up and no message
    of the request carries."""
    if fmt == "openai":
        def step(i: str) -> list[dict]:
            return [{"role": "assistant", "content": None, "tool_calls": [{
                "id": f"call_{i}", "type": "function",
                "function": {"name": "sh", "arguments": '{"cmd": "make test"}'}}]},
                {"role": "tool", "tool_call_id": f"call_{i}", "content": REPEATED}]
        body = {"model": "gpt-4o", "messages": [
            {"role": "user", "content": "run the tests"}, *step("A"),
            {"role": "assistant", "content": "failing; retrying"},
            {"role": "user", "content": "again"}, *step("B"),
            {"role": "user", "content": "why the same?"}]}
    else:
        def use(i: str) -> dict:
            return {"role": "assistant", "content": [{"type": "tool_use", "id": f"toolu_{i}",
                                                      "name": "sh",
                                                      "input": {"cmd": "make test"}}]}

        def result(i: str) -> dict:
            return {"type": "tool_result", "tool_use_id": f"toolu_{i}", "content": REPEATED}
        body = {"model": "claude-sonnet-4-5", "max_tokens": 100, "messages": [
            {"role": "user", "content": "run the tests"}, use("A"),
            {"role": "user", "content": [result("A")]},
            {"role": "assistant", "content": "failing; retrying"},
            {"role": "user", "content": "again"}, use("B"),
            {"role": "user", "content": [result("B"), {"type": "text", "text": "why the same?"}]}]}
    whole = trimmed(body, 1_000_000, fmt)["ctxlayer"]["tokens"]
    out = trimmed(body, whole - 50, fmt)
    refs = re.findall(r"\[identical to [^\]]*\]", json.dumps(out["messages"]))
    assert refs == [f"[identical to the output of sh(make test) above (call {call})]"]


WORDS = "word " * 3000


@pytest.mark.parametrize("content", [
    WORDS,
    [{"type": "text", "text": WORDS}, {"type": "image_url", "image_url": {
        "url": "data:image/png;base64," + base64.b64encode(png(64, 64)).decode(), "detail": "low"}}]],
    ids=["text", "text and image"])
def test_a_refusal_names_the_least_budget_and_only_what_is_there(content):
    """At a budget of 10 it said "the pinned system content and the newest user message
    (shortened) alone needs 3008 tokens" of a chat with no system content that fitted in 40
    (38 tokens): the figure was the question's whole size."""
    body = {"model": "gpt-4o", "messages": [{"role": "user", "content": content}]}
    p = trim(body, 10, "openai")
    assert p.returncode == 2
    found = re.search(r"needs at least (\d+) tokens", p.stderr)
    assert found, p.stderr
    assert "system" not in p.stderr and p.stderr.startswith(
        "ctxlayer trim: the newest user message"), p.stderr
    least = int(found.group(1))
    assert trimmed(body, least, "openai")["ctxlayer"]["tokens"] <= least
    assert trim(body, least - 1, "openai").returncode == 2


def job_log() -> str:
    """1,500 steps and five times the same errors, one holding a form feed, one a U+2028,
    one a NUL byte, one 13,000 characters long."""
    long = "ERROR: payload rejected: " + ",".join(f"field_{k}=value_{k}" for k in range(700))
    lines = []
    for k in range(1500):
        lines.append(f"[INFO] step {k} ok")
        if k % 300 == 150:
            lines += ["ERROR: page break\x0cafter formfeed in E501",
                      "ERROR: js string with\u2028line separator E502", "ERROR: nul\x00byte E507",
                      long, "Traceback (most recent call last):",
                      f'  File "/src/app{k}.py", line {k}, in <module>', f"KeyError: 'x{k}'"]
    return "\n".join(lines)


def test_a_log_outline_at_8k_uses_its_room_and_quotes_its_lines_whole():
    """The log collapsed to an outline of 21 lines, 5,188 of 8,000 tokens used, said to be
    "in 8500 tokens, the room the fit left"; its lines were split at the form feed and the
    U+2028, each half quoted as a line ("ERROR: page break (x5)"), and the NUL byte dropped."""
    text = job_log()
    body = {"model": "gpt-4o", "messages": [
        {"role": "user", "content": "run it"},
        {"role": "assistant", "content": None, "tool_calls": [
            {"id": "c1", "type": "function", "function": {"name": "sh", "arguments": "{}"}}]},
        {"role": "tool", "tool_call_id": "c1", "content": text},
        {"role": "user", "content": "why did it fail?"}]}
    p = subprocess.run([*CLI, "trim", "-q", "--budget", "8k"], input=json.dumps(body),
                       capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr
    out = json.loads(p.stdout)
    assert 0.9 * 8000 <= out["ctxlayer"]["tokens"] <= 8000, out["ctxlayer"]["tokens"]
    (entry,) = out["ctxlayer"]["truncated"]
    room = int(re.search(r"outline in (\d+) tokens", entry["reason"])[1])
    assert room <= 8000, entry["reason"]
    # the outline above the log's own first and last lines (which quote them too)
    outline = out["messages"][2]["content"].split("[the log's first and last lines")[0]
    for line in text.split("\n")[151:154]:
        assert any(kept.startswith(line) for kept in outline.split("\n")), (line, outline)
    lines_in = len(text.split("\n"))
    assert f"[log sanitized: {lines_in:,} lines in," in out["messages"][2]["content"]
