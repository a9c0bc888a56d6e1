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
            assert _send(port, header).startswith(b"HTTP/1.0 400 ")
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
