"""ctx/count answers in the client's terms: one entry of `tokens` per message (input item) it
sent, in order, whatever the engine reads as several (an Anthropic message's tool results) or
as one (a Responses run of calls); the system prompt a format keeps apart is `systemTokens`.
Before, `tokens` listed the engine's messages: 5 entries for 3 Anthropic messages, 4 for 5
Responses items, and a leading one for `system`."""

from __future__ import annotations

import pytest
from conftest import RawDaemon, result

from ctxlayer.core.tokens import OPENAI_FORMAT

pytestmark = pytest.mark.e2e

LONG = "and then? " * 200  # one message far costlier than the others: where it lands is seen

ANTHROPIC = [
    {"role": "user", "content": "hi"},
    {"role": "assistant", "content": [
        {"type": "text", "text": "call"},
        {"type": "tool_use", "id": "t1", "name": "f", "input": {}},
        {"type": "tool_use", "id": "t2", "name": "f", "input": {}}]},
    {"role": "user", "content": [
        {"type": "tool_result", "tool_use_id": "t1", "content": "r1"},
        {"type": "tool_result", "tool_use_id": "t2", "content": "r2"},
        {"type": "text", "text": LONG}]},
]
RESPONSES = [
    {"type": "message", "role": "user", "content": "hi"},
    {"type": "function_call", "call_id": "c1", "name": "f", "arguments": "{}"},
    {"type": "function_call", "call_id": "c2", "name": "f", "arguments": "{}"},
    {"type": "function_call_output", "call_id": "c1", "output": LONG},
    {"type": "function_call_output", "call_id": "c2", "output": "r2"},
]
OPENAI = [
    {"role": "user", "content": "hi"},
    {"role": "assistant", "content": None, "tool_calls": [
        {"id": "c1", "type": "function", "function": {"name": "f", "arguments": "{}"}}]},
    {"role": "tool", "tool_call_id": "c1", "content": LONG},
]
CASES = [("anthropic", ANTHROPIC, "You are terse.", 2),
         ("anthropic", ANTHROPIC, [{"type": "text", "text": "You are"},
                                   {"type": "text", "text": "terse."}], 2),
         ("responses", RESPONSES, "You are terse.", 3),
         ("openai", OPENAI, None, 2)]


@pytest.mark.parametrize(("fmt", "messages", "system", "long_at"), CASES)
async def test_one_entry_per_message_sent(raw_daemon: RawDaemon, fmt, messages, system,
                                          long_at):
    params = {"format": fmt, "model": "gpt-4o", "messages": messages}
    if system is not None:
        params["system"] = system
    counted = await result(raw_daemon, "ctx/count", params)
    tokens = counted["tokens"]
    assert len(tokens) == len(messages), counted
    assert max(range(len(tokens)), key=tokens.__getitem__) == long_at, counted
    assert all(n > 0 for n in tokens), counted
    # the parts add up: the entries, the system prompt apart, the reply's priming
    apart = counted.get("systemTokens", 0) + counted.get("replyPriming", 0)
    assert sum(tokens) + apart == counted["total"], counted
    assert ("systemTokens" in counted) == (system is not None), counted
    if system is not None:
        assert counted["systemTokens"] > 0
    # the total is what a trim of the same request counts (it was right, and stays so)
    trimmed = await result(raw_daemon, "ctx/trim", {**params, "budget": 100_000})
    assert trimmed["tokens"] == counted["total"]


async def test_a_run_of_calls_is_an_entry_per_call(raw_daemon: RawDaemon):
    """Two like calls in one run: the first carries the run's framing, the second what it
    adds alone, and the run's message costs both."""
    counted = await result(raw_daemon, "ctx/count", {
        "format": "responses", "model": "gpt-4o", "messages": RESPONSES})
    first, second = counted["tokens"][1:3]
    assert first - second == OPENAI_FORMAT.per_message, counted  # once for the run


ENCRYPTED = "gAAAAB" + "QUJDREVGR0hJSktMTU5PUFFSU1RVVldYWVo" * 60


@pytest.mark.parametrize("model", ["o4-mini", "gpt-4o"])
async def test_an_earlier_turns_reasoning_in_a_run_costs_what_the_model_reads(
        raw_daemon: RawDaemon, model):
    """The model named by the param, not in the body: the layout read the reasoning by the
    body's rule (none: every turn read), costed it whole and left the message before it
    -382. And texts joined into one message cost less than apart: never an entry under 0."""
    items = [
        {"type": "message", "role": "user", "content": "Fix the failing test in utils.py"},
        {"type": "message", "role": "assistant", "content": [
            {"type": "output_text", "text": "Let me look at the file first.", "annotations": []}]},
        {"type": "reasoning", "id": "rs_1", "summary": [], "encrypted_content": ENCRYPTED},
        {"type": "function_call", "call_id": "call_1", "name": "shell",
         "arguments": '{"cmd": "cat utils.py"}'},
        {"type": "function_call_output", "call_id": "call_1", "output": "def add(a, b): ..."},
        *({"type": "message", "role": "assistant", "content": [
            {"type": "output_text", "text": "\n\nx\n\n", "annotations": []}]}
          for _ in range(12)),
        {"type": "message", "role": "user", "content": "Great, please fix it."}]
    counted = await result(raw_daemon, "ctx/count", {
        "format": "responses", "model": model, "messages": items})
    assert min(counted["tokens"]) >= 0, counted
    assert counted["tokens"][2] < 50, counted  # an earlier turn's reasoning, not read again
    assert sum(counted["tokens"]) + counted["replyPriming"] == counted["total"]


async def test_texts_come_first_then_the_messages(raw_daemon: RawDaemon):
    counted = await result(raw_daemon, "ctx/count", {
        "format": "anthropic", "model": "gpt-4o", "texts": ["one two three"],
        "messages": ANTHROPIC})
    alone = await result(raw_daemon, "ctx/count", {
        "format": "anthropic", "model": "gpt-4o", "messages": ANTHROPIC})
    assert counted["tokens"][1:] == alone["tokens"]
    assert len(counted["tokens"]) == 1 + len(ANTHROPIC)
    assert counted["total"] == alone["total"] + counted["tokens"][0]
