"""A request the HTTP parser cannot read, sent to `ctxlayer gateway` as a user runs it: its API
key never reaches the log, at any verbosity, in a `--log-file` or on stderr.

aiohttp answered such a request with a 400 and logged a traceback quoting the header line,
key and all: a key file saved with CRLF line ends (curl -H "x-api-key: $(cat key.txt)"), a
pasted key with a stray control byte, a bearer token over 8190 bytes."""

from __future__ import annotations

import json
import socket
from pathlib import Path

import pytest
from test_command import gateway_process, hermetic

KEY = "sk-ant-api03-NEVERLOGGED"

#: header lines the parser refuses, each holding the key
REFUSED = {
    "trailing CR (a CRLF key file)": f"x-api-key: {KEY}1\r",
    "trailing DEL": f"x-api-key: {KEY}2\x7f",
    "NUL inside": f"Authorization: Bearer {KEY}3\x00x",
    "bare LF inside": f"x-api-key: {KEY}4\nabc: d",
    "over 8190 bytes": f"Authorization: Bearer {KEY}5" + "A" * 9000,
}


def _send(port: int, header: str) -> bytes:
    body = b'{"model":"claude-sonnet-4-5","max_tokens":10,"messages":[]}'
    head = (f"POST /v1/messages HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n"
            f"anthropic-version: 2023-06-01\r\nContent-Type: application/json\r\n{header}\r\n"
            f"Content-Length: {len(body)}\r\nConnection: close\r\n\r\n")
    with socket.create_connection(("127.0.0.1", port), timeout=10) as s:
        s.sendall(head.encode("latin-1") + body)
        answer = b""
        while chunk := s.recv(65536):
            answer += chunk
    return answer


@pytest.mark.parametrize("where", ["log-file", "stderr"])
def test_a_refused_header_never_puts_the_key_in_the_log(tmp_path: Path, where: str):
    env = hermetic(tmp_path)
    log_file = tmp_path / "gateway.log"
    to_file = ["--log-file", str(log_file)] if where == "log-file" else []
    # -vvv: aiohttp's own loggers too, the most the command says
    proc = gateway_process(tmp_path, env, "--port", "0", "--upstream-anthropic",
                           "http://127.0.0.1:9", *to_file, "-vvv")
    try:
        port = json.loads(proc.stdout.readline())["port"]
        for header in REFUSED.values():
            assert _send(port, header).startswith(b"HTTP/1.1 400 ")
    finally:
        proc.terminate()
        _, stderr = proc.communicate(timeout=30)
    log = log_file.read_text() if where == "log-file" else stderr
    assert KEY not in log
    assert "Traceback" not in log
    # each said in one line, naming what the parser refused
    said = [line for line in log.splitlines()
            if "refused a request the HTTP parser could not read" in line]
    assert len(said) == len(REFUSED), log
    assert any(line.endswith(": LineTooLong") for line in said), said


@pytest.mark.parametrize("header", REFUSED.values(), ids=REFUSED.keys())
def test_a_refused_header_is_answered_in_json_without_the_key(stack, header: str):
    """aiohttp's own answer was text/plain quoting the refused line, the key with it, back to
    the client, whose SDK prints an error's body into its log and its UI."""
    answer = _send(stack.gateway.port, header)
    head, _, body = answer.partition(b"\r\n\r\n")
    # in the HTTP the client spoke, not aiohttp's placeholder request's HTTP/1.0 (the
    # request's own version is in the head it could not read); the connection ends with it
    assert head.startswith(b"HTTP/1.1 400 ")
    assert b"\r\nconnection: close" in head.lower()
    assert b"application/json" in head.lower()
    assert KEY.encode() not in answer
    said = json.loads(body)
    # one body both families' SDKs read: Anthropic's shape with OpenAI's param and code
    assert said["type"] == "error"
    assert said["error"]["type"] == "invalid_request_error"
    assert said["error"]["code"] == "unreadable_request"
    assert said["error"]["message"].startswith("ctxlayer gateway: ")
    assert stack.model_requests() == []  # never forwarded


def test_the_answer_names_what_could_not_be_read(stack):
    said = {name: json.loads(_send(stack.gateway.port, header).partition(b"\r\n\r\n")[2])
            ["error"]["message"] for name, header in REFUSED.items()}
    assert "missing expected LF after header value" in said["trailing CR (a CRLF key file)"]
    assert "CRLF" in said["trailing CR (a CRLF key file)"]
    assert "invalid header value char" in said["NUL inside"]
    assert "longer than 8190 bytes" in said["over 8190 bytes"]


def test_a_tls_hello_is_told_the_gateway_speaks_plain_http(stack):
    with socket.create_connection(("127.0.0.1", stack.gateway.port), timeout=10) as s:
        s.sendall(b"\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03" + b"\x00" * 64)
        answer = b""
        while chunk := s.recv(65536):
            answer += chunk
    said = json.loads(answer.partition(b"\r\n\r\n")[2])["error"]["message"]
    assert "the gateway speaks plain HTTP" in said


def test_a_bad_chunk_size_is_said_of_the_body_not_the_head(stack):
    # the review probe: "a line of the request head could not be read: invalid character in
    # chunk size", where the head was read and the body's framing was not
    head = (f"POST /v1/messages HTTP/1.1\r\nHost: 127.0.0.1:{stack.gateway.port}\r\n"
            "anthropic-version: 2023-06-01\r\nContent-Type: application/json\r\n"
            "Transfer-Encoding: chunked\r\nConnection: close\r\n\r\nZZ\r\n{}\r\n0\r\n\r\n")
    with socket.create_connection(("127.0.0.1", stack.gateway.port), timeout=10) as s:
        s.sendall(head.encode())
        answer = b""
        while chunk := s.recv(65536):
            answer += chunk
    said = json.loads(answer.partition(b"\r\n\r\n")[2])["error"]["message"]
    assert "body's framing" in said and "request head" not in said, said
