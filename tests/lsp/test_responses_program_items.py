"""Responses `program` items (programmatic tool calling: a `code` and a `fingerprint` of it
that the provider checks on replay) go back byte for byte, and a `program_output`'s text, its
`result`, is counted and fitted as any call's output. The real daemon over stdio.

Before: a program's fields were read as the arguments of a call and outlined as such (at a
budget of 4,000 its `fingerprint` and `code` were cut: a request the provider refuses), and a
`program_output` cost 4 tokens whatever its `result` held (23 KB sent uncounted: 6,465 tokens
over what ctx/prepare said it sent)."""

from __future__ import annotations

import pytest
from conftest import result

pytestmark = pytest.mark.e2e

CODE = "\n".join(f"const r{i} = await tools.lookup({{ key: 'item-{i}', depth: {i} }}); "
                 f"out.push(r{i});" for i in range(60))
FINGERPRINT = "fp_" + "".join(f"{(i * 7919) % 65536:04x}" for i in range(400))
RESULT = "\n".join(f"result line {i}: the lookup of item-{i} returned value {i * 3}"
                   for i in range(400))
PROGRAM = {"type": "program", "id": "prg_1", "call_id": "call_p1", "code": CODE,
           "fingerprint": FINGERPRINT}
INPUT = [
    {"type": "message", "role": "user", "content": "look the items up"},
    PROGRAM,
    {"type": "program_output", "id": "pro_1", "call_id": "call_p1", "result": RESULT,
     "status": "completed"},
    {"type": "message", "role": "user", "content": "what did they return?"}]


async def test_a_programs_result_is_counted(own_daemon):
    counted = await result(own_daemon, "ctx/count", {
        "format": "responses", "model": "gpt-4o", "messages": INPUT})
    alone = await result(own_daemon, "ctx/count", {
        "model": "gpt-4o", "texts": [RESULT, CODE, FINGERPRINT]})
    text, code, fingerprint = alone["tokens"]
    assert counted["tokens"][2] >= text, (counted, alone)  # before: 4
    assert counted["tokens"][1] >= code + fingerprint, (counted, alone)


async def test_a_program_goes_whole_and_its_result_is_outlined_in_result(own_daemon):
    prepared = await result(own_daemon, "ctx/prepare", {
        "format": "responses", "conversationId": "program",
        "request": {"model": "gpt-4o", "input": INPUT}, "budget": 4000})
    sent = prepared["request"]["input"]
    assert [i["type"] for i in sent] == ["message", "program", "program_output", "message"]
    assert sent[1] == PROGRAM  # its code and fingerprint byte for byte
    output = sent[2]
    assert set(output) == {"type", "id", "call_id", "result", "status"}, output
    assert len(output["result"]) < len(RESULT) and output["result"].startswith("result line 0")
    [entry] = prepared["truncated"]
    assert entry["summary"].startswith("tool result of call_p1"), entry
    # what it says it sends is what a count of the request sent says
    again = await result(own_daemon, "ctx/count", {
        "format": "responses", "model": "gpt-4o", "messages": sent})
    assert prepared["tokens"] == again["total"] <= 4000, (prepared["tokens"], again)


async def test_a_program_too_long_for_the_budget_goes_with_its_output(own_daemon):
    prepared = await result(own_daemon, "ctx/prepare", {
        "format": "responses", "conversationId": "program-small",
        "request": {"model": "gpt-4o", "input": INPUT}, "budget": 1500})
    sent = prepared["request"]["input"]
    # before: sent with its code and fingerprint outlined
    assert [i for i in sent if i.get("type") == "program"] in ([], [PROGRAM]), sent
    assert all(i.get("type") not in ("program", "program_output") for i in sent), sent
    said = " ".join(e["summary"] for e in prepared["dropped"] + prepared["truncated"])
    assert "program" in said and "call_p1" in said, prepared
