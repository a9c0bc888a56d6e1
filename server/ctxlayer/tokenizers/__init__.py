"""Real tokenizers: tiktoken encodings loaded offline, the model table, calibrated counters.

`counter_for(model)` returns the process-wide CountCache for that model's encoding and
correction: one cache per (encoding, correction), shared by every request, so re-counting a
conversation costs only its new text. A CountCache is not thread-safe: callers that count from
several threads hold a lock (the daemon counts on one worker thread).
"""

from __future__ import annotations

import math
import threading

from ctxlayer.core.memo import Memo
from ctxlayer.core.tokens import CountCache
from ctxlayer.tokenizers.encodings import ENCODINGS, TokenizerUnavailable, get_encoding
from ctxlayer.tokenizers.models import DEFAULT_MODEL, TABLE, ModelInfo, model_info

__all__ = [
    "DEFAULT_MODEL", "ENCODINGS", "TABLE", "ModelInfo", "TiktokenCounter", "TokenizerUnavailable",
    "counter_for", "memo_for", "model_info", "prompt_traits",
]


class TiktokenCounter:
    """Counts with a tiktoken encoding, times a family correction (rounded up)."""

    def __init__(self, encoding: str, correction: float = 1.0) -> None:
        self.encoding = get_encoding(encoding)
        self.correction = correction
        self.name = encoding if correction == 1.0 else f"{encoding}x{correction:g}"

    def count(self, text: str) -> int:
        n = len(self.encoding.encode_ordinary(text))
        return n if self.correction == 1.0 else math.ceil(n * self.correction)

    def count_batch(self, texts: list[str]) -> list[int]:
        lengths = [len(t) for t in self.encoding.encode_ordinary_batch(texts, num_threads=2)]
        if self.correction == 1.0:
            return lengths
        return [math.ceil(n * self.correction) for n in lengths]


_lock = threading.Lock()
_counters: dict[tuple[str, float], CountCache] = {}
_memos: dict[tuple[str, float], Memo] = {}


def counter_for(model: str | None = None) -> CountCache:
    """The shared, cached counter for a model (default gpt-4o)."""
    info = model_info(model)
    key = (info.encoding, info.correction)
    cache = _counters.get(key)
    if cache is None:
        with _lock:
            cache = _counters.get(key)
            if cache is None:
                cache = CountCache(TiktokenCounter(info.encoding, info.correction))
                _counters[key] = cache
    return cache


def memo_for(model: str | None = None) -> Memo:
    """The shared memo of derived texts (truncations, outlines) for a model's counter: some
    entries depend on token counts, so there is one per counter. Same thread rules as it."""
    info = model_info(model)
    key = (info.encoding, info.correction)
    with _lock:
        return _memos.setdefault(key, Memo())


def prompt_traits(model: str | None):
    """What the system prompt builder needs to know about a model (a core.prompt.ModelTraits)."""
    from ctxlayer.core.prompt import ModelTraits

    info = model_info(model)
    return ModelTraits(
        native_reasoning=info.native_reasoning,
        enforce_tool_use=info.enforce_tool_use,
        reasoning_model=info.reasoning_model,
    )
