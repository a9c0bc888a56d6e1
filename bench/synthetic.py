"""A deterministic synthetic coding chat for benchmarks and the bundled demo sample.

System layers; user turns; assistant replies with 20 to 400-line code blocks; tool call/result
pairs (file reads, long JSON and log outputs); ephemeral thinking. Sizes are steered by an
estimate of 3.2 characters per token; the benchmark counts the real tokens.
"""

from __future__ import annotations

import json
import random

from ctxlayer.protocol import Message, ToolCall

WORDS = ("cache", "index", "token", "budget", "segment", "watcher", "session", "rule", "trim",
         "parser", "config", "client", "buffer", "stream", "router", "handler", "queue", "store")
PATHS = ("server/app.py", "src/parser.ts", "lib/cache.rs", "pkg/store/db.go", "tests/test_api.py",
         "web/components/Table.tsx", "scripts/build.sh", "core/engine.py")


def _code_line(r: random.Random, k: int) -> str:
    a, b = r.choice(WORDS), r.choice(WORDS)
    forms = (
        f"    {a}_{k} = compute_{b}(data[{k}], factor={r.randint(1, 99)})",
        f"    if {a}.{b}_count > {r.randint(10, 5000)}:",
        f"        return {b}_{a}({a}, limit={r.randint(1, 64)})",
        f"def handle_{a}_{b}_{k}(request, {a}: int = {r.randint(0, 9)}) -> dict:",
        f"    # keep the {a} in step with the {b} (see issue #{r.randint(100, 999)})",
        f"    log.debug(\"{a} %s -> %s\", {b}, {a}_{k})",
    )
    return r.choice(forms)


def code_block(r: random.Random, lines: int) -> str:
    body = "\n".join(_code_line(r, k) for k in range(lines))
    return f"```python\n{body}\n```"


def json_output(r: random.Random, items: int) -> str:
    data = {"status": "ok", "page": 1, "total": items, "items": [
        {"id": k, "name": f"{r.choice(WORDS)}-{k}", "tags": [r.choice(WORDS) for _ in range(3)],
         "metrics": {"latency_ms": r.randint(1, 900), "errors": r.randint(0, 5)}}
        for k in range(items)]}
    return json.dumps(data, indent=2)


def log_output(r: random.Random, lines: int) -> str:
    out = []
    for k in range(lines):
        ts = f"2026-11-{r.randint(1, 28):02d}T12:{r.randint(0, 59):02d}:{r.randint(0, 59):02d}Z"
        out.append(f"{ts} INFO pid={r.randint(1000, 9999)} {r.choice(WORDS)} worker tick {k} ok")
    out += ["Traceback (most recent call last):",
            f'  File "/app/{r.choice(PATHS)}", line {r.randint(10, 400)}, in handle',
            "    result = engine.run(job)",
            f"KeyError: '{r.choice(WORDS)}'"]
    return "\n".join(out)


def prose(r: random.Random, sentences: int) -> str:
    return " ".join(
        f"The {r.choice(WORDS)} {r.choice(('handler', 'module', 'test'))} in "
        f"{r.choice(PATHS)} should {r.choice(('keep', 'drop', 'count', 'refresh'))} the "
        f"{r.choice(WORDS)} before line {r.randint(1, 500)}." for _ in range(sentences))


def synthetic_chat(target_tokens: int, seed: int = 7) -> list[Message]:
    """About `target_tokens` tokens of a coding chat (3.2 characters per token estimate)."""
    r = random.Random(seed)
    msgs = [Message(role="system", id="sys", pinned=True,
                    content="You are a coding assistant.\n" + prose(r, 60))]
    chars, turn, call = 0, 0, 0
    while chars < target_tokens * 3.2:
        turn += 1
        new: list[Message] = [Message(role="user", id=f"u{turn}",
                                      content=f"Please look at {r.choice(PATHS)}: " + prose(r, 3))]
        if r.random() < 0.4:
            new.append(Message(role="assistant", id=f"think{turn}", ephemeral_ttl=2,
                               content="<thinking>" + prose(r, 8) + "</thinking>"))
        kind = r.random()
        if kind < 0.5:
            call += 1
            cid = f"call{call}"
            tool = r.choice(("read_file", "run_tests", "http_get"))
            new.append(Message(role="assistant", id=f"a{turn}", content="Let me check.",
                               tool_calls=[ToolCall(id=cid, name=tool,
                                                    arguments=json.dumps({"path": r.choice(PATHS)}))]))
            if tool == "http_get":
                out = json_output(r, r.randint(20, 400))
            elif tool == "run_tests":
                out = log_output(r, r.randint(30, 600))
            else:
                out = code_block(r, r.randint(20, 400))
            new.append(Message(role="tool", id=f"t{turn}", tool_call_id=cid, content=out))
        new.append(Message(role="assistant", id=f"r{turn}",
                           content=prose(r, 4) + "\n\n" + code_block(r, r.randint(20, 400))
                           + "\n\n" + prose(r, 2)))
        msgs += new
        chars += sum(len(m.content) for m in new)
    return msgs


def small_message(seed: int = 1) -> Message:
    r = random.Random(seed)
    return Message(role="user", id="new-small", content=prose(r, 46))  # about 750 tokens


def large_message(seed: int = 2) -> Message:
    r = random.Random(seed)
    return Message(role="user", id="new-large",
                   content=prose(r, 10) + "\n\n" + code_block(r, 540))  # about 8k tokens


def as_openai(m: Message) -> dict:
    """A Message as the Chat Completions dict a client would send (the benchmarks' and the
    warm-path tests' OpenAI-format chats)."""
    if m.role == "tool":
        return {"role": "tool", "tool_call_id": m.tool_call_id, "content": m.content}
    out: dict = {"role": m.role, "content": m.content}
    if m.tool_calls:
        out["tool_calls"] = [{"id": c.id, "type": "function", "function": {
            "name": c.name, "arguments": c.arguments}} for c in m.tool_calls]
    return out
