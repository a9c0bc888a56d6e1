"""The pure compression toolkit: JSON outlines, log sanitizing, tool-output fitting, extractive
prose compression, information density and structured facts.

Every function here is deterministic, linear (or n log n) in its input, and never raises on any
string. Nothing here counts tokens itself: where a cap is in tokens, the caller injects a counter.
"""

from ctxlayer.core.compress.density import (
    NEW_ABOVE,
    REPEATED_BELOW,
    NoveltyIndex,
    compression_ratio,
    incremental_novelty,
    shingles,
)
from ctxlayer.core.compress.extractive import (
    KEEP_RATIO,
    TaskKind,
    classify_task,
    compress_prose,
    strip_reasoning,
)
from ctxlayer.core.compress.facts import Facts, extract_facts, format_ledger
from ctxlayer.core.compress.json_outline import outline_json
from ctxlayer.core.compress.logs import looks_like_log, sanitize_log
from ctxlayer.core.compress.tool_output import CompressedOutput, compress_tool_output, head_tail

__all__ = [
    "KEEP_RATIO",
    "NEW_ABOVE",
    "REPEATED_BELOW",
    "CompressedOutput",
    "Facts",
    "NoveltyIndex",
    "TaskKind",
    "classify_task",
    "compress_prose",
    "compress_tool_output",
    "compression_ratio",
    "extract_facts",
    "format_ledger",
    "head_tail",
    "incremental_novelty",
    "looks_like_log",
    "outline_json",
    "sanitize_log",
    "shingles",
    "strip_reasoning",
]
