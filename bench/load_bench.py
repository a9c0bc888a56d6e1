"""Load: 20 TCP clients each pipelining 200 appends to its own session, while a 21st client
asks `ctx/count` every 10 ms. Reports, in one run: sessions read back in order, cross-talk
(a message in another client's session), appends per second, and the 21st client's ctx/count
latency p50/p99 against the same count on an idle daemon.

Run: .venv/bin/python bench/load_bench.py [--clients 20] [--appends 200]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "tests"))

from gitrepo import GIT_ENV, git, write  # noqa: E402

from ctxlayer_client.framing import encode, read_message  # noqa: E402


class Conn:
    """A raw TCP connection: requests written without waiting, answers collected by id."""

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.reader, self.writer = reader, writer
        self.waiting: dict[str, asyncio.Future] = {}
        self.pump = asyncio.ensure_future(self._read())

    @classmethod
    async def open(cls, port: int, token: str, root: Path) -> Conn:
        reader, writer = await asyncio.open_connection("127.0.0.1", port, limit=1 << 24)
        conn = cls(reader, writer)
        await conn.call("initialize", {"processId": None, "capabilities": {},
                                       "rootUri": root.as_uri(),
                                       "initializationOptions": {"token": token}})
        conn.send_notification("initialized", {})
        return conn

    async def _read(self) -> None:
        while (msg := await read_message(self.reader)) is not None:
            fut = self.waiting.pop(msg.get("id"), None) if "id" in msg else None
            if fut is not None and not fut.done():
                fut.set_result(msg)

    def send(self, msg_id: str, method: str, params: dict) -> asyncio.Future:
        fut = asyncio.get_running_loop().create_future()
        self.waiting[msg_id] = fut
        self.writer.write(encode({"jsonrpc": "2.0", "id": msg_id, "method": method,
                                  "params": params}))
        return fut

    def send_notification(self, method: str, params: dict) -> None:
        self.writer.write(encode({"jsonrpc": "2.0", "method": method, "params": params}))

    async def call(self, method: str, params: dict) -> dict:
        msg_id = f"c{time.perf_counter_ns()}"
        answer = await asyncio.wait_for(self.send(msg_id, method, params), 120)
        if "error" in answer:
            raise RuntimeError(f"{method}: {answer['error']}")
        return answer["result"]

    def close(self) -> None:
        self.pump.cancel()
        self.writer.close()


def make_repo(root: Path) -> Path:
    root.mkdir(parents=True)
    git(root, "init", "-q", "-b", "main")
    write(root, "README.md", "# Load\n")
    git(root, "add", "-A")
    git(root, "commit", "-qm", "init")
    return root


async def counts_while(conn: Conn, stop: asyncio.Event) -> list[float]:
    latencies = []
    while not stop.is_set():
        t0 = time.perf_counter()
        await conn.call("ctx/count", {"texts": ["how long does a short count wait?"]})
        latencies.append((time.perf_counter() - t0) * 1000)
        await asyncio.sleep(0.01)
    return latencies


async def client_load(conn: Conn, name: str, appends: int) -> None:
    await conn.call("ctx/session/open", {"sessionId": name, "budget": 1_000_000})
    futures = [conn.send(f"{name}-{i}", "ctx/session/append", {
        "sessionId": name, "messages": [{"role": "user" if i % 2 == 0 else "assistant",
                                         "content": f"{name} says {i} " + "word " * 40,
                                         "id": f"{name}:{i}"}]}) for i in range(appends)]
    for fut in futures:
        answer = await asyncio.wait_for(fut, 300)
        if "error" in answer:
            raise RuntimeError(answer["error"])


async def main(clients: int, appends: int) -> None:
    base = Path(tempfile.mkdtemp(prefix="ctxlayer-load-"))
    root = make_repo(base / "repo")
    env = {**os.environ, **GIT_ENV, "HOME": str(base), "XDG_CONFIG_HOME": str(base / "cfg")}
    # CTXLAYER_PROFILE=FILE: profile the daemon's event loop thread with cProfile
    profile = ["-m", "cProfile", "-o", os.environ["CTXLAYER_PROFILE"]] \
        if os.environ.get("CTXLAYER_PROFILE") else []
    proc = subprocess.Popen([sys.executable, *profile, "-m", "ctxlayer", "serve", "--tcp", "--port", "0",
                             "--state-dir", str(base / "state")], stdout=subprocess.PIPE,
                            stderr=subprocess.DEVNULL, env=env)
    try:
        assert proc.stdout is not None
        info = json.loads(proc.stdout.readline())
        token = Path(info["tokenFile"]).read_text().strip()
        probe = await Conn.open(info["port"], token, root)
        await probe.call("ctx/segment", {})
        idle_stop = asyncio.Event()
        idle_task = asyncio.ensure_future(counts_while(probe, idle_stop))
        await asyncio.sleep(2.0)
        idle_stop.set()
        idle = await idle_task

        conns = [await Conn.open(info["port"], token, root) for _ in range(clients)]
        stop = asyncio.Event()
        busy_task = asyncio.ensure_future(counts_while(probe, stop))
        t0 = time.perf_counter()
        await asyncio.gather(*(client_load(c, f"s{k}", appends) for k, c in enumerate(conns)))
        elapsed = time.perf_counter() - t0
        stop.set()
        busy = await busy_task

        in_order = crosstalk = 0
        for k, conn in enumerate(conns):
            result = await conn.call("ctx/assemble", {"sessionId": f"s{k}", "budget": 1_000_000})
            ids = [m["id"] for m in result["messages"] if ":" in m.get("id", "")
                   and not m["id"].startswith("ctx:")]
            crosstalk += sum(1 for i in ids if not i.startswith(f"s{k}:"))
            in_order += ids == [f"s{k}:{i}" for i in range(appends)]
        for conn in [*conns, probe]:
            conn.close()

        def pct(values: list[float], q: float) -> float:
            return statistics.quantiles(values, n=100)[int(q) - 1] if len(values) > 2 else max(values)

        total = clients * appends
        print(f"{clients} clients x {appends} pipelined appends, one run")
        print("| figure | measured | target |")
        print("|---|---|---|")
        print(f"| sessions read back in order | {in_order}/{clients} | {clients}/{clients} |")
        print(f"| messages in another client's session | {crosstalk} | 0 |")
        print(f"| appends per second | {total / elapsed:,.0f} ({total} in {elapsed:.2f} s) "
              "| >= 2,000 |")
        print(f"| ctx/count from another client under load, p50 / p99 | "
              f"{pct(busy, 50):.1f} / {pct(busy, 99):.1f} ms ({len(busy)} requests) | "
              "p99 <= 20 ms |")
        print(f"| same count, idle daemon, p50 / p99 | {pct(idle, 50):.2f} / {pct(idle, 99):.2f} ms "
              f"| - |")
    finally:
        proc.send_signal(signal.SIGINT)
        proc.wait(30)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--clients", type=int, default=20)
    parser.add_argument("--appends", type=int, default=200)
    args = parser.parse_args()
    asyncio.run(main(args.clients, args.appends))
