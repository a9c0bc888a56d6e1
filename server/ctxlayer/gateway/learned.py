"""The windows the gateway learns from its providers while it runs, smaller than the model
table's or the config's: the one a provider states when it refuses a prompt as over it, and
the one a provider shows by reading less than it was sent.

A server that cuts a prompt over its context without a word (Ollama at its `num_ctx`, which its
OpenAI-compatible endpoint does not take from the request; its default is 2k-4k tokens whatever
the model's own window) answers as if nothing happened: the model read part of the prompt,
the oldest turns (Ollama keeps the system messages and the newest) or all but the prompt's end
gone. Its usage says so: the prompt it reports stops growing while the prompts sent grow. A
"short read" is a report of at least LEAST_WINDOW tokens, well below the gateway's count of
the prompt, but not below half of it (a server that reports only the tokens it had not cached
reports far less). Two short reads in a row of the same size for prompts sent at sizes 5% or
more apart (a cut to a fixed count), or three for growing prompts whose last reports no more
than the two before (turns dropped to fit), are taken as the cut when the most it read is at
most half the window used: that is the window from then on, and the chat's later requests are
fitted to it. A provider that reads less than it is sent for another reason (earlier reasoning
it drops) reports a prompt that still grows with the chat, and is never taken for one; nor,
near the window, one whose reasoning a rule of ours misjudges.

Must not: do I/O; the gateway says what it learned (its log, a header).
"""

from __future__ import annotations

from dataclasses import dataclass, field

#: a report below this share of the gateway's count of the prompt may be a short read (a
#: prompt just over the server's context is cut by little; what tells is that the reports stop
#: growing, below) ...
SHORT_READ = 0.95
#: ... and one below this share is none (a count of the uncached tokens only, not a cut)
LEAST_READ = 0.5
#: two short reads this close (relative; at least EQUAL_TOKENS) are the same size
EQUAL_SHARE, EQUAL_TOKENS = 0.01, 8
#: ... while the gateway's counts of the two prompts differ by at least this share
DIFFERENT_SHARE = 0.05
#: three growing prompts grew by at least this share each
GROWN_SHARE = 0.02
#: a cut is taken only where it lies this far below the window requests are fitted to (a
#: server's context is a fraction of the model's window, Ollama's 2k-32k of 128k and more);
#: so reports a rule of ours misjudges (thinking the provider drops) never shrink a chat's
#: window, nor shrink it twice, step by step
FAR_BELOW = 0.5
#: reports of fewer tokens tell nothing: no server's context is this small (Ollama's least
#: default is 2048), and a small prompt's framing alone moves its count by a tenth
LEAST_WINDOW = 1024


@dataclass
class LearnedWindows:
    """By model: the window learned and why, and the last short reads seen (billed, counted),
    oldest first, in a row (a full read starts them again)."""

    windows: dict[str, tuple[int, str]] = field(default_factory=dict)
    short: dict[str, list[tuple[int, int]]] = field(default_factory=dict)

    def get(self, model: str) -> tuple[int, str] | None:
        return self.windows.get(model)

    def stated(self, model: str, window: int) -> None:
        """A provider's refusal stated `window` for `model`."""
        self.windows[model] = (window, f"the provider stated a window of {window} tokens for "
                                       f"{ascii(model)} when it refused a prompt")

    def read(self, model: str, billed: int, counted: int, window: int) -> int | None:
        """A usage report: the provider read `billed` tokens of a prompt the gateway counted
        `counted`, fitted to `window`. Returns the window learned when this shows a cut."""
        if billed < LEAST_WINDOW or not LEAST_READ * counted <= billed < SHORT_READ * counted:
            self.short.pop(model, None)
            return None
        reads = self.short.setdefault(model, [])
        reads.append((billed, counted))
        del reads[:-3]
        learned = _cut(reads)
        if learned is None or learned > FAR_BELOW * window:
            return None
        sent = " and ".join(str(c) for _, c in reads)
        self.windows[model] = (learned, (
            f"the provider read no more than {learned} tokens of prompts of {sent} by our "
            f"count: it cut them at its context size without a word (a local server's, such "
            f"as Ollama's num_ctx), so the window of {ascii(model)} is taken as {learned} "
            "tokens until the gateway restarts (it cannot see a larger context the server is "
            "given later)"))
        self.short.pop(model, None)
        return learned


def _cut(reads: list[tuple[int, int]]) -> int | None:
    """The most the provider read, when these short reads show it cut the prompts."""
    (b2, c2), (b3, c3) = reads[-2:] if len(reads) >= 2 else ((0, 0), reads[-1])
    if b2 and abs(b3 - b2) <= max(EQUAL_TOKENS, EQUAL_SHARE * b3) and \
            abs(c3 - c2) >= DIFFERENT_SHARE * max(c2, c3):
        return max(b2, b3)
    if len(reads) == 3:
        b1, c1 = reads[0]
        grew = c2 >= c1 * (1 + GROWN_SHARE) and c3 >= c2 * (1 + GROWN_SHARE)
        if grew and b3 <= max(b1, b2):
            return max(b1, b2, b3)
    return None
