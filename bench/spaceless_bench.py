"""A huge message with no space in it through the daemon over stdio: its first ctx/prepare
against one count of that text.

    .venv/bin/python bench/spaceless_bench.py [--mb 3] [--model gpt-4o]

A base64 blob, minified JSON or a run of one letter is one pre-token to tiktoken, which counts
it in seconds (a 3 MB run of one letter: about 1 s on an idle 2-core machine), where prose of
the same size takes a tenth of that. The first request that holds it must count it once and
then count only cuts of it the budget's size. For each place such a text sits in a chat (pasted
by the user as the newest message; a tool's output four exchanges ago; a call writing it, its
arguments), a chat of a few short messages and that text (each its own letter, so no count is
shared between them) is sent to one `ctxlayer serve` (OpenAI format, the model's own budget)
and prints: the first ctx/prepare (wall, and the daemon's CPU meanwhile), the next turn (one
exchange more), and the text counted alone by the same encoding in this process, fresh (wall
and CPU). The first request's figure minus the count is what the fit and its outlines cost
besides; on a busy machine compare the CPU figures.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from daemon_bench import StdioPeer

from ctxlayer.tokenizers import TiktokenCounter, counted_as


def pasted(big: str) -> list[dict]:
    return [{"role": "assistant", "content": "Paste it."}, {"role": "user", "content": big}]


def tool_output(big: str) -> list[dict]:
    later = [m for i in range(4) for m in ({"role": "user", "content": f"And then {i}?"},
                                           {"role": "assistant", "content": f"Answer {i}."})]
    return [call("read", '{"path": "blob.txt"}'),
            {"role": "tool", "tool_call_id": "c1", "content": big}, *later,
            {"role": "user", "content": "What was in it?"}]


def written(big: str) -> list[dict]:
    return [call("write", json.dumps({"path": "blob.txt", "content": big})),
            {"role": "tool", "tool_call_id": "c1", "content": "written"},
            {"role": "user", "content": "Is it saved?"}]


def call(name: str, arguments: str) -> dict:
    return {"role": "assistant", "content": None, "tool_calls": [
        {"id": "c1", "type": "function", "function": {"name": name, "arguments": arguments}}]}


SHAPES = {"pasted by the user": pasted, "a tool's output": tool_output,
          "a call's arguments": written}


def prepare(peer: StdioPeer, msg_id: str, model: str, conv: str, messages: list[dict]
            ) -> tuple[float, float, dict]:
    """(wall s, daemon CPU s, result) of one ctx/prepare."""
    params = {"format": "openai", "conversationId": conv,
              "request": {"model": model, "messages": messages}}
    cpu, t0 = peer.cpu_s(), time.perf_counter()
    reply = peer.request(msg_id, "ctx/prepare", params)
    wall = time.perf_counter() - t0
    assert "result" in reply, reply
    return wall, peer.cpu_s() - cpu, reply["result"]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--mb", type=float, default=3)
    ap.add_argument("--model", default="gpt-4o")
    args = ap.parse_args()
    size = int(args.mb * 1_000_000)
    base = Path(tempfile.mkdtemp(prefix="ctxlayer-spaceless-bench-"))
    env = {**os.environ, "HOME": str(base / "home"), "CTXLAYER_STATE_DIR": str(base / "state"),
           "XDG_CONFIG_HOME": str(base / "config")}
    encoding = TiktokenCounter(counted_as(args.model)[0])
    peer = StdioPeer(None, env)
    head = [{"role": "system", "content": "You are a helpful assistant."},
            {"role": "user", "content": "I will paste a blob."}]
    prepare(peer, "warm", args.model, "warm", head)  # the encoding loads on first use
    print(f"{args.mb:g} MB with no space in it, {args.model}, first ctx/prepare over stdio:")
    for i, (name, shape) in enumerate(SHAPES.items()):
        big = chr(ord("a") + i) * size
        t0, c0 = time.perf_counter(), time.process_time()
        tokens = encoding.count(big)
        alone, alone_cpu = time.perf_counter() - t0, time.process_time() - c0
        messages = [*head, *shape(big)]
        wall, cpu, res = prepare(peer, f"first{i}", args.model, f"c{i}", messages)
        messages += [{"role": "assistant", "content": "A blob."},
                     {"role": "user", "content": "Thanks."}]
        nxt, _, _ = prepare(peer, f"next{i}", args.model, f"c{i}", messages)
        print(f"- {name}: first {wall:.2f} s (daemon CPU {cpu:.2f} s), next turn {nxt:.2f} s; "
              f"the text alone counted {alone:.2f} s (CPU {alone_cpu:.2f} s, {tokens:,} "
              f"tokens); sent "
              f"{res['tokens']:,} of {res['budget']:,}")
    peer.close()


if __name__ == "__main__":
    main()
