"""Session benchmarks.

    .venv/bin/python bench/session_bench.py [--only append|assemble|facts] [--appends 300]

Prints:
- ctx/session/append of one ~600-token message to a 1M-token session, round trip over real
  stdio, p50 / p90 / max (target p50 <= 2 ms);
- ctx/assemble of that session into a 128k budget, round trip, p50 / p90 (target p50 <= 15 ms),
  steady state (the session compacted once), and a realistic turn (append then assemble);
- planted facts: 50 facts (paths, commands, error codes, line numbers, numbers, written the
  way people write them rather than in the shapes ctxlayer's extractor looks for), 8 rules and
  5 hard constraints in a 60k-token chat assembled into 16k with a summarizer that returns one
  useless sentence: the share found in the assembly (rules and constraints target 100%), next
  to a newest-first truncation to the same budget (what a plain "keep the last messages"
  trimmer, e.g. LangChain's trim_messages(strategy="last"), keeps). The real-conversation
  benchmark is bench/realchats/bench.py.
- a turn of the working zone (`--only decay`): 200 working items against a 150,000-character
  reply that refers to none, the reply read once for all the items (what `decay_turn` does)
  next to read again for each item (what it did before), as a ratio. The turn runs under the
  session service's lock, which every session's request waits on.
The daemon runs with a temporary state folder; the real o200k tokenizer counts.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, NamedTuple

SERVE = [sys.executable, "-m", "ctxlayer", "serve", "--stdio"]
WORDS = ("invoice ledger rounding currency payment gateway retry backoff cache schema index "
         "migration tenant account balance report export import queue worker batch window "
         "handler request response latency budget token context session summary").split()


class Peer:
    """A lean blocking JSON-RPC peer on the daemon's stdio (client cost kept out)."""

    def __init__(self, env: dict[str, str]) -> None:
        self.proc = subprocess.Popen(SERVE, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=subprocess.DEVNULL, env=env, bufsize=0)
        self.ids = 0
        self.request("initialize", {"processId": os.getpid(), "capabilities": {},
                                    "rootUri": None,
                                    "initializationOptions": {"model": "gpt-4o"}})
        self.send({"jsonrpc": "2.0", "method": "initialized", "params": {}})

    def send(self, msg: dict) -> None:
        body = json.dumps(msg).encode()
        self.proc.stdin.write(b"Content-Length: %d\r\n\r\n%s" % (len(body), body))

    def read(self) -> dict:
        length = 0
        while (line := self.proc.stdout.readline()) not in (b"\r\n", b""):
            if line.lower().startswith(b"content-length:"):
                length = int(line.split(b":")[1])
        if not length:
            raise EOFError("the daemon closed stdout")
        data = b""
        while len(data) < length:
            data += self.proc.stdout.read(length - len(data))
        return json.loads(data)

    def request(self, method: str, params: dict) -> dict:
        self.ids += 1
        self.send({"jsonrpc": "2.0", "id": self.ids, "method": method, "params": params})
        while True:
            msg = self.read()
            if msg.get("id") == self.ids and "method" not in msg:
                if "error" in msg:
                    raise RuntimeError(msg["error"])
                return msg["result"]

    def close(self) -> None:
        self.request("shutdown", {})
        self.send({"jsonrpc": "2.0", "method": "exit"})
        self.proc.wait(10)


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def prose(rng: random.Random, n_words: int) -> str:
    words = [rng.choice(WORDS) for _ in range(n_words)]
    out, sentence = [], []
    for w in words:
        sentence.append(w)
        if len(sentence) >= rng.randint(8, 16):
            out.append(" ".join(sentence).capitalize() + ".")
            sentence = []
    if sentence:
        out.append(" ".join(sentence).capitalize() + ".")
    return " ".join(out)


def message(rng: random.Random, k: int, words: int = 560) -> dict:
    return {"role": "user" if k % 2 == 0 else "assistant", "content": prose(rng, words),
            "id": f"m{k}"}


def build_session(peer: Peer, sid: str, tokens: int) -> int:
    rng = random.Random(7)
    peer.request("ctx/session/open", {"sessionId": sid, "budget": 128_000})
    k = 0
    used = 0
    while used < tokens:
        batch = [message(rng, k + j) for j in range(50)]
        used = peer.request("ctx/session/append", {"sessionId": sid,
                                                   "messages": batch})["byLayer"]["history"]
        k += 50
    return k


def bench_append_assemble(env: dict[str, str], appends: int) -> None:
    peer = Peer(env)
    t0 = time.perf_counter()
    n = build_session(peer, "big", 1_000_000)
    budget = peer.request("ctx/session/budget", {"sessionId": "big"})
    print(f"built a session of {n} messages, {budget['byLayer']['history']:,} history tokens "
          f"in {time.perf_counter() - t0:.1f} s")
    rng = random.Random(11)
    one = message(rng, 0)
    probe = peer.request("ctx/count", {"messages": [one]})["total"]
    times = []
    for i in range(appends):
        msg = dict(message(rng, n + i), id=f"a{i}")
        t = time.perf_counter()
        peer.request("ctx/session/append", {"sessionId": "big", "messages": [msg]})
        times.append((time.perf_counter() - t) * 1000)
    print(f"ctx/session/append, one ~{probe}-token message to a 1M-token session, stdio, "
          f"{appends} requests: p50 {pct(times, .5):.3f} ms, p90 {pct(times, .9):.3f} ms, "
          f"max {max(times):.2f} ms  (target p50 <= 2)")
    t = time.perf_counter()
    first = peer.request("ctx/assemble", {"sessionId": "big", "budget": 128_000})
    print(f"first ctx/assemble (the first compaction of the 1M-token session): "
          f"{(time.perf_counter() - t) * 1000:.0f} ms, {first['tokens']['total']:,} tokens, "
          f"{len(first['messages'])} messages")
    steady = []
    for _ in range(100):
        t = time.perf_counter()
        out = peer.request("ctx/assemble", {"sessionId": "big", "budget": 128_000})
        steady.append((time.perf_counter() - t) * 1000)
    print(f"ctx/assemble into 128k, steady state, 100 requests: p50 {pct(steady, .5):.2f} ms, "
          f"p90 {pct(steady, .9):.2f} ms ({out['tokens']['total']:,} tokens, "
          f"{len(out['messages'])} messages, predicted cache reuse "
          f"{out['cacheReuseTokens']:,})  (target p50 <= 15)")
    turns, compactions = [], 0
    for i in range(100):
        msg = dict(message(rng, i), id=f"t{i}")
        peer.request("ctx/session/append", {"sessionId": "big", "messages": [msg]})
        t = time.perf_counter()
        out = peer.request("ctx/assemble", {"sessionId": "big", "budget": 128_000})
        turns.append((time.perf_counter() - t) * 1000)
        compactions += out["compacted"]
    print(f"ctx/assemble after each new message, 100 turns: p50 {pct(turns, .5):.2f} ms, "
          f"p90 {pct(turns, .9):.2f} ms, max {max(turns):.1f} ms, {compactions} compactions")
    full = []
    for _ in range(100):
        t = time.perf_counter()
        out = peer.request("ctx/assemble", {"sessionId": "big", "budget": 128_000})
        full.append((time.perf_counter() - t) * 1000)
    print(f"ctx/assemble into 128k with {out['tokens']['history']:,} history tokens verbatim "
          f"({len(out['messages'])} messages), 100 requests: p50 {pct(full, .5):.2f} ms, "
          f"p90 {pct(full, .9):.2f} ms  (target p50 <= 15)")
    peer.close()


class PlantedChat(NamedTuple):
    """The planted-facts chat, shared with bench/peers.py (which runs the peers on it)."""

    history: Any  # core.assembly.History of the 60k-token chat
    inp: Any  # AssemblyInput: 16k budget, one system message, the rules, a useless summary
    facts: list[tuple[str, str]]  # (planted sentence, the value that must survive)
    constraints: list[str]
    rules: list[Any]  # core.zones.Rule
    counter: Any  # o200k (gpt-4o)


def planted_chat() -> PlantedChat:
    from ctxlayer.core.assembly import History
    from ctxlayer.core.assembly.assemble import AssemblyInput
    from ctxlayer.core.tokens import message_tokens
    from ctxlayer.core.zones import DEFAULT_MODES, Rule
    from ctxlayer.protocol import Message
    from ctxlayer.tokenizers import counter_for

    counter = counter_for("gpt-4o")
    rng = random.Random(3)
    # facts written the way people write them, not in the shapes ctxlayer's extractor looks
    # for: commands without backticks, codes with dashes, positions as "L123" or "near line",
    # numbers with words as units, paths without a known extension
    facts: list[tuple[str, str]] = []
    for k in range(10):
        facts.append((f"The settings moved to deploy/billing/rounding-{k}/settings.conf.j2 "
                      "last week", f"deploy/billing/rounding-{k}/settings.conf.j2")
                     if k % 2 else
                     (f"Its handler is now under services/billing/rounding_{k}/handlers",
                      f"services/billing/rounding_{k}/handlers"))
        facts.append((f"I reproduced it by running make check-rounding CASE=half_even_{k} twice",
                      f"make check-rounding CASE=half_even_{k}") if k % 2 else
                     (f"The repro is cargo test --package ledger rounding_case_{k} on my box",
                      f"cargo test --package ledger rounding_case_{k}"))
        facts.append((f"The gateway rejected it with GW-{4100 + k} again",
                      f"GW-{4100 + k}") if k % 2 else
                     (f"The upstream answered CurrencyMismatch{k}Fault this time",
                      f"CurrencyMismatch{k}Fault"))
        facts.append((f"The bad branch is L{211 + 17 * k} in the parser module",
                      f"L{211 + 17 * k}") if k % 2 else
                     (f"It breaks near parser.rs#{211 + 17 * k} in the tokenizer",
                      f"parser.rs#{211 + 17 * k}"))
        facts.append((f"We now read {64 * (k + 1)} rows per batch from the ledger",
                      f"{64 * (k + 1)} rows per batch") if k % 2 else
                     (f"The retry delay went up to {1500 + 250 * k} milliseconds",
                      f"{1500 + 250 * k} milliseconds"))
    constraints = [
        "You must never change the public signature of charge_card().",
        "Do not add any dependency outside the standard library.",
        "Never log card numbers, not even masked ones.",
        "Only touch files under src/billing/ in this task.",
        "You must keep every amount in integer cents.",
    ]
    rules = [Rule(id=f"r{k}", text=t, weight=w, seq=k) for k, (t, w) in enumerate([
        ("Never use floats for money.", 5), ("Always write tests first.", 5),
        ("Reply in English.", 3), ("Keep functions under 40 lines.", 2),
        ("Use type hints everywhere.", 2), ("Never commit secrets.", 5),
        ("Prefer pure functions in the core.", 1), ("Run ruff before committing.", 1)])]
    history = History()
    slots = rng.sample(range(8, 100), len(facts) + len(constraints))
    planted = {s: f for s, f in zip(slots, [f[0] for f in facts] + constraints, strict=True)}
    k = 0
    while history.total < 60_000:
        text = prose(rng, 420)
        if k in planted:
            parts = text.split(". ")
            parts.insert(len(parts) // 2, planted[k].rstrip("."))
            text = ". ".join(parts)
        role = "user" if (k % 2 == 0 or planted.get(k) in constraints) else "assistant"
        msg = Message(role=role, content=text, id=f"m{k}")
        history.append(msg, k, message_tokens(msg, counter))
        k += 1
    inp = AssemblyInput(budget=16_000, mode="deep", mode_spec=DEFAULT_MODES["deep"],
                        system=[Message(role="system", content="You are a coding assistant.")],
                        rules=rules, client_summarizer=True,
                        summary_text="The conversation covered several topics.")
    return PlantedChat(history, inp, facts, constraints, rules, counter)


def recall(text: str, chat: PlantedChat) -> tuple[int, int, int]:
    """(facts, rules, hard constraints) of `chat` found verbatim in `text`."""
    return (sum(value in text for _, value in chat.facts),
            sum(r.text in text for r in chat.rules),
            sum(c in text for c in chat.constraints))


def assemble_planted(chat: PlantedChat) -> tuple[Any, float]:
    """Our assembly of the planted chat into 16k, and its time in ms."""
    from ctxlayer.core.assembly import Compaction, assemble

    t = time.perf_counter()
    out = assemble(chat.history, Compaction(), chat.inp, chat.counter).result
    return out, (time.perf_counter() - t) * 1000


def bench_facts() -> None:
    from ctxlayer.core.tokens import message_tokens

    chat = planted_chat()
    history, inp, facts, constraints, rules, counter = chat
    out, elapsed = assemble_planted(chat)
    found, rules_found, cons_found = recall("\n".join(m.content for m in out.messages), chat)
    print(f"planted facts, {history.total:,}-token chat ({len(history)} messages) into 16k "
          f"({out.tokens.total:,} used, {elapsed:.0f} ms), useless summarizer: facts "
          f"{found}/{len(facts)} = {100 * found / len(facts):.0f}%, rules "
          f"{rules_found}/{len(rules)}, hard constraints {cons_found}/{len(constraints)}  "
          f"(target >= 90%, 100%, 100%)")
    # baseline: newest messages that fit after the same system prompt, nothing else
    kept, used = [], 3 + message_tokens(inp.system[0], counter)
    for msg in reversed(history.messages):
        cost = message_tokens(msg, counter)
        if used + cost > 16_000:
            break
        kept.append(msg)
        used += cost
    base = "\n".join(m.content for m in kept)
    b_found = sum(value in base for _, value in facts)
    print(f"  newest-first truncation to the same budget: facts {b_found}/{len(facts)} = "
          f"{100 * b_found / len(facts):.0f}%, rules 0/{len(rules)} (not in the chat), "
          f"hard constraints {sum(c in base for c in constraints)}/{len(constraints)}")


def bench_decay(items: int = 200, runs: int = 3) -> None:
    from ctxlayer.core.zones.compact import compress_item
    from ctxlayer.core.zones.references import is_referenced
    from ctxlayer.core.zones.working import DecayPolicy, decay_turn, new_item

    notes = [new_item(f"n{i}", "note", f"Note {i}: module pkg{i}.sub_mod_{i} handles the {i}th "
                      f"invoice batch; see src/batches/b{i}.py line {i}. "
                      + " ".join(f"word{i}x{k}" for k in range(40))) for i in range(items)]
    reply = " ".join(f"token{k} something else entirely" for k in range(5000))
    once, each = [], []
    for _ in range(runs):
        t = time.perf_counter()
        decay_turn([msgspec_copy(n) for n in notes], reply, compress_item, DecayPolicy(factor=1))
        once.append(time.perf_counter() - t)
        t = time.perf_counter()
        for note in notes:  # the reply normalized again for every item, as before
            is_referenced(note.keys, reply)
        each.append(time.perf_counter() - t)
    print(f"working zone turn, {items} items x a {len(reply):,}-character reply: read once "
          f"{min(once) * 1000:.1f} ms, read per item {min(each) * 1000:.0f} ms "
          f"({min(each) / min(once):.0f}x)")


def msgspec_copy(item: Any) -> Any:
    import msgspec

    return msgspec.structs.replace(item)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--only", choices=["append", "assemble", "facts", "decay"])
    ap.add_argument("--appends", type=int, default=300)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        env = {**os.environ, "CTXLAYER_STATE_DIR": tmp, "HOME": tmp,
               "XDG_CONFIG_HOME": str(Path(tmp) / "config")}
        if args.only in (None, "append", "assemble"):
            bench_append_assemble(env, args.appends)
        if args.only in (None, "facts"):
            bench_facts()
        if args.only in (None, "decay"):
            bench_decay()


if __name__ == "__main__":
    main()
