"""A provider whose tokenizer counts a prompt above the gateway's estimate (Claude's is not
public: the model table's x1.2 is a guess) refuses a request fitted to the full budget as over
the window. The gateway takes the count the refusal states as a usage report (the chat's
calibration) and fits the request again, once: the client gets its answer, and the chat's
later requests fit. Before, the refusal went back to the client, and a retry was refused alike.
The stand-in counts every prompt of the model 15% above tiktoken here."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from gateway_stack import fresh_stack, prose

MODEL = "claude-opus-5-5"  # Claude Code's default (an older name warns in the SDK as retired)
WINDOW = 8000


def history(fill: float, model: str = MODEL) -> list[dict]:
    """A chat whose history takes about ``fill`` of the budget by the gateway's count."""
    from ctxlayer.tokenizers import counter_for

    counter, budget = counter_for(model), WINDOW - ANSWER
    messages: list[dict] = []
    turn = 0
    while sum(counter.count(m["content"]) + 8 for m in messages) < fill * budget:
        messages += [{"role": "user", "content": prose(f"question {turn}", 60)},
                     {"role": "assistant", "content": prose(f"answer {turn}", 60)}]
        turn += 1
    return messages


ANSWER = 256


def converse(messages: list[dict], turns: int, ask: Callable[[list[dict]], str]) -> None:
    """``turns`` more exchanges: a user message, then the answer ``ask`` gets for the chat."""
    for turn in range(turns):
        messages.append({"role": "user", "content": prose(f"now {turn}", 60)})
        text = ask(messages)
        assert text.startswith("stand-in")
        messages.append({"role": "assistant", "content": text})


@pytest.mark.parametrize("stream", [False, True])
def test_a_prompt_refused_as_too_long_is_fitted_again_with_the_providers_count(tmp_path, stream):
    """The chat's first request (a resumed one: nothing calibrated it) is fitted whole at 92%
    of the budget by our count, 106% by the provider's. Streamed, the refusal is a plain 400
    too: nothing went to the client before the request went again."""
    messages = history(0.92)
    with fresh_stack(tmp_path, {MODEL: WINDOW}, windows={MODEL: WINDOW},
                  counts={MODEL: 1.15}) as stack:
        client = stack.anthropic()

        def ask(chat: list[dict]) -> str:
            answer = client.messages.create(model=MODEL, max_tokens=ANSWER, messages=chat,
                                            stream=stream)
            return ("".join(e.delta.text for e in answer if e.type == "content_block_delta")
                    if stream else answer.content[0].text)
        converse(messages, 6, ask)
        sent = [r for r in stack.standin.requests() if r["path"] == "/v1/messages"]
    assert [r["status"] for r in sent] == [400] + [200] * 6
    assert "prompt is too long" in str(sent[0]["problems"]) or "over the window" in str(
        sent[0]["problems"])
    assert sent[1]["prompt_tokens"] < sent[0]["prompt_tokens"]  # fitted again, smaller
    assert all(r["prompt_tokens"] + ANSWER <= WINDOW for r in sent[1:])


def test_a_refusal_outvotes_a_calibration_many_reports_made(tmp_path):
    """Twelve turns the provider counted as we did, then it counts 30% more (the chat's mix
    changed: thinking the gateway could not see, images it costed low). The first prompt
    refused is fitted again by the refusal's count, not by the median of the twelve reports
    before it (which barely moves, so the request went again as large, and its refusal went
    back to the client), and the turns after it fit."""
    messages = history(0.92)
    with fresh_stack(tmp_path, {MODEL: WINDOW}, windows={MODEL: WINDOW}) as stack:
        client = stack.anthropic()

        def ask(chat: list[dict]) -> str:
            return client.messages.create(model=MODEL, max_tokens=ANSWER,
                                          messages=chat).content[0].text
        converse(messages, 12, ask)
        stack.standin.counts[MODEL] = 1.3
        converse(messages, 4, ask)
        sent = [r for r in stack.standin.requests() if r["path"] == "/v1/messages"]
    assert [r["status"] for r in sent] == [200] * 12 + [400] + [200] * 4
    assert all(r["prompt_tokens"] + ANSWER <= WINDOW for r in sent[13:])


RESPONSES_MODEL = "gpt-4o"


@pytest.mark.parametrize("stream", [False, True, "failed in the stream",
                                    "failed after a comment"])
def test_a_responses_refusal_without_a_count_is_fitted_again_smaller(tmp_path, stream):
    """The Responses API refuses a prompt over the window without saying its count: the
    gateway takes it as UNSTATED_OVER above the budget and fits the request again, once. The
    provider counts 10% above us here (encrypted reasoning or images estimated low). Streamed,
    it may refuse in the stream, a 200 then `response.failed` (as Codex's tests have it): the
    gateway reads the stream's opening events before it answers, and takes that as the same
    refusal (before, the failed stream went to the client). A comment before it (OpenRouter's
    `: OPENROUTER PROCESSING`) says nothing: the refusal is still read (before, the comment
    was taken for the first event, and the failed stream went to the client)."""
    items = history(0.95, RESPONSES_MODEL)
    in_stream = (RESPONSES_MODEL,) if str(stream).startswith("failed") else ()
    comment = (RESPONSES_MODEL,) if stream == "failed after a comment" else ()
    with fresh_stack(tmp_path, {RESPONSES_MODEL: WINDOW}, windows={RESPONSES_MODEL: WINDOW},
                     counts={RESPONSES_MODEL: 1.10}, failed_in_stream=in_stream,
                     processing=comment) as stack:
        client = stack.openai()

        def ask(chat: list[dict]) -> str:
            answer = client.responses.create(model=RESPONSES_MODEL, input=chat, store=False,
                                             max_output_tokens=ANSWER, stream=bool(stream))
            return ("".join(e.delta for e in answer if e.type == "response.output_text.delta")
                    if stream else answer.output_text)
        converse(items, 6, ask)
        sent = [r for r in stack.standin.requests() if r["path"] == "/v1/responses"]
    assert sent[0]["status"] == (200 if in_stream else 400)  # the stream's status: a 200
    assert "over the window" in str(sent[0]["problems"])
    assert [r["status"] for r in sent[1:]] == [200] * 6
    assert sent[1]["prompt_tokens"] < sent[0]["prompt_tokens"]  # fitted again, smaller
    assert all(r["prompt_tokens"] + ANSWER <= WINDOW for r in sent[1:])


LOCAL_MODEL = "qwen2.5-coder:7b"  # 131,072 tokens in the model table
LOCAL_WINDOW = 6000  # the context the local server was started with


@pytest.mark.parametrize("server", ["vllm", "llama.cpp", "lm studio"])
def test_a_window_the_provider_states_smaller_than_the_tables_is_used_from_then_on(
        tmp_path, server):
    """A local server started with a small context (llama.cpp's `-c`, vLLM's
    `--max-model-len`, the context LM Studio loaded the model with), which the gateway was not
    told: the chat goes whole into the table's window and is refused; the refusal states the
    window (OpenAI's "maximum context length", llama.cpp's `n_ctx`, LM Studio's "n_keep: N>=
    n_ctx: W" as its `error`, a string), and the gateway fits this request and the chat's next
    ones to it, saying so. Before, every request was refused."""
    messages = history(3.0, LOCAL_MODEL)  # three times the local window's budget
    kind = {"llama.cpp": "llama_cpp", "lm studio": "lm_studio"}
    with fresh_stack(tmp_path, windows={LOCAL_MODEL: LOCAL_WINDOW},
                     **({kind[server]: (LOCAL_MODEL,)} if server in kind else {})) as stack:
        client = stack.openai()
        warnings = []

        def ask(chat: list[dict]) -> str:
            raw = client.chat.completions.with_raw_response.create(
                model=LOCAL_MODEL, messages=chat, max_tokens=ANSWER)
            warnings.append(raw.headers.get("x-ctxlayer-warning", ""))
            return raw.parse().choices[0].message.content or ""
        converse(messages, 4, ask)
        sent = [r for r in stack.standin.requests() if r["path"] == "/v1/chat/completions"]
    assert [r["status"] for r in sent] == [400] + [200] * 4
    assert all(r["prompt_tokens"] + ANSWER <= LOCAL_WINDOW for r in sent[1:])
    assert all(f"stated a window of {LOCAL_WINDOW} tokens" in w for w in warnings), warnings


@pytest.mark.parametrize("server", ["lm_studio", "old_llama_cpp"])
def test_a_local_server_refusing_a_stream_in_it_is_fitted_again(tmp_path, server):
    """LM Studio answers a streamed prompt over the context it loaded the model with by a 200
    and an `error` event whose words give no count (thane-ai-agent's pull request 1395);
    llama.cpp's 2025 builds by a 200 and an `error:` line (its issue 16104; the OpenAI SDK
    reads an empty answer). The gateway, told a window a little larger than that context,
    reads the stream's first event before it answers, takes it as a refusal without a count
    (UNSTATED_OVER) and fits the request again: the client gets its answer, and the next
    requests fit. Before, every request got the refusal in its stream."""
    # a chat between what LM Studio takes and what the gateway was told: sent whole
    messages = history(1.04 * (LOCAL_WINDOW - ANSWER) / (WINDOW - ANSWER), LOCAL_MODEL)
    told = int(LOCAL_WINDOW * 1.08)  # [gateway] models says more than LM Studio loaded
    with fresh_stack(tmp_path, {LOCAL_MODEL: told}, windows={LOCAL_MODEL: LOCAL_WINDOW},
                     **{server: (LOCAL_MODEL,)}) as stack:
        client = stack.openai()

        def ask(chat: list[dict]) -> str:
            chunks = client.chat.completions.create(model=LOCAL_MODEL, messages=chat,
                                                    max_tokens=ANSWER, stream=True)
            return "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
        converse(messages, 4, ask)
        sent = [r for r in stack.standin.requests() if r["path"] == "/v1/chat/completions"]
    assert sent[0]["status"] == 200 and sent[0]["problems"]  # refused in the stream
    assert [(r["status"], r["problems"]) for r in sent[1:]] == [(200, [])] * 4
    assert sent[1]["prompt_tokens"] < sent[0]["prompt_tokens"]  # fitted again, smaller


def test_a_provider_refusing_without_a_count_far_above_ours_is_fitted_in_the_end(tmp_path):
    """A Responses provider that counts 2.2 times the gateway (a chat of images costed low, a
    server with another tokenizer) and refuses without a count, on a resumed chat nothing
    calibrated: each refusal takes the chat's bias a step further (REFUSED_STEP), so after a
    few refused requests the chat answers again. Before, the bias stayed at UNSTATED_OVER and
    every request was refused, for good."""
    import openai

    items = history(0.95, RESPONSES_MODEL)
    with fresh_stack(tmp_path, {RESPONSES_MODEL: WINDOW}, windows={RESPONSES_MODEL: WINDOW},
                     counts={RESPONSES_MODEL: 2.2}) as stack:
        client = stack.openai()
        answered = []
        for turn in range(6):
            items.append({"role": "user", "content": prose(f"now {turn}", 60)})
            try:
                answer = client.responses.create(model=RESPONSES_MODEL, input=items,
                                                 store=False, max_output_tokens=ANSWER)
            except openai.BadRequestError as exc:
                assert "context window" in str(exc)  # the provider's refusal, as it said it
                answered.append(False)
                continue
            items.append({"role": "assistant", "content": answer.output_text})
            answered.append(True)
    assert answered[-3:] == [True] * 3 and sum(answered) >= 3, answered


def test_lm_studio_refusing_a_stream_without_a_count_is_fitted_to_the_context_it_loaded(
        tmp_path):
    """The same error event, the gateway told nothing (the table's 131k for the model, LM
    Studio's loaded context 6,000): a 15% step could never reach it, so the gateway asks LM
    Studio's own API for the context it loaded the model with (`GET /api/v0/models`,
    `loaded_context_length`) and fits this request and the chat's next ones to it, saying so
    (the client's key goes with the question, as with the request). Before, every request of
    the chat got the error event."""
    messages = history(3.0, LOCAL_MODEL)
    with fresh_stack(tmp_path, windows={LOCAL_MODEL: LOCAL_WINDOW},
                     lm_studio=(LOCAL_MODEL,)) as stack:
        client = stack.openai()
        warnings = []

        def ask(chat: list[dict]) -> str:
            raw = client.chat.completions.with_raw_response.create(
                model=LOCAL_MODEL, messages=chat, max_tokens=ANSWER, stream=True)
            warnings.append(raw.headers.get("x-ctxlayer-warning", ""))
            return "".join(c.choices[0].delta.content or "" for c in raw.parse() if c.choices)
        converse(messages, 4, ask)
        asked = [r for r in stack.standin.requests() if r["path"] == "/api/v0/models"]
        sent = [r for r in stack.standin.requests() if r["path"] == "/v1/chat/completions"]
    assert len(asked) == 1 and asked[0]["headers"]["authorization"].startswith("Bearer ")
    assert sent[0]["problems"] and [r["problems"] for r in sent[1:]] == [[]] * 4
    assert all(r["prompt_tokens"] + ANSWER <= LOCAL_WINDOW for r in sent[1:])
    assert all(f"stated a window of {LOCAL_WINDOW} tokens" in w for w in warnings), warnings


def test_after_a_restart_a_chat_is_fitted_with_the_calibration_it_kept(tmp_path):
    """The calibration of a chat is kept in the state folder, but a chat taken up after a
    restart was fitted as if our counts were exact until its first answer: a provider that
    counts 30% more refused that first request as over the window (and the gateway fitted it
    again: a round trip more, and another cached prefix)."""
    messages = history(0.92)

    def ask_all(stack, turns: int) -> list[dict]:
        client = stack.anthropic()
        converse(messages, turns, lambda chat: client.messages.create(
            model=MODEL, max_tokens=ANSWER, messages=chat).content[0].text)
        stack.reported()
        return [r for r in stack.standin.requests() if r["path"] == "/v1/messages"]

    with fresh_stack(tmp_path, {MODEL: WINDOW}, windows={MODEL: WINDOW},
                     counts={MODEL: 1.3}) as stack:
        before = ask_all(stack, 11)
    assert [r["status"] for r in before] == [400] + [200] * 11  # the refusal calibrated it
    with fresh_stack(tmp_path, {MODEL: WINDOW}, windows={MODEL: WINDOW},
                     counts={MODEL: 1.3}) as stack:
        after = ask_all(stack, 3)
    assert [r["status"] for r in after] == [200] * 3, [r["problems"] for r in after]
    assert all(r["prompt_tokens"] + ANSWER <= WINDOW for r in after)
