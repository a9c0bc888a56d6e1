"""`ctxlayer trim --format responses` (and detected without it), as a user runs it: a Responses
request in, the fitted request out, valid for the strict stand-in, reasoning byte for byte."""

from __future__ import annotations

import json
import subprocess
import sys

from providers.standin_responses import encrypted, problems

CLI = [sys.executable, "-m", "ctxlayer"]


def request() -> dict:
    items: list = [{"role": "user", "content": "find the bug"}]
    for k in range(8):
        items += [
            {"type": "reasoning", "id": f"rs_{k}", "summary": [],
             "encrypted_content": encrypted(f"step {k}")},
            {"type": "function_call", "id": f"fc_{k}", "call_id": f"c{k}", "name": "grep",
             "arguments": json.dumps({"k": k})},
            {"type": "function_call_output", "call_id": f"c{k}",
             "output": " ".join(f"match{k}_{j}" for j in range(400))},
        ]
    items.append({"role": "user", "content": "which file?"})
    return {"model": "gpt-4o", "instructions": "Be brief.", "input": items, "store": False}


def test_trim_fits_a_responses_request():
    body = request()
    for args in (["--format", "responses"], []):
        p = subprocess.run([*CLI, "trim", "--budget", "2500", *args],
                           input=json.dumps(body).encode(), capture_output=True, timeout=120)
        assert p.returncode == 0, p.stderr.decode()
        out = json.loads(p.stdout)
        audit = out.pop("ctxlayer")  # the body comes back whole, the audit beside it
        sent = out
        assert set(sent) == set(body)
        assert audit["tokens"] <= 2500 and (audit["dropped"] or audit["truncated"])
        assert sent["instructions"] == "Be brief." and sent["store"] is False
        assert sent["input"][-1] == body["input"][-1]
        assert problems(sent, []) == []
        originals = {json.dumps(i) for i in body["input"]}
        assert all(json.dumps(i) in originals for i in sent["input"]
                   if i.get("type") in ("reasoning", "function_call"))
        assert "responses" in p.stderr.decode()


def test_a_bare_list_of_items_gives_the_ctx_trim_result_as_the_other_formats_do():
    # README and ctx/trim: a bare list gives {messages, tokens, budget, dropped, truncated};
    # with --format responses it came back as {"input": ...}
    items = request()["input"]
    p = subprocess.run([*CLI, "trim", "-q", "--format", "responses", "--budget", "2500"],
                       input=json.dumps(items).encode(), capture_output=True, timeout=120)
    assert p.returncode == 0, p.stderr.decode()
    out = json.loads(p.stdout)
    assert list(out) == ["messages", "tokens", "budget", "dropped", "truncated"]
    assert out["messages"][-1] == items[-1]
    assert out["tokens"] <= 2500 and (out["dropped"] or out["truncated"])


def test_what_trim_writes_of_a_bare_list_reads_back_in_the_same_format():
    # ctx/trim's result of a Responses list holds its items under `messages`: `count` and
    # `trim --format responses` refused it ("input: missing, and the body has `messages`")
    items = request()["input"]
    fitted = subprocess.run([*CLI, "trim", "-q", "--format", "responses", "--budget", "2500"],
                            input=json.dumps(items).encode(), capture_output=True, timeout=120)
    assert fitted.returncode == 0, fitted.stderr.decode()
    first = json.loads(fitted.stdout)
    counted = subprocess.run([*CLI, "count", "--json", "--format", "responses"],
                             input=fitted.stdout, capture_output=True, timeout=120)
    assert counted.returncode == 0, counted.stderr.decode()
    assert json.loads(counted.stdout)["total"] == first["tokens"]
    again = subprocess.run([*CLI, "trim", "-q", "--format", "responses", "--budget", "2500"],
                           input=fitted.stdout, capture_output=True, timeout=120)
    assert again.returncode == 0, again.stderr.decode()
    second = json.loads(again.stdout)
    assert second["messages"] == first["messages"] and second["tokens"] == first["tokens"]
    assert second["dropped"] == second["truncated"] == []
