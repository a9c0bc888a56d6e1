"""A 100,000-line log a user pasted under a question, shortened, against the same log
outlined alone (as a tool's output): both times and their ratio, median of 3.

    .venv/bin/python bench/pasted_log_bench.py [--lines 100000] [--cap 4000]

A user's message is outlined after its first lines (the question, sent whole before it): the
log after them is outlined as well as the whole text, whose outline decides whether the
question must go first. What the two share (the log's lines, its units and their masked
digits) is read once; the rest of the log is counted again by the tokenizer and its facts
read again for the note naming what was cut. A log that is a user's whole message goes the
same way (its outline starts with its lines sanitized, so its first lines go first), and
costs what the pasted one costs. Each run counts with a fresh count cache (the
o200k encoding, built before timing), so no count is shared between runs or cases. Times are
the process's CPU time (on a machine shared with other work the wall time swings by 2x).
"""

from __future__ import annotations

import argparse
import random
import statistics
import time

from ctxlayer.core.compress.shorten import shorten_message
from ctxlayer.core.tokens import CountCache, message_tokens
from ctxlayer.protocol import Message
from ctxlayer.tokenizers import TiktokenCounter

QUESTION = "Here is my build log, what failed?"
#: the log as a user's whole message, no question above it: its first lines are kept whole
#: (the log's outline starts with its lines sanitized, not with them) and what follows them
#: is outlined, as under a question
USER_ALONE = "log alone (a user's message)"


def build_log(lines: int) -> str:
    rng = random.Random(1)
    out = []
    for i in range(lines):
        out.append(f"2026-01-01 12:{i // 60 % 60:02d}:{i % 60:02d} INFO step {i} ok "
                   f"queue={rng.randint(1, 999)}")
        if i % 20000 == 7:
            out.append(f"2026-01-01 12:00:00 ERROR step {i} failed: disk full at /var/lib/db{i}")
    return "\n".join(out)


def shortened(m: Message, cap: int, encoding: TiktokenCounter) -> tuple[float, str]:
    counter = CountCache(encoding)
    tokens = message_tokens(m, counter)
    t0 = time.process_time()
    got = shorten_message(m, tokens, cap, counter)
    assert got is not None, "the cap does not force an outline"
    return time.process_time() - t0, got[0].content


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--lines", type=int, default=100_000)
    ap.add_argument("--cap", type=int, default=4000)
    args = ap.parse_args()
    log = build_log(args.lines)
    encoding = TiktokenCounter("o200k_base")
    encoding.count("warm")  # the encoding built before anything is timed
    cases = {
        "log alone (a tool's output)": Message(role="tool", tool_call_id="c", content=log),
        USER_ALONE: Message(role="user", content=log),
        "pasted under a question": Message(role="user", content=QUESTION + "\n" + log),
    }
    times: dict[str, list[float]] = {name: [] for name in cases}
    for _ in range(3):  # interleaved: a busy machine slows all cases alike
        for name, m in cases.items():
            times[name].append(shortened(m, args.cap, encoding)[0])
    medians = {name: statistics.median(t) for name, t in times.items()}
    for name, t in medians.items():
        print(f"{name:<30} {t:6.2f} s CPU  (runs: {', '.join(f'{x:.2f}' for x in times[name])})")
    plain, pasted = medians["log alone (a tool's output)"], medians["pasted under a question"]
    print(f"pasted / alone: {pasted / plain:.2f}")
    print(f"a user's log alone / a tool's: {medians[USER_ALONE] / plain:.2f}")


if __name__ == "__main__":
    main()
