"""Token-estimate calibration from real usage (T1, seed 003 section 5.5).

The client reports what the provider billed for a prompt; with our own count of the same
prompt that gives a ratio billed/counted. The bias of a model is the mean of its last
``window`` (50) ratios; budgets divide by it when it is above 1 (we under-count) and carry an
error band (the standard deviation of those ratios). Each session keeps its own Calibration.
Must not: clock, store or log anything; the caller persists the struct.
"""

from __future__ import annotations

import math

import msgspec


class Calibration(msgspec.Struct, kw_only=True):
    """Ratios billed/counted per model, newest last, at most ``window`` per model."""

    window: int = 50
    ratios: dict[str, list[float]] = msgspec.field(default_factory=dict)

    def record(self, model: str, billed: int, counted: int) -> float:
        """Add one report; return the model's new bias. Reports with a zero count are ignored."""
        if billed > 0 and counted > 0:
            samples = self.ratios.setdefault(model, [])
            samples.append(billed / counted)
            del samples[: max(0, len(samples) - self.window)]
        return self.bias(model)

    def bias(self, model: str) -> float:
        """Mean ratio over the window (1.0 without reports)."""
        samples = self.ratios.get(model)
        return sum(samples) / len(samples) if samples else 1.0

    def error_band(self, model: str) -> float:
        """Standard deviation of the ratios (0.0 with fewer than two reports)."""
        samples = self.ratios.get(model)
        if not samples or len(samples) < 2:
            return 0.0
        mean = sum(samples) / len(samples)
        return math.sqrt(sum((r - mean) ** 2 for r in samples) / (len(samples) - 1))

    def effective_limit(self, model: str, limit: int) -> int:
        """The token limit to assemble to: ``limit / bias`` when we under-count, else ``limit``.

        Over-counting (bias < 1) never raises the limit: staying under is the safe side.
        """
        bias = self.bias(model)
        return limit if bias <= 1.0 else int(limit / bias)
