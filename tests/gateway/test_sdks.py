"""The official OpenAI and Anthropic SDKs, pointed at the gateway, work as they do against the
provider: answers and streams come back as the stand-in sent them, with the client's own keys
forwarded, and the `x-ctxlayer-*` headers added."""

from __future__ import annotations

import json

import anthropic
import httpx2 as httpx
import openai
import pytest

QUESTION = [{"role": "user", "content": "What does this project do?"}]


def test_openai_answer_comes_back_unchanged_with_our_headers(stack):
    raw = stack.openai("sk-live-abc").chat.completions.with_raw_response.create(
        model="gpt-4o", messages=QUESTION)
    done = raw.parse()
    assert done.choices[0].message.content == "stand-in answer to 1 messages."
    assert done.usage.prompt_tokens > 0
    for header in ("x-ctxlayer-tokens", "x-ctxlayer-dropped", "x-ctxlayer-shortened",
                   "x-ctxlayer-compacted"):
        assert raw.headers.get(header) is not None, header
    assert raw.headers["x-request-id"].startswith("req_standin_")  # the upstream's own header
    (seen,) = stack.model_requests()
    assert seen["headers"]["authorization"] == "Bearer sk-live-abc"
    assert seen["status"] == 200 and seen["problems"] == []


def test_openai_stream_with_usage(stack):
    stream = stack.openai().chat.completions.create(
        model="gpt-4o", messages=QUESTION, stream=True, stream_options={"include_usage": True})
    chunks = list(stream)
    assert "".join(c.choices[0].delta.content or "" for c in chunks if c.choices) == (
        "stand-in answer to 1 messages.")
    assert chunks[-1].usage is not None and chunks[-1].usage.prompt_tokens > 0
    assert stack.model_requests()[0]["stream"] is True


def test_a_stream_is_relayed_as_it_arrives_not_buffered(stack):
    """The stand-in sends its first event, then holds the rest: the client must already have
    that event while the stream is still open upstream."""
    stack.standin.fail(mode="hold")
    stream = stack.openai().chat.completions.create(model="gpt-4o", messages=QUESTION,
                                                    stream=True)
    first = next(iter(stream))  # would time out if the gateway waited for the whole answer
    assert first.choices[0].delta.role == "assistant"
    assert stack.model_requests()[0]["completed"] is False
    stack.standin.release()
    rest = list(stream)
    assert rest[-1].choices[0].finish_reason == "stop"


def test_anthropic_answer_and_stream(stack):
    client = stack.anthropic("sk-ant-live-xyz")
    done = client.messages.create(model="claude-sonnet-4", max_tokens=100, messages=QUESTION,
                                  system="You are terse.")
    assert done.content[0].text == "stand-in answer to 1 messages."
    with client.messages.stream(model="claude-sonnet-4", max_tokens=100,
                                messages=QUESTION) as stream:
        text = "".join(stream.text_stream)
        final = stream.get_final_message()
    assert text == done.content[0].text
    assert final.usage.input_tokens > 0
    seen = stack.model_requests()
    # this SDK sends its key as a bearer token; older ones (and curl users) as x-api-key
    assert [r["headers"].get("x-api-key") or r["headers"]["authorization"] for r in seen] == [
        "Bearer sk-ant-live-xyz"] * 2
    assert all(r["headers"].get("anthropic-version") for r in seen)


def test_x_api_key_and_anthropic_headers_are_forwarded(stack):
    headers = {"x-api-key": "sk-ant-raw", "anthropic-version": "2023-06-01",
               "anthropic-beta": "prompt-caching-2024-07-31", "x-ctxlayer-conversation": "c1"}
    answer = httpx.post(f"{stack.anthropic_url}/v1/messages", headers=headers, json={
        "model": "claude-sonnet-4", "max_tokens": 5, "messages": QUESTION})
    assert answer.status_code == 200
    (seen,) = stack.model_requests()
    for key in ("x-api-key", "anthropic-version", "anthropic-beta"):
        assert seen["headers"][key] == headers[key]
    assert "x-ctxlayer-conversation" not in seen["headers"]  # ours stay with us


def test_tool_calls_round_trip(stack):
    tools = [{"type": "function", "function": {
        "name": "add", "parameters": {"type": "object", "properties": {"a": {"type": "number"}}}}}]
    client = stack.openai()
    msgs = [{"role": "user", "content": "add 1 and 2"}]
    first = client.chat.completions.create(
        model="gpt-4o", messages=msgs, tools=tools,
        tool_choice={"type": "function", "function": {"name": "add"}})
    call = first.choices[0].message.tool_calls[0]
    assert call.function.name == "add"
    msgs += [first.choices[0].message.model_dump(exclude_none=True),
             {"role": "tool", "tool_call_id": call.id, "content": "3"}]
    second = client.chat.completions.create(model="gpt-4o", messages=msgs, tools=tools)
    assert second.choices[0].message.content.startswith("stand-in answer to 3")
    a = stack.anthropic()
    atools = [{"name": "add", "input_schema": {"type": "object"}}]
    amsgs = [{"role": "user", "content": "add 1 and 2"}]
    with a.messages.stream(model="claude-sonnet-4", max_tokens=50, messages=amsgs,
                           tools=atools, tool_choice={"type": "tool", "name": "add"}) as s:
        use = s.get_final_message().content[0]
    assert use.type == "tool_use"
    amsgs += [{"role": "assistant", "content": [use.model_dump()]},
              {"role": "user", "content": [{"type": "tool_result", "tool_use_id": use.id,
                                            "content": "3"}]}]
    a.messages.create(model="claude-sonnet-4", max_tokens=50, messages=amsgs, tools=atools)
    assert all(r["status"] == 200 for r in stack.model_requests())


@pytest.mark.parametrize("status, error", [(429, openai.RateLimitError),
                                           (500, openai.InternalServerError)])
def test_upstream_errors_come_back_as_the_provider_sent_them(stack, status, error):
    stack.standin.fail(status)
    with pytest.raises(error) as raised:
        stack.openai().chat.completions.create(model="gpt-4o", messages=QUESTION)
    assert raised.value.status_code == status
    assert "stand-in" in raised.value.body["message"]
    if status == 429:
        assert raised.value.response.headers["retry-after"] == "1"


def test_an_error_answering_a_stream_request_comes_back_whole(stack):
    stack.standin.fail(429)
    with pytest.raises(openai.RateLimitError) as raised:
        stack.openai().chat.completions.create(model="gpt-4o", messages=QUESTION, stream=True)
    assert raised.value.body["code"] == "rate_limit_exceeded"


@pytest.mark.parametrize("status, error", [(429, anthropic.RateLimitError),
                                           (500, anthropic.InternalServerError)])
def test_anthropic_errors_pass_through(stack, status, error):
    stack.standin.fail(status)
    with pytest.raises(error) as raised:
        stack.anthropic().messages.create(model="claude-sonnet-4", max_tokens=5,
                                          messages=QUESTION)
    assert raised.value.body["type"] == "error"
    assert raised.value.body["error"]["type"] == {429: "rate_limit_error",
                                                  500: "api_error"}[status]


def test_a_client_that_disconnects_mid_stream_cancels_the_upstream(stack):
    stack.standin.fail(mode="stall")
    with httpx.Client(timeout=30) as client, client.stream(
            "POST", f"{stack.openai_url}/chat/completions",
            json={"model": "gpt-4o", "messages": QUESTION, "stream": True}) as response:
        first = next(response.iter_lines())
        assert first.startswith("data: ")
    # leaving the block closed the connection: the gateway must close its upstream request
    stack.wait_for(lambda rs: rs and rs[-1]["cancelled"], "the upstream request cancelled")


def test_models_are_the_upstreams(stack):
    assert "gpt-4o" in [m.id for m in stack.openai().models.list()]
    assert [m.id for m in stack.anthropic().models.list()] == ["claude-sonnet-4",
                                                               "claude-haiku-4"]


def test_another_method_on_a_model_route_is_the_upstreams(stack):
    """A GET on `/v1/chat/completions` is OpenAI's list of stored completions: it goes to the
    upstream like any other `/v1` request, never answered by the gateway as a wrong method."""
    page = stack.openai().chat.completions.list(limit=2)
    assert page.data == [] and page.has_more is False
    (seen,) = stack.standin.requests()
    assert (seen["method"], seen["path"], seen["query"]) == ("GET", "/v1/chat/completions",
                                                             "limit=2")
    assert seen["headers"]["authorization"] == "Bearer sk-test-openai"


def test_count_tokens_is_the_providers(stack):
    counted = stack.anthropic().messages.count_tokens(model="claude-sonnet-4",
                                                      messages=QUESTION)
    assert counted.input_tokens > 0


def test_unknown_model_gets_a_warning_header(stack):
    raw = stack.openai().chat.completions.with_raw_response.create(
        model="acme-frontier-9", messages=QUESTION)
    warning = raw.headers["x-ctxlayer-warning"]
    assert "acme-frontier-9" in warning and "default window" in warning
    # a name that is not a header's text stays inside the warning, escaped
    answer = httpx.post(f"{stack.openai_url}/chat/completions", json={
        "model": "m\u00e8\r\nX-Injected: 1", "messages": QUESTION})
    assert answer.status_code == 200 and "x-injected" not in answer.headers
    assert answer.headers["x-ctxlayer-warning"].isascii()


def test_health(stack):
    answer = httpx.get(stack.anthropic_url + "/health").json()
    assert answer["status"] == "ok" and answer["openai"] == stack.openai_url


def test_answer_bytes_are_the_upstreams(stack):
    """Not re-serialized: the exact bytes the stand-in sent."""
    body = {"model": "gpt-4o", "messages": QUESTION}
    via = httpx.post(f"{stack.openai_url}/chat/completions", json=body).content
    direct = httpx.post(f"{stack.standin.openai}/chat/completions", json=body).content
    strip = [json.loads(b) for b in (via, direct)]
    for answer in strip:
        answer.pop("id"), answer.pop("created"), answer.pop("usage")
    assert strip[0] == strip[1]
    assert via.startswith(b'{"id": "chatcmpl-standin')  # the stand-in's own spacing


def test_the_state_knows_the_gateway_urls_for_the_announcement(stack):
    urls = stack.state.gateway_urls
    assert urls == stack.gateway.urls and urls.openai.endswith("/v1")
    from ctxlayer.state import Caller

    announced = Caller(stack.state).announcement(methods=[])
    assert announced.gateway == urls
