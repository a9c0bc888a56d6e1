"""ctx/prepare benchmark: a warm turn of a 1M-token chat, cache reuse and budget use over 200
turns, next to a newest-first tail trim measured in the same run.

    .venv/bin/python bench/prepare_bench.py [--encoding o200k_base] [--budget 112000]

1. Warm turn: a 1M-token synthetic chat prepared once (cold), then extended by one message
   never counted before (~750 tokens), median of several runs from the same state: the engine
   alone (core.prepare.prepare_turn on decoded messages), and the whole ctx/prepare request
   function (format ctxlayer: codec decode, engine, encode) after the JSON decode of the
   request body, which is timed on its own.
2. 200 turns of a chat that grows past its budget: each turn sends the whole history up to a
   new question. cacheReuse = tokens at the start of a result identical to the previous
   result, as a share of the previous result; the tail trim's is measured the same way on
   core.trim (pipeline, newest first) of the same turns.
3. Tokens sent vs the budget on those turns: never over; the mean use once the chat is larger
   than the budget.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

import msgspec
from synthetic import code_block, log_output, prose, small_message, synthetic_chat

from ctxlayer import protocol
from ctxlayer.core.memo import Memo
from ctxlayer.core.prepare import prepare_turn, warm
from ctxlayer.core.tokens import CountCache, message_tokens
from ctxlayer.core.trim import trim
from ctxlayer.protocol import Message
from ctxlayer.tokenizers import TiktokenCounter

PRIMING = 3


def ms(seconds: float) -> str:
    return f"{seconds * 1000:,.2f} ms"


def warm_turn(encoding: str, budget: int, runs: int) -> None:
    chat = synthetic_chat(1_000_000)
    counter = CountCache(TiktokenCounter(encoding))
    total = sum(message_tokens(m, counter) for m in chat)
    t = time.perf_counter()
    first = prepare_turn(None, chat, budget, counter)
    cold = time.perf_counter() - t
    engine = []
    wire = msgspec.json.encode(chat)
    for seed in range(runs):
        extra = small_message(1000 + seed)
        extra = msgspec.structs.replace(extra, id=f"new{seed}")
        # what a codec hands over each turn: new objects, equal to the last turn's
        fresh = [*msgspec.json.decode(wire, type=list[Message]), extra]
        t = time.perf_counter()
        turn = prepare_turn(first.state, fresh, budget, counter)
        engine.append(time.perf_counter() - t)
        assert turn.tokens <= budget and not turn.stepped
    print(f"1. a {total:,}-token chat ({len(chat)} messages), budget {budget:,}, {encoding}")
    print(f"   cold first turn (counts everything, one compaction step): {ms(cold)}")
    print(f"   warm turn +1 message, engine alone: median {ms(statistics.median(engine))} "
          f"(min {ms(min(engine))}, {runs} runs)")
    asyncio.run(_through_state(chat, budget, runs, encoding))


async def _through_state(chat: list[Message], budget: int, runs: int, encoding: str) -> None:
    from ctxlayer.state import Caller, State
    from ctxlayer.state.requests import chats

    model = "gpt-4o" if encoding == "o200k_base" else "gpt-4"
    with tempfile.TemporaryDirectory() as tmp:
        state = State(Path(tmp))
        caller = Caller(state, source="session",
                        options=protocol.InitializationOptions(model=model))
        wire = msgspec.to_builtins(chat)
        await chats.prepare(caller, protocol.PrepareParams(
            format="ctxlayer", request={"messages": wire}, budget=budget, conversation_id="b"))
        json_times, request_times = [], []
        for seed in range(runs):
            extra = msgspec.to_builtins(msgspec.structs.replace(small_message(2000 + seed),
                                                                id=f"n{seed}"))
            body = msgspec.json.encode({"format": "ctxlayer", "budget": budget,
                                        "conversationId": "b",
                                        "request": {"messages": [*wire, extra]}})
            t = time.perf_counter()
            params = msgspec.json.decode(body, type=protocol.PrepareParams)
            json_times.append(time.perf_counter() - t)
            # what the last turn set going after its answer (its read-ahead) is done, as it is
            # while the model writes its answer
            await state.conversations.settled()
            t = time.perf_counter()
            res = await chats.prepare(caller, params)
            request_times.append(time.perf_counter() - t)
            assert res.tokens <= budget
            # the next run starts from the same turn again: forget this one's extension
            conv = state.conversations._live[("", "b")]
            await chats.prepare(caller, protocol.PrepareParams(
                format="ctxlayer", request={"messages": wire}, budget=budget,
                conversation_id="b"))
            assert conv.state is not None
        await state.conversations.settled()
        state.close()
    print(f"   JSON decode of the request body ({len(body) / 1e6:.1f} MB): median "
          f"{ms(statistics.median(json_times))}")
    print(f"   ctx/prepare request function after it (codec decode + engine + encode; on "
          f"the event loop, as a turn that appends a little): median "
          f"{ms(statistics.median(request_times))} (min {ms(min(request_times))})")


def turns_of(chat: list[Message]) -> list[int]:
    """Indices of the user questions: each turn sends the chat up to and including one."""
    return [i for i, m in enumerate(chat) if m.role == "user"]


def common_tokens(a: list[Message], b: list[Message], counter) -> int:
    n = 0
    for x, y in zip(a, b, strict=False):
        if x != y:
            break
        n += message_tokens(x, counter)
    return n


def agent_chat(turns: int, seed: int = 5) -> list[Message]:
    """A chat of requests the size an agent loop sends: a question or a tool result each
    time, replies with short code (about 1k tokens a turn)."""
    import random

    from ctxlayer.protocol import ToolCall

    r = random.Random(seed)
    msgs = [Message(role="system", id="sys", content="You are a coding assistant.\n"
                    + prose(r, 60))]
    for t in range(turns):
        msgs.append(Message(role="user", id=f"u{t}", content=prose(r, r.randint(1, 5))))
        if r.random() < 0.35:
            out = (code_block(r, r.randint(15, 120)) if r.random() < 0.5
                   else log_output(r, r.randint(20, 150)))
            msgs += [Message(role="assistant", id=f"c{t}", content="", tool_calls=[
                ToolCall(id=f"k{t}", name="read_file", arguments='{"path": "src/a.py"}')]),
                Message(role="tool", id=f"t{t}", tool_call_id=f"k{t}", content=out)]
        msgs.append(Message(role="assistant", id=f"r{t}", content=prose(r, 3) + "\n\n"
                            + code_block(r, r.randint(5, 60))))
    return msgs


def step_times(chat: list[Message], asks: list[int], budget: int, encoding: str,
               ahead: bool) -> list[float]:
    """Seconds of each turn that made a compaction step, with the facts the next step reads
    read between turns (`warm`, as the daemon does after an answer) or not."""
    counter, memo, state, out = CountCache(TiktokenCounter(encoding)), Memo(), None, []
    for q in asks:
        t = time.perf_counter()
        turn = prepare_turn(state, chat[:q + 1], budget, counter, memo=memo)
        if turn.stepped:
            out.append(time.perf_counter() - t)
        state = (warm(turn.state, budget) if ahead else None) or turn.state
    return out


def many_turns(encoding: str, budget: int, turns: int, kind: str) -> None:
    counter = CountCache(TiktokenCounter(encoding))
    chat = synthetic_chat(6_000_000, seed=11) if kind == "heavy" else agent_chat(turns)
    asks = turns_of(chat)[:turns]
    state = None
    memo = Memo()
    ours, tail, used = [], [], []
    prev_ours = prev_tail = None
    over_from = None
    steps = 0
    for k, q in enumerate(asks):
        sent = chat[:q + 1]
        turn = prepare_turn(state, sent, budget, counter, memo=memo)
        state = turn.state
        steps += turn.stepped
        report = trim(sent, budget, counter, memo=memo)
        if prev_ours is not None:
            ours.append(turn.cache_reuse_tokens / (prev_ours.tokens - PRIMING))
            tail.append(common_tokens(prev_tail.messages, report.messages, counter)
                        / (prev_tail.tokens - PRIMING))
        prev_ours, prev_tail = turn, report
        assert turn.tokens <= budget, (k, turn.tokens)
        if over_from is None and sum(message_tokens(m, counter) for m in sent) > budget:
            over_from = k
        used.append(turn.tokens)
    whole = sum(message_tokens(m, counter) for m in chat[:asks[-1] + 1])
    label = {"heavy": "the trim benchmark's synthetic chat (big code blocks and outputs)",
             "agent": "an agent-sized chat"}[kind]
    print(f"\n2. {len(asks)} turns of {label}, growing to {whole:,} tokens "
          f"({whole / len(asks) / budget:.1%} of the budget a turn), budget {budget:,} "
          f"(passed at turn {over_from}), {steps} compaction steps")
    start = max(0, (over_from or 0) - 1)  # ours[k - 1] compares turn k with turn k - 1
    print(f"   cacheReuse / previous result, mean over all turns: ctx/prepare "
          f"{statistics.mean(ours):.1%}, newest-first tail trim {statistics.mean(tail):.1%}; "
          f"over the turns once the chat passed its budget: ctx/prepare "
          f"{statistics.mean(ours[start:]):.1%}, tail trim {statistics.mean(tail[start:]):.1%}")
    later = used[over_from:] if over_from is not None else used
    print(f"3. tokens sent vs budget: max {max(used) / budget:.1%} (never over); mean once "
          f"the chat is larger than the budget {statistics.mean(later) / budget:.1%} "
          f"(lowest {min(later) / budget:.1%})")
    for ahead in (True, False):
        took = step_times(chat, asks, budget, encoding, ahead)
        print(f"4. a turn that makes a compaction step, facts "
              f"{'read ahead between turns (as the daemon does)' if ahead else 'not read ahead'}"
              f": median {ms(statistics.median(took))}, max {ms(max(took))} ({len(took)} steps)")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--encoding", default="o200k_base")
    ap.add_argument("--budget", type=int, default=112_000)  # gpt-4o: 128k window - 16k output
    ap.add_argument("--runs", type=int, default=7)
    ap.add_argument("--turns", type=int, default=200)
    ap.add_argument("--skip-warm", action="store_true")
    args = ap.parse_args()
    TiktokenCounter(args.encoding).count("warm up")
    if not args.skip_warm:
        warm_turn(args.encoding, args.budget, args.runs)
    for kind in ("agent", "heavy"):
        many_turns(args.encoding, args.budget, args.turns, kind)


if __name__ == "__main__":
    main()
