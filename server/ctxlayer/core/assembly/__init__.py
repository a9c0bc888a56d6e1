"""Assembling a session into a budget: system layers, rules, working items, history with
rolling compaction, each stage with its own budget, cache awareness. See assemble.py.
Pure and synchronous: the summarizer's text is an input, never a call.
"""

from ctxlayer.core.assembly.assemble import (
    Assembly,
    AssemblyInput,
    SummaryRequest,
    assemble,
    layout,
    measure,
)
from ctxlayer.core.assembly.compaction import Compaction, CompactionPolicy, summary_message
from ctxlayer.core.assembly.history import History

__all__ = [
    "Assembly", "AssemblyInput", "Compaction", "CompactionPolicy", "History", "SummaryRequest",
    "assemble", "layout", "measure", "summary_message",
]
