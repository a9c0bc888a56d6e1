"""Real tokenizers: tiktoken encodings loaded offline, the model table, calibrated counters.

`counter_for(model)` returns the process-wide CountCache for that model's encoding and
correction: one cache per (encoding, correction), shared by every request, so re-counting a
conversation costs only its new text. A CountCache is not thread-safe: callers that count from
several threads hold a lock (the daemon counts on one worker thread).

The encoding behind a counter is built on a background thread, from the moment the counter
is asked for (or `preload(model)` is called: the daemon can call it first thing) until its
first count, which waits for it; parsed rank tables are cached in the state folder
(`set_cache_dir` moves or disables that), so only the first start ever parses them.
"""

from __future__ import annotations

import itertools
import math
import threading
import time
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor

import tiktoken

from ctxlayer.core.errors import ContextError
from ctxlayer.core.memo import Memo
from ctxlayer.core.tokens import CountCache
from ctxlayer.tokenizers import runs
from ctxlayer.tokenizers.blanks import (
    LONG_BLANKS,
    counted_around_blanks,
    has_long_blanks,
    read_as_known,
)
from ctxlayer.tokenizers.encodings import (
    ENCODINGS,
    TokenizerUnavailable,
    built_from,
    get_encoding,
    set_cache_dir,
)
from ctxlayer.tokenizers.models import DEFAULT_MODEL, TABLE, ModelInfo, model_info
from ctxlayer.tokenizers.windows import LONG_CONTEXT, LONG_WINDOW, context_window, user_window

__all__ = [
    "DEFAULT_MODEL", "ENCODINGS", "LONG_CONTEXT", "LONG_WINDOW", "TABLE", "ModelInfo", "TiktokenCounter", "TokenizerUnavailable",
    "built_from", "context_window", "counted_as", "counter_for", "memo_for", "model_info", "preload",
    "preload_in_turn", "prompt_traits",
    "set_cache_dir", "user_window",
]


class TiktokenCounter:
    """Counts with a tiktoken encoding, times a family correction (rounded up).

    The encoding is built on a background thread from construction on (see `preload`); the
    first count waits for it. So whoever asks for a counter early (the daemon, before its first
    scan) gets the build overlapped with whatever it does next (git running)."""

    def __init__(self, encoding: str, correction: float = 1.0) -> None:
        self._future = _preload_encoding(encoding)
        self._encoding: tiktoken.Encoding | None = None
        self._length: Callable[[str], int] | None = None
        self.correction = correction
        self.name = encoding if correction == 1.0 else f"{encoding}x{correction:g}"

    @property
    def encoding(self) -> tiktoken.Encoding:
        enc = self._encoding
        if enc is None:
            enc = self._encoding = self._future.result()  # raises the build's error, if any
        return enc

    @property
    def length(self) -> Callable[[str], int]:
        """The number of tokens in a text, as `len(encode_ordinary(text))`."""
        length = self._length
        if length is None:
            length = self._length = _length_of(self.encoding)
        return length

    def count(self, text: str) -> int:
        n = self.length(text)
        return n if self.correction == 1.0 else math.ceil(n * self.correction)

    def count_batch(self, texts: list[str], helped: Callable[[], bool] | None = None) -> list[int]:
        """Counts of ``texts``, in order. Two threads of the counting pool share them, a run
        of about BATCH_RUN_CHARS characters at a time (tiktoken lets go of the GIL while
        it encodes). The second takes its next run only while ``helped()`` says so, and asks
        again every HELPER_PAUSE seconds meanwhile: a server answering another request wants
        the second core back, gets it within one run, and lends it again once that is over."""
        length = self.length
        runs = _runs(texts, BATCH_RUN_CHARS)
        counts: list[list[int]] = [[] for _ in runs]
        taken = itertools.count()  # each run once: next() on it is one step under the GIL
        finished = threading.Event()  # every run taken: the helper stops waiting

        def count_runs(helper: bool) -> None:
            while not finished.is_set():
                if helper and helped is not None and not helped():
                    finished.wait(HELPER_PAUSE)  # and asks again: the other request may end
                    continue
                i = next(taken)
                if i >= len(runs):
                    finished.set()
                    return
                try:
                    counts[i] = [length(t) for t in runs[i]]
                except BaseException:  # a text refused: the other thread counts no further
                    finished.set()
                    raise

        # Both on the pool, this thread waiting: this thread counting beside one helper took
        # 1.3-3.8x as long as two pool threads on the 5 MB chat's texts (measured in one
        # script, the same counts; the cause was not found).
        pool = _batch_pool()
        counting = pool.submit(count_runs, False)
        helping = pool.submit(count_runs, True) if len(runs) > 1 else None
        counting.result()
        if helping is not None and not helping.cancel():  # still queued: nothing left to it
            helping.result()  # the run it took, to its end
        lengths = [n for run in counts for n in run]
        if self.correction == 1.0:
            return lengths
        return [math.ceil(n * self.correction) for n in lengths]


#: characters from which a text is counted from tiktoken's buffer encoding: below, its own search
#: for special tokens costs more than the list of tokens it saves (30 characters: 1.2x)
BUFFER_FROM = 512


def _length_of(encoding: tiktoken.Encoding, long_blanks: int = LONG_BLANKS,
               long_run: int = runs.LONG_RUN, keep: int = runs.KEEP) -> Callable[[str], int]:
    """A text's token count, as `len(encode_ordinary(text))`: a text of ``long_blanks``
    characters or more counted around its long runs of blanks (blanks.py: tiktoken's regex
    fails past about 1M of them), one with a run of ``long_run`` of one other character
    counted with whole periods of the run taken out (runs.py: 10 MB of one character took
    5.6 s); any error of tiktoken's raised as the domain's refusal, so every face says it in
    one line (it was an internal error, a 500, a traceback)."""
    whole = _whole_length(encoding)
    single = encoding._encode_single_piece
    read_as_known(getattr(encoding, "_pat_str", ""), encoding.name)
    periods: dict[str, runs.Period] = {}

    def piece(blanks: str) -> int:
        return len(single(blanks.encode()))

    def period(c: str) -> runs.Period:
        if c not in periods:
            periods[c] = runs.period_of(c, encoding.encode_ordinary,
                                        encoding.decode_single_token_bytes, whole)
        return periods[c]

    def length(text: str) -> int:
        try:
            taken = 0
            if len(text) >= long_run:
                text, taken = runs.shortened(text, period, long_run, keep)
            if len(text) < long_blanks or not has_long_blanks(text, long_blanks):
                return taken + whole(text)
            return taken + counted_around_blanks(text, whole, piece, long_blanks)
        except ValueError as exc:  # fancy-regex's own errors ("Max stack size exceeded")
            raise _uncountable(text, exc) from None
        except BaseException as exc:
            if type(exc).__name__ != "PanicException":  # tiktoken's Rust code panicked
                raise
            raise _uncountable(text, exc) from None

    return length


def _uncountable(text: str, exc: BaseException) -> ContextError:
    return ContextError("invalid", f"a text of {len(text):,} characters that tiktoken cannot "
                        f"count ({type(exc).__name__}: {exc})")


def _whole_length(encoding: tiktoken.Encoding) -> Callable[[str], int]:
    """A text's token count without the list of tokens: tiktoken's buffer encoding (no special
    tokens allowed encodes them as text, as encode_ordinary does) skips building a Python int
    per token, 4-10% of a long text's count. A tiktoken without it counts the list."""
    core = getattr(encoding, "_core_bpe", None)
    to_buffer = getattr(core, "encode_to_tiktoken_buffer", None)
    ordinary = encoding.encode_ordinary
    if to_buffer is None:
        return lambda text: len(ordinary(text))
    none: frozenset[str] = frozenset()

    def length(text: str) -> int:
        if len(text) < BUFFER_FROM:
            return len(ordinary(text))
        try:
            return memoryview(to_buffer(text, none)).nbytes >> 2  # four bytes a token
        except UnicodeEncodeError:  # lone surrogates: replaced, as encode_ordinary does
            return len(ordinary(text))

    return length


#: seconds a batch's helper waits before it asks again whether it may count (a run's time)
HELPER_PAUSE = 0.005

#: characters of a batch's run: about 5 ms of counting, so a helper that must stop (another
#: request came) stops within that; a run costs a few microseconds to hand out
BATCH_RUN_CHARS = 64 * 1024


def _runs(texts: list[str], chars: int) -> list[list[str]]:
    """``texts`` in order, cut into runs that each close at the text taking them to ``chars``."""
    runs, run, size = [], [], 0
    for t in texts:
        run.append(t)
        size += len(t)
        if size >= chars:
            runs.append(run)
            run, size = [], 0
    return [*runs, run] if run else runs


_pool: ThreadPoolExecutor | None = None


def _batch_pool() -> ThreadPoolExecutor:
    """The two threads that count a batch (`count_batch`: one that counts, one that helps),
    kept for the process: tiktoken's own batch starts a pool each call. A second batch at the
    same time waits for a free thread (two cores count no faster shared by four threads)."""
    global _pool
    if _pool is None:
        with _lock:
            if _pool is None:
                _pool = ThreadPoolExecutor(2, thread_name_prefix="ctxlayer-count")
    return _pool


_lock = threading.Lock()
_counters: dict[tuple[str, float], CountCache] = {}
_memos: dict[tuple[str, float], Memo] = {}


def counted_as(model: str | None = None) -> tuple[str, float]:
    """What a model's counts depend on (its encoding and correction): two models alike here
    share a counter, and a count made for one holds for the other."""
    info = model_info(model)
    return info.encoding, info.correction


def counter_for(model: str | None = None) -> CountCache:
    """The shared, cached counter for a model (default gpt-4o)."""
    key = counted_as(model)
    cache = _counters.get(key)
    if cache is None:
        with _lock:
            cache = _counters.get(key)
            if cache is None:
                cache = CountCache(TiktokenCounter(*key))
                _counters[key] = cache
    return cache


_preloads: dict[str, Future[tiktoken.Encoding]] = {}
_building: set[str] = set()  # the encodings whose build has started (each starts once)
_preload_lock = threading.Lock()


def preload(model: str | None = None) -> Future[tiktoken.Encoding]:
    """Start building the model's encoding on a background thread and return at once; the
    future ends with the encoding (or the error). `counter_for` on any thread waits for this
    build instead of starting another. Calling it again for the same encoding returns the
    same future. Meant for the daemon's start: the build overlaps imports and the first scan."""
    return _preload_encoding(model_info(model).encoding)


#: seconds between the first encoding a server builds and the others
LATER_BUILDS_AFTER = 1.0
#: how often a later build looks whether the server is quiet
QUIET_POLL = 0.05


def preload_in_turn(models: list[str | None], quiet: Callable[[], bool] | None = None) -> None:
    """Build the encodings of ``models`` on one background thread and return at once: the
    first now, the others one after the other LATER_BUILDS_AFTER seconds on and, with
    ``quiet``, only once it says the server is quiet. A build is Python reading a rank table
    and then tiktoken making its Rust core, one call that holds the interpreter: 124 ms for
    o200k, 44 ms for cl100k, during which the event loop answers nothing. Side by side, two
    builds each took longer than one alone, and the server's first request, in the same
    interpreter, waited 100-190 ms instead of 45-75 for them. An encoding asked for
    (`counter_for`) before its turn starts building at once, quiet or not."""
    names = list(dict.fromkeys(model_info(m).encoding for m in models))
    for name in names:
        _preload_encoding(name, start=False)

    def build_all() -> None:
        for k, name in enumerate(names):
            if k == 1:
                time.sleep(LATER_BUILDS_AFTER)
            while k and quiet is not None and name not in _building and not quiet():
                time.sleep(QUIET_POLL)
            _start(name, _preloads[name], here=True)

    threading.Thread(target=build_all, name="ctxlayer-encodings", daemon=True).start()


def _preload_encoding(name: str, *, start: bool = True) -> Future[tiktoken.Encoding]:
    """The future of ``name``'s build, started now on a thread of its own unless ``start`` is
    False (it is queued) or it has started already."""
    with _preload_lock:  # not `_lock`: counter_for holds that one while it calls this
        future = _preloads.get(name)
        if future is None:
            future = _preloads[name] = Future()
    if start:
        _start(name, future, here=False)
    return future


def _start(name: str, future: Future[tiktoken.Encoding], *, here: bool) -> None:
    """Build ``name`` once: on this thread (``here``) or on a new one; nothing when its build
    has started already."""
    with _preload_lock:
        if name in _building:
            return
        _building.add(name)

    def build() -> None:
        try:
            future.set_result(get_encoding(name))
        except BaseException as exc:  # handed to whoever waits on the future
            future.set_exception(exc)

    if here:
        build()
    else:
        threading.Thread(target=build, name=f"ctxlayer-encoding-{name}", daemon=True).start()


def memo_for(model: str | None = None) -> Memo:
    """The shared memo of derived texts (truncations, outlines) for a model's counter: some
    entries depend on token counts, so there is one per counter. Same thread rules as it."""
    key = counted_as(model)
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
