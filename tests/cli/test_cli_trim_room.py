"""`ctxlayer trim` says what it did in the request's own terms (real processes, the real
tokenizers): a repeated tool output refers to the call the model sees; a refusal names the
least budget."""

from __future__ import annotations

import base64
import json
import re
import subprocess
import sys

import pytest
from providers.payloads import png

CLI = [sys.executable, "-m", "ctxlayer"]


def trim(body: dict, budget: int, fmt: str) -> subprocess.CompletedProcess:
    return subprocess.run([*CLI, "trim", "-q", "--format", fmt, "--budget", str(budget)],
                          input=json.dumps(body), capture_output=True, text=True, timeout=120)


def trimmed(body: dict, budget: int, fmt: str) -> dict:
    p = trim(body, budget, fmt)
    assert p.returncode == 0, p.stderr
    return json.loads(p.stdout)


def log(n: int, what: str) -> str:
    """A pasted log of ``n`` lines ending in a traceback."""
    lines = [f"2024-01-01 12:{k // 60:02d}:{k % 60:02d} [INFO] {what}: step {k} of the run "
             f"went through worker-{k % 7} in {k * 13 % 997} ms" for k in range(n)]
    return "\n".join([*lines, "Traceback (most recent call last):",
                      f'  File "src/{what}.py", line 42, in run',
                      f"ValueError: {what} failed at step {n}"])


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
