"""The Responses codec on an agent's long run: what a 4k window keeps of 12 tool rounds, and
the cost of reading a 6,000-item request and writing it back untouched (best of 3).

Run: .venv/bin/python bench/responses_bench.py
"""

from __future__ import annotations

import json
import time

import msgspec

from ctxlayer.core.formats import decode, encode
from ctxlayer.core.prepare import prepare_turn
from ctxlayer.tokenizers import counter_for

TOOLS = [{"type": "function", "name": "read_file", "description": "Read a file.",
          "parameters": {"type": "object", "properties": {"round": {"type": "integer"}}}}]


def run_items(rounds: int, words: int) -> list[dict]:
    """A question, `rounds` rounds of reasoning + call + output, and the next question."""
    items: list[dict] = [{"role": "user", "content": "Look through the logs for the error."}]
    for k in range(rounds):
        items += [
            {"type": "reasoning", "id": f"rs_{k}", "summary": [],
             "encrypted_content": "gAAAAB" + "q" * 80 + str(k)},
            {"type": "function_call", "id": f"fc_{k}", "call_id": f"call_{k}",
             "name": "read_file", "arguments": json.dumps({"round": k})},
            {"type": "function_call_output", "call_id": f"call_{k}",
             "output": f"log part {k}: " + " ".join(f"line{k}x{j} ok" for j in range(words))}]
    items.append({"role": "user", "content": "So which line failed?"})
    return items


def main() -> None:
    counter = counter_for("gpt-4o")
    body = {"model": "gpt-4o", "input": run_items(12, 150), "tools": TOOLS,
            "max_output_tokens": 500}
    decoded = decode("responses", body, counter)
    budget = 4096 - 500 - counter.count(msgspec.json.encode(TOOLS).decode())
    turn = prepare_turn(None, decoded.messages, budget, counter)
    sent = encode(decoded, turn.messages, cache_breakpoints=turn.breakpoints).payload["input"]
    pairs = sum(1 for i in sent if i.get("type") == "function_call")
    print(f"12 rounds into a 4096 window: {len(body['input'])} items -> {len(sent)}, "
          f"{turn.tokens} tokens of {budget}, {pairs} call pairs whole, "
          f"{len(turn.dropped)} dropped")
    big = {"model": "gpt-4o", "input": run_items(2000, 150)}
    size = len(json.dumps(big)) / 1e6
    best_decode = best_encode = float("inf")
    for _ in range(3):
        t0 = time.perf_counter()
        d = decode("responses", big, counter)
        t1 = time.perf_counter()
        out = encode(d, d.messages)
        t2 = time.perf_counter()
        assert out.payload is big
        best_decode, best_encode = min(best_decode, t1 - t0), min(best_encode, t2 - t1)
    print(f"{len(big['input'])} items ({size:.1f} MB): decode {1000 * best_decode:.0f} ms, "
          f"untouched encode {1000 * best_encode:.2f} ms")


if __name__ == "__main__":
    main()
