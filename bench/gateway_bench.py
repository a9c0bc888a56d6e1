"""Gateway benchmark: the latency the gateway adds to the first byte of an answer.

    .venv/bin/python bench/gateway_bench.py [--requests 300] [--stream]
    .venv/bin/python bench/gateway_bench.py --interleaved [--turns 60]
    .venv/bin/python bench/gateway_bench.py --cold [--repeat 5]

The stand-in provider (tests/providers/standin.py) and `ctxlayer gateway` run as their own
processes on loopback, as they do for a user; this process sends the same small chat request
(one short user message, gpt-4o) alternately straight to the stand-in and through the gateway,
over one kept-alive connection each, and times each request from the send to the first byte
of the answer's body. Reported: p50 / p90 of both, and the gateway's added latency as the
difference of the p50s (target: <= 5 ms) and as a ratio, all measured in the same run.

`--interleaved`: growing chats (aider-like: the same system prompt and fixed first example,
then turns of about 150 words each way) instead of one small request: one chat alone (its
own start) and two chats that share a start, their turns interleaved (the lone chat's turns
between theirs, so both meet the same load); each request is sent straight
to the stand-in and through the gateway, and the added latency (gateway minus direct, per
request) is reported as p50 for both, in the same run. Two chats cost no more per
request than one when each turn recognizes its own chat's previous turn.

`--cold`: what a freshly started gateway adds to its very first request (target <= 150 ms):
`--repeat` times, a new stand-in and a new `ctxlayer gateway` process; once both announced
their ports, one request straight to the stand-in (its own first), then the gateway's first
request (a new connection; its first upstream connection included), then one more straight to
the stand-in on a new connection. Added = the gateway's first minus that direct one. Also
reported: the gateway's start, from its spawn to its announcement (its workspace's first
scan goes on after it, beside the first requests). With `--claude`: a Claude request
instead, each time to a gateway started a second time on a state folder whose first run
served one Claude chat (a Claude Code user's gateway restarted): it builds Claude's encoding
first.
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from urllib.parse import urlsplit

ROOT = Path(__file__).resolve().parents[1]
STANDIN = ROOT / "tests" / "providers" / "standin.py"


def start(cmd: list[str], cwd: Path, env: dict[str, str]) -> tuple[subprocess.Popen, dict]:
    proc = subprocess.Popen(cmd, cwd=cwd, env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.DEVNULL, text=True)
    return proc, json.loads(proc.stdout.readline())  # type: ignore[union-attr]


OPENAI = {"authorization": "Bearer sk-bench"}
ANTHROPIC = {"x-api-key": "sk-bench", "anthropic-version": "2023-06-01"}


def first_byte(conn: http.client.HTTPConnection, path: str, body: bytes,
               auth: dict[str, str] = OPENAI) -> float:
    """Seconds from sending the request to the first byte of the answer's body."""
    t = time.perf_counter()
    conn.request("POST", path, body=body, headers={"content-type": "application/json", **auth})
    response = conn.getresponse()
    response.read(1)
    elapsed = time.perf_counter() - t
    response.read()
    if response.status != 200:
        raise SystemExit(f"{path}: HTTP {response.status}")
    return elapsed


def ms(seconds: float) -> str:
    return f"{seconds * 1000:.2f} ms"


def pct(samples: list[float], q: float) -> float:
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


WORDS = "parser token budget window cache prefix session editor stream answer".split()


def words(seed: str, n: int = 150) -> str:
    import random

    rng = random.Random(seed)
    return f"{seed}: " + " ".join(rng.choice(WORDS) + str(rng.randint(0, 999)) for _ in range(n))


def chat_turns(name: str, turns: int, system: str = "You are aider, an expert developer."
               ) -> list[bytes]:
    """The request bodies of one aider-like chat, turn by turn."""
    msgs = [{"role": "system", "content": system},
            {"role": "user", "content": "Change get_factorial() to use math.factorial"},
            {"role": "assistant", "content": "Ok, I will edit mathweb/flask/app.py."}]
    out = []
    for k in range(turns):
        msgs.append({"role": "user", "content": words(f"{name} asks {k}")})
        out.append(json.dumps({"model": "gpt-4o", "messages": msgs}).encode())
        msgs = [*msgs, {"role": "assistant", "content": words(f"{name} says {k}")}]
    return out


def interleaved(direct, via, path_direct: str, path_via: str, turns: int) -> None:
    def added(bodies: list[bytes]) -> list[float]:
        out = []
        for body in bodies:
            d = first_byte(direct, path_direct, body)
            v = first_byte(via, path_via, body)
            out.append(v - d)
        return out

    # the lone chat (its own start) and the pair take turns, so that both phases meet the
    # same load on the machine
    solo = chat_turns("solo", turns, "You are aider, alone.")
    a, b = chat_turns("alice", turns), chat_turns("bob", turns)
    one: list[float] = []
    two: list[float] = []
    for k in range(turns):
        one += added([solo[k]])
        two += added([a[k], b[k]])
    print(f"added latency per request (gateway minus direct, first byte), aider-like chats of "
          f"{turns} turns, same system prompt and first example")
    print(f"  one chat alone             : p50 {ms(statistics.median(one))}  "
          f"p90 {ms(pct(one, 0.9))}")
    print(f"  two chats interleaved      : p50 {ms(statistics.median(two))}  "
          f"p90 {ms(pct(two, 0.9))}")


def start_pair(work: Path, env: dict[str, str]) -> tuple[list[subprocess.Popen], dict, dict]:
    """A stand-in and a gateway in front of it; the gateway's announcement gets ``started``:
    the seconds from its spawn to its announcement."""
    standin, s = start([sys.executable, str(STANDIN), "--port", "0"], work, env)
    t = time.perf_counter()
    gateway, g = start([sys.executable, "-m", "ctxlayer", "gateway", "--port", "0",
                        "--upstream-openai", s["openai"], "--upstream-anthropic",
                        s["anthropic"]], work / "project", env)
    g["started"] = time.perf_counter() - t
    return [gateway, standin], s, g


#: a Claude chat's first request (--claude)
CLAUDE = json.dumps({"model": "claude-sonnet-4-5", "max_tokens": 64, "messages": [
    {"role": "user", "content": "What does this function return?"}]}).encode()


def cold(work: Path, env: dict[str, str], repeat: int, body: bytes, claude: bool) -> None:
    added: list[float] = []
    starts: list[float] = []
    provider, auth, route = (("anthropic", ANTHROPIC, "/v1/messages") if claude
                             else ("openai", OPENAI, "/chat/completions"))
    if claude:
        body = CLAUDE
    for k in range(repeat):
        run_env = {**env, "CTXLAYER_STATE_DIR": str(work / f"state-{k}")}
        if claude:  # the same user's gateway ran before: a Claude chat went through it
            procs, s, g = start_pair(work, run_env)
            first_byte(http.client.HTTPConnection("127.0.0.1", g["port"]),
                       urlsplit(g[provider]).path + route, body, auth)
            for proc in procs:
                proc.terminate()
                proc.wait(timeout=30)
        procs, s, g = start_pair(work, run_env)
        try:
            path = urlsplit(s[provider]).path + route
            first_byte(http.client.HTTPConnection("127.0.0.1", s["port"]), path, body, auth)
            via = first_byte(http.client.HTTPConnection("127.0.0.1", g["port"]),
                             urlsplit(g[provider]).path + route, body, auth)
            direct = first_byte(http.client.HTTPConnection("127.0.0.1", s["port"]), path, body,
                                auth)
        finally:
            for proc in procs:
                proc.terminate()
                proc.wait(timeout=30)
        added.append(via - direct)
        starts.append(g["started"])
        print(f"  run {k + 1}: started in {ms(g['started'])}; gateway's first request "
              f"{ms(via)}, direct {ms(direct)}, added {ms(via - direct)}")
    which = "a restarted gateway whose last chat was Claude's" if claude else "a fresh gateway"
    print(f"first request of {which}, {repeat} fresh processes: added median "
          f"{ms(statistics.median(added))}, max {ms(max(added))} (target <= 150 ms); spawn to "
          f"announcement median {ms(statistics.median(starts))}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=300)
    parser.add_argument("--stream", action="store_true", help="streamed answers (SSE)")
    parser.add_argument("--interleaved", action="store_true",
                        help="two growing chats with the same start, against one")
    parser.add_argument("--turns", type=int, default=60)
    parser.add_argument("--cold", action="store_true",
                        help="the first request of a freshly started gateway, --repeat times")
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--claude", action="store_true",
                        help="with --cold: a Claude request, to a gateway restarted on a state "
                             "folder a Claude chat used")
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="ctxlayer-gateway-bench-"))
    (work / "project").mkdir()
    env = {**os.environ, "HOME": str(work), "XDG_CONFIG_HOME": str(work / "config"),
           "CTXLAYER_STATE_DIR": str(work / "state"), "PYTHONUNBUFFERED": "1"}
    body = json.dumps({"model": "gpt-4o", "stream": args.stream, "messages": [
        {"role": "user", "content": "What does this function return?"}]}).encode()
    if args.cold:
        cold(work, env, args.repeat, body, args.claude)
        return
    (gateway, standin), s, g = start_pair(work, env)
    try:
        direct = http.client.HTTPConnection("127.0.0.1", s["port"])
        via = http.client.HTTPConnection("127.0.0.1", g["port"])
        path_direct = urlsplit(s["openai"]).path + "/chat/completions"
        path_via = urlsplit(g["openai"]).path + "/chat/completions"
        for _ in range(30):  # warm both: encodings loaded, connections open, caches filled
            first_byte(direct, path_direct, body)
            first_byte(via, path_via, body)
        if args.interleaved:
            interleaved(direct, via, path_direct, path_via, args.turns)
            return
        times_direct: list[float] = []
        times_via: list[float] = []
        for _ in range(args.requests):
            times_direct.append(first_byte(direct, path_direct, body))
            times_via.append(first_byte(via, path_via, body))
    finally:
        for proc in (gateway, standin):
            proc.terminate()
            proc.wait(timeout=30)
    p50_d, p50_v = statistics.median(times_direct), statistics.median(times_via)
    kind = "streamed" if args.stream else "non-streamed"
    print(f"time to first byte, small {kind} request, {args.requests} requests each, "
          f"stand-in upstream on loopback")
    print(f"  stand-in directly : p50 {ms(p50_d)}  p90 {ms(pct(times_direct, 0.9))}")
    print(f"  through gateway   : p50 {ms(p50_v)}  p90 {ms(pct(times_via, 0.9))}")
    print(f"  gateway adds      : p50 {ms(p50_v - p50_d)} (target <= 5 ms), "
          f"{p50_v / p50_d:.2f}x the direct p50")


if __name__ == "__main__":
    main()
