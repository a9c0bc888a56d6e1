"""A stream that opens with a refusal of the prompt as over the window (`first_refusal`): LM
Studio's 200 and `error` event, the Responses API's `response.failed` after its opening
events. Read before the client gets a status, so that the gateway can fit the request again
(tests/gateway/test_provider_counts_more.py drives it end to end); any other stream goes to
the client as it came."""

from __future__ import annotations

import json

from ctxlayer.gateway.forward import first_refusal

LM_STUDIO = ("The number of tokens to keep from the initial prompt is greater than the context "
             "length. Try to load the model with a larger context length, or provide a shorter "
             "input")
OVER = {"code": "context_length_exceeded",
        "message": "Your input exceeds the context window of this model. Please adjust your "
                   "input and try again."}


def sse(*events: tuple[str | None, dict]) -> bytes:
    return b"".join((f"event: {name}\n" if name else "").encode()
                    + b"data: " + json.dumps(data).encode() + b"\n\n" for name, data in events)


def responses(last: dict) -> bytes:
    opening = {"id": "resp_1", "status": "in_progress", "error": None, "output": []}
    return sse(("response.created", {"type": "response.created", "response": opening}),
               ("response.in_progress", {"type": "response.in_progress", "response": opening}),
               (last["type"], last))


def test_lm_studio_error_event_is_a_refusal_as_its_body():
    for data in ({"error": {"message": LM_STUDIO}, "message": LM_STUDIO}, {"error": LM_STUDIO}):
        events = sse(("error", data))
        assert json.loads(first_refusal("openai", events)) == data


def test_a_responses_stream_failed_as_over_the_window_is_a_refusal_as_its_error():
    failed = {"type": "response.failed", "response": {"id": "resp_1", "status": "failed",
                                                      "error": OVER}}
    assert json.loads(first_refusal("responses", responses(failed))) == {"error": OVER}


LLAMA_CPP = {"code": 400, "message": "the request exceeds the available context size. try "
             "increasing the context size or enable context shift",
             "type": "invalid_request_error"}
VLLM = {"object": "error", "message": "This model's maximum context length is 32768 tokens. "
        "However, you requested 33000 tokens (32000 in the messages, 1000 in the completion). "
        "Please reduce the length of the messages or completion.", "type": "BadRequestError",
        "param": None, "code": 400}
LEMONADE = {"error": {"code": 400, "message": "request (6009 tokens) exceeds the available "
                      "context size (4096 tokens), try increasing it",
                      "type": "exceed_context_size_error", "n_prompt_tokens": 6009,
                      "n_ctx": 4096}}


def test_the_local_servers_in_stream_refusals_are_refusals():
    """llama.cpp's 2025 builds: an `error:` line, then `data: [DONE]`; vLLM: its error object
    as the data; lemonade's: the error body with no field name; a hosted vLLM (DeepInfra,
    Venice): a chunk whose choices are null and `error_message` says it. Each becomes a body
    that `refusal` reads, with the count and window where the server says them."""
    from ctxlayer.gateway.usage import Refusal, refusal

    old_llama = b"error: " + json.dumps(LLAMA_CPP).encode() + b"\n\ndata: [DONE]\n\n"
    hosted = sse((None, {"id": "c1", "object": "chat.completion.chunk", "choices": None,
                         "error_type": "invalid_request_error",
                         "error_message": VLLM["message"]}))
    vllm = sse((None, VLLM))
    lemonade = json.dumps(LEMONADE).encode() + b"\n\n"
    found = {name: refusal("openai", 400, first_refusal("openai", events))
             for name, events in (("llama.cpp", old_llama), ("vllm", vllm),
                                  ("lemonade", lemonade), ("hosted", hosted))}
    assert found == {"llama.cpp": Refusal(None, None), "vllm": Refusal(32000, 32768),
                     "lemonade": Refusal(6009, 4096), "hosted": Refusal(32000, 32768)}


def test_other_streams_go_on_as_they_came():
    other = {"code": "server_error", "message": "The server had an error."}
    failed = {"type": "response.failed", "response": {"id": "r", "error": other}}
    text = {"type": "response.output_text.delta", "delta": "an error, said in a text"}
    chunk = {"id": "c", "object": "chat.completion.chunk",
             "choices": [{"index": 0, "delta": {"content": '"error": over the window'}}]}
    for fmt, events in (("responses", responses(failed)), ("responses", responses(text)),
                        ("openai", sse((None, chunk))),
                        ("openai", sse(("error", {"error": {"message": "Model not loaded"}}))),
                        ("openai", b"error: " + json.dumps({"code": 500, "message": "Slot "
                                                            "unavailable"}).encode() + b"\n\n"),
                        ("anthropic", sse(("error", {"type": "error", "error": {
                            "type": "overloaded_error", "message": "Overloaded"}})))):
        assert first_refusal(fmt, events) is None, events


def test_a_refusal_after_a_comment_or_a_ping_is_read_before_the_status_goes_out():
    """The events read before the client gets a status (`_first_event`) go past the ones
    that say nothing: comments (OpenRouter's `: OPENROUTER PROCESSING`) and pings, each in a
    chunk of its own as a provider that takes its time sends them. Before, the first of them
    ended the read: the refusal after it went to the client as a 200 stream."""
    import asyncio

    from ctxlayer.gateway.forward import _first_event
    from ctxlayer.gateway.usage import StreamUsage

    refusal = sse(("error", {"type": "error", "error": {
        "type": "invalid_request_error", "message": "prompt is too long: 9000 tokens > 4096 "
                                                    "maximum"}}))
    for before in (b": OPENROUTER PROCESSING\n\n", sse(("ping", {"type": "ping"})),
                   b": OPENROUTER PROCESSING\n\n" + sse(("ping", {"type": "ping"}))):
        async def chunks(before: bytes = before):
            yield before
            yield refusal

        read = asyncio.run(_first_event("http://up", chunks(), StreamUsage("anthropic")))
        assert read == before + refusal
        assert first_refusal("anthropic", read) is not None


def test_the_loaded_context_is_asked_of_lm_studio_and_none_where_it_says_none(tmp_path):
    """`Upstream.loaded_context` reads LM Studio's list of its models at the origin of the
    upstream URL: the context it loaded the model with; None for a model it does not list, a
    server without that API (here the gateway itself: a 404) or none at all."""
    from gateway_stack import fresh_stack

    from ctxlayer.gateway.forward import Upstream

    with fresh_stack(tmp_path, windows={"qwen-local": 6000}, lm_studio=("qwen-local",)) as stack:
        standin = f"http://127.0.0.1:{stack.standin.standin.port}"

        async def ask(where: str, model: str = "qwen-local") -> int | None:
            upstream = Upstream(2.0, 5.0)
            try:
                return await upstream.loaded_context(where, model, {"Authorization": "Bearer k"})
            finally:
                await upstream.close()
        call = stack.standin.call
        assert call(ask(f"{standin}/v1/chat/completions")) == 6000
        assert call(ask(f"{standin}/v1")) == 6000  # the origin's API, whatever the path
        assert call(ask(f"{standin}/v1/chat/completions", "gpt-4o")) is None
        assert call(ask(f"{stack.openai_url}/chat/completions")) is None
        assert call(ask("http://127.0.0.1:9/v1/chat/completions")) is None
