"""The first request of a chat no client session id names, through ctx/prepare on a real State
(its state folder in a temporary directory): what deciding which chat it is costs, the read of
where a chat went on after a restart included (state/conversations.py `_unhinted_family`).

    .venv/bin/python bench/newchat_bench.py [--chats 300] [--runs 3] [--kept 8]

Each request opens a new chat with the same system prompt as the others, so every chat in
memory (the last 64) is one it is compared with: the most a new chat's first request pays.
With ``--kept N``, N long chats (60 exchanges, a 72 KB window each at a budget of 60,000) are
prepared first and the State restarted: every new chat then reads the workspace's most recent
kept windows as the forks it may start from (state/upkeep.py `Upkeep.forks_of`), and agrees
with none of them (another system prompt).
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

#: the budget the long chats are fitted to: each keeps a window of about 72 KB
KEPT_BUDGET = 60_000


def long_chat(k: int, exchanges: int = 60) -> dict:
    """A chat of its own system prompt, well over `KEPT_BUDGET`: its window is kept."""
    messages = [{"role": "system", "content": f"You are assistant {k}."}]
    for i in range(exchanges):
        messages.append({"role": "user", "content": f"chat {k} question {i} "
                         + "lorem ipsum dolor sit amet " * 400})
        messages.append({"role": "assistant", "content": f"answer {i} "
                         + "consectetur adipiscing " * 300})
    messages.append({"role": "user", "content": "and now?"})
    return {"model": "gpt-4o", "messages": messages}


async def keep_windows(folder: str, n: int) -> None:
    """Leave ``n`` long chats' windows kept in the state folder ``folder``."""
    state = State(folder)
    caller = Caller(state, source="prepare",
                    options=protocol.InitializationOptions(model="gpt-4o"))
    try:
        for k in range(n):
            await chats.prepare(caller, protocol.PrepareParams(
                format="openai", request=long_chat(k), budget=KEPT_BUDGET))
        await state.conversations.settled()
    finally:
        state.close()


async def first_requests(n: int, kept: int = 0) -> list[float]:
    """Milliseconds of each of ``n`` new chats' first request, the first 20 left out (the
    database opens, the tokenizer warms); after a restart that left ``kept`` windows."""
    with tempfile.TemporaryDirectory() as d:
        if kept:
            await keep_windows(d + "/state", kept)
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
    parser.add_argument("--kept", type=int, default=0,
                        help="long chats' windows kept before a restart (8: all a new chat "
                             "reads)")
    args = parser.parse_args()
    for run in range(args.runs):
        took = sorted(asyncio.run(first_requests(args.chats, args.kept)))
        print(f"run {run + 1}: a new chat's first request p50 {statistics.median(took):.2f} ms,"
              f" p90 {took[int(len(took) * 0.9)]:.2f} ms ({len(took)} chats"
              f"{f', {args.kept} windows kept' if args.kept else ''})")


if __name__ == "__main__":
    main()
