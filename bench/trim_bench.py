"""Trim benchmark (issue 2): the tokenizer floor, a cold trim and warm re-trims, in one run.

    .venv/bin/python bench/trim_bench.py [--sizes 50000,200000,1000000] [--encoding cl100k_base]
        [--format ctxlayer|openai]

For each synthetic chat size: the floor (encoding every message once with tiktoken, one
thread), our cold trim (fresh count cache, memo and TrimCache), and warm re-trims (the cold
run's caches: a TrimCache keeps the previous trim's per-message work) after appending one small
(~750 tokens) and one large (~8k tokens) message that were never counted before. All into a
128k window. Medians over several runs; ratios against the floor measured in the same run.

With `--format openai` the same chat is given as Chat Completions dicts, and every timing
includes reading them (formats.decode) and writing the kept ones back (formats.encode): what a
request in that format costs end to end, minus the JSON parsing.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

import msgspec

sys.path.insert(0, str(Path(__file__).parent))

from synthetic import as_openai, large_message, small_message, synthetic_chat

from ctxlayer.core.formats import decode, encode
from ctxlayer.core.memo import Memo
from ctxlayer.core.tokens import CountCache
from ctxlayer.core.trim import TrimCache, TrimOptions, trim
from ctxlayer.tokenizers import TiktokenCounter
from ctxlayer.tokenizers.encodings import get_encoding

WINDOW = 128_000


def ms(seconds: float) -> str:
    return f"{seconds * 1000:,.1f} ms"


def floor(chat, enc) -> float:
    t = time.perf_counter()
    for m in chat:
        enc.encode_ordinary(m.content)
        for c in m.tool_calls or ():
            enc.encode_ordinary(c.name)
            enc.encode_ordinary(c.arguments)
    return time.perf_counter() - t


def cold(chat, encoding: str, strategy: str):
    counter, memo, cache = CountCache(TiktokenCounter(encoding)), Memo(), TrimCache()
    t = time.perf_counter()
    report = trim(chat, WINDOW, counter, options=TrimOptions(strategy=strategy), memo=memo,
                  cache=cache)
    return time.perf_counter() - t, counter, (memo, cache), report


def cold_openai(chat: list[dict], encoding: str, strategy: str):
    counter, memo, cache = CountCache(TiktokenCounter(encoding)), Memo(), TrimCache()
    t = time.perf_counter()
    d = decode("openai", {"model": "gpt-4o", "messages": chat}, counter)
    report = trim(d.messages, WINDOW, counter, options=TrimOptions(strategy=strategy), memo=memo,
                  cache=cache)
    encode(d, report.messages)
    return time.perf_counter() - t, counter, (memo, cache), report


def warm_openai(chat: list[dict], counter, caches, make, runs: int, strategy: str) -> float:
    """Each turn arrives as fresh JSON (parsed outside the timing, as the daemon's framing
    does); the previous turn's Decoded lets decode take over the messages they share, and
    encode what that turn wrote for the messages it shortened; the TrimCache the trim of the
    cold run. The previous turn is the chat decoded, trimmed and written back, as a live
    chat's last turn leaves it (decoded alone, it had written nothing: every shortened
    message was written anew each run, which no turn of a live chat does)."""
    memo, cache = caches
    previous = decode("openai", {"model": "gpt-4o", "messages": chat}, counter)
    encode(previous, trim(previous.messages, WINDOW, counter,
                          options=TrimOptions(strategy=strategy), memo=memo,
                          cache=cache).messages)
    times = []
    for seed in range(runs):
        body = msgspec.json.encode({"model": "gpt-4o",
                                    "messages": [*chat, as_openai(make(1000 + seed))]})
        payload = msgspec.json.decode(body)  # never seen before, as on the wire
        t = time.perf_counter()
        d = decode("openai", payload, counter, previous=previous)
        report = trim(d.messages, WINDOW, counter, options=TrimOptions(strategy=strategy),
                      memo=memo, cache=cache)
        encode(d, report.messages)
        times.append(time.perf_counter() - t)
    return statistics.median(times)


def warm(chat, counter, caches, make, runs: int, strategy: str) -> float:
    """Each turn is the chat plus one new message, re-trimmed with the cold run's caches."""
    memo, cache = caches
    times = []
    for seed in range(runs):
        extra = make(1000 + seed)  # never counted before
        t = time.perf_counter()
        trim([*chat, extra], WINDOW, counter, options=TrimOptions(strategy=strategy), memo=memo,
             cache=cache)
        times.append(time.perf_counter() - t)
    return statistics.median(times)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--sizes", default="50000,200000,1000000")
    ap.add_argument("--encoding", default="cl100k_base")
    ap.add_argument("--strategy", default="pipeline", choices=("pipeline", "priority"))
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--format", default="ctxlayer", choices=("ctxlayer", "openai"))
    args = ap.parse_args()
    run_cold, run_warm = (cold_openai, warm_openai) if args.format == "openai" else (cold, warm)
    enc = get_encoding(args.encoding)
    TiktokenCounter(args.encoding).count("warm up")
    print(f"trim benchmark: {args.encoding}, {WINDOW:,}-token window, strategy {args.strategy}, "
          f"format {args.format}, median of {args.runs} runs\n")
    print("| chat | messages | floor | cold trim | cold/floor | warm +small | warm +large "
          "| kept | dropped | shortened |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for size in (int(s) for s in args.sizes.split(",")):
        chat = synthetic_chat(size)
        given = [as_openai(m) for m in chat] if args.format == "openai" else chat
        tokens = sum(len(enc.encode_ordinary(m.content)) for m in chat)
        floors, colds = [], []
        for _ in range(args.runs):
            floors.append(floor(chat, enc))
            elapsed, counter, caches, report = run_cold(given, args.encoding, args.strategy)
            colds.append(elapsed)
        f, c = statistics.median(floors), statistics.median(colds)
        ws = run_warm(given, counter, caches, small_message, args.runs * 4, args.strategy)
        wl = run_warm(given, counter, caches, large_message, args.runs * 4, args.strategy)
        print(f"| {tokens / 1000:,.0f}k tokens | {len(chat)} | {ms(f)} | {ms(c)} | {c / f:.2f}x "
              f"| {ms(ws)} | {ms(wl)} | {len(report.messages)} | {len(report.dropped)} "
              f"| {len(report.truncated)} |")


if __name__ == "__main__":
    main()
