"""The stand-in provider speaks the real providers' shapes: the official SDKs parse its
answers and streams, and it refuses what the real ones refuse."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import anthropic
import openai
import pytest
from providers.standin import StandinThread

HERE = Path(__file__).parent


@pytest.fixture(scope="module")
def standin():
    with StandinThread(windows={"tiny": 200}) as s:
        yield s


@pytest.fixture(autouse=True)
def _fresh(standin):
    standin.reset()


def oa(standin) -> openai.OpenAI:
    return openai.OpenAI(base_url=standin.openai, api_key="sk-test", max_retries=0)


def an(standin) -> anthropic.Anthropic:
    return anthropic.Anthropic(base_url=standin.anthropic, api_key="sk-ant-test", max_retries=0)


def test_openai_answer_and_stream_with_usage(standin):
    msgs = [{"role": "user", "content": "hello"}]
    done = oa(standin).chat.completions.create(model="gpt-4o", messages=msgs)
    assert done.choices[0].message.content.startswith("stand-in answer")
    assert done.usage.prompt_tokens > 0
    chunks = list(oa(standin).chat.completions.create(
        model="gpt-4o", messages=msgs, stream=True, stream_options={"include_usage": True}))
    text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    assert text == done.choices[0].message.content
    assert chunks[-1].usage.prompt_tokens == done.usage.prompt_tokens
    # the second identical request reads the whole prompt from the cache
    assert chunks[-1].usage.prompt_tokens_details.cached_tokens > 0


def test_forced_tool_call_both_formats(standin):
    tool = {"type": "function", "function": {"name": "lookup", "parameters": {"type": "object"}}}
    done = oa(standin).chat.completions.create(
        model="gpt-4o", messages=[{"role": "user", "content": "find it"}], tools=[tool],
        tool_choice={"type": "function", "function": {"name": "lookup"}})
    assert done.choices[0].message.tool_calls[0].function.name == "lookup"
    with an(standin).messages.stream(
            model="claude-sonnet-4", max_tokens=50,
            messages=[{"role": "user", "content": "find it"}],
            tools=[{"name": "lookup", "input_schema": {"type": "object"}}],
            tool_choice={"type": "tool", "name": "lookup"}) as stream:
        final = stream.get_final_message()
    assert final.content[0].type == "tool_use" and final.content[0].input == {"standin": True}


def test_anthropic_cache_read_grows_with_the_conversation(standin):
    msgs = [{"role": "user", "content": "a long first question " * 20}]
    first = an(standin).messages.create(model="claude-sonnet-4", max_tokens=50, messages=msgs)
    assert first.usage.cache_read_input_tokens == 0
    msgs += [{"role": "assistant", "content": first.content[0].text},
             {"role": "user", "content": "and then?"}]
    second = an(standin).messages.create(model="claude-sonnet-4", max_tokens=50, messages=msgs)
    assert 0 < second.usage.cache_read_input_tokens < (
        second.usage.input_tokens + second.usage.cache_read_input_tokens)


@pytest.mark.parametrize("messages, needle", [
    ([{"role": "tool", "tool_call_id": "x", "content": "r"}], "must be a response"),
    ([{"role": "user", "content": "q"},
      {"role": "assistant", "tool_calls": [{"id": "c1", "type": "function",
                                            "function": {"name": "f", "arguments": "{}"}}]},
      {"role": "user", "content": "next"}], "c1"),
    ([{"role": "user"}], "content"),
])
def test_openai_refusals(standin, messages, needle):
    with pytest.raises(openai.BadRequestError) as err:
        oa(standin).chat.completions.create(model="gpt-4o", messages=messages)
    assert needle in err.value.body["message"]
    assert standin.requests()[-1]["status"] == 400


def test_deepseek_refuses_a_tool_call_that_lost_its_reasoning(standin):
    """In thinking mode a DeepSeek turn that called tools is read whole: its reasoning must come
    back with the call (the API's 400 otherwise); a turn without calls needs none."""
    call = {"id": "c1", "type": "function", "function": {"name": "f", "arguments": "{}"}}
    msgs = [{"role": "user", "content": "q"},
            {"role": "assistant", "content": "a", "reasoning_content": "thought"},
            {"role": "user", "content": "q2"},
            {"role": "assistant", "content": None, "tool_calls": [call]},
            {"role": "tool", "tool_call_id": "c1", "content": "r"}]
    with pytest.raises(openai.BadRequestError) as err:
        oa(standin).chat.completions.create(model="deepseek-v4-pro", messages=msgs)
    assert "must be passed back" in err.value.body["message"]
    msgs[3]["reasoning_content"] = "call f"
    msgs[1].pop("reasoning_content")
    oa(standin).chat.completions.create(model="deepseek-v4-pro", messages=msgs)


@pytest.mark.parametrize("limit", [{"max_tokens": 0}, {"max_completion_tokens": -5}])
def test_openai_refuses_an_output_limit_under_one(standin, limit):
    with pytest.raises(openai.BadRequestError) as err:
        oa(standin).chat.completions.create(
            model="gpt-4o", messages=[{"role": "user", "content": "q"}], **limit)
    assert "below minimum value" in err.value.body["message"]


@pytest.mark.parametrize("model", ["o3", "o4-mini", "gpt-5", "gpt-5.4-mini"])
def test_openai_reasoning_models_refuse_max_tokens(standin, model):
    msgs = [{"role": "user", "content": "q"}]
    with pytest.raises(openai.BadRequestError) as err:
        oa(standin).chat.completions.create(model=model, messages=msgs, max_tokens=50)
    assert "Use 'max_completion_tokens' instead" in err.value.body["message"]
    oa(standin).chat.completions.create(model=model, messages=msgs, max_completion_tokens=50)
    oa(standin).chat.completions.create(model="gpt-5-chat-latest", messages=msgs, max_tokens=50)


@pytest.mark.parametrize("body, needle", [
    ({"messages": [{"role": "assistant", "content": "a"}]}, "first message"),
    ({"messages": [{"role": "user", "content": "a"}, {"role": "user", "content": "b"}]},
     "alternate"),
    ({"messages": [{"role": "user", "content": "q"},
                   {"role": "assistant", "content": [{"type": "tool_use", "id": "t1",
                                                      "name": "f", "input": {}}]},
                   {"role": "user", "content": "no result"}]}, "t1"),
    ({"messages": [{"role": "user", "content": [
        {"type": "text", "text": str(i), "cache_control": {"type": "ephemeral"}}
        for i in range(5)]}]}, "maximum of 4"),
    ({"messages": [{"role": "user", "content": "word " * 400}], "model": "tiny"},
     "prompt is too long"),
    ({"messages": [{"role": "user", "content": "q"}], "max_tokens": 0}, "greater than or equal"),
])
def test_anthropic_refusals(standin, body, needle):
    body = {"model": "claude-sonnet-4", "max_tokens": 10, **body}
    with pytest.raises(anthropic.BadRequestError) as err:
        an(standin).messages.create(**body)
    assert needle in err.value.body["error"]["message"]


def test_openai_window_is_measured(standin):
    with pytest.raises(openai.BadRequestError) as err:
        oa(standin).chat.completions.create(
            model="tiny", messages=[{"role": "user", "content": "word " * 400}])
    assert err.value.code == "context_length_exceeded"


def test_told_to_fail_answers_the_providers_errors(standin):
    standin.fail(429)
    with pytest.raises(openai.RateLimitError):
        oa(standin).chat.completions.create(model="gpt-4o",
                                            messages=[{"role": "user", "content": "q"}])
    standin.fail(500)
    with pytest.raises(anthropic.InternalServerError) as err:
        an(standin).messages.create(model="claude-sonnet-4", max_tokens=5,
                                    messages=[{"role": "user", "content": "q"}])
    assert err.value.body["error"]["type"] == "api_error"


def test_runs_alone_and_prints_its_urls():
    proc = subprocess.Popen([sys.executable, str(HERE / "standin.py"), "--port", "0"],
                            stdout=subprocess.PIPE, text=True)
    try:
        line = json.loads(proc.stdout.readline())
        assert line["openai"] == f"http://127.0.0.1:{line['port']}/v1"
        models = openai.OpenAI(base_url=line["openai"], api_key="k").models.list()
        assert "gpt-4o" in [m.id for m in models]
    finally:
        proc.terminate()
        proc.wait(timeout=10)


def test_images_cost_what_the_published_rules_say():
    """Read from the image's own header: Anthropic width * height / 750 (an 800 x 600 PNG is
    640 tokens), OpenAI 85 + 170 a tile (765 at high detail, 85 at low); a URL it cannot read
    costs a small image's 85."""
    from providers.payloads import b64, jpeg, png
    from providers.standin_images import media_tokens

    def anthropic_image(data: bytes) -> dict:
        return {"type": "image", "source": {"type": "base64", "media_type": "image/png",
                                            "data": b64(data)}}

    def openai_image(data: bytes, detail: str) -> dict:
        return {"type": "image_url", "image_url": {
            "url": f"data:image/jpeg;base64,{b64(data)}", "detail": detail}}

    message = {"role": "user", "content": [
        {"type": "text", "text": "what is this"}, anthropic_image(png(800, 600)),
        {"type": "tool_result", "tool_use_id": "t", "content": [anthropic_image(png(1, 1))]}]}
    assert media_tokens(message) == 640 + 1
    assert media_tokens([openai_image(jpeg(800, 600), "high"),
                         openai_image(jpeg(800, 600), "low")]) == 765 + 85
    assert media_tokens({"type": "image", "source": {"type": "url", "url": "https://x"}}) == 85


def test_webp_images_cost_their_size_and_a_text_document_its_text():
    """The stand-in reads WebP canvases (extended, lossy and lossless headers), as the provider
    does; before, a WebP cost a small image's 85 tokens whatever its size, and a text document
    85 tokens whatever its text, so a request ctxlayer fitted to the token was refused."""
    import struct

    from providers.payloads import b64, webp_vp8x
    from providers.standin_checks import prompt_tokens
    from providers.standin_images import size_of

    def riff(chunk: bytes, body: bytes) -> bytes:
        data = chunk + struct.pack("<I", len(body)) + body
        return b"RIFF" + struct.pack("<I", len(data) + 4) + b"WEBP" + data

    lossy = riff(b"VP8 ", b"\x00\x00\x00\x9d\x01\x2a" + struct.pack("<HH", 1024, 768))
    lossless = riff(b"VP8L", b"\x2f" + ((1024 - 1) | (768 - 1) << 14).to_bytes(4, "little"))
    for data in (webp_vp8x(1024, 768), lossy, lossless):
        assert size_of(b64(data)) == (1024, 768)

    def tokens(block: dict) -> int:
        return prompt_tokens("anthropic", {"model": "claude-sonnet-4-5", "messages": [
            {"role": "user", "content": [block]}]})

    short = {"type": "document", "source": {"type": "text", "media_type": "text/plain",
                                            "data": "notes"}}
    long = {**short, "source": {**short["source"], "data": "notes about the parser " * 200}}
    assert tokens(long) - tokens(short) >= 800


def test_a_deferred_tool_is_neither_prompt_nor_cache(standin):
    # the cache counted every tool, the prompt only those it holds: Claude Code's first answer
    # (a deferred tool among its twelve) said input_tokens -57
    tools = [{"name": "read", "input_schema": {"type": "object"}},
             {"name": "later", "description": "loaded by a tool search " * 20,
              "input_schema": {"type": "object"}, "defer_loading": True}]
    messages = [{"role": "user", "content": [
        {"type": "text", "text": "list the files", "cache_control": {"type": "ephemeral"}}]}]
    client = an(standin)
    first = client.messages.create(model="claude-sonnet-4-5", max_tokens=50, tools=tools,
                                   messages=messages)
    shown = client.messages.create(model="claude-sonnet-4-5", max_tokens=50, tools=tools[:1],
                                   messages=messages)
    def prompt(u) -> int:
        return u.input_tokens + u.cache_creation_input_tokens + u.cache_read_input_tokens

    assert first.usage.input_tokens >= 0
    assert prompt(first.usage) == prompt(shown.usage)  # the same prompt: the deferred tool
    assert first.usage.cache_creation_input_tokens <= prompt(first.usage)  # is in neither
