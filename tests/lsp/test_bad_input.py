"""The daemon survives every bad input and says what was wrong: malformed framing, invalid
JSON, wrong envelopes and types, unknown methods, huge payloads; then still answers ctx/count.
Spoken in raw bytes over the daemon's real stdin/stdout."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest
from conftest import ENV, SERVE, RawDaemon

from ctxlayer.tokenizers import counter_for

pytestmark = pytest.mark.e2e
PROBE_TEXT = "still alive after that"


async def probe(daemon: RawDaemon, msg_id: object) -> None:
    reply = await daemon.request(msg_id, "ctx/count", {"texts": [PROBE_TEXT]})
    expected = counter_for("gpt-4o").count(PROBE_TEXT)
    assert reply.get("result") == {"tokens": [expected], "total": expected}, reply


def frame(body: bytes) -> bytes:
    return b"Content-Length: %d\r\n\r\n" % len(body) + body


async def error_without_id(daemon: RawDaemon, before: int) -> dict:
    await probe(daemon, "sync")  # responses come in order: the error is in by now
    assert len(daemon.unmatched) > before, "no error answered"
    return daemon.unmatched[-1]["error"]


@pytest.mark.parametrize(("data", "says"), [
    (b"Content-Length: abc\r\n\r\n", "invalid Content-Length"),
    (b"Content-Length: -5\r\n\r\n", "invalid Content-Length"),
    (b"Hello there\r\n\r\n", "malformed header line"),
    (b"Content-Type: application/json\r\n\r\n", "no Content-Length"),
    (b"X-" + b"a" * 70_000 + b"\r\n\r\n", "longer than"),
])
async def test_malformed_framing_is_answered(raw_daemon: RawDaemon, data: bytes, says: str):
    before = len(raw_daemon.unmatched)
    await raw_daemon.send_raw(data)
    error = await error_without_id(raw_daemon, before)
    assert error["code"] == -32700 and says in error["message"]
    await probe(raw_daemon, 1)


async def test_truncated_body_costs_at_most_the_next_message(raw_daemon: RawDaemon):
    body = b'{"jsonrpc":"2.0","id":"cut","method":"ctx/count","params":{"texts":["a"]}}'
    await raw_daemon.send_raw(b"Content-Length: %d\r\n\r\n" % (len(body) + 40) + body)
    await raw_daemon.send({"jsonrpc": "2.0", "id": "eaten", "method": "ctx/count",
                           "params": {"texts": ["b"]}})
    await probe(raw_daemon, "after")
    assert raw_daemon.responses.pop("cut")["error"]["code"] == -32700


@pytest.mark.parametrize(("body", "code", "says"), [
    (b"{not json", -32700, "parse error"),
    (b'{"jsonrpc":"2.0","id":77,"method":"ctx/count","params":{', -32700, "parse error"),
    # a bad byte is named by its position, as the CLI and the gateway name it (msgspec said
    # "Invalid UTF-8 encoded string")
    (b"\xff\xfe{}", -32700, "parse error: not valid UTF-8 at byte 0"),
    (b'{"jsonrpc":"2.0","id":85,"method":"ctx/count","params":{"texts":["h\xffi"]}}', -32700,
     "parse error: not valid UTF-8 at byte 67"),
    (b"[" * 200_000, -32700, "parse error"),
    # msgspec says "Input data was truncated" of a text cut inside a surrogate pair
    (b'{"jsonrpc":"2.0","id":84,"method":"ctx/count","params":{"texts":["a\\ud800"]}}', -32700,
     "parse error: a lone UTF-16 surrogate \\ud800 at byte 67: the text was cut in the middle"),
    (b"42", -32600, "JSON object"),
    (b'[{"jsonrpc":"2.0","id":1,"method":"ctx/count"}]', -32600, "batches"),
    (b'{"jsonrpc":"1.0","id":78,"method":"ctx/count"}', -32600, "jsonrpc"),
    (b'{"jsonrpc":"2.0","id":[1],"method":"ctx/count"}', -32600, "id"),
    (b'{"jsonrpc":"2.0","id":true,"method":"ctx/count"}', -32600, "id"),
    (b'{"jsonrpc":"2.0","id":79,"method":5}', -32600, "method"),
    (b'{"jsonrpc":"2.0","id":80,"method":"ctx/count","params":"texts"}', -32600, "params"),
    (b'{"jsonrpc":"2.0","id":81,"method":"ctx/count","params":["a"]}', -32602, "params"),
    (b'{"jsonrpc":"2.0","id":82,"method":"ctx/bogus"}', -32601, "ctx/bogus"),
    (b'{"jsonrpc":"2.0","id":83,"method":"textDocument/hover","params":{"x":1}}', -32602,
     "invalid params"),
])
async def test_bad_messages_get_the_right_error(raw_daemon: RawDaemon, body: bytes, code: int,
                                               says: str):
    before = len(raw_daemon.unmatched)
    await raw_daemon.send_raw(frame(body))
    await probe(raw_daemon, "sync")
    sent_id = None
    try:
        sent_id = json.loads(body).get("id") if body.startswith(b"{") else None
    except ValueError:
        sent_id = next((n for n in (77, 85) if b'"id":%d' % n in body), None)
    if isinstance(sent_id, int) and not isinstance(sent_id, bool):
        error = raw_daemon.responses.pop(sent_id)["error"]
    else:
        assert len(raw_daemon.unmatched) > before
        error = raw_daemon.unmatched[-1]["error"]
    assert error["code"] == code, error
    assert says in error["message"], error


async def test_notifications_and_responses_that_make_no_sense_are_dropped(raw_daemon: RawDaemon):
    for msg in ({"jsonrpc": "2.0", "method": "ctx/unknownNotification", "params": {}},
                {"jsonrpc": "2.0", "method": "textDocument/didSave", "params": {"x": 5}},
                {"jsonrpc": "2.0", "id": 999, "result": {}},
                {"jsonrpc": "2.0", "id": 998, "error": "no"},
                {"jsonrpc": "2.0"}):
        await raw_daemon.send(msg)
    await probe(raw_daemon, 1)
    assert raw_daemon.unmatched == []


async def test_huge_payload_is_refused_and_streamed_away(raw_daemon: RawDaemon):
    text = "x" * (33 * 1024 * 1024)
    body = json.dumps({"jsonrpc": "2.0", "id": "huge", "method": "ctx/count",
                       "params": {"texts": [text]}}).encode()
    await raw_daemon.send_raw(frame(body))
    error = (await raw_daemon.response("huge", timeout=60))["error"]
    assert error["code"] == -32600 and "too large" in error["message"]
    await probe(raw_daemon, 2)


async def test_requests_after_shutdown_are_refused_then_exit_is_clean():
    daemon = await RawDaemon.start()
    await daemon.initialize()
    assert (await daemon.request(1, "shutdown"))["result"] is None
    reply = await daemon.request(2, "ctx/count", {"texts": ["x"]})
    assert reply["error"]["code"] == -32600 and "shutting down" in reply["error"]["message"]
    await daemon.send({"jsonrpc": "2.0", "method": "exit"})
    assert await daemon.proc.wait() == 0


async def test_exit_without_shutdown_and_eof_end_the_process():
    daemon = await RawDaemon.start()
    await daemon.initialize()
    await daemon.send({"jsonrpc": "2.0", "method": "exit"})
    assert await daemon.proc.wait() == 1
    daemon = await RawDaemon.start()
    await daemon.initialize()
    assert daemon.proc.stdin is not None
    daemon.proc.stdin.close()
    assert await daemon.proc.wait() == 1


@pytest.mark.parametrize("stdin", ["/dev/null", "empty file"])
async def test_a_stdin_with_nothing_to_read_is_an_eof(stdin: str, tmp_path: Path):
    """`ctxlayer serve < /dev/null` (nohup, a service manager) never ended: asyncio took the
    character device, then failed to watch it (EPERM) in a callback, leaving a traceback on
    stderr and the daemon waiting forever. It ends as an empty file does: EOF without
    shutdown, exit 1, nothing on stdout."""
    path = Path(stdin)
    if not stdin.startswith("/"):
        path = tmp_path / "empty"
        path.write_bytes(b"")
    with path.open("rb") as source:
        proc = await asyncio.create_subprocess_exec(
            *SERVE, stdin=source, stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE, env=ENV)
        try:
            out, err = await asyncio.wait_for(proc.communicate(), 30)
        finally:
            if proc.returncode is None:
                proc.kill()
                await proc.wait()
    assert proc.returncode == 1 and out == b""
    assert b"Traceback" not in err and b"Error" not in err, err
