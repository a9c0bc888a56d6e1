"""A daemon that answers `initialize` and then misbehaves in one way, for the client's failure
tests: what a real daemon does only by bad luck (dying mid-request, wedged) it does every time.

    python fake_daemon.py dies-reading   exits (code 3) on the headers of a message over 100 kB
    python fake_daemon.py stops-reading  never reads again (a wedged daemon)
    python fake_daemon.py never-answers  reads every request and answers none
    python fake_daemon.py chatty         writes 1 MB to stderr before answering initialize
"""

from __future__ import annotations

import json
import sys
import time


def read_headers() -> int:
    """The next message's Content-Length; exits when the client closed its end."""
    length = 0
    while True:
        line = sys.stdin.buffer.readline()
        if not line:
            sys.exit(0)
        if not line.strip():
            if length:
                return length
            continue
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"content-length":
            length = int(value)


def answer(msg_id: object, result: object) -> None:
    body = json.dumps({"jsonrpc": "2.0", "id": msg_id, "result": result}).encode()
    sys.stdout.buffer.write(b"Content-Length: %d\r\n\r\n" % len(body) + body)
    sys.stdout.buffer.flush()


def main(mode: str) -> None:
    init = json.loads(sys.stdin.buffer.read(read_headers()))
    if mode == "chatty":  # far more than a pipe holds: it waits until the client reads it
        sys.stderr.write("fake daemon: a log line\n" * 40_000)
        sys.stderr.flush()
    answer(init["id"], {"capabilities": {}, "serverInfo": {"name": "fake"}})
    if mode == "stops-reading":
        time.sleep(3600)
    while True:
        length = read_headers()
        if mode == "dies-reading" and length > 100_000:
            sys.stderr.write("fake daemon: giving up mid-request\n")
            sys.exit(3)
        sys.stdin.buffer.read(length)


if __name__ == "__main__":
    main(sys.argv[1])
