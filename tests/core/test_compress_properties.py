"""Properties of the compression toolkit: never raises, caps hold, idempotence."""

from __future__ import annotations

import json

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ctxlayer.core.compress import (
    NoveltyIndex,
    classify_task,
    compress_prose,
    compress_tool_output,
    compression_ratio,
    extract_facts,
    format_ledger,
    looks_like_log,
    outline_json,
    sanitize_log,
    strip_reasoning,
)
from ctxlayer.core.tokens import CountCache, WordTokenizer

SETTINGS = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
COUNTER = CountCache(WordTokenizer())

# Text that hits the interesting paths: log-ish lines, tags, fences, JSON punctuation, CJK.
FRAGMENTS = st.sampled_from(
    [
        "ERROR ",
        "INFO ",
        "Traceback (most recent call last):\n",
        '  File "a.py", line 3, in f\n',
        "    at f (x.js:1:2)\n",
        "<think>",
        "</think>",
        "<thinking>",
        "```",
        "```py\n",
        "\n",
        "\n\n",
        "{",
        "}",
        "[",
        "]",
        '"k": ',
        "1",
        ", ",
        ". ",
        "。",
        "错误",
        "a/b.py:12",
        "E501",
        "0x7fff1234",
        "2024-01-01T00:00:00Z ",
        "request_id=abc ",
        "  ",
        "\t",
        "\x1b[31m",
        "\ud800",
        "é",
        "`ls -la`",
    ]
)
TEXT = st.one_of(
    st.text(max_size=400), st.lists(FRAGMENTS | st.text(max_size=8), max_size=60).map("".join)
)

JSON_VALUE = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=30),
    lambda children: (
        st.lists(children, max_size=6) | st.dictionaries(st.text(max_size=10), children, max_size=6)
    ),
    max_leaves=60,
)


@SETTINGS
@given(TEXT)
def test_nothing_raises_on_any_text(text):
    outline_json(text)
    looks_like_log(text)
    sanitize_log(text, 5)
    classify_task(text)
    compress_prose(text, 0.2, ["error"])
    strip_reasoning(text)
    compression_ratio(text)
    NoveltyIndex([text]).novelty(text)
    format_ledger(extract_facts(text), 200)


@SETTINGS
@given(JSON_VALUE, st.integers(min_value=1, max_value=600))
def test_outline_fits_its_cap(value, cap):
    out = outline_json(json.dumps(value), cap)
    if isinstance(value, (dict, list)):
        assert out is not None and len(out) <= cap
    else:
        assert out is None


@SETTINGS
@given(TEXT | JSON_VALUE.map(json.dumps), st.integers(min_value=0, max_value=60))
def test_tool_output_fits_and_is_idempotent(text, cap):
    result = compress_tool_output(text, cap, COUNTER)
    if COUNTER.count(text) <= cap:
        assert result is None
        return
    assert result is not None
    assert result.tokens_after == COUNTER.count(result.text) <= cap
    assert compress_tool_output(result.text, cap, COUNTER) is None


@SETTINGS
@given(TEXT)
def test_strip_reasoning_is_idempotent(text):
    once = strip_reasoning(text)
    assert strip_reasoning(once) == once
    assert len(once) <= len(text)


@SETTINGS
@given(TEXT, st.floats(min_value=0.0, max_value=1.0))
def test_compress_prose_never_grows_prose_and_keeps_code(text, ratio):
    out = compress_prose(text, ratio)
    assert len(out) <= len(text) + text.count("```") * 2 + 4


@SETTINGS
@given(st.lists(TEXT, max_size=5), TEXT)
def test_novelty_is_a_share_and_zero_after_adding(seen, text):
    index = NoveltyIndex(seen)
    assert 0.0 <= index.novelty(text) <= 1.0
    index.add(text)
    assert index.novelty(text) == 0.0


@SETTINGS
@given(TEXT, st.integers(min_value=0, max_value=300))
def test_ledger_fits_its_cap(text, cap):
    assert len(format_ledger(extract_facts(text), cap)) <= cap
