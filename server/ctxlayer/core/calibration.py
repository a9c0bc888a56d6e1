"""Token-estimate calibration from real usage.

The client reports what the provider billed for a prompt; with our own count of the same
prompt that gives a ratio billed/counted. Budgets divide by the model's bias when it is above 1
(we under-count) and carry an error band.

A report can be wrong in ways no formula fixes (a usage of the whole conversation against a
count of one small assembly, a report for another prompt), so one report must never break a
session:
- reports whose own count is tiny (under ``min_counted`` tokens) are ignored: a fixed provider
  overhead alone moves their ratio far from the truth;
- each ratio is clamped to [1 / ``max_ratio``, ``max_ratio``];
- the bias is the median of the model's last ``window`` ratios, so one outlier among correct
  reports changes nothing, and correct reports outvote a wrong one;
- but a refusal (the provider's count of a prompt it refused as over the window) outvotes the
  reports before it: a median of them fitted a prompt the provider would not take, so the
  chat's mix has changed (its hidden thinking grew, its images are costed low), and fitting
  again by that median would be refused alike. Its ratio starts the model's list anew, and is
  at least ``REFUSED_STEP`` above the bias that fitted the prompt: a provider that states no
  count (the gateway then takes one from the budget, which the bias made) refused a prompt
  the bias said would fit, so refusals in a row shrink the budget step by step (before, a
  provider counting twice ours refused every request of the chat, the bias stuck at 1.15).
Before any report the error band is the model table's own uncertainty (passed in by the
caller); after two or more, the standard deviation of the ratios without the outliers, never
below it.
Each session keeps its own Calibration.
Must not: clock, store or log anything; the caller persists the struct.
"""

from __future__ import annotations

import math

import msgspec

#: a report's ratio is taken within [1 / MAX_RATIO, MAX_RATIO] ...
MAX_RATIO = 2.0
#: ... a refusal's up to this one: it states the count of the very prompt, not a report that
#: may be another prompt's, so only an absurd ratio is cut
MAX_REFUSED_RATIO = 8.0
#: reports of a prompt counted below this many tokens calibrate nothing
MIN_COUNTED = 256

#: how far above the bias that fitted a refused prompt the refusal's ratio is taken, at least
REFUSED_STEP = 1.15

#: ratios farther than this many median absolute deviations from the median are left out of
#: the error band (one wrong report must not widen it for the next 50)
OUTLIER_MADS = 3.0


class Calibration(msgspec.Struct, kw_only=True):
    """Ratios billed/counted per model, newest last, at most ``window`` per model."""

    window: int = 50
    ratios: dict[str, list[float]] = msgspec.field(default_factory=dict)
    min_counted: int = MIN_COUNTED
    max_ratio: float = MAX_RATIO
    max_refused_ratio: float = MAX_REFUSED_RATIO  # a refusal's own bound

    def record(self, model: str, billed: int, counted: int, *, refused: bool = False) -> float:
        """Add one report (``refused``: a refusal's count, see the module's docstring); return
        the model's new bias. Reports with a tiny count are ignored."""
        if billed > 0 and counted >= max(1, self.min_counted):
            most = self.max_refused_ratio if refused else self.max_ratio
            ratio = min(most, max(1.0 / self.max_ratio, billed / counted))
            samples = self.ratios.setdefault(model, [])
            if refused:
                ratio = max(ratio, min(most, self.bias(model) * REFUSED_STEP))
                samples.clear()
            samples.append(ratio)
            del samples[: max(0, len(samples) - self.window)]
        return self.bias(model)

    def windowed(self, window: int) -> Calibration:
        """This calibration over the newest ``window`` reports of each model: the window is the
        user's setting (`[session] calibration_window`), not the one the session was first
        kept with, which a stored session kept for good."""
        if window == self.window:
            return self
        return msgspec.structs.replace(self, window=window, ratios={
            model: samples[-window:] for model, samples in self.ratios.items()})

    def bias(self, model: str) -> float:
        """Median ratio over the window (1.0 without reports)."""
        samples = self.ratios.get(model)
        return _median(samples) if samples else 1.0

    def error_band(self, model: str, prior: float = 0.0) -> float:
        """How far off a count may be, relative: ``prior`` (the model table's uncertainty)
        until two reports, then the standard deviation of the ratios that lie within
        ``OUTLIER_MADS`` median absolute deviations of the median (at least the prior)."""
        samples = self.ratios.get(model)
        if not samples or len(samples) < 2:
            return prior
        mid = _median(samples)
        mad = _median([abs(r - mid) for r in samples])
        inliers = [r for r in samples if abs(r - mid) <= OUTLIER_MADS * mad] if mad else [
            r for r in samples if r == mid]
        if len(inliers) < 2:
            return prior
        mean = sum(inliers) / len(inliers)
        spread = math.sqrt(sum((r - mean) ** 2 for r in inliers) / (len(inliers) - 1))
        return max(prior, spread)

    def effective_limit(self, model: str, limit: int) -> int:
        """The token limit to assemble to: ``limit / bias`` when we under-count, else ``limit``.

        Over-counting (bias < 1) never raises the limit: staying under is the safe side.
        """
        bias = self.bias(model)
        return limit if bias <= 1.0 else max(1, int(limit / bias))


def most_believed(counted: int, *, refused: bool = False) -> int:
    """The largest count a provider may report of a prompt we counted ``counted`` that is
    taken as it is, bounded as `Calibration.record` bounds its ratio (a tiny prompt's as one
    of MIN_COUNTED tokens: a fixed overhead moves its ratio far). Above it a report is no count
    of the prompt (a provider said 10**12 tokens of a 3.6k prompt, published as 500 million
    percent of the budget): it is taken as this."""
    most = MAX_REFUSED_RATIO if refused else MAX_RATIO
    return math.ceil(most * max(counted, MIN_COUNTED))


def _median(values: list[float]) -> float:
    ordered = sorted(values)
    n = len(ordered)
    mid = n // 2
    return ordered[mid] if n % 2 else (ordered[mid - 1] + ordered[mid]) / 2
