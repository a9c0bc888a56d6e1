"""Every ctx/assemble result whose messages hold a summary says so: `summary` names what it
replaced (how many messages, the first and last ids, the non-text parts not sent), and the
notice says it, on the assembly that wrote it and on every one after. The summary quotes the
newest request it replaced by whole lines, naming the lines it cut.

Before (probe71 s6, s10): the second assembly of an unchanged session opened with "[Summary of
1 earlier messages...]" and answered compacted false, notice null, dropped and truncated empty;
a screenshot the summary replaced was named nowhere in the result. The request's quote was cut
by characters mid-line: "def f20(x):\\n    r\\n[... 8,580 characters omitted ...]\\nrn x + 293".
The real daemon over stdio."""

from __future__ import annotations

import itertools
import json
import re

import pytest
from conftest import WORLD, RawDaemon, hermetic_env, make_repo, result
from images import png_whole as png

pytestmark = pytest.mark.e2e
_worlds = itertools.count()
CODE = ("Here is the code:\n```python\n"
        + "\n".join(f"def f{k}(x):\n    return x + {k}" for k in range(300))
        + "\n```\nWhat is wrong in the screenshot?")


async def twice(messages: list[dict], budget: int) -> tuple[dict, dict]:
    """Two assemblies of one unchanged session (OpenAI format, gpt-4o)."""
    base = WORLD / f"summary-said-{next(_worlds)}"
    env, root = hermetic_env(base), make_repo(base / "repo")
    daemon = await RawDaemon.start(env=env)
    try:
        await daemon.initialize(root)
        await result(daemon, "ctx/session/open", {"sessionId": "s", "model": "gpt-4o",
                                                  "budget": budget})
        await result(daemon, "ctx/session/append", {"sessionId": "s", "format": "openai",
                                                    "messages": messages})
        first = await result(daemon, "ctx/assemble", {"sessionId": "s", "format": "openai"})
        again = await result(daemon, "ctx/assemble", {"sessionId": "s", "format": "openai"})
        return first, again
    finally:
        assert await daemon.close() == 0


def chat_with_screenshot() -> list[dict]:
    image = {"type": "image_url", "image_url": {"url": "data:image/png;base64," + png(1024, 768)}}
    later = []
    for k in range(3):
        later += [{"role": "user", "content": f"Now check module {k}: " + "the parser " * 300},
                  {"role": "assistant", "content": f"Module {k} is fine: " + "it parses " * 300}]
    return [{"role": "user", "content": [{"type": "text", "text": CODE}, image]},
            {"role": "assistant", "content": "It looks fine."}, *later,
            {"role": "user", "content": "Are you sure? Look again at the screenshot."}]


async def test_a_summary_is_said_in_every_result_that_holds_it_with_its_screenshot():
    first, again = await twice(chat_with_screenshot(), 4000)
    for out in (first, again):
        sent = json.dumps(out["messages"])
        assert "[Summary of" in sent
        said = out["summary"]
        assert said["replaced"] >= 1 and said["messageId"].startswith("ctx:summary:")
        assert said["firstId"] and said["lastId"]
        assert any("image 1024x768" in p for p in said["parts"]), said
        assert "summar" in out["notice"] and "image 1024x768" in out["notice"], out["notice"]
        assert f"{said['replaced']} " in out["notice"]
    assert first["compacted"] and not again["compacted"]
    assert again["messages"] == first["messages"]


async def test_the_summary_quotes_the_request_by_whole_lines():
    steps = []
    for k in range(12):
        steps += [
            {"role": "assistant", "content": None, "tool_calls": [
                {"id": f"c{k}", "type": "function",
                 "function": {"name": "read", "arguments": json.dumps({"path": f"m{k}.py"})}}]},
            {"role": "tool", "tool_call_id": f"c{k}",
             "content": "\n".join(f"m{k}.py:{j}: value_{k}_{j} = compute({j})"
                                  for j in range(120))}]
    request = CODE.replace("What is wrong in the screenshot?", "Fix what is wrong in them.")
    first, _ = await twice([{"role": "user", "content": request}, *steps], 3000)
    summary = next(m["content"] for m in first["messages"]
                   if isinstance(m["content"], str) and "[Summary of" in m["content"])
    quote = summary.split("The user's latest request in them (verbatim):\n", 1)[1]
    quote = quote.split("\n\n", 1)[0]
    assert "characters omitted" not in quote
    said = re.search(r"\[\.\.\. lines (\d+)-(\d+) of (\d+) cut \.\.\.\]", quote)
    assert said, quote
    lines = request.split("\n")
    assert int(said[3]) == len(lines)
    kept = [line for line in quote.split("\n") if line != said[0]]
    assert kept and all(line in lines for line in kept), kept
    assert kept[-1] == "Fix what is wrong in them."
