"""The gateway's safety (PROTOCOL.md "Safety"): who may talk to it, how slowly and how much,
and how a stream the upstream breaks ends. A real gateway on real sockets, forwarding to the
stand-in; a refused request must never reach the stand-in."""

from __future__ import annotations

import json
import socket
import time
from collections.abc import Iterator
from pathlib import Path

import anthropic
import httpx2 as httpx
import openai
import pytest
from gateway_stack import SMALL_WINDOW, Stack, start_stack, stop_stack
from openai.types.responses import ResponseErrorEvent
from providers.standin import StandinThread

from ctxlayer.config import GatewayConfig
from ctxlayer.gateway.forward import answer_headers
from ctxlayer.protocol import MAX_MESSAGE_MB
from ctxlayer.statefiles import read_token, token_file

QUESTION = [{"role": "user", "content": "What does the project do?"}]
CHAT = json.dumps({"model": "gpt-4o", "messages": QUESTION}).encode()
#: the test stack's limits: small, so that the slow clients below meet them soon
HEADER_TIMEOUT = 1.0
READ_TIMEOUT = 1.0


@pytest.fixture(scope="module")
def safe(world: Path) -> Iterator[Stack]:
    mp = pytest.MonkeyPatch()
    mp.setenv("XDG_CONFIG_HOME", str(world / "config"))
    with StandinThread(windows=SMALL_WINDOW) as thread:
        gateway, state = start_stack(thread, world / "workspace", world / "safe-state",
                                     header_timeout=HEADER_TIMEOUT, read_timeout=READ_TIMEOUT,
                                     max_body_mb=1)
        try:
            yield Stack(thread, gateway, state)
        finally:
            stop_stack(thread, gateway, state)
            mp.undo()


@pytest.fixture(autouse=True)
def _fresh(request: pytest.FixtureRequest) -> None:
    if "safe" in request.fixturenames:
        request.getfixturevalue("safe").standin.reset()


def raw(port: int, head: str, body: bytes = b"") -> tuple[int, dict[str, str], bytes]:
    """One request sent as bytes (any Host a client may forge) and its whole answer."""
    with socket.create_connection(("127.0.0.1", port), timeout=30) as s:
        s.sendall(head.encode() + b"\r\n" + body)
        data = b""
        while chunk := s.recv(65536):
            data += chunk
    top, _, rest = data.partition(b"\r\n\r\n")
    lines = top.decode().split("\r\n")
    headers = {k.lower(): v.strip() for k, _, v in (line.partition(":") for line in lines[1:])}
    return int(lines[0].split()[1]), headers, rest


def post_head(path: str, host: str | None, length: int, *extra: str) -> str:
    lines = [f"POST {path} HTTP/1.1", *([f"Host: {host}"] if host is not None else []),
             "Content-Type: application/json", f"Content-Length: {length}",
             "Authorization: Bearer sk-test", "Connection: close", *extra]
    return "\r\n".join(lines) + "\r\n"


def bearer(stack: Stack) -> dict[str, str]:
    return {"Authorization": f"Bearer {read_token(token_file(stack.state.state_dir))}"}


# ---- Host and Origin -----------------------------------------------------------------------

@pytest.mark.parametrize("host", ["evil.example:{port}", "evil.example", "127.0.0.1:1",
                                  "127.0.0.1.evil.example:{port}", "localhost.:{port}"])
def test_a_foreign_host_is_refused_and_never_forwarded(safe, host):
    """What a page rebinding evil.example to 127.0.0.1 sends: its own name as Host."""
    port = safe.gateway.port
    status, headers, body = raw(port, post_head("/v1/chat/completions", host.format(port=port),
                                                len(CHAT)), CHAT)
    assert status == 403
    error = json.loads(body)["error"]
    assert error["code"] == "forbidden_host" and "Host" in error["message"]
    assert not [h for h in headers if h.startswith("access-control-")]
    assert safe.standin.requests() == []


def test_no_host_at_all_is_refused(safe):
    status, _, _ = raw(safe.gateway.port, post_head("/v1/chat/completions", None, len(CHAT)),
                       CHAT)
    assert status == 400  # aiohttp's parser refuses an HTTP/1.1 request without Host
    assert safe.standin.requests() == []


def test_a_foreign_host_gets_anthropics_shape_on_its_routes(safe):
    port = safe.gateway.port
    body = json.dumps({"model": "claude-sonnet-4", "max_tokens": 5, "messages": QUESTION}).encode()
    status, _, answer = raw(port, post_head("/v1/messages", f"evil.example:{port}", len(body),
                                            "anthropic-version: 2023-06-01"), body)
    assert status == 403
    payload = json.loads(answer)
    assert payload["type"] == "error" and payload["error"]["type"] == "permission_error"
    assert safe.standin.requests() == []


@pytest.mark.parametrize("name", ["127.0.0.1", "localhost", "LOCALHOST", "[::1]"])
def test_the_loopback_names_with_the_port_pass(safe, name):
    port = safe.gateway.port
    status, _, body = raw(port, post_head("/v1/chat/completions", f"{name}:{port}", len(CHAT)),
                          CHAT)
    assert status == 200, body
    assert json.loads(body)["choices"][0]["message"]["content"].startswith("stand-in")
    assert [r["path"] for r in safe.standin.requests()] == ["/v1/chat/completions"]


@pytest.mark.parametrize("target", [
    "http://evil.example/v1/messages", "http://evil.example:{port}/v1/messages",
    "http://127.0.0.1:1/v1/messages", "http://x@127.0.0.1:{port}/v1/messages",
    "http://127.0.0.1.evil.example:{port}/v1/messages"])
def test_an_absolute_target_naming_another_host_is_refused(safe, target):
    """RFC 9112 3.2.2: an absolute-form target's authority replaces Host. A request whose
    target names another host, its Host the gateway's own, was served (200, forwarded
    upstream): it is refused as that Host would be, in the provider's shape."""
    port = safe.gateway.port
    body = json.dumps({"model": "claude-sonnet-4", "max_tokens": 5, "messages": QUESTION}).encode()
    status, headers, answer = raw(port, post_head(
        target.format(port=port), f"127.0.0.1:{port}", len(body),
        "anthropic-version: 2023-06-01"), body)
    assert status == 403, answer
    payload = json.loads(answer)
    assert payload["type"] == "error" and payload["error"]["type"] == "permission_error"
    assert "evil" not in target or "evil.example" in payload["error"]["message"]
    assert not [h for h in headers if h.startswith("access-control-")]
    assert safe.standin.requests() == []


@pytest.mark.parametrize(("method", "target", "named"), [
    ("POST", "ws://evil.example/v1/chat/completions", "'ws'"),
    ("POST", "wss://127.0.0.1:{port}/v1/chat/completions", "'wss'"),
    ("CONNECT", "127.0.0.1:{port}", "CONNECT '127.0.0.1:{port}'")])
def test_a_target_in_no_form_read_is_refused_naming_what_it_holds(safe, method, target, named):
    """A WebSocket URL or a proxy's CONNECT names an authority the guard cannot check: it is
    refused, and the refusal said `names ''` (the review probe); it names the scheme or the
    tunnel and what to send instead."""
    port = safe.gateway.port
    head = post_head(target.format(port=port), f"127.0.0.1:{port}", len(CHAT))
    status, _, answer = raw(port, head.replace("POST ", f"{method} ", 1), CHAT)
    assert status == 403, answer
    message = json.loads(answer)["error"]["message"]
    assert "names ''" not in message
    assert named.format(port=port) in message and "/v1/chat/completions" in message
    assert safe.standin.requests() == []


@pytest.mark.parametrize("name", ["127.0.0.1", "localhost", "[::1]"])
def test_an_absolute_target_naming_the_gateway_passes(safe, name):
    port = safe.gateway.port
    status, _, body = raw(port, post_head(f"http://{name}:{port}/v1/chat/completions",
                                          f"127.0.0.1:{port}", len(CHAT)), CHAT)
    assert status == 200, body
    assert [r["path"] for r in safe.standin.requests()] == ["/v1/chat/completions"]


def test_a_cross_site_text_plain_post_is_refused(safe):
    """A form or fetch() with text/plain needs no preflight; its Origin gives it away."""
    answer = httpx.post(f"{safe.openai_url}/chat/completions", content=CHAT, headers={
        "Content-Type": "text/plain", "Origin": "http://evil.example",
        "Authorization": "Bearer sk-test"})
    assert answer.status_code == 403
    assert answer.json()["error"]["code"] == "forbidden_origin"
    assert not [h for h in answer.headers if h.lower().startswith("access-control-")]
    # the preflight a browser would send first gets no CORS permission either
    preflight = httpx.request("OPTIONS", f"{safe.openai_url}/chat/completions", headers={
        "Origin": "http://evil.example", "Access-Control-Request-Method": "POST"})
    assert preflight.status_code == 403
    assert not [h for h in preflight.headers if h.lower().startswith("access-control-")]
    for origin in ("null", "http://127.0.0.1.evil.example"):
        refused = httpx.post(f"{safe.openai_url}/chat/completions", content=CHAT,
                             headers={"Origin": origin})
        assert refused.status_code == 403
    assert safe.standin.requests() == []


def test_a_second_origin_and_a_cross_site_request_without_one_are_refused(safe):
    """Before, only the first Origin was read (a loopback one let an evil one after it
    through), and a browser's no-cors request, which has no Origin, was forwarded although
    it said it came from elsewhere (an <img> of /v1/models)."""
    two = httpx.post(f"{safe.openai_url}/chat/completions", content=CHAT, headers=[
        ("Content-Type", "application/json"), ("Origin", "http://localhost:3000"),
        ("Origin", "http://evil.example")])
    assert two.status_code == 403 and "evil.example" in two.json()["error"]["message"]
    for method, path, body in (("GET", "/models", None), ("POST", "/chat/completions", CHAT)):
        answer = httpx.request(method, f"{safe.openai_url}{path}", content=body, headers={
            "Sec-Fetch-Site": "cross-site", "Sec-Fetch-Mode": "no-cors",
            "Sec-Fetch-Dest": "image", "Authorization": "Bearer sk-test"})
        assert answer.status_code == 403, (path, answer.text)
        assert answer.json()["error"]["code"] == "forbidden_origin"
    assert safe.standin.requests() == []


def test_a_loopback_origin_passes(safe):
    # a page of a local tool (localhost:3000) is cross-site to the gateway's port: its
    # loopback Origin is what is read, not Sec-Fetch-Site
    answer = httpx.post(f"{safe.openai_url}/chat/completions", content=CHAT, headers={
        "Content-Type": "application/json", "Origin": "http://localhost:3000",
        "Sec-Fetch-Site": "cross-site"})
    assert answer.status_code == 200
    assert [r["path"] for r in safe.standin.requests()] == ["/v1/chat/completions"]


def test_no_cors_header_of_the_upstream_comes_back():
    relayed = answer_headers({"Content-Type": "application/json",
                              "Access-Control-Allow-Origin": "*",
                              "access-control-allow-headers": "x-api-key"}, {"x-ctxlayer-tokens": "3"})
    assert dict(relayed) == {"Content-Type": "application/json", "x-ctxlayer-tokens": "3"}


@pytest.mark.parametrize("stream", [False, True])
def test_the_upstreams_own_ctxlayer_headers_never_come_back(tmp_path, stream):
    """A provider behind another gateway answers with its own x-ctxlayer-* headers, in any
    case: the client reads the figures of this gateway alone. Before, both came back: two
    x-ctxlayer-tokens, and a warning this gateway never said."""
    from gateway_stack import fresh_stack

    theirs = {"X-Ctxlayer-Tokens": "999999", "x-ctxlayer-warning": "said upstream",
              "X-CTXLAYER-DROPPED": "42"}
    with fresh_stack(tmp_path, headers=theirs) as stack:
        answer = httpx.post(f"{stack.openai_url}/chat/completions", timeout=30, json={
            "model": "gpt-4o", "messages": QUESTION, "stream": stream})
    assert answer.status_code == 200
    ours = {k: answer.headers.get_list(k) for k in answer.headers if k.startswith("x-ctxlayer")}
    assert len(ours["x-ctxlayer-tokens"]) == 1 and ours["x-ctxlayer-tokens"] != ["999999"]
    assert ours["x-ctxlayer-dropped"] == ["0"] and "x-ctxlayer-warning" not in ours


# ---- the token of /ctxlayer/* ---------------------------------------------------------------

@pytest.mark.parametrize("route", ["/ctxlayer/conversations", "/ctxlayer/why?conversationId=x"])
def test_ctxlayer_routes_need_the_token(safe, route):
    url = safe.anthropic_url + route
    for headers in ({}, {"Authorization": "Bearer wrong-token-of-some-length"},
                    {"Authorization": bearer(safe)["Authorization"].replace("Bearer", "Basic")}):
        refused = httpx.get(url, headers=headers)
        assert refused.status_code == 401
        assert refused.headers["www-authenticate"] == "Bearer"
        assert "token" in refused.json()["error"]["message"]
    answer = httpx.get(url, headers=bearer(safe))
    assert answer.status_code in (200, 400)  # an unknown conversation is a 400 of ctx/why
    assert answer.status_code == 200 or "x" in answer.json()["error"]["message"]


def test_health_is_open_and_says_nothing_of_conversations(safe):
    httpx.post(f"{safe.openai_url}/chat/completions", content=CHAT)
    answer = httpx.get(safe.anthropic_url + "/health")
    assert answer.status_code == 200
    assert set(answer.json()) == {"status", "workspace", "openai", "anthropic"}
    listed = httpx.get(safe.anthropic_url + "/ctxlayer/conversations", headers=bearer(safe))
    assert listed.json()["conversations"]  # there was one to tell about


def test_the_token_is_the_tcp_modes_file(safe):
    path = token_file(safe.state.state_dir)
    assert path.name == "token" and path.stat().st_mode & 0o777 == 0o600


# ---- slow and large clients -----------------------------------------------------------------

def _closed_by_server(s: socket.socket) -> bool:
    try:
        return s.recv(1, socket.MSG_DONTWAIT) == b""
    except BlockingIOError:
        return False
    except ConnectionError:
        return True


def test_a_slowloris_client_is_disconnected(safe):
    """Headers one byte at a time: the gateway closes the socket instead of waiting on."""
    head = post_head("/v1/chat/completions", f"127.0.0.1:{safe.gateway.port}", len(CHAT),
                     *[f"X-Padding-{i}: {'a' * 40}" for i in range(40)]).encode()
    sent, closed = 0, False
    with socket.create_connection(("127.0.0.1", safe.gateway.port), timeout=30) as s:
        deadline = time.monotonic() + 30  # a failure, never a measure (the head takes 95 s)
        while not closed and sent < len(head) and time.monotonic() < deadline:
            try:
                s.send(head[sent:sent + 1])
                sent += 1
            except (BrokenPipeError, ConnectionResetError):
                closed = True
            time.sleep(0.05)
            closed = closed or _closed_by_server(s)
    assert closed, f"still connected after {sent} bytes of a {len(head)}-byte head"
    assert sent < len(head)
    assert safe.standin.requests() == []


def test_a_client_that_sends_nothing_is_disconnected(safe):
    with socket.create_connection(("127.0.0.1", safe.gateway.port), timeout=30) as s:
        assert s.recv(1) == b""  # closed by the gateway (a timeout of recv would raise)


def test_a_body_slower_than_the_minimal_rate_gets_408(safe):
    body = CHAT + b" " * 200_000
    with socket.create_connection(("127.0.0.1", safe.gateway.port), timeout=30) as s:
        s.sendall(post_head("/v1/chat/completions", f"127.0.0.1:{safe.gateway.port}",
                            len(body)).encode() + b"\r\n" + body[:10])
        answer = b""
        for i in range(10, len(body), 10):  # 10 bytes every 50 ms: 200 B/s
            if answer := _answer_if_any(s):
                break
            try:
                s.send(body[i:i + 10])
            except (BrokenPipeError, ConnectionResetError):
                break
            time.sleep(0.05)
        answer += _rest(s)
    assert answer.startswith(b"HTTP/1.1 408"), answer[:200]
    error = json.loads(answer.partition(b"\r\n\r\n")[2])["error"]
    assert error["param"] == "body" and "KiB/s" in error["message"]
    assert safe.standin.requests() == []


def _answer_if_any(s: socket.socket) -> bytes:
    try:
        return s.recv(65536, socket.MSG_DONTWAIT)
    except (BlockingIOError, ConnectionError):
        return b""


def _rest(s: socket.socket) -> bytes:
    data = b""
    try:
        while chunk := s.recv(65536):
            data += chunk
    except ConnectionError:
        pass
    return data


def test_a_body_over_max_body_mb_gets_413_unread(safe):
    port = safe.gateway.port
    status, _, body = raw(port, post_head("/v1/chat/completions", f"127.0.0.1:{port}",
                                          2 * 1024 * 1024))
    assert status == 413 and "max_body_mb" in json.loads(body)["error"]["message"]
    # no length said: counted as it comes
    chunked = httpx.post(f"{safe.openai_url}/chat/completions",
                         content=iter([b"x" * 65536] * 20))
    assert chunked.status_code == 413
    assert safe.standin.requests() == []


def test_max_body_mb_is_the_daemons_framing_limit():
    from ctxlayer.lsp.transport import MAX_MESSAGE_BYTES

    assert GatewayConfig().max_body_mb == MAX_MESSAGE_MB
    assert MAX_MESSAGE_BYTES == MAX_MESSAGE_MB * 1024 * 1024


# ---- a stream the upstream breaks ------------------------------------------------------------

@pytest.mark.parametrize("mode, says", [("stall", "read timeout"),
                                        ("cut", "closed the stream before its end")])
def test_a_broken_openai_stream_ends_with_an_error_chunk(safe, mode, says):
    safe.standin.fail(mode=mode)
    with httpx.Client(timeout=30) as client, client.stream(
            "POST", f"{safe.openai_url}/chat/completions",
            json={"model": "gpt-4o", "messages": QUESTION, "stream": True}) as response:
        events = [line for line in response.iter_lines() if line]
    assert events[-1].startswith("data: ") and "[DONE]" not in "".join(events)
    *answer, last = [json.loads(e.removeprefix("data: ")) for e in events]  # all whole
    assert answer and all("choices" in chunk for chunk in answer)
    assert says in last["error"]["message"] and last["error"]["type"] == "server_error"
    safe.standin.fail(mode=mode)
    with pytest.raises(openai.APIError, match=says):
        for _ in safe.openai().chat.completions.create(model="gpt-4o", messages=QUESTION,
                                                       stream=True):
            pass


@pytest.mark.parametrize("mode, says, kind", [
    ("stall", "read timeout", "timeout_error"),
    ("cut", "closed the stream before its end", "api_error")])
def test_a_broken_anthropic_stream_ends_with_an_error_event(safe, mode, says, kind):
    safe.standin.fail(mode=mode)
    body = {"model": "claude-sonnet-4", "max_tokens": 20, "messages": QUESTION, "stream": True}
    with httpx.Client(timeout=30) as client, client.stream(
            "POST", f"{safe.anthropic_url}/v1/messages", json=body,
            headers={"anthropic-version": "2023-06-01", "x-api-key": "sk-ant-test"}) as response:
        text = response.read().decode()
    events = [e for e in text.split("\n\n") if e]
    assert events[-1].startswith("event: error\ndata: ")
    last = json.loads(events[-1].partition("data: ")[2])
    assert last["type"] == "error" and last["error"]["type"] == kind
    assert says in last["error"]["message"]
    for event in events[:-1]:  # no half event before it
        json.loads(event.partition("data: ")[2])
    safe.standin.fail(mode=mode)
    with pytest.raises(anthropic.APIError, match=says), safe.anthropic().messages.stream(
            model="claude-sonnet-4", max_tokens=20, messages=QUESTION) as stream:
        for _ in stream.text_stream:
            pass


@pytest.mark.parametrize("mode, says", [("stall", "read timeout"),
                                        ("cut", "closed the stream before its end")])
def test_a_broken_responses_stream_ends_with_an_error_event(safe, mode, says):
    """As on Chat Completions, on the Responses API (the stand-in's `fail` queue was not read
    on /v1/responses: this was never tried), ended with the Responses API's own `error`
    event, numbered after the events before it (it was a Chat Completions chunk: no `event:`
    line, no `type`, no `sequence_number`, no Responses event at all); its error object nested
    under `error` too, as OpenAI's own streams send it."""
    safe.standin.fail(mode=mode)
    with httpx.Client(timeout=30) as client, client.stream(
            "POST", f"{safe.openai_url}/responses", headers={"authorization": "Bearer k"},
            json={"model": "gpt-4o", "input": "What is it?", "stream": True}) as response:
        events = [e for e in response.read().decode().split("\n\n") if e]
    *answer, last = [json.loads(e.partition("data: ")[2]) for e in events]  # all whole
    assert answer and all(a["type"].startswith("response.") for a in answer)
    assert not any(a["type"] == "response.completed" for a in answer)
    assert events[-1].startswith("event: error\ndata: ")
    assert last["type"] == "error" and says in last["message"]
    assert last["code"] == "server_error" and last["param"] is None
    assert last["sequence_number"] == answer[-1]["sequence_number"] + 1
    assert ResponseErrorEvent.model_validate(last).message == last["message"]
    assert says in last["error"]["message"] and last["error"]["type"] == "server_error"
    # the upstream's failure it was (the stalled request is closed once the gateway gave up)
    said = "cut" if mode == "cut" else "cancelled"
    safe.wait_for(lambda rs: rs and rs[-1].get(said) is True, f"the stream {said} upstream")
    safe.standin.fail(mode=mode)
    with pytest.raises(openai.APIError, match=says) as raised:
        for _ in safe.openai().responses.create(model="gpt-4o", input="What is it?",
                                                stream=True):
            pass
    assert not isinstance(raised.value, openai.APIResponseValidationError)  # not unreadable
    safe.standin.fail(mode=mode)  # the SDK's stream helper, which reads the events' types
    with pytest.raises(openai.APIError, match=says) as raised, safe.openai().responses.stream(
            model="gpt-4o", input="What is it?") as stream:
        for _ in stream:
            pass
    assert not isinstance(raised.value, openai.APIResponseValidationError)


def test_a_429_on_responses_comes_back_as_the_providers(safe):
    """The upstream's 429 on /v1/responses reaches the client as it was said, its
    retry-after with it; the failure is the Responses request's, not the next chat's."""
    safe.standin.fail(429)
    answer = httpx.post(f"{safe.openai_url}/responses", timeout=30, json={
        "model": "gpt-4o", "input": "What is it?"}, headers={"authorization": "Bearer k"})
    assert answer.status_code == 429 and answer.headers["retry-after"] == "1"
    assert answer.json()["error"]["message"]
    after = httpx.post(f"{safe.openai_url}/chat/completions", timeout=30, content=CHAT,
                       headers={"authorization": "Bearer k", "content-type": "application/json"})
    assert after.status_code == 200, after.text
    safe.standin.fail(429)
    with pytest.raises(openai.RateLimitError):
        safe.openai().responses.create(model="gpt-4o", input="What is it?")


@pytest.mark.parametrize("stream", [False, True])
@pytest.mark.parametrize("case, status, kind, param, says", [
    ("too large", 413, "invalid_request_error", "body", "max_body_mb"),
    ("slow", 504, "server_error", None, "did not answer in time"),
    ("bad input", 400, "invalid_request_error", "input", "`input` must be"),
])
def test_the_gateways_own_errors_on_responses_are_read_by_the_sdk(safe, case, status, kind,
                                                                  param, says, stream):
    """An error the gateway gives a Responses request before any answer goes out is the
    error object both OpenAI APIs answer with (`error`: message, type, param, code): the
    SDK's exception carries its status, type, param and message, streamed or not."""
    given: dict = {"input": "q"}
    if case == "too large":
        given["input"] = "x" * (2 * 1024 * 1024)
    elif case == "slow":  # its first byte after the read timeout
        safe.standin.fail(mode="slow_first_byte", delay=READ_TIMEOUT * 3)
    else:
        given["input"] = 5
    with pytest.raises(openai.APIStatusError, match=says) as raised:
        safe.openai().responses.create(model="gpt-4o", stream=stream, **given)
    err = raised.value
    assert (err.status_code, err.type, err.param) == (status, kind, param)
    assert err.body["message"].startswith("ctxlayer gateway: ")


@pytest.mark.parametrize("fmt", ["openai", "anthropic", "responses"])
def test_a_whole_answer_the_upstream_cuts_is_a_502_in_the_providers_shape(safe, fmt):
    """The upstream says the answer's length, sends half of it, and drops the connection: a
    502 saying so, as for every other upstream failure (it was aiohttp's plain-text 500,
    'Server got itself in trouble', and a traceback in the log)."""
    safe.standin.fail(mode="cut")
    if fmt != "anthropic":
        path, body = (("/chat/completions", {"model": "gpt-4o", "messages": QUESTION})
                      if fmt == "openai" else ("/responses", {"model": "gpt-4o", "input": "q"}))
        answer = httpx.post(f"{safe.openai_url}{path}", timeout=30, json=body,
                            headers={"authorization": "Bearer k"})
        said = answer.json()["error"]
        assert said["type"] == "server_error"
    else:
        answer = httpx.post(f"{safe.anthropic_url}/v1/messages", timeout=30, json={
            "model": "claude-sonnet-4", "max_tokens": 20, "messages": QUESTION}, headers={
            "anthropic-version": "2023-06-01", "x-api-key": "sk-ant-test"})
        said = answer.json()["error"]
        assert said["type"] == "api_error"
    assert answer.status_code == 502 and "closed the answer before its end" in said["message"]
    assert safe.standin.requests()[-1]["cut"] is True
    safe.standin.fail(mode="cut")
    with pytest.raises(openai.APIStatusError if fmt != "anthropic"
                       else anthropic.APIStatusError, match="closed the answer before its end"):
        if fmt == "openai":
            safe.openai().chat.completions.create(model="gpt-4o", messages=QUESTION)
        elif fmt == "responses":
            safe.openai().responses.create(model="gpt-4o", input="q")
        else:
            safe.anthropic().messages.create(model="claude-sonnet-4", max_tokens=20,
                                             messages=QUESTION)


@pytest.mark.parametrize("compressing", [False, True])
def test_a_whole_answer_past_the_most_read_is_a_502_not_memory(tmp_path, monkeypatch,
                                                                 compressing):
    # an answer not streamed was read whole, and decoded whole when compressed: a
    # misbehaving upstream's 1.5 GB of gzip went into the gateway's memory. The limit made
    # small here: a stand-in's answer is past it as it came, or (compressed) once decoded
    from gateway_stack import fresh_stack

    from ctxlayer.gateway import forward

    with fresh_stack(tmp_path, compressing=("gpt-4o",) if compressing else ()) as stack:
        plain = httpx.post(stack.openai_url + "/chat/completions", json={
            "model": "gpt-4o", "messages": [{"role": "user", "content": "hi"}]},
            headers={"Authorization": "Bearer sk-test"}, timeout=30)
        assert plain.status_code == 200
        monkeypatch.setattr(forward, "MOST_ANSWER", len(plain.content) - 20)
        answer = httpx.post(stack.openai_url + "/chat/completions", json={
            "model": "gpt-4o", "messages": [{"role": "user", "content": "hi again"}]},
            headers={"Authorization": "Bearer sk-test"}, timeout=30)
    assert answer.status_code == 502, answer.text
    error = answer.json()["error"]
    assert "MiB to a request not streamed" in error["message"]
