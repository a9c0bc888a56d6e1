"""The usage the gateway reads on the way through: both providers' JSON answers and SSE
streams, whatever the chunk boundaries, cache reads and writes included."""

from __future__ import annotations

import json

import pytest
from providers.standin_answers import (
    Reply,
    Usage,
    anthropic_events,
    anthropic_message,
    openai_chunks,
    openai_completion,
)

from ctxlayer.gateway.usage import Refusal, StreamUsage, from_answer, refusal
from ctxlayer.gateway.usage import Usage as Read

SENT = Usage(prompt=1200, completion=40, cache_read=1000, cache_write=150)


def test_openai_answer():
    body = json.dumps(openai_completion("r1", "gpt-4o", 0, Reply("hi"), SENT)).encode()
    assert from_answer("openai", body) == Read(prompt_tokens=1200, completion_tokens=40,
                                               cache_read_tokens=1000, answer="hi")


def test_anthropic_answer_counts_the_cache_into_the_prompt():
    body = json.dumps(anthropic_message("r1", "claude-sonnet-4", Reply("hi"), SENT)).encode()
    assert from_answer("anthropic", body) == Read(
        prompt_tokens=1200, completion_tokens=40, cache_read_tokens=1000,
        cache_write_tokens=150, answer="hi")


def test_a_whole_answers_head_is_its_text_in_each_format_and_empty_in_an_odd_shape():
    """The first words of a non-streamed answer, read as the providers' table reads an
    answer's text (`Provider.answer_text`); a shape it cannot read gives no words, and the
    usage is still read."""
    usage = {"input_tokens": 10, "output_tokens": 2}
    responses = {"output": [{"type": "reasoning", "summary": []}, {"type": "message", "content": [
        {"type": "output_text", "text": "done."}]}], "usage": usage}
    assert from_answer("responses", json.dumps(responses).encode()).answer == "done."
    odd = {"choices": ["not an object"], "usage": {"prompt_tokens": 10, "completion_tokens": 2}}
    got = from_answer("openai", json.dumps(odd).encode())
    assert got is not None and got.prompt_tokens == 10 and got.answer == ""
    odd = {"content": "not a list of blocks", "usage": usage}
    got = from_answer("anthropic", json.dumps(odd).encode())
    assert got is not None and got.answer == ""


def test_no_usage_is_none():
    assert from_answer("openai", b'{"choices": []}') is None
    assert from_answer("openai", b"not json") is None
    reader = StreamUsage("openai")
    for event in openai_chunks("r", "gpt-4o", 0, Reply("hello there"), SENT, False):
        reader.feed(event)
    assert reader.usage() is None  # usage only with stream_options.include_usage


def test_an_answer_nested_past_the_decoders_depth_reads_as_none():
    """What an upstream sends is read for its usage and refusals, never trusted to be
    shallow: nested past the JSON decoder's depth it reads as no usage, no refusal, and the
    stream it was in goes on being read."""
    deep = b'{"error": {"x": ' + b"[" * 100_000 + b"]" * 100_000 + b"}}"
    assert from_answer("openai", deep) is None
    assert refusal("openai", 400, deep) is None
    reader = StreamUsage("openai")
    reader.feed(b"data: " + deep + b"\n\n")
    for event in openai_chunks("r", "gpt-4o", 0, Reply("hello there"), SENT, True):
        reader.feed(event)
    assert reader.usage() is not None


@pytest.mark.parametrize("size", [1, 7, 64, 100_000])
def test_streams_read_across_any_chunk_boundaries(size):
    streams = {
        "openai": b"".join(openai_chunks("r", "gpt-4o", 0, Reply("hello there"), SENT, True)),
        "anthropic": b"".join(anthropic_events("r", "claude-sonnet-4",
                                               Reply(tool_name="f", tool_arguments={"a": 1}),
                                               SENT)),
    }
    for fmt, data in streams.items():
        data = data.replace(b"\n", b"\r\n") if size == 7 else data  # CRLF framing too
        reader = StreamUsage(fmt)
        for i in range(0, len(data), size):
            reader.feed(data[i:i + size])
        got = reader.usage()
        assert got is not None and got.prompt_tokens == 1200 and got.completion_tokens == 40
        assert got.cache_read_tokens == 1000
        assert got.answer == ("hello there" if fmt == "openai" else "")  # a tool call: no text


def test_a_streams_answer_is_read_for_its_first_words_only():
    """The head a helper of the chat may quote (aider's editor is asked its architect's
    answer): HEAD characters, the text deltas after it left unparsed."""
    from ctxlayer.gateway.answers import HEAD
    long = " ".join(f"Step {i}: change the adder." for i in range(200))
    for fmt, events in (
            ("openai", openai_chunks("r", "gpt-4o", 0, Reply(long), SENT, True)),
            ("anthropic", anthropic_events("r", "claude-sonnet-4", Reply(long), SENT))):
        reader = StreamUsage(fmt)
        for event in events:
            reader.feed(event)
        got = reader.usage()
        assert got is not None and got.answer == long[:HEAD] and got.completion_tokens == 40


# the providers' refusals of a prompt over the window, as they word them
TOO_LONG = [
    ("anthropic", {"type": "error", "error": {"type": "invalid_request_error",
     "message": "prompt is too long: 201234 tokens > 200000 maximum"}}, 201234),
    ("anthropic", {"type": "error", "error": {"type": "invalid_request_error",
     "message": "input length and `max_tokens` exceed context limit: 190000 + 21333 > 200000, "
                "decrease input length or `max_tokens` and try again"}}, 190000),
    ("openai", {"error": {"message": "This model's maximum context length is 128000 tokens. "
     "However, you requested 130500 tokens (129500 in the messages, 1000 in the completion). "
     "Please reduce the length of the messages or completion.", "type": "invalid_request_error",
     "param": "messages", "code": "context_length_exceeded"}}, 129500),
    ("openai", {"error": {"message": "This model's maximum context length is 128000 tokens. "
     "However, your messages resulted in 130000 tokens. Please reduce the length of the "
     "messages.", "code": "context_length_exceeded"}}, 130000),
    # the Responses API does not say its count: nothing to calibrate with
    ("responses", {"error": {"message": "Your input exceeds the context window of this model. "
     "Please adjust your input and try again.", "code": "context_length_exceeded"}}, None),
    ("openai", {"error": {"message": "Rate limit reached", "code": "rate_limit_exceeded"}}, None),
    # OpenRouter, vLLM and OpenAI's older wording
    ("openai", {"error": {"message": "This endpoint's maximum context length is 16384 tokens. "
     "However, you requested about 94307 tokens (94307 of text input). Please reduce the length "
     "of either one, or use the \"middle-out\" transform to compress your prompt "
     "automatically.", "code": 400}}, 94307),
    ("openai", {"error": {"message": "This model's maximum context length is 32768 tokens. "
     "However, your request has 32836 input tokens. Please reduce the length of the input "
     "messages.", "type": "BadRequestError", "code": 400}}, 32836),
    ("openai", {"error": {"message": "This model's maximum context length is 8191 tokens, however "
     "you requested 8238 tokens (8238 in your prompt; 0 for the completion). Please reduce your "
     "prompt; or completion length.", "code": None}}, 8238),
    # vLLM without a breakdown: the total asked is not the prompt's count
    ("openai", {"error": {"message": "This model's maximum context length is 131072 tokens. "
     "However, you requested 351430 tokens. Please reduce the length of the messages or "
     "completion.", "code": 400}}, None),
    # llama.cpp's Anthropic-compatible route: its current words, in Anthropic's error shape
    ("anthropic", {"type": "error", "error": {"type": "invalid_request_error", "message":
     "request (6009 tokens) exceeds the available context size (4096 tokens), try increasing "
     "it"}}, 6009),
    # vLLM's older builds: the error object not nested under `error`
    ("openai", {"object": "error", "message": "This model's maximum context length is 4096 "
     "tokens. However, you requested 5000 tokens (4800 in the messages, 200 in the "
     "completion). Please reduce the length of the messages or completion.",
     "type": "BadRequestError", "param": None, "code": 400}, 4800),
    # an OpenAI-compatible server's Responses route, worded as its Chat Completions
    ("responses", {"error": {"message": "This model's maximum context length is 32768 tokens. "
     "However, your request has 32836 input tokens.", "code": 400}}, 32836),
    # llama.cpp's server, an OpenAI-compatible upstream: the count and its context as fields
    ("openai", {"error": {"code": 400, "message": "the request exceeds the available context "
     "size, try increasing it", "type": "exceed_context_size_error", "n_prompt_tokens": 14429,
     "n_ctx": 8192}}, 14429),
    # LM Studio's server: its `error` is the words alone, in three wordings over its versions
    ("openai", {"error": "The number of tokens to keep from the initial prompt is greater than "
     "the context length (n_keep: 13055>= n_ctx: 4096). Try to load the model with a larger "
     "context length, or provide a shorter input."}, 13055),
    ("openai", {"error": "Trying to keep the first 15857 tokens when context the overflows. "
     "However, the model is loaded with context length of only 7866 tokens, which is not "
     "enough. Try to load the model with a larger context length, or provide a shorter "
     "input."}, 15857),
    ("openai", {"error": "Error: Input length 6491 exceeds context length 1500"}, 6491),
    ("openai", {"error": "Model not loaded"}, None),
]
#: the window each of those states, in order
WINDOWS = [200000, 200000, 128000, 128000, None, None, 16384, 32768, 8191, 131072, 4096, 4096,
           32768, 8192, 4096, 7866, 1500, None]


@pytest.mark.parametrize(("fmt", "answer", "count"), TOO_LONG)
def test_a_refusal_as_over_the_window_says_the_providers_count(fmt, answer, count):
    body = json.dumps(answer).encode()
    said = refusal(fmt, 400, body)
    window = WINDOWS[TOO_LONG.index((fmt, answer, count))]
    assert (said.count if said else None) == count
    assert (said.window if said else None) == window
    assert refusal(fmt, 429, body) is None  # only a 400 refuses a prompt
    assert refusal(fmt, 400, b"<html>bad gateway</html>") is None
    # OpenAI's code and llama.cpp's type say it whether or not the message counts (Anthropic's
    # type does not): a refusal with neither count nor window nor such a code is none
    error = answer.get("error", answer)
    assert (said is not None) == (count is not None or window is not None or (
        isinstance(error, dict) and error.get("code") == "context_length_exceeded"))


#: LM Studio's refusals that say neither the count nor the window: the words of a stream's
#: error event (thane-ai-agent's pull request 1395), as an `error` string or object, and of its
#: MLX engine (its bug tracker, issue 2339)
UNSAID = [
    {"error": {"message": "The number of tokens to keep from the initial prompt is greater than "
               "the context length. Try to load the model with a larger context length, or "
               "provide a shorter input"}, "message": "The number of tokens to keep ..."},
    {"error": "The number of tokens to keep from the initial prompt is greater than the context "
              "length. Try to load the model with a larger context length."},
    {"error": {"message": "Context size has been exceeded."}},
]


@pytest.mark.parametrize("answer", UNSAID)
def test_lm_studio_refusals_that_say_no_count_are_refusals_all_the_same(answer):
    """Taken as over the window by an unsaid amount (the request fitted again UNSTATED_OVER
    smaller), also from a 200 whose body is the error alone (LM Studio 0.4.21 answers so: its
    bug tracker, issue 2322); never from a 200 that answers."""
    body = json.dumps(answer).encode()
    unsaid = Refusal(None, None, lm_studio=True)  # LM Studio's API says its loaded context
    assert refusal("openai", 400, body) == unsaid
    assert refusal("openai", 200, body) == unsaid
    answered = json.dumps({**answer, "choices": [{"index": 0, "message": {
        "role": "assistant", "content": "the error, quoted"}}]}).encode()
    assert refusal("openai", 200, answered) is None
    assert refusal("openai", 200, json.dumps({"error": "Model not loaded"}).encode()) is None


def test_a_zero_after_a_count_keeps_the_count_and_a_count_after_a_zero_replaces_it():
    """A stream's closing `input_tokens: 0` (envoyproxy/ai-gateway PR 1631) is no count of
    the prompt; a server that says 0 first and the count at the close is read alike."""
    def read(start: dict, close: dict) -> Read | None:
        reader = StreamUsage("anthropic")
        reader.feed(b"event: message_start\ndata: " + json.dumps(
            {"type": "message_start", "message": {"usage": start}}).encode() + b"\n\n")
        reader.feed(b"event: message_delta\ndata: " + json.dumps(
            {"type": "message_delta", "usage": close}).encode() + b"\n\n")
        return reader.usage()

    for start, close in (({"input_tokens": 3000, "output_tokens": 1},
                          {"input_tokens": 0, "output_tokens": 5}),
                         ({"input_tokens": 0}, {"input_tokens": 3000, "output_tokens": 5})):
        got = read(start, close)
        assert got is not None and (got.prompt_tokens, got.completion_tokens) == (3000, 5)
