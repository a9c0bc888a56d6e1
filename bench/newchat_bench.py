"""The first request of a chat no client session id names, through ctx/prepare on a real State
(its state folder in a temporary directory): what deciding which chat it is costs, the read of
where a chat went on after a restart included (state/conversations.py `_unhinted_family`).

    .venv/bin/python bench/newchat_bench.py [--chats 300] [--runs 3]

Each request opens a new chat with the same system prompt as the others, so every chat in
memory (the last 64) is one it is compared with: the most a new chat's first request pays.
Compare with the code before a change by running this file with `PYTHONPATH` on a worktree of
that commit, alternated, in one sitting (these machines are noisy).
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import tempfile
import time

from ctxlayer import protocol
from ctxlayer.state import Caller, State
from ctxlayer.state.requests import chats


async def first_requests(n: int) -> list[float]:
    """Milliseconds of each of ``n`` new chats' first request, the first 20 left out (the
    database opens, the tokenizer warms)."""
    with tempfile.TemporaryDirectory() as d:
        state = State(d + "/state")
        caller = Caller(state, source="prepare",
                        options=protocol.InitializationOptions(model="gpt-4o"))
        took = []
        try:
            for k in range(n):
                request = {"model": "gpt-4o", "messages": [
                    {"role": "system", "content": "You are a careful coding assistant."},
                    {"role": "user", "content": f"Question {k}: why does the build fail?"}]}
                start = time.perf_counter()
                await chats.prepare(caller, protocol.PrepareParams(format="openai",
                                                                   request=request))
                took.append((time.perf_counter() - start) * 1000)
            await state.conversations.settled()
        finally:
            state.close()
    return took[20:]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--chats", type=int, default=300)
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    for run in range(args.runs):
        took = sorted(asyncio.run(first_requests(args.chats)))
        print(f"run {run + 1}: a new chat's first request p50 {statistics.median(took):.2f} ms,"
              f" p90 {took[int(len(took) * 0.9)]:.2f} ms ({len(took)} chats)")


if __name__ == "__main__":
    main()
