"""A local server that cuts a prompt over its context without a word (Ollama at its num_ctx,
which its OpenAI-compatible endpoint does not take from the request): it answers 200, the model
having read what fit, the oldest turns gone (a system prompt alone over it, all but its end).
The gateway sees it in the usage (the reported prompt stops growing while the prompts it sends
grow), and fits the chat's later requests to what the server reads, saying so. Before, every
request past the server's context was cut, for the whole chat."""

from __future__ import annotations

import openai
import pytest
from gateway_stack import fresh_stack, prose

from ctxlayer.gateway.learned import LearnedWindows

MODEL = "qwen2.5-coder:7b"  # 131,072 tokens in the model table
NUM_CTX = 4096  # what the server reads of a prompt
SYSTEM = "You are a careful coding assistant. " + prose("the repository map", 700)


def _openai(stack, messages: list[dict], stream: bool) -> tuple[str, str]:
    """(the answer's text, the gateway's warning) of one Chat Completions request; streamed
    as aider streams, without asking for the usage (the gateway asks it)."""
    raw = stack.openai().chat.completions.with_raw_response.create(
        model=MODEL, messages=[{"role": "system", "content": SYSTEM}, *messages],
        stream=stream)
    answer = raw.parse()
    text = ("".join(c.choices[0].delta.content or "" for c in answer if c.choices)
            if stream else answer.choices[0].message.content)
    return text, raw.headers.get("x-ctxlayer-warning", "")


def _anthropic(stack, messages: list[dict], stream: bool) -> tuple[str, str]:
    """The same on the Messages API (Ollama serves it too: Claude Code on a local model)."""
    raw = stack.anthropic().messages.with_raw_response.create(
        model=MODEL, system=SYSTEM, messages=messages, max_tokens=1024, stream=stream)
    answer = raw.parse()
    text = ("".join(e.delta.text for e in answer if e.type == "content_block_delta")
            if stream else answer.content[0].text)
    return text, raw.headers.get("x-ctxlayer-warning", "")


def _system(body: dict) -> str:
    system = body.get("system", body["messages"][0]["content"])
    return system if isinstance(system, str) else "".join(b["text"] for b in system)


@pytest.mark.parametrize(("ask", "stream"), [(_openai, False), (_openai, True),
                                             (_anthropic, True)])
def test_a_server_that_cuts_prompts_is_found_and_fitted_to(tmp_path, ask, stream):
    with fresh_stack(tmp_path, windows={MODEL: NUM_CTX}, truncating=(MODEL,)) as stack:
        messages: list[dict] = []
        warnings = []
        for turn in range(14):
            words = 100 + 47 * turn % 120  # turns of different sizes: what fits varies
            messages.append({"role": "user", "content": prose(f"question {turn}", words)})
            text, warning = ask(stack, messages, stream)
            warnings.append(warning)
            messages.append({"role": "assistant", "content": text})
        sent = [r for r in stack.standin.requests() if r["path"] in (
            "/v1/chat/completions", "/v1/messages")]
    cut = [n for n, r in enumerate(sent) if "truncated_from" in r]
    assert len(sent) == 14 and all(r["status"] == 200 for r in sent)
    # the chat outgrew the server's context: a few answers in a row were cut, then none
    assert 2 <= len(cut) <= 3 and cut == list(range(cut[0], cut[-1] + 1)), cut
    assert cut[-1] < 12
    after = sent[cut[-1] + 1:]
    assert all(r["prompt_tokens"] < NUM_CTX for r in after)
    # the system prompt is read again, whole, and the question in every request
    assert all(_system(r["body"]) == SYSTEM for r in after)
    said = "cut them at its context size without a word"
    most = max(r["prompt_tokens"] for r in sent[cut[0]:cut[-1] + 1])
    assert most <= NUM_CTX
    assert all(said in w and f"taken as {most} tokens" in w for w in warnings[cut[-1] + 1:])
    assert not any(said in w for w in warnings[:cut[-1] + 1])


def test_a_count_that_keeps_growing_is_no_cut():
    """A provider that reads less than it was sent for another reason (earlier reasoning it
    drops) reports a prompt that still grows: no window is learned; nor from two alike
    reports of prompts sent alike (a retry), nor from one that reports the uncached tokens
    only (far below half of what was sent)."""
    learned = LearnedWindows()
    reports = [(3000, 4000), (3300, 4400), (3600, 4800), (3600, 4800), (3900, 5200),
               (1200, 6000), (1100, 6600), (1200, 7200)]
    assert [learned.read("m", b, c, 100_000) for b, c in reports] == [None] * len(reports)
    assert learned.get("m") is None
    # near the window: a provider dropping thinking a rule of ours takes as read reports
    # less at a new turn while our count grows; a chat there is never shrunk for it
    near = LearnedWindows()
    assert [near.read("c", b, c, 200_000) for b, c in
            [(150_000, 170_000), (140_000, 175_000), (145_000, 180_000)]] == [None] * 3


def test_prompts_cut_at_one_size_or_by_turns_are_found():
    exact = LearnedWindows()
    assert exact.read("m", 4096, 4400, 100_000) is None
    assert exact.read("m", 4096, 4700, 100_000) == 4096
    turns = LearnedWindows()  # the oldest turns dropped: what is read varies, never grows
    assert [turns.read("m", b, c, 100_000) for b, c in
            [(3900, 4300), (4010, 4500), (3950, 4700)]] == [None, None, 4010]
    assert turns.get("m")[0] == 4010  # type: ignore[index]
    # never above the window requests are already fitted to
    other = LearnedWindows()
    other.read("n", 4096, 4400, 4000)
    assert other.read("n", 4096, 4700, 4000) is None


def test_a_system_prompt_over_what_the_server_reads_is_said_with_why(tmp_path):
    """Claude Code's or aider's system prompt alone is over what the server reads: once the
    cut is found, the request is refused by the gateway, and its error says why the budget is
    that small and what to change (before, every answer came from a prompt cut short)."""
    system = prose("a long system prompt", 2600)
    with fresh_stack(tmp_path, windows={MODEL: NUM_CTX}, truncating=(MODEL,)) as stack:
        client = stack.openai()
        messages = [{"role": "system", "content": system}]
        said = []
        for turn in range(6):
            messages.append({"role": "user", "content": prose(f"question {turn}", 100)})
            try:
                answer = client.chat.completions.create(model=MODEL, messages=messages)
            except openai.BadRequestError as err:
                said.append(str(err))
                continue
            said.append("")
            messages.append({"role": "assistant", "content": answer.choices[0].message.content})
        cut = sum("truncated_from" in r for r in stack.standin.requests())
    # a few answers read a cut prompt, then the gateway refuses each request, saying why
    answered = said.index(next(e for e in said if e))
    assert 2 <= answered == cut <= 3 and all(said[answered:]), said
    assert all("cut them at its context size" in e and "OLLAMA_CONTEXT_LENGTH" in e
               for e in said[answered:]), said
