"""A session's newest question stays a message of its own, with its screenshot, when a tool
output after it can be outlined to make room: the plan counts that output at the least the
window outlines it to, not at up to half the history share.

Before (probe72 s6c, s5, s9): 8 rounds (a 300-word question, a call, a 200-line output, a
reply), then a question with a screenshot, a call and its 200-line output. OpenAI at a
budget of 7,000 sent 5,225 tokens, the question only inside the summary, its screenshot not
sent (named in the summary's parts alone, `dropped` and `truncated` empty); Anthropic with
thinking at 9,000 sent 6,412. Appended one message at a time with an assembly after each, the
same session kept the question with its screenshot (8,979 tokens): the fill order decided.
ctx/trim and ctx/prepare kept both. The real daemon over stdio."""

from __future__ import annotations

import itertools
import json

import pytest
from conftest import WORLD, RawDaemon, hermetic_env, make_repo, result
from images import png_whole

pytestmark = pytest.mark.e2e
_worlds = itertools.count()
QUESTION = "Final: why does this crash? " + " ".join(f"word99_{k}" for k in range(300))




DATA = png_whole(1024, 768)


def output(r: int) -> str:
    return "\n".join(f"line {k}: value = compute({k}, {r})" for k in range(200))


def asked(r: int) -> str:
    return f"Question {r}: " + " ".join(f"word{r}_{k}" for k in range(300))


def openai_session() -> list[dict]:
    msgs: list[dict] = []
    for r, call in [*((r, f"c{r}") for r in range(8)), (99, "cL")]:
        image = {"type": "image_url", "image_url": {"url": "data:image/png;base64," + DATA}}
        msgs += [{"role": "user", "content": [{"type": "text", "text": QUESTION}, image]
                  if r == 99 else asked(r)},
                 {"role": "assistant", "content": None, "tool_calls": [
                     {"id": call, "type": "function",
                      "function": {"name": "read", "arguments": "{}"}}]},
                 {"role": "tool", "tool_call_id": call, "content": output(r)}]
        if r != 99:
            msgs.append({"role": "assistant", "content": f"done {r}"})
    return msgs


def anthropic_session() -> list[dict]:
    msgs: list[dict] = []
    image = {"type": "image", "source": {"type": "base64", "media_type": "image/png",
                                         "data": DATA}}
    for r, call in [*((r, f"tu{r}") for r in range(8)), (99, "tuL")]:
        thinking = {"type": "thinking", "signature": f"sig{r}",
                    "thinking": " ".join(f"step{r}.{k} checks what the tool said"
                                         for k in range(6))}
        msgs += [{"role": "user", "content": [image, {"type": "text",
                                                      "text": QUESTION if r == 99 else asked(r)}]},
                 {"role": "assistant", "content": [thinking, {"type": "tool_use", "id": call,
                                                              "name": "read", "input": {}}]},
                 {"role": "user", "content": [{"type": "tool_result", "tool_use_id": call,
                                               "content": output(r)}]}]
        if r != 99:
            msgs.append({"role": "assistant", "content": [{"type": "text",
                                                           "text": f"done {r}"}]})
    return msgs


def question_of_its_own(out: dict) -> dict | None:
    """The user message sent that holds the question (the summary's quote of it is none)."""
    return next((m for m in out["messages"] if m["role"] == "user"
                 and "Final: why does this crash?" in json.dumps(m)
                 and "[Summary of" not in json.dumps(m)), None)


def check(out: dict, budget: int) -> None:
    own = question_of_its_own(out)
    assert own is not None, [json.dumps(m)[:80] for m in out["messages"]]
    assert DATA in json.dumps(own), "the question's screenshot is not sent beside it"
    summarized = "[Summary of" in json.dumps(out["messages"])
    assert not summarized or out["tokens"]["total"] >= 0.85 * budget, out["tokens"]


async def started(name: str) -> RawDaemon:
    base = WORLD / f"question-beside-outline-{name}-{next(_worlds)}"
    env, root = hermetic_env(base), make_repo(base / "repo")
    daemon = await RawDaemon.start(env=env)
    await daemon.initialize(root)
    return daemon


@pytest.mark.parametrize(("fmt", "model", "messages", "budgets"), [
    ("openai", "gpt-4o", openai_session, (7000, 6000, 5000, 4000)),
    ("anthropic", "claude-sonnet-4-5", anthropic_session, (9000, 7000))])
async def test_the_question_and_its_screenshot_stay_beside_an_outlined_output(
        fmt, model, messages, budgets):
    daemon = await started(fmt)
    try:
        await result(daemon, "ctx/session/open", {"sessionId": "s", "model": model})
        await result(daemon, "ctx/session/append", {"sessionId": "s", "format": fmt,
                                                    "messages": messages()})
        for budget in budgets:
            out = await result(daemon, "ctx/assemble", {"sessionId": "s", "format": fmt,
                                                        "budget": budget})
            check(out, budget)
    finally:
        assert await daemon.close() == 0


async def test_one_append_and_one_message_at_a_time_keep_the_question_alike():
    daemon = await started("fill-order")
    msgs = anthropic_session()
    try:
        for sid in ("whole", "steps"):
            await result(daemon, "ctx/session/open", {"sessionId": sid, "budget": 9000,
                                                      "model": "claude-sonnet-4-5"})
        await result(daemon, "ctx/session/append", {"sessionId": "whole",
                                                     "format": "anthropic", "messages": msgs})
        for msg in msgs:
            await result(daemon, "ctx/session/append", {"sessionId": "steps",
                                                         "format": "anthropic",
                                                         "messages": [msg]})
            if msg["role"] == "user":
                await result(daemon, "ctx/assemble", {"sessionId": "steps",
                                                      "format": "anthropic"})
        for sid in ("whole", "steps"):
            out = await result(daemon, "ctx/assemble", {"sessionId": sid,
                                                        "format": "anthropic"})
            check(out, 9000)
    finally:
        assert await daemon.close() == 0
