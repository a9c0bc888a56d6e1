"""What the gateway cannot read gets a 400 in the provider's own error shape naming the field,
and is never forwarded; an upstream that is down or too slow gets a 502 / 504 in that shape."""

from __future__ import annotations

import httpx2 as httpx
import openai
import pytest
from gateway_stack import start_stack, stop_stack
from providers.standin import StandinThread

from ctxlayer.gateway import NotLoopback, check_loopback
from ctxlayer.gateway.standalone import gateway_config

OPENAI_BAD = [
    (b"{not json", "body"),
    (b"[1, 2]", "body"),
    (b'{"messages": [{"role": "user", "content": "q"}]}', "model"),
    (b'{"model": "", "messages": []}', "model"),
    (b'{"model": "gpt-4o", "messages": "hello"}', "messages"),
    (b'{"model": "gpt-4o", "messages": ["hello"]}', "messages[0]"),
    (b'{"model": "gpt-4o", "messages": [], "stream": "yes"}', "stream"),
    (b'\xff\xfe{"model": 1}', "body"),
    # nested past what a reader follows (a JSON decoder stops at some depth): no chat is
    # that deep, and the answer is a 400 as for any body it cannot read, never a 500
    (b'{"model": "gpt-4o", "messages": [{"role": "user", "content": "q", "x": '
     + b"[" * 100_000 + b"]" * 100_000 + b"}]}", "body"),
]


@pytest.mark.parametrize("body, field", OPENAI_BAD)
def test_openai_bad_bodies_are_refused_naming_the_field(stack, body, field):
    answer = httpx.post(f"{stack.openai_url}/chat/completions", content=body,
                        headers={"content-type": "application/json"})
    assert answer.status_code == 400
    error = answer.json()["error"]
    assert error["type"] == "invalid_request_error" and error["param"] == field
    assert f"`{field}`" in error["message"] or field == "body"
    assert stack.standin.requests() == []  # nothing forwarded


def test_a_text_cut_inside_a_surrogate_pair_is_named_not_called_truncated(stack):
    body = b'{"model": "gpt-4o", "messages": [{"role": "user", "content": "a\\ud83d"}]}'
    error = refused_body(stack, body)
    assert "truncated" not in error["message"]
    assert "a lone UTF-16 surrogate \\ud83d at byte 63: the text was cut" in error["message"]


def test_a_byte_that_is_not_utf8_is_named_by_its_position(stack):
    # as the CLI and the daemon name it; the gateway said "not UTF-8 text", no position
    body = b'{"model": "gpt-4o", "messages": [{"role": "user", "content": "a\xff"}]}'
    assert "not valid UTF-8 at byte 63" in refused_body(stack, body)["message"]


def refused_body(stack, body: bytes) -> dict:
    """The gateway's 400 for a Chat Completions ``body`` it cannot read as text, naming the
    body as the field at fault, with nothing forwarded: its error object."""
    answer = httpx.post(f"{stack.openai_url}/chat/completions", content=body,
                        headers={"content-type": "application/json"})
    assert answer.status_code == 400
    error = answer.json()["error"]
    assert error["param"] == "body"
    assert stack.standin.requests() == []
    return error


@pytest.mark.parametrize("body, field", [
    (b"{", "body"),
    (b'{"model": "claude-sonnet-4", "max_tokens": 5, "messages": ' + b"[" * 100_000
     + b"]" * 100_000 + b"}", "body"),
    (b'{"model": "claude-sonnet-4", "max_tokens": 5, "messages": {}}', "messages"),
    (b'{"model": "claude-sonnet-4", "max_tokens": 5, "system": 3, "messages": []}', "system"),
])
def test_anthropic_bad_bodies_are_refused_in_anthropics_shape(stack, body, field):
    for path in ("/v1/messages", "/v1/messages/count_tokens"):
        answer = httpx.post(stack.anthropic_url + path, content=body)
        assert answer.status_code == 400
        payload = answer.json()
        assert payload["type"] == "error"
        assert payload["error"]["type"] == "invalid_request_error"
        assert field in payload["error"]["message"]
    assert stack.standin.requests() == []


NEWEST_TURN_BROKEN = [
    # the newest turn answers no call of the message before it: the provider refuses it, and
    # leaving the result out (as for a pair the fit split) answered the first question again
    (b'{"model": "gpt-4o", "messages": [{"role": "user", "content": "q"}, {"role": "assistant",'
     b' "content": null, "tool_calls": [{"id": "c1", "type": "function", "function": {"name":'
     b' "f", "arguments": "{}"}}]}, {"role": "tool", "tool_call_id": "c2", "content": "r"}]}',
     "messages[2].tool_call_id", "openai"),
    (b'{"model": "gpt-4o", "messages": [{"role": "tool", "tool_call_id": "c1", "content": "r"}]}',
     "messages[0].tool_call_id", "openai"),
    # the newest turn as the client sent it: never repaired into another request
    (b'{"model": "claude-sonnet-4", "max_tokens": 5, "messages": [{"role": "user", "content":'
     b' "q"}, {"role": "assistant", "content": [{"type": "tool_use", "id": "toolu_1", "name": '
     b'"f", "input": {}}]}, {"role": "user", "content": [{"type": "tool_result", "tool_use_id":'
     b' "toolu_2", "content": "r"}]}]}', "messages[2].content[0].tool_use_id", "anthropic"),
    (b'{"model": "claude-sonnet-4", "max_tokens": 5, "messages": [{"role": "user", "content":'
     b' "q"}, {"role": "assistant", "content": "Paris is"}, {"role": "user", "content": ""}]}',
     "messages[2].content", "anthropic"),
    # no user turn at all (a system prompt and a prefill): dropping the leading assistant
    # turn, as for a request that starts with one, sent `messages: []`
    (b'{"model": "claude-sonnet-4", "max_tokens": 5, "system": "s", "messages": [{"role": '
     b'"assistant", "content": "Once upon a time"}]}', "messages", "anthropic"),
]


@pytest.mark.parametrize("body, field, fmt", NEWEST_TURN_BROKEN)
def test_a_newest_turn_sent_broken_is_refused_never_repaired_into_another_request(
        stack, body, field, fmt):
    """The repairs a fitted request gets (a result whose call the fit dropped goes, an empty
    message goes) answered, applied to the newest turn, another request with a 200."""
    url = f"{stack.openai_url}/chat/completions" if fmt == "openai" else \
        f"{stack.anthropic_url}/v1/messages"
    answer = httpx.post(url, content=body, headers={"content-type": "application/json"})
    assert answer.status_code == 400
    error = answer.json()["error"]
    assert error["type"] == "invalid_request_error"
    assert error["message"].startswith(f"ctxlayer gateway: {field}: ")
    if fmt == "openai":
        assert error["param"] == field
    assert stack.standin.requests() == []


HINT_HEADERS = ("x-ctxlayer-conversation", "x-claude-code-session-id", "anthropic-beta")


@pytest.mark.parametrize("header", HINT_HEADERS)
@pytest.mark.parametrize("route", ["/v1/chat/completions", "/v1/messages", "/v1/responses"])
def test_a_hint_header_that_is_not_utf8_is_refused_naming_it(stack, header, route):
    """Before, the conversation's name in bytes that are not UTF-8 got a 500 "a bug" (the
    sessions database cannot store it)."""
    body = {"model": "claude-sonnet-4", "max_tokens": 5,
            "messages": [{"role": "user", "content": "q"}]} if route == "/v1/messages" else \
        {"model": "gpt-4o", "input": "q"} if route == "/v1/responses" else \
        {"model": "gpt-4o", "messages": [{"role": "user", "content": "q"}]}
    answer = httpx.post(stack.anthropic_url + route, json=body,
                        headers={header: b"conv-\xff\xfe", "anthropic-version": "2023-06-01"})
    assert answer.status_code == 400, answer.text
    said = answer.json()["error"]
    assert said["type"] == "invalid_request_error"
    assert f"the header {header} is not UTF-8 text" in said["message"]
    if route != "/v1/messages":
        assert said["param"] == header
    assert stack.standin.requests() == []
    # the same header in plain UTF-8 (not only ASCII) is read as before
    answer = httpx.post(stack.anthropic_url + route, json=body, headers={
        header: "conv-é".encode(), "anthropic-version": "2023-06-01"})
    assert answer.status_code == 200, answer.text


#: every route that forwards the client's headers: (method, path, body)
FORWARDING = {
    "chat": ("POST", "/v1/chat/completions",
             {"model": "gpt-4o", "messages": [{"role": "user", "content": "q"}]}),
    "messages": ("POST", "/v1/messages", {"model": "claude-sonnet-4", "max_tokens": 5,
                                          "messages": [{"role": "user", "content": "q"}]}),
    "responses": ("POST", "/v1/responses", {"model": "gpt-4o", "input": "q"}),
    "count_tokens": ("POST", "/v1/messages/count_tokens", {
        "model": "claude-sonnet-4", "messages": [{"role": "user", "content": "q"}]}),
    "models": ("GET", "/v1/models", None),
    "passthrough": ("POST", "/v1/embeddings", {"model": "text-embedding-3-small",
                                                "input": "q"}),
}


@pytest.mark.parametrize("route", FORWARDING)
def test_a_forwarded_header_that_is_not_utf8_is_refused_naming_it(stack, route):
    """A byte that is not UTF-8 (`X-Title: Caf\\xe9`, as Node writes a header: latin-1) went
    upstream as `Caf`, the byte dropped without a word: aiohttp reads it as a lone surrogate
    and its client writes a header's text as UTF-8, leaving surrogates out, with no way to
    send bytes. Refused, naming the header, and never the value (it may be a key)."""
    method, path, body = FORWARDING[route]
    answer = httpx.request(method, stack.anthropic_url + path, json=body, headers={
        "x-api-key": "sk-ant-test", "anthropic-version": "2023-06-01", "X-Title": b"Caf\xe9"})
    assert answer.status_code == 400, answer.text
    said = answer.json()["error"]
    assert said["type"] == "invalid_request_error"
    assert "the header x-title is not UTF-8 text" in said["message"]
    assert stack.standin.requests() == []
    # the same text in UTF-8 goes up as it came
    answer = httpx.request(method, stack.anthropic_url + path, json=body, headers={
        "x-api-key": "sk-ant-test", "anthropic-version": "2023-06-01",
        "X-Title": "Café".encode()})
    assert answer.status_code == 200, answer.text
    (seen,) = stack.standin.requests()
    assert seen["headers"]["x-title"] == "Café"


def test_a_cookie_that_is_not_utf8_stays_behind_without_a_refusal(stack):
    """What never goes upstream is not refused for its bytes: a browser sends the gateway the
    cookies of other local apps."""
    method, path, body = FORWARDING["chat"]
    answer = httpx.request(method, stack.openai_url.removesuffix("/v1") + path, json=body,
                           headers={"Authorization": "Bearer sk-test",
                                    "Cookie": b"other=caf\xe9"})
    assert answer.status_code == 200, answer.text
    (seen,) = stack.standin.requests()
    assert "cookie" not in seen["headers"]


def test_the_sdk_sees_a_bad_request_error_naming_the_field(stack):
    with pytest.raises(openai.BadRequestError) as raised:
        stack.openai().chat.completions.create(model="gpt-4o", messages="not a list")
    assert raised.value.param == "messages"


def test_loopback_only():
    for host in ("127.0.0.1", "::1", "localhost", "127.0.0.2"):
        assert check_loopback(host) == host
    for host in ("0.0.0.0", "192.168.1.4", "example.com", "::"):
        with pytest.raises(NotLoopback, match="loopback only"):
            check_loopback(host)


def test_command_line_values_win_over_the_config():
    from ctxlayer.config import GatewayConfig

    config = gateway_config(GatewayConfig(), {"port": 8080, "host": None,
                                              "openai_base_url": "http://127.0.0.1:9/v1"})
    assert (config.port, config.host, config.openai_base_url) == (
        8080, "127.0.0.1", "http://127.0.0.1:9/v1")
    with pytest.raises(NotLoopback):
        gateway_config(GatewayConfig(), {"host": "0.0.0.0"})


@pytest.fixture(scope="module")
def impatient(world):
    """A gateway whose upstream has a short read timeout, and one whose upstream is down."""
    with StandinThread() as thread:
        gateway, state = start_stack(thread, world / "workspace", world / "state-impatient",
                                     read_timeout=0.5)
        try:
            yield thread, gateway
        finally:
            stop_stack(thread, gateway, state)


def test_a_slow_upstream_is_a_504_in_the_providers_shape(impatient):
    thread, gateway = impatient
    thread.fail(mode="slow_first_byte", delay=3)
    answer = httpx.post(f"{gateway.urls.anthropic}/v1/messages", json={
        "model": "claude-sonnet-4", "max_tokens": 5,
        "messages": [{"role": "user", "content": "q"}]}, timeout=30)
    assert answer.status_code == 504
    assert answer.json()["error"]["type"] == "timeout_error"
    assert "did not answer in time" in answer.json()["error"]["message"]


def test_an_upstream_url_aiohttp_cannot_use_is_a_502_in_the_providers_shape(world):
    # no host (a config made past the settings' check): aiohttp's InvalidUrlClientError was
    # a bare text/plain 500 and a traceback in the log
    with StandinThread() as thread:
        gateway, state = start_stack(thread, world / "workspace", world / "state-nohost")
        try:
            gateway.config = gateway.config.__class__(openai_base_url="http://")
            answer = httpx.post(f"{gateway.urls.openai}/chat/completions", json={
                "model": "gpt-4o", "messages": [{"role": "user", "content": "q"}]})
        finally:
            stop_stack(thread, gateway, state)
    assert answer.status_code == 502, answer.text
    error = answer.json()["error"]
    assert error["type"] == "server_error" and "no host after the scheme" in error["message"]
    assert error["code"] == "unusable_upstream_url"  # refused before aiohttp is asked


def test_an_unreachable_upstream_is_a_502(world):
    with StandinThread() as thread:
        gateway, state = start_stack(thread, world / "workspace", world / "state-down")
        try:
            gateway.config = gateway.config.__class__(
                openai_base_url="http://127.0.0.1:9/v1")  # discard port: nobody listens
            answer = httpx.post(f"{gateway.urls.openai}/chat/completions", json={
                "model": "gpt-4o", "messages": [{"role": "user", "content": "q"}]})
        finally:
            stop_stack(thread, gateway, state)
    assert answer.status_code == 502
    error = answer.json()["error"]
    assert error["type"] == "server_error" and "cannot reach the upstream" in error["message"]


def test_an_output_room_as_large_as_the_window_is_refused_naming_it(stack):
    """`max_tokens` at or past the model's window left the prompt a budget of one token, and
    the answer said the newest message alone was over it."""
    with pytest.raises(openai.BadRequestError) as raised:
        stack.openai().chat.completions.create(
            model="gpt-4o", max_tokens=128_000, messages=[{"role": "user", "content": "hi"}])
    assert raised.value.param == "max_tokens"
    assert "leave no room for the prompt in the 128,000-token window" in str(raised.value)
    assert stack.standin.requests() == []


@pytest.mark.parametrize("key, value", [("summary", 5), ("summary", True), ("content", 5),
                                        ("content", 1.5), ("summary", "text")])
def test_a_reasoning_item_whose_parts_are_not_a_list_is_a_400_naming_them(stack, key, value):
    # `"summary": 5` was iterated as a list: a TypeError, a 500 that said "a bug"
    item = {"type": "reasoning", "id": "rs_1", "summary": []} | {key: value}
    body = {"model": "gpt-4o", "input": [{"role": "user", "content": "x"}, item,
                                         {"role": "assistant", "content": "y"}]}
    answer = httpx.post(f"{stack.openai_url}/responses", json=body)
    assert answer.status_code == 400, answer.text
    error = answer.json()["error"]
    assert error["param"] == f"input[1].{key}" and "expected a list" in error["message"]
    assert stack.standin.requests() == []


def test_stream_null_is_not_streamed_as_the_official_sdks_send_it(stack):
    client = stack.openai()
    answer = client.responses.create(model="gpt-4o", input="hi", stream=None)
    assert answer.status == "completed"
    chat = client.chat.completions.create(model="gpt-4o", stream=None,
                                          messages=[{"role": "user", "content": "hi"}])
    assert chat.choices[0].message.content
    sent = [r["body"] for r in stack.model_requests()]
    assert [b.get("stream", "absent") for b in sent] == [None, None]  # forwarded as sent


def test_instructions_that_are_not_a_string_are_refused_saying_a_string(stack):
    for value in (5, [{"type": "input_text", "text": "Be terse."}]):
        answer = httpx.post(f"{stack.openai_url}/responses",
                            json={"model": "gpt-4o", "input": "hi", "instructions": value})
        assert answer.status_code == 400
        error = answer.json()["error"]
        # it said "a string or a list of text blocks", then refused the list
        assert error["param"] == "instructions"
        assert error["message"].endswith("`instructions` must be a string"), error["message"]
    assert stack.standin.requests() == []
