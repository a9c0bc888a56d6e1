"""Big request bodies through the gateway: what a Claude Code history of several MB adds, and
how long another chat's small request waits meanwhile.

    .venv/bin/python bench/bigbody_bench.py [--mb 5] [--big-mb 10] [--runs 5]

The stand-in provider and `ctxlayer gateway` run as their own processes on loopback, as for a
user (bench/gateway_bench.py starts them the same way). Each time is taken to the whole answer,
less the stand-in's own time on that request (its `x-standin-ms` header): the provider's work
is not the gateway's, and straight to it a body over the window gets its 400. A Claude-Code-shaped Anthropic chat
(tool_use / tool_result blocks, a file read per turn) is grown to ``--mb`` MB; its last request
and that request plus one more exchange (the next turn of the same chat) are each sent straight
to the stand-in and through the gateway, and the added latency is the difference, median of
``--runs`` alternations in one run:
- first: the first request of that conversation the gateway sees (everything counted);
- next turn: the same chat one exchange later (what each turn of a live chat costs), and the
  same request again sent compressed with zstd (as Codex signed in with ChatGPT sends its
  bodies; the direct one plain): what reading a compressed body adds;
- a fork: that chat one exchange later again under a session id of its own (Claude Code's
  ``--fork-session``: Anthropic ``metadata.user_id``), ``--runs`` forks, each a new id: its
  first request starts from the window of the chat it forked from;
- another conversation's first request, ``--runs`` times, each SETTLE seconds after the last
  request: what a chat the gateway has not seen costs once the gateway is up and idle.
Then a ``--big-mb`` MB body of a new conversation is sent on one connection while a small
request of another chat (Chat Completions, to a second stand-in: a provider does not make one
customer's request wait behind another's body) is sent on another every 20 ms: the small
requests' time (the stand-in's own taken out) while the big one is under way, against the same
requests alone (p50 / max).
Last, the gateway is stopped and started again on the same state folder, a small Claude chat is
sent first (the new process builds Claude's encoding), and the ``--mb`` chat two exchanges
later is sent once: the first request after a restart, whose window and counts
the state folder kept (it counts only what was added since). Twice: sent at once, while the
new process is still starting (its second encoding builds), and, after another restart, once
that start has settled
(SETTLE seconds on): the restart's own cost. After each, a UNDER_MB MB chat under its budget,
sent once before the restarts and never compacted, sends its next turn: its window is written
when the gateway closes. A freshly started gateway's very first request has its own bench
(`bench/gateway_bench.py --cold`).
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path
from urllib.parse import urlsplit

sys.path.insert(0, str(Path(__file__).parent))
from gateway_bench import STANDIN, ms, start

from ctxlayer.gateway.encodings import zstd

#: seconds the second restart waits before its request: the new process's start settled
SETTLE = 2.0
#: a chat this big (about 135k tokens, o200k) stays under a Claude model's budget
UNDER_MB = 0.4
WORDS = "parser token budget window cache prefix session editor stream answer".split()


def file_text(k: int, lines: int = 120, project: str = "") -> str:
    return "\n".join(f"{i + 1:5}\tdef {project}handler_{k}_{i}(request):  # {WORDS[(k + i) % 10]}"
                     for i in range(lines))


def claude_chat(mb: float, tag: str, own_files: bool = False) -> tuple[list[dict], int]:
    """Messages of an agent loop reading files, until the body passes ``mb`` MB; with
    ``own_files``, files of a project of its own (no text another chat's count cached)."""
    project = f"{tag}_" if own_files else ""
    msgs: list[dict] = [{"role": "user", "content": [
        {"type": "text", "text": f"{tag}: fix the failing handler tests"}]}]
    size, k = 0, 0
    while size < mb * 1_000_000:
        call = f"toolu_{tag}_{k}"
        msgs += [{"role": "assistant", "content": [
                     {"type": "text", "text": f"Reading src/h{k}.py next."},
                     {"type": "tool_use", "id": call, "name": "Read",
                      "input": {"file_path": f"/repo/src/h{k}.py"}}]},
                 {"role": "user", "content": [
                     {"type": "tool_result", "tool_use_id": call,
                      "content": file_text(k, project=project)}]}]
        size += len(file_text(k, project=project)) + 200
        k += 1
    return msgs, k


def body(msgs: list[dict], session: str | None = None) -> bytes:
    """A Claude Code request; ``session``: its session id, as Claude Code sends it."""
    extra = {"metadata": {"user_id": f"user_bench_account_x_session_{session}"}} \
        if session else {}
    return json.dumps({"model": "claude-sonnet-4-5", "max_tokens": 1024,
                       "system": "You are Claude Code.", "messages": msgs, **extra}).encode()


ANTHROPIC = {"x-api-key": "sk-bench", "anthropic-version": "2023-06-01"}
OPENAI = {"authorization": "Bearer sk-bench"}


def own_time(conn: http.client.HTTPConnection, path: str, payload: bytes,
             auth: dict[str, str] = ANTHROPIC, coding: str | None = None) -> float:
    """Seconds from sending to the whole answer, less the stand-in's own time on the request
    (its `x-standin-ms`): what the path to it costs. Sent straight, a body over the model's
    window gets the stand-in's 400 after it read and counted the body, as the provider does."""
    t = time.perf_counter()
    conn.request("POST", path, body=payload, headers={
        "content-type": "application/json", **auth,
        **({"content-encoding": coding} if coding else {})})
    response = conn.getresponse()
    response.read()
    elapsed = time.perf_counter() - t
    if response.status not in (200, 400):
        raise SystemExit(f"{path}: HTTP {response.status}")
    return elapsed - float(response.headers.get("x-standin-ms", "0")) / 1000


def added(direct, via, pd: str, pv: str, payload: bytes, runs: int) -> float:
    out = []
    for _ in range(runs):
        d = own_time(direct, pd, payload)
        v = own_time(via, pv, payload)
        out.append(v - d)
    return statistics.median(out)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--mb", type=float, default=5)
    ap.add_argument("--big-mb", type=float, default=10)
    ap.add_argument("--runs", type=int, default=5)
    args = ap.parse_args()
    work = Path(tempfile.mkdtemp(prefix="ctxlayer-bigbody-bench-"))
    (work / "project").mkdir()
    env = {**os.environ, "HOME": str(work), "XDG_CONFIG_HOME": str(work / "config"),
           "CTXLAYER_STATE_DIR": str(work / "state"), "PYTHONUNBUFFERED": "1"}
    standin, s = start([sys.executable, str(STANDIN), "--port", "0"], work, env)
    # the small chat's provider: a stand-in of its own, as a provider serves two customers'
    # requests side by side (one stand-in would make it wait behind the big body it reads)
    standin2, s2 = start([sys.executable, str(STANDIN), "--port", "0"], work, env)
    command = [sys.executable, "-m", "ctxlayer", "gateway", "--port", "0",
               "--upstream-openai", s2["openai"], "--upstream-anthropic", s["anthropic"]]
    gateway, g = start(command, work / "project", env)
    try:
        pd = urlsplit(s["anthropic"]).path + "/v1/messages"
        pv = urlsplit(g["anthropic"]).path + "/v1/messages"
        direct = http.client.HTTPConnection("127.0.0.1", s["port"], timeout=600)
        via = http.client.HTTPConnection("127.0.0.1", g["port"], timeout=600)
        msgs, k = claude_chat(args.mb, "a")
        first = body(msgs)
        cold = own_time(via, pv, first) - own_time(direct, pd, first)
        nxt = body([*msgs, {"role": "assistant", "content": [
            {"type": "text", "text": "Found it."}]},
            {"role": "user", "content": [{"type": "text", "text": "Now run the tests."}]}])
        warm = added(direct, via, pd, pv, nxt, args.runs)
        print(f"a {len(first) / 1e6:.1f} MB Claude Code request ({2 * k + 1} messages), "
              f"added to the first byte:")
        print(f"  first request of the conversation: {ms(cold)}")
        print(f"  next turn (one more exchange), median of {args.runs}: {ms(warm)}")
        squeezed = zstd.compress(nxt, 3)  # as Codex signed in with ChatGPT sends its bodies
        zstd_added = statistics.median(
            own_time(via, pv, squeezed, coding="zstd") - own_time(direct, pd, nxt)
            for _ in range(args.runs))
        print(f"  the same turn again, sent as zstd ({len(squeezed) / 1e6:.2f} MB), median of "
              f"{args.runs}: {ms(zstd_added)}")
        forked = [*json.loads(nxt)["messages"], {"role": "assistant", "content": [
            {"type": "text", "text": "The tests pass."}]},
            {"role": "user", "content": [{"type": "text", "text": "Try the other way."}]}]
        forks = [own_time(via, pv, body(forked, f"fork{r}"))
                 - own_time(direct, pd, body(forked, f"fork{r}")) for r in range(args.runs)]
        print(f"  a fork of it under a session id of its own (--fork-session), first request, "
              f"median of {args.runs}: {ms(statistics.median(forks))}")
        fresh = []
        for r in range(args.runs):  # the start and the last turn's read-ahead over first
            time.sleep(SETTLE)
            other = body(claude_chat(args.mb, f"n{r}", own_files=True)[0])
            fresh.append(own_time(via, pv, other) - own_time(direct, pd, other))
        print(f"  first request of another such conversation, {SETTLE:g} s after the last, "
              f"median of {args.runs}: {ms(statistics.median(fresh))} "
              f"(min {ms(min(fresh))}, max {ms(max(fresh))})")

        # the other chat (Chat Completions, to its own stand-in): one conversation, a short
        # exchange more each time
        chat: list[dict] = [{"role": "user", "content": "small question 0"}]
        small = []
        for i in range(400):
            small.append(json.dumps({"model": "gpt-4o", "messages": chat}).encode())
            chat = [*chat, {"role": "assistant", "content": f"answer {i}"},
                    {"role": "user", "content": f"small question {i + 1}"}]
        side = http.client.HTTPConnection("127.0.0.1", g["port"], timeout=600)
        ps = urlsplit(g["openai"]).path + "/chat/completions"
        alone = [own_time(side, ps, small[i], OPENAI) for i in range(25)]
        big_msgs, _ = claude_chat(args.big_mb, "b", own_files=True)  # all of it counted
        big = body(big_msgs)
        waits: list[float] = []
        done = threading.Event()

        def send_big() -> None:
            conn = http.client.HTTPConnection("127.0.0.1", g["port"], timeout=600)
            own_time(conn, pv, big)
            done.set()

        thread = threading.Thread(target=send_big)
        thread.start()
        i = 25
        while not done.is_set() and i < len(small):
            waits.append(own_time(side, ps, small[i], OPENAI))
            i += 1
            time.sleep(0.02)
        thread.join()
        print(f"a small request of another chat while a {len(big) / 1e6:.1f} MB body is "
              f"prepared ({len(waits)} sent meanwhile): p50 {ms(statistics.median(waits))}, "
              f"max {ms(max(waits))}; alone: p50 {ms(statistics.median(alone))}, "
              f"max {ms(max(alone))}")

        later = [*msgs, {"role": "assistant", "content": [
            {"type": "text", "text": "Found it."}]},
            {"role": "user", "content": [{"type": "text", "text": "Now run the tests."}]}]
        # a chat under its budget (never compacted: no step made a window to keep)
        under, _ = claude_chat(UNDER_MB, "u", own_files=True)
        own_time(via, pv, body(under, "under"))
        for settle in (0.0, SETTLE):
            time.sleep(1.0)  # the window of the last turn is written on a thread of its own
            gateway.terminate()
            gateway.wait(timeout=30)
            gateway, g = start(command, work / "project", env)
            via = http.client.HTTPConnection("127.0.0.1", g["port"], timeout=600)
            pv = urlsplit(g["anthropic"]).path + "/v1/messages"
            own_time(via, pv, body(claude_chat(0.01, "warm")[0]))  # Claude's encoding built
            later = [*later, {"role": "assistant", "content": [
                {"type": "text", "text": "They pass."}]},
                {"role": "user", "content": [{"type": "text", "text": "Commit it."}]}]
            payload = body(later)
            time.sleep(settle)
            after = own_time(via, pv, payload) - own_time(direct, pd, payload)
            when = ("at once, the new process still starting" if not settle
                    else f"{settle:g} s after its start")
            print(f"the same chat's first request after the gateway restarted (state folder "
                  f"kept), {when}: {ms(after)}")
            under = [*under, {"role": "assistant", "content": [{"type": "text", "text": "Ok."}]},
                     {"role": "user", "content": [{"type": "text", "text": "Go on."}]}]
            payload = body(under, "under")
            after = own_time(via, pv, payload) - own_time(direct, pd, payload)
            print(f"  a {UNDER_MB:g} MB chat under its budget (never compacted), its first "
                  f"request after that restart: {ms(after)}")
    finally:
        for proc in (gateway, standin, standin2):
            proc.terminate()
            proc.wait(timeout=10)


if __name__ == "__main__":
    main()
