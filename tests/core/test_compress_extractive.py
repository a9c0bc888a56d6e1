"""Adaptive extractive compression: task kinds, prose kept by score, reasoning stripped."""

from __future__ import annotations

import pytest

from ctxlayer.core.compress import KEEP_RATIO, classify_task, compress_prose, strip_reasoning

DOC = """# Deploy notes

The service runs behind nginx on port 8080. It was set up in 2021 by the platform team. Most of the config is boilerplate that nobody touches. The team meets on Tuesdays.

We saw `ConnectionRefusedError` in server/db.py at line 88 after the upgrade to 3.11.2. Restarting did not help. The weather was nice that day.

- Never run migrations on Friday.
- The dashboards are at the usual place.

```python
def connect():
    # The weather was nice that day.
    return db.connect(timeout=30)
```

In summary, the database pool is misconfigured. Thanks for reading!
"""

CODE_BLOCK = "```python\ndef connect():\n    # The weather was nice that day.\n    return db.connect(timeout=30)\n```"


def test_keep_ratios_match_the_seed():
    assert KEEP_RATIO == {
        "diagnostic": 0.12,
        "fix": 0.17,
        "implementation": 0.35,
        "exploration": 0.25,
        "refactor": 0.30,
    }


@pytest.mark.parametrize(
    ("text", "kind"),
    [
        ("Why does the server crash with this traceback?", "diagnostic"),
        ("The tests are failing, investigate the logs", "diagnostic"),
        ("fix the bug in the login form", "fix"),
        ("Fix the error in parse_config", "fix"),
        ("implement OAuth login for the API", "implementation"),
        ("add a new endpoint that lists orders", "implementation"),
        ("explain how the cache works", "exploration"),
        ("where is the retry logic defined?", "exploration"),
        ("refactor the db layer and rename the helpers", "refactor"),
        ("帮我修复这个报错", "fix"),
        ("为什么这里会崩溃，看一下堆栈", "diagnostic"),
        ("重构数据层", "refactor"),
        ("实现一个用户认证模块", "implementation"),
        ("解释一下这个函数是什么意思", "exploration"),
        ("hello", "implementation"),
        ("", "implementation"),
    ],
)
def test_classify_task(text, kind):
    assert classify_task(text) == kind


def check(text: str, ratio: float, present: list[str], absent: list[str] = (), keywords=()):
    out = compress_prose(text, ratio, keywords)
    for want in present:
        assert want in out, f"{want!r} missing from:\n{out}"
    for bad in absent:
        assert bad not in out, f"{bad!r} should be gone from:\n{out}"
    return out


def test_diagnostic_ratio_keeps_the_fact_dense_sentence_and_code():
    out = check(
        DOC,
        0.12,
        [
            "We saw `ConnectionRefusedError` in server/db.py at line 88 after the upgrade to 3.11.2.",
            CODE_BLOCK,
        ],
        ["The team meets on Tuesdays.", "Thanks for reading!"],
    )
    prose = out.replace(CODE_BLOCK, "")
    assert len(prose.strip()) < 0.2 * len(DOC.replace(CODE_BLOCK, ""))


def test_keywords_pull_sentences_in():
    check(DOC, 0.3, [], ["the database pool is misconfigured"])
    check(DOC, 0.3, ["the database pool is misconfigured"], keywords=["database"])


def test_higher_ratio_keeps_more_in_original_order():
    low, high = compress_prose(DOC, 0.17), compress_prose(DOC, 0.6)
    assert len(high) > len(low)
    assert high.index("# Deploy notes") < high.index("server/db.py") < high.index("```python")
    assert "- Never run migrations on Friday." in high


@pytest.mark.parametrize(
    ("text", "ratio", "expected"),
    [
        ("", 0.5, ""),
        ("One sentence only.", 1.0, "One sentence only."),
        ("```\ncode only\n```", 0.0, "```\ncode only\n```"),
        ("Keep nothing of this. Or this.", 0.0, ""),
        ("```sh\nunclosed fence\nstill code", 0.1, "```sh\nunclosed fence\nstill code"),
    ],
)
def test_compress_prose_edges(text, ratio, expected):
    assert compress_prose(text, ratio) == expected


def test_chinese_sentences_split_on_full_stops():
    text = "上下文窗口是有限的。塞进去的内容会互相稀释。必须保留错误码和行号。今天天气不错。"
    out = compress_prose(text, 0.5)
    assert out == "上下文窗口是有限的。必须保留错误码和行号。"


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("<think>plan the answer</think>Answer", "Answer"),
        ("<thinking>\nstep 1\n</thinking>\n\nThe fix is X.", "The fix is X."),
        ("A <reasoning>why</reasoning> B <think>how</think> C", "A B C"),
        ("implicit reasoning with only a closer</think>\n\nAnswer", "Answer"),
        ("<THINK>upper</THINK>ok", "ok"),
        ("<think>never closed, still streaming", ""),
        (
            "Answer first <think> then an unclosed tag mid-text",
            "Answer first <think> then an unclosed tag mid-text",
        ),
        ("no tags at all", "no tags at all"),
        ("<thi<think>x</think>nk>y</think>z", "z"),
    ],
)
def test_strip_reasoning(text, expected):
    assert strip_reasoning(text) == expected
