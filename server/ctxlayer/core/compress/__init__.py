"""The pure compression toolkit: JSON outlines, log sanitizing, tool-output fitting (T8, Z5).

Every function here is deterministic, linear (or n log n) in its input, and never raises on any
string. Nothing here counts tokens itself: callers inject a counter where a cap is in tokens.
"""

from ctxlayer.core.compress.json_outline import outline_json
from ctxlayer.core.compress.logs import looks_like_log, sanitize_log
from ctxlayer.core.compress.tool_output import CompressedOutput, compress_tool_output, head_tail

__all__ = [
    "CompressedOutput",
    "compress_tool_output",
    "head_tail",
    "looks_like_log",
    "outline_json",
    "sanitize_log",
]
