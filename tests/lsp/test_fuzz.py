"""Fuzz: 10,000 malformed messages, generated deterministically and sent in batches on one
stdio connection; afterwards the daemon is alive and still counts correctly."""

from __future__ import annotations

import json
import random

import pytest
from conftest import RawDaemon

from ctxlayer import protocol
from ctxlayer.tokenizers import counter_for

pytestmark = pytest.mark.e2e
MESSAGES = 10_000
BATCH = 500
#: every method of the protocol (sessions, prepare, why ... included), and some that are not
METHODS = [*protocol.REQUESTS, "ctx/nope", "", "textDocument/didSave", "$/cancelRequest",
           "window/x", "ctx/" + "y" * 300]
#: the fuzz's sessions: one opened before it (it must still answer after), and junk ones
SESSION_IDS = ["fuzzed", "fuzzed", "nope", "", "\u0000"]


def junk_value(rng: random.Random, depth: int = 0):
    kind = rng.randrange(9 if depth < 3 else 6)
    if kind == 0:
        return None
    if kind == 1:
        return rng.choice([True, False])
    if kind == 2:
        return rng.choice([0, -1, 2**31, 2**70, 1.5, -1e308])
    if kind == 3:
        return "".join(chr(rng.randrange(0x20, 0x3000)) for _ in range(rng.randrange(12)))
    if kind == 4:
        return rng.choice(["user", "system", "robot", "", "pipeline", "gpt-4o"])
    if kind == 5:
        return "\ud800" if rng.random() < 0.1 else "x"
    if kind == 6:
        return [junk_value(rng, depth + 1) for _ in range(rng.randrange(4))]
    keys = ["role", "content", "texts", "messages", "budget", "model", "id", "strategy",
            "toolCalls", "docs", "reserveOutput", "class", "jsonrpc", "sessionId", "format",
            "request", "item", "rule", "mode", "ruleId", "promptTokens", "estimatedTokens",
            "messageId", "conversationId", "keepRecent", "systemPrompt", "system", "limit"]
    return {rng.choice(keys): junk_value(rng, depth + 1) for _ in range(rng.randrange(5))}


def junk_params(rng: random.Random):
    roll = rng.random()
    if roll < 0.4:  # plausible shapes with wrong pieces
        message = {"role": junk_value(rng) if rng.random() < 0.5 else "user",
                   "content": junk_value(rng) if rng.random() < 0.5 else "hi"}
        session = rng.choice(SESSION_IDS) if rng.random() < 0.8 else junk_value(rng)
        return rng.choice([
            {"texts": [junk_value(rng) for _ in range(rng.randrange(3))]},
            {"messages": [message], "budget": junk_value(rng)},
            {"messages": message},
            {"texts": ["ok"], "model": junk_value(rng)},
            {"sessionId": session, "messages": [message]},
            {"sessionId": session, "promptTokens": junk_value(rng),
             "estimatedTokens": junk_value(rng)},
            {"sessionId": session, "mode": junk_value(rng), "budget": junk_value(rng)},
            {"sessionId": session, "rule": {"text": junk_value(rng), "weight": junk_value(rng)}},
            {"sessionId": session, "item": {"kind": junk_value(rng), "content": "x"}},
            {"format": junk_value(rng), "messages": [message], "request": junk_value(rng)},
        ])
    return junk_value(rng)


def envelope(rng: random.Random, n: int) -> dict:
    msg: dict = {"jsonrpc": "2.0" if rng.random() < 0.85 else junk_value(rng)}
    if rng.random() < 0.9:
        msg["id"] = n if rng.random() < 0.8 else junk_value(rng)
    if rng.random() < 0.95:
        msg["method"] = rng.choice(METHODS) if rng.random() < 0.9 else junk_value(rng)
    if rng.random() < 0.9:
        msg["params"] = junk_params(rng)
    return msg


def body_of(rng: random.Random, n: int) -> bytes:
    roll = rng.random()
    if roll < 0.6:
        return json.dumps(envelope(rng, n)).encode("utf-8", "surrogatepass")
    if roll < 0.7:
        good = json.dumps(envelope(rng, n)).encode()
        return good[: rng.randrange(len(good))]  # truncated JSON
    if roll < 0.8:
        return bytes(rng.randrange(256) for _ in range(rng.randrange(1, 64)))
    if roll < 0.85:
        return b"[" * rng.randrange(1, 5000)
    return json.dumps(junk_value(rng)).encode("utf-8", "surrogatepass")


def framed(rng: random.Random, n: int) -> bytes:
    body = body_of(rng, n)
    roll = rng.random()
    if roll < 0.75:
        return b"Content-Length: %d\r\n\r\n" % len(body) + body
    if roll < 0.8:  # declared shorter: the rest is garbage before the next header
        return b"Content-Length: %d\r\n\r\n" % max(0, len(body) - rng.randrange(1, 8)) + body
    if roll < 0.85:  # declared longer: eats the start of the next message
        return b"Content-Length: %d\r\n\r\n" % (len(body) + rng.randrange(1, 30)) + body
    if roll < 0.9:
        return rng.choice([b"Content-Length: zz\r\n\r\n", b"content-length:\r\n\r\n",
                           b"Content-Length: 1e3\r\n\r\n", b"\r\n\r\n\r\n"]) + body
    if roll < 0.95:
        return b"X-Junk: " + bytes(rng.randrange(32, 127) for _ in range(20)) + b"\r\n" + \
            b"Content-Length: %d\r\n\r\n" % len(body) + body
    return body + b"\r\n"  # no header at all


def fuzz_stream(seed: int = 20261129) -> list[bytes]:
    rng = random.Random(seed)
    return [framed(rng, n) for n in range(MESSAGES)]


def test_the_fuzz_stream_is_deterministic_and_large():
    first, second = fuzz_stream(), fuzz_stream()
    assert first == second and len(first) >= 10_000


async def test_daemon_survives_ten_thousand_malformed_messages():
    daemon = await RawDaemon.start()
    try:
        await daemon.initialize()
        opened = await daemon.request("open", "ctx/session/open", {"sessionId": "fuzzed"})
        assert "result" in opened, opened
        stream = fuzz_stream()
        for start in range(0, len(stream), BATCH):
            await daemon.send_raw(b"".join(stream[start:start + BATCH]))
        # a message the fuzz declared too long may still be waiting for bytes: fill it with
        # blanks, which the header reader skips
        await daemon.send_raw(b" " * 1024 + b"\r\n")
        text = "the daemon still counts"
        reply = await daemon.request("probe", "ctx/count", {"texts": [text]})
        expected = counter_for("gpt-4o").count(text)
        assert reply.get("result") == {"tokens": [expected], "total": expected}, reply
        assert daemon.proc.returncode is None
        answered = len(daemon.responses) + len(daemon.unmatched)
        assert answered >= MESSAGES // 2, f"only {answered} errors answered"
        assert all("error" in r for r in daemon.unmatched)
        # junk is the client's fault: no answer may be an internal error (a bug of ours)
        internal = [r for r in [*daemon.responses.values(), *daemon.unmatched]
                    if isinstance(r, dict) and (r.get("error") or {}).get("code") == -32603]
        assert internal == [], internal[:3]
        # and the session the fuzz hammered still answers (reopened: the fuzz may have closed it)
        await daemon.request("reopen", "ctx/session/open", {"sessionId": "fuzzed"})
        assembled = await daemon.request("after", "ctx/assemble", {"sessionId": "fuzzed"})
        assert "result" in assembled, assembled
    finally:
        assert await daemon.close() == 0
