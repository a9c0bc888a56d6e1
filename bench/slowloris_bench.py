"""Slowloris benchmark: how soon the gateway lets go of clients that send their headers one
byte at a time, and how many file descriptors they hold meanwhile.

    .venv/bin/python bench/slowloris_bench.py [--sockets 500] [--header-timeout 10]

`ctxlayer gateway` runs as its own process on loopback (a temporary workspace whose
ctxlayer.toml sets `[gateway] header_timeout`); this process opens N sockets to it and sends
on each one byte of a request head every second, as a slowloris does, until the gateway
closes it. Reported: seconds from connecting to being closed (min / p50 / max), how many were
still open after twice the header timeout, and the gateway's open fds (Linux /proc) before,
at the peak and after.
"""

from __future__ import annotations

import argparse
import json
import os
import selectors
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HEAD = b"POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1\r\n" + b"X-Slow: " + b"a" * 4000


def fds(pid: int) -> int:
    try:
        return len(os.listdir(f"/proc/{pid}/fd"))
    except OSError:
        return -1


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sockets", type=int, default=500)
    ap.add_argument("--header-timeout", type=float, default=10.0)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        base = Path(tmp)
        for d in ("home", "config", "state", "project"):
            (base / d).mkdir()
        (base / "project" / "ctxlayer.toml").write_text(
            f"[gateway]\nheader_timeout = {args.header_timeout}\n")
        env = {**os.environ, "HOME": str(base / "home"), "XDG_CONFIG_HOME": str(base / "config"),
               "CTXLAYER_STATE_DIR": str(base / "state"), "PYTHONUNBUFFERED": "1"}
        proc = subprocess.Popen([sys.executable, "-m", "ctxlayer", "gateway", "--port", "0"],
                                cwd=base / "project", env=env, stdout=subprocess.PIPE,
                                stderr=subprocess.DEVNULL, text=True)
        try:
            port = json.loads(proc.stdout.readline())["port"]  # type: ignore[union-attr]
            run(proc.pid, port, args.sockets, args.header_timeout)
        finally:
            proc.terminate()
            proc.wait(timeout=30)


def run(pid: int, port: int, n: int, header_timeout: float) -> None:
    before = fds(pid)
    sel = selectors.DefaultSelector()
    opened: dict[socket.socket, float] = {}
    for _ in range(n):
        s = socket.create_connection(("127.0.0.1", port))
        s.setblocking(False)
        opened[s] = time.monotonic()
        sel.register(s, selectors.EVENT_READ)
    sent = dict.fromkeys(opened, 0)
    closed_after: list[float] = []
    peak = fds(pid)
    end = time.monotonic() + 2 * header_timeout
    next_byte = time.monotonic()
    while opened and time.monotonic() < end:
        if time.monotonic() >= next_byte:  # one more byte on every open socket
            for s in list(opened):
                try:
                    s.send(HEAD[sent[s]:sent[s] + 1])
                    sent[s] += 1
                except OSError:
                    pass
            next_byte += 1.0
            peak = max(peak, fds(pid))
        for key, _ in sel.select(timeout=0.05):
            s = key.fileobj
            assert isinstance(s, socket.socket)
            try:
                gone = s.recv(4096) == b""
            except BlockingIOError:
                gone = False
            except OSError:
                gone = True
            if gone:
                closed_after.append(time.monotonic() - opened.pop(s))
                sel.unregister(s)
                s.close()
    after = fds(pid)
    still = len(opened)
    for s in opened:
        s.close()
    closed_after.sort()
    print(f"{n} slowloris sockets, header_timeout {header_timeout:g} s, one byte a second:")
    if closed_after:
        print(f"  closed by the gateway after min {closed_after[0]:.2f} s, "
              f"p50 {statistics.median(closed_after):.2f} s, max {closed_after[-1]:.2f} s "
              f"({len(closed_after)} of {n}; bytes sent each: at most {max(sent.values())})")
    print(f"  still open after {2 * header_timeout:g} s: {still}")
    print(f"  gateway fds: {before} before, {peak} at the peak, {after} after")


if __name__ == "__main__":
    main()
