"""The windows the gateway learns from its providers while it runs, smaller than the model
table's or the config's: the one a provider states when it refuses a prompt as over it, and
the one a provider shows by reading less than it was sent.

A server that cuts a prompt over its context without a word (Ollama at its `num_ctx`, which its
OpenAI-compatible endpoint does not take from the request; its default is 2k-4k tokens whatever
the model's own window) answers as if nothing happened: the model read the prompt's end, the
system prompt and the oldest turns gone. Its usage says so: the prompt tokens it reports stop
growing. Two answers whose reported prompts are the same size while the gateway sent prompts of
clearly different sizes, both above that, are taken as the cut: the window is what it
read, and the chat's later requests are fitted to it. One answer alone is not (a provider that
reads less than it is sent for another reason, earlier reasoning it drops, reports a count that
still grows with the chat).

Must not: do I/O; the gateway says what it learned (its log, a header).
"""

from __future__ import annotations

from dataclasses import dataclass, field

#: a report below this share of the gateway's count of the prompt may be a short read (a
#: prompt just over the server's context is cut by little; what tells is that the reports stop
#: growing, below)
SHORT_READ = 0.95
#: two short reads this close (relative; at least EQUAL_TOKENS) are the same size
EQUAL_SHARE, EQUAL_TOKENS = 0.01, 8
#: ... while the gateway's counts of the two prompts differ by at least this share
DIFFERENT_SHARE = 0.05


@dataclass
class LearnedWindows:
    """By model: the window learned and why, and the last short read seen."""

    windows: dict[str, tuple[int, str]] = field(default_factory=dict)
    short: dict[str, tuple[int, int]] = field(default_factory=dict)

    def get(self, model: str) -> tuple[int, str] | None:
        return self.windows.get(model)

    def stated(self, model: str, window: int) -> None:
        """A provider's refusal stated `window` for `model`."""
        self.windows[model] = (window, f"the provider stated a window of {window} tokens for "
                                       f"{ascii(model)} when it refused a prompt")

    def read(self, model: str, billed: int, counted: int, window: int) -> int | None:
        """A usage report: the provider read `billed` tokens of a prompt the gateway counted
        `counted`, fitted to `window`. Returns the window learned when this shows a cut."""
        if counted <= 0 or billed <= 0 or billed >= SHORT_READ * counted:
            return None
        before = self.short.get(model)
        self.short[model] = (billed, counted)
        if before is None:
            return None
        then, sent = before
        same = abs(billed - then) <= max(EQUAL_TOKENS, EQUAL_SHARE * billed)
        if not same or abs(counted - sent) < DIFFERENT_SHARE * max(counted, sent):
            return None
        learned = min(billed, then)
        if learned >= window:
            return None
        self.windows[model] = (learned, (
            f"the provider read only {billed} tokens of prompts of {sent} and {counted} by our "
            f"count, the same each time: it cut them at its context size without a word (a "
            f"local server's, such as Ollama's num_ctx), so the window of {ascii(model)} is "
            f"taken as {learned} tokens"))
        return learned
