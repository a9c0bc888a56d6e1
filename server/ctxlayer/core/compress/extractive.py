"""Adaptive extractive compression: classify the task, keep the best sentences of prose.

Owns `TaskKind`, `classify_task`, `KEEP_RATIO`, `compress_prose` and `strip_reasoning`.
Pure and deterministic; sentence scoring is a single pass and selection one sort, so the cost
is O(n log n) in the number of sentences. Never raises on any string.

`compress_prose` keeps fenced code blocks whole (``` or ~~~, an unclosed fence runs to the end)
and splits the rest into paragraphs (blank lines), lines that are list items, headings or table
rows, and sentences (., !, ? followed by a space; 。！？ anywhere). Each sentence is scored:
  +2 first sentence of its paragraph, +1 last; +1.5 a heading or a list item's first sentence;
  +3 per caller keyword hit, +1 per built-in keyword hit (error, todo, must, never, 错误, 必须...),
  capped at +6; +1.5 for each kind of structured fact present (a path, an error code, a number
  with a unit or a version, an inline `code` span, a call like `f()`), capped at +4.5;
  -1 under 20 bytes of UTF-8, -1 over 400 (bytes, so that CJK sentences are not "short").
The best sentences are kept, in their original order, until about `ratio` of the prose
characters; a sentence that would overshoot the target by more than 10% is skipped in favour of
shorter ones further down. Kept sentences of a paragraph are joined with the separator that
preceded them; paragraphs with nothing kept disappear.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable
from typing import Literal

__all__ = ["KEEP_RATIO", "TaskKind", "classify_task", "compress_prose", "strip_reasoning"]

TaskKind = Literal["diagnostic", "fix", "implementation", "exploration", "refactor"]

#: Share of compressible prose kept per task kind (gptme's COMPRESSION_RATIOS).
KEEP_RATIO: dict[str, float] = {
    "diagnostic": 0.12,
    "fix": 0.17,
    "implementation": 0.35,
    "exploration": 0.25,
    "refactor": 0.30,
}

# ---------------------------------------------------------------------------------------------
# Task classification

# (kind, weight, English words/phrases matched on word boundaries, Chinese matched as substrings)
_TRIGGERS: tuple[tuple[str, float, tuple[str, ...], tuple[str, ...]], ...] = (
    (
        "diagnostic",
        1.0,
        (
            "why",
            "error",
            "errors",
            "exception",
            "traceback",
            "stack trace",
            "stacktrace",
            "crash",
            "crashes",
            "crashed",
            "debug",
            "diagnose",
            "investigate",
            "failing",
            "fails",
            "failed",
            "broken",
            "not working",
            "doesn't work",
            "hang",
            "hangs",
            "slow",
            "segfault",
            "panic",
            "root cause",
            "what went wrong",
            "logs",
        ),
        (
            "报错",
            "错误",
            "异常",
            "崩溃",
            "为什么",
            "排查",
            "诊断",
            "堆栈",
            "调试",
            "失败",
            "卡住",
            "日志",
        ),
    ),
    (
        "fix",
        1.5,
        (
            "fix",
            "fixes",
            "fixing",
            "bug",
            "bugs",
            "patch",
            "resolve",
            "repair",
            "regression",
            "hotfix",
            "workaround",
            "correct the",
            "make it pass",
            "make the test pass",
        ),
        ("修复", "修一下", "修bug", "修 bug", "解决", "修正", "改好", "bug"),
    ),
    (
        "implementation",
        1.0,
        (
            "implement",
            "implementing",
            "add",
            "adding",
            "create",
            "build",
            "write",
            "new feature",
            "support for",
            "introduce",
            "generate",
            "scaffold",
            "endpoint",
            "feature",
        ),
        ("实现", "新增", "添加", "新功能", "开发", "编写", "写一个", "加一个", "支持"),
    ),
    (
        "exploration",
        1.0,
        (
            "explain",
            "how does",
            "how do",
            "what is",
            "what does",
            "where is",
            "where are",
            "find",
            "explore",
            "understand",
            "overview",
            "look at",
            "search",
            "compare",
            "summarize",
            "document",
            "describe",
            "walk me through",
        ),
        (
            "解释",
            "了解",
            "探索",
            "调研",
            "是什么",
            "怎么",
            "在哪",
            "查找",
            "介绍",
            "总结",
            "看看",
            "对比",
        ),
    ),
    (
        "refactor",
        1.5,
        (
            "refactor",
            "refactoring",
            "clean up",
            "cleanup",
            "rename",
            "restructure",
            "reorganize",
            "simplify",
            "extract",
            "split",
            "deduplicate",
            "decouple",
            "move",
            "tidy",
            "modularize",
        ),
        ("重构", "整理", "重命名", "拆分", "简化", "解耦", "抽取", "优化结构"),
    ),
)


def _trigger_regex(words: tuple[str, ...]) -> re.Pattern[str]:
    alts = "|".join(
        re.escape(w).replace(r"\ ", r"\s+") for w in sorted(words, key=len, reverse=True)
    )
    return re.compile(rf"(?<![\w'])(?:{alts})(?![\w'])", re.IGNORECASE)


_CLASSIFIERS = tuple((kind, weight, _trigger_regex(en), zh) for kind, weight, en, zh in _TRIGGERS)
#: Tie order: the more specific intent wins.
_PRECEDENCE = ("fix", "diagnostic", "refactor", "implementation", "exploration")


def classify_task(text: str) -> TaskKind:
    """The kind of task a request describes, from trigger words (English and Chinese).

    Each kind scores weight x hits (fix and refactor words weigh 1.5: "fix the error" is a fix);
    the best score wins, ties go to fix > diagnostic > refactor > implementation > exploration.
    With no trigger at all the answer is "implementation", the kind that keeps the most.
    """
    if not isinstance(text, str) or not text:
        return "implementation"
    sample = text[:20000]
    scores: dict[str, float] = {}
    for kind, weight, regex, zh in _CLASSIFIERS:
        hits = sum(1 for _ in regex.finditer(sample)) + sum(sample.count(w) for w in zh)
        if hits:
            scores[kind] = weight * hits
    if not scores:
        return "implementation"
    best = max(scores.values())
    for kind in _PRECEDENCE:
        if scores.get(kind) == best:
            return kind  # type: ignore[return-value]
    return "implementation"


# ---------------------------------------------------------------------------------------------
# Reasoning blocks

_REASONING_TAGS = ("think", "thinking", "reasoning")
_OPEN = re.compile(r"<(think|thinking|reasoning)>", re.IGNORECASE)
_CLOSE = re.compile(r"</(think|thinking|reasoning)>", re.IGNORECASE)
_BLANKS = re.compile(r"\n{3,}")
_CLOSE_BY_NAME = {name: re.compile(rf"</{name}>", re.IGNORECASE) for name in _REASONING_TAGS}


def _strip_once(text: str) -> str:
    out: list[str] = []
    pos = 0
    # A reply that starts inside a block: only a closing tag, before any opening tag.
    first_close = _CLOSE.search(text)
    first_open = _OPEN.search(text)
    if first_close and (first_open is None or first_close.start() < first_open.start()):
        pos = first_close.end()
    no_close: set[str] = set()  # tag names with no closing tag past some point: never again
    for m in _OPEN.finditer(text, pos):
        if m.start() < pos:
            continue
        name = m.group(1).lower()
        if name in no_close:
            continue
        close = _CLOSE_BY_NAME[name].search(text, m.end())
        if close is None:
            no_close.add(name)
            if not "".join(out).strip() and not text[pos : m.start()].strip():
                # Unterminated at the start: everything after the tag is reasoning.
                out.append(text[pos : m.start()])
                pos = len(text)
                break
            continue
        before = text[pos : m.start()]
        out.append(before)
        pos = close.end()
        if before.endswith((" ", "\t")):  # "A <think>x</think> B" -> "A B", not "A  B"
            while pos < len(text) and text[pos] in " \t":
                pos += 1
    out.append(text[pos:])
    result = "".join(out)
    if len(result) != len(text):
        result = _BLANKS.sub("\n\n", result).strip()
    return result


def strip_reasoning(text: str) -> str:
    """`text` without <think>, <thinking> and <reasoning> blocks.

    Also removed: a block left open at the very start (everything after the tag is reasoning)
    and a leading reasoning part that only has its closing tag (models that open it implicitly).
    Applied until nothing changes, so the result is idempotent.
    """
    if not isinstance(text, str) or "<" not in text:
        return text if isinstance(text, str) else ""
    while True:
        stripped = _strip_once(text)
        if stripped == text:
            return text
        text = stripped


# ---------------------------------------------------------------------------------------------
# Extractive prose compression

_FENCE = re.compile(r"^[ \t]{0,3}(```+|~~~+)[^\n]*\n?", re.MULTILINE)
_SENTENCE_END = re.compile(r"(?<=[.!?])[\"')\]]*\s+(?=\S)|(?<=[。！？；])\s*")
_STRUCTURAL_LINE = re.compile(r"^\s{0,3}(?:#{1,6}\s|[-*+]\s|\d{1,3}[.)]\s|\|)")
_PARA_GAP = re.compile(r"\n[ \t]*\n\s*")
_BUILTIN_KEYWORDS = (
    "error",
    "errors",
    "warning",
    "todo",
    "fixme",
    "must",
    "never",
    "always",
    "important",
    "note",
    "bug",
    "fail",
    "fails",
    "failed",
    "exception",
    "required",
    "should",
    "don't",
    "do not",
)
_BUILTIN_ZH = ("错误", "必须", "不要", "禁止", "注意", "重要", "失败", "异常")
_BUILTIN_RX = re.compile(
    r"(?<![\w'])(?:" + "|".join(re.escape(w) for w in _BUILTIN_KEYWORDS) + r")(?![\w'])",
    re.IGNORECASE,
)
_FACT_PATTERNS = (
    # a file name is looked for from the start of its run of word characters and dashes only
    # (its leading dashes, then a word character), the run taken whole: tried from every word
    # boundary inside the run (`\b[\w-]+\.`) it read a 40 KB "a-a-a-..." line in 4.7 s, the
    # time growing with the square of its length. Whether a sentence holds one is the same.
    re.compile(
        r"(?:^|[\s(\"'`])(?:\.{0,2}/)?[\w.-]+/[\w./-]+|(?<![\w-])-*+\w[\w-]*+\.(?:py|js|ts|tsx|go|"
        r"rs|java|json|toml|yaml|yml|md|c|h|cpp|rb|sh|lua|sql|html|css)\b"
    ),
    re.compile(r"\b[A-Z]{1,4}\d{3,5}\b|\b\w+(?:Error|Exception)\b|\bHTTP\s?[1-5]\d\d\b"),
    re.compile(r"\b\d+(?:\.\d+)?\s?(?:%|ms|s|KB|MB|GB|tokens|lines|px)\b|\bv?\d+\.\d+\.\d+\b"),
    re.compile(r"`[^`\n]{1,200}`"),
    re.compile(r"\b[A-Za-z_][\w.]{0,80}\(\)?"),
)


class _Sentence:
    __slots__ = ("end", "para", "score", "sep", "start")

    def __init__(self, start: int, end: int, para: int, sep: str) -> None:
        self.start = start
        self.end = end
        self.para = para
        self.sep = sep  # what came between the previous sentence of this paragraph and this one
        self.score = 0.0


def _split_code(text: str) -> list[tuple[bool, int, int]]:
    """(is_code, start, end) segments; a fence's block includes both fence lines."""
    segments: list[tuple[bool, int, int]] = []
    pos = 0
    n = len(text)
    while pos < n:
        m = _FENCE.search(text, pos)
        if m is None:
            segments.append((False, pos, n))
            break
        if m.start() > pos:
            segments.append((False, pos, m.start()))
        marker = m.group(1)
        closer = re.compile(
            rf"^[ \t]{{0,3}}{re.escape(marker[0])}{{{len(marker)},}}[ \t]*$", re.MULTILINE
        )
        c = closer.search(text, m.end())
        end = n if c is None else min(n, c.end() + 1)
        segments.append((True, m.start(), end))
        pos = end
    return segments


def _sentences(text: str, start: int, end: int, para_base: int) -> tuple[list[_Sentence], int]:
    """Sentences of a prose segment; returns them and the next paragraph number."""
    out: list[_Sentence] = []
    para = para_base
    blocks: list[tuple[int, int]] = []
    pos = start
    for gap in _PARA_GAP.finditer(text, start, end):
        if gap.start() > pos:
            blocks.append((pos, gap.start()))
        pos = gap.end()
    if pos < end:
        blocks.append((pos, end))
    for b_start, b_end in blocks:
        if not text[b_start:b_end].strip():
            continue
        para += 1
        line_start = b_start
        # Structural lines (list items, headings, table rows) are units of their own.
        pieces: list[tuple[int, int, str]] = []
        run_start = None
        for line in text[b_start:b_end].split("\n"):
            l_end = line_start + len(line)
            if _STRUCTURAL_LINE.match(line):
                if run_start is not None:
                    pieces.append((run_start, line_start - 1, "\n"))
                    run_start = None
                pieces.append((line_start, l_end, "\n"))
            elif run_start is None:
                run_start = line_start
            line_start = l_end + 1
        if run_start is not None:
            pieces.append((run_start, line_start - 1, "\n"))
        for p_start, p_end, p_sep in pieces:
            chunk = text[p_start:p_end]
            s_pos = 0
            sep = p_sep
            for m in _SENTENCE_END.finditer(chunk):
                if m.start() > s_pos:
                    out.append(_Sentence(p_start + s_pos, p_start + m.start(), para, sep))
                    sep = chunk[m.start() : m.end()] if m.end() > m.start() else ""
                    sep = "\n" if "\n" in sep else (" " if sep else "")
                s_pos = m.end()
            if s_pos < len(chunk):
                out.append(_Sentence(p_start + s_pos, p_end, para, sep))
    return out, para


def _score(text: str, sentences: list[_Sentence], keywords: re.Pattern[str] | None) -> None:
    for i, s in enumerate(sentences):
        body = text[s.start : s.end]
        first = i == 0 or sentences[i - 1].para != s.para
        last = i == len(sentences) - 1 or sentences[i + 1].para != s.para
        score = (2.0 if first else 0.0) + (1.0 if last and not first else 0.0)
        if first and _STRUCTURAL_LINE.match(body):
            score += 1.5
        hits = 0.0
        if keywords is not None:
            hits += 3.0 * sum(1 for _ in keywords.finditer(body))
        hits += sum(1 for _ in _BUILTIN_RX.finditer(body))
        hits += sum(1 for w in _BUILTIN_ZH if w in body)
        score += min(hits, 6.0)
        score += min(4.5, 1.5 * sum(1 for p in _FACT_PATTERNS if p.search(body)))
        n = len(body.strip().encode("utf-8", "surrogatepass"))  # a CJK character says more
        if n < 20 or n > 400:
            score -= 1.0
        s.score = score


def _keyword_regex(keywords: Iterable[str]) -> re.Pattern[str] | None:
    words = sorted(
        {k.strip() for k in keywords if isinstance(k, str) and k.strip()}, key=len, reverse=True
    )[:200]
    if not words:
        return None
    return re.compile("|".join(re.escape(w) for w in words), re.IGNORECASE)


def _blank_line(parts: list[str]) -> None:
    if parts:
        tail = parts[-1]
        parts.append("\n" if tail.endswith("\n") else "\n\n")


def compress_prose(text: str, ratio: float, keywords: Iterable[str] = ()) -> str:
    """`text` with code blocks whole and about `ratio` of its prose characters, best sentences first."""
    if not isinstance(text, str) or not text:
        return ""
    if ratio >= 1.0:
        return text
    ratio = 0.0 if math.isnan(ratio) else max(0.0, ratio)  # NaN keeps nothing
    segments = _split_code(text)
    sentences: list[_Sentence] = []
    para = 0
    for is_code, start, end in segments:
        if not is_code:
            found, para = _sentences(text, start, end, para)
            sentences.extend(found)
    _score(text, sentences, _keyword_regex(keywords))
    total = sum(s.end - s.start for s in sentences)
    target = ratio * total
    keep: set[int] = set()
    used = 0
    for idx in sorted(range(len(sentences)), key=lambda i: (-sentences[i].score, i)):
        size = sentences[idx].end - sentences[idx].start
        if used + size <= target * 1.1 or (not keep and target > 0 and size <= 2 * target + 40):
            keep.add(idx)
            used += size
        if used >= target:
            break
    # Reassemble in order: code segments verbatim, kept sentences with their separators,
    # a blank line between paragraphs and around code blocks.
    parts: list[str] = []
    s_iter = 0
    for is_code, start, end in segments:
        if is_code:
            _blank_line(parts)
            parts.append(text[start:end].rstrip("\n") + "\n")
            continue
        last_para = None
        while s_iter < len(sentences) and sentences[s_iter].start < end:
            s = sentences[s_iter]
            if s_iter in keep:
                if last_para is None or s.para != last_para:
                    _blank_line(parts)
                else:
                    parts.append(s.sep)
                parts.append(text[s.start : s.end].strip())
                last_para = s.para
            s_iter += 1
    return "".join(parts).strip("\n")
