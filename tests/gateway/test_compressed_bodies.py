"""A request body sent compressed (`Content-Encoding` gzip, deflate, zstd: Codex CLI signed in
with ChatGPT sends its Responses requests as zstd) is read plain, fitted like any other, and
goes upstream plain; a coding the gateway cannot read, bytes that are not what the header
says, and a body that would decompress past the size limit are refused in the provider's
shape, never forwarded."""

from __future__ import annotations

import gzip
import json
import zlib

import httpx2 as httpx
import pytest

from ctxlayer.gateway import encodings
from ctxlayer.gateway.encodings import zstd

CHAT = {"model": "gpt-4o", "messages": [
    {"role": "system", "content": "Be terse."},
    {"role": "user", "content": "Which file holds the retry loop? Say it in one word."}]}


def _deflate_raw(data: bytes) -> bytes:
    squeeze = zlib.compressobj(wbits=-zlib.MAX_WBITS)
    return squeeze.compress(data) + squeeze.flush()


CODINGS = {
    "gzip": ("gzip", gzip.compress),
    "gzip in two members": ("gzip", lambda d: gzip.compress(d[:40]) + gzip.compress(d[40:])),
    "deflate": ("deflate", zlib.compress),
    "bare deflate": ("deflate", _deflate_raw),
    "zstd": ("zstd", zstd.compress),
    "zstd in two frames": ("zstd", lambda d: zstd.compress(d[:40]) + zstd.compress(d[40:])),
    "zstd of gzip": ("gzip, zstd", lambda d: zstd.compress(gzip.compress(d))),
    # a member per byte, and a thousand empty ones after the body: all read, in order
    "gzip in a member a byte": ("gzip", lambda d: b"".join(gzip.compress(d[k:k + 1])
                                                          for k in range(len(d)))
                                + gzip.compress(b"") * 1000),
    "zstd in a frame a byte": ("zstd", lambda d: b"".join(zstd.compress(d[k:k + 1])
                                                         for k in range(len(d)))),
    "identity": ("identity", lambda d: d),
}


def _post(url: str, body: dict, coding: str, squeeze) -> httpx.Response:
    return httpx.post(url, content=squeeze(json.dumps(body).encode()), timeout=30, headers={
        "content-type": "application/json", "content-encoding": coding,
        "authorization": "Bearer sk-test"})


@pytest.mark.parametrize("name", CODINGS)
def test_a_compressed_chat_is_fitted_and_goes_upstream_plain(stack, name):
    coding, squeeze = CODINGS[name]
    answer = _post(f"{stack.openai_url}/chat/completions", CHAT, coding, squeeze)
    assert answer.status_code == 200, answer.text
    assert answer.headers["x-ctxlayer-tokens"]  # fitted, not passed through
    (sent,) = stack.standin.requests()
    assert sent["status"] == 200 and sent["problems"] == []
    assert "content-encoding" not in sent["headers"]
    assert sent["body"]["messages"] == CHAT["messages"]


def test_a_zstd_responses_request_as_codex_sends_it_streams_its_answer(stack):
    items = [{"type": "message", "role": "user", "content": [
                 {"type": "input_text", "text": "Read the config."}]},
             {"type": "function_call", "call_id": "c1", "name": "shell",
              "arguments": json.dumps({"command": ["cat", "setup.cfg"]})},
             {"type": "function_call_output", "call_id": "c1", "output": "[metadata]\nname=x"},
             {"type": "message", "role": "user", "content": [
                 {"type": "input_text", "text": "And now?"}]}]
    body = {"model": "gpt-4o", "instructions": "Be terse.", "input": items, "stream": True,
            "store": False}
    answer = _post(f"{stack.openai_url}/responses", body, "zstd", zstd.compress)
    assert answer.status_code == 200, answer.text
    assert "response.completed" in answer.text
    (sent,) = stack.standin.requests()
    assert sent["problems"] == [] and "content-encoding" not in sent["headers"]
    assert sent["body"]["input"] == items


def test_anthropic_routes_read_a_gzipped_body(stack):
    body = {"model": "claude-opus-5-5", "max_tokens": 50,
            "messages": [{"role": "user", "content": "Say hi."}]}
    for path in ("/v1/messages", "/v1/messages/count_tokens"):
        answer = _post(stack.anthropic_url + path, body, "gzip", gzip.compress)
        assert answer.status_code == 200, (path, answer.text)
    sent = stack.standin.requests()
    assert [s["path"] for s in sent] == ["/v1/messages", "/v1/messages/count_tokens"]
    assert all("content-encoding" not in s["headers"] and s["problems"] == [] for s in sent)
    assert sent[1]["body"] == body  # counted as the client sent it, decoded


def test_a_passed_through_path_gets_the_body_decoded(stack):
    answer = _post(f"{stack.openai_url}/embeddings",
                   {"model": "text-embedding-3-small", "input": "retry loop"}, "zstd",
                   zstd.compress)
    assert answer.status_code == 200, answer.text
    (sent,) = stack.standin.requests()
    assert sent["body"]["input"] == "retry loop"
    assert "content-encoding" not in sent["headers"]


def _bomb(squeeze) -> bytes:
    """A 40 MiB body (above the 32 MiB limit) that compresses to a few kilobytes."""
    return squeeze(b'{"model": "gpt-4o", "messages": [], "pad": "' + b" " * (40 << 20) + b'"}')


@pytest.mark.parametrize("coding, raw, status, says", [
    ("br", b"\x1b\x00", 415, "cannot be read here"),
    ("compress", b"\x1f\x9d", 415, "cannot be read here"),
    ("zstd", b"\x28\xb5\x2f\xfd not a frame", 400, "is not the zstd"),
    ("zstd", zstd.compress(json.dumps(CHAT).encode())[:-6], 400, "is not the zstd"),
    ("gzip", gzip.compress(json.dumps(CHAT).encode())[:-9], 400, "is not the gzip"),
    ("gzip", json.dumps(CHAT).encode(), 400, "is not the gzip"),
    ("zstd", _bomb(zstd.compress), 413, "decompresses to more than 32 MiB"),
    ("gzip", _bomb(gzip.compress), 413, "decompresses to more than 32 MiB"),
])
def test_what_cannot_be_decoded_is_refused_in_the_providers_shape(stack, coding, raw, status,
                                                                   says):
    assert len(raw) < 1 << 20
    for fmt, url in (("openai", f"{stack.openai_url}/chat/completions"),
                     ("anthropic", f"{stack.anthropic_url}/v1/messages")):
        answer = httpx.post(url, content=raw, timeout=30, headers={
            "content-type": "application/json", "content-encoding": coding})
        assert answer.status_code == status, answer.text
        error = answer.json()["error"]
        assert says in error["message"]
        if fmt == "openai":
            assert error["param"] == ("body" if status == 413 else "Content-Encoding")
        else:
            assert answer.json()["type"] == "error"
    assert stack.standin.requests() == []  # nothing forwarded


def test_a_decoder_is_never_handed_the_rest_of_the_body_at_once():
    # each frame's end copied the whole rest of the body (its `unused_data`): an 8 MB body of
    # 400,000 empty gzip members took 109 s to read (0.6 s now, by hand); handed a step at a
    # time, what a frame leaves after its end is never more than one step
    handed: list[int] = []

    class Watched:
        def __init__(self) -> None:
            self.inner = zlib.decompressobj(16 + zlib.MAX_WBITS)

        def decompress(self, data, max_length):
            handed.append(len(data))
            return self.inner.decompress(data, max_length)

        @property
        def eof(self) -> bool:
            return self.inner.eof

        @property
        def unused_data(self) -> bytes:
            return self.inner.unused_data

    body = gzip.compress(b"x" * 100) + gzip.compress(b"") * 20_000 + gzip.compress(b"y")
    assert encodings._frames(body, 1 << 20, Watched) == b"x" * 100 + b"y"
    assert len(handed) >= 20_002 and max(handed) < len(body) // 4
