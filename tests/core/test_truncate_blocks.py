"""Truncating the middle of long code blocks (core/trim/truncate.py), whatever the line ends."""

from __future__ import annotations

import pytest

from ctxlayer.core.trim.truncate import truncate_blocks


@pytest.mark.parametrize("nl", ["\n", "\r\n"])
def test_each_block_closes_at_its_fence_with_either_line_end(nl):
    """A CRLF text's closing fence is "```\\r": it closed nothing, the first block ran to the
    end of the text, and the prose between blocks and the next file's name were cut with its
    middle."""
    block = nl.join(f"line {k} of the file" for k in range(40))
    text = nl.join(["a.py", "```", block, "```", "NOTE: between the files", "b.py", "```",
                    block, "```", "the question?"])
    out = truncate_blocks(text, 3, 3)
    assert out is not None
    lines = out.split(nl)
    assert "NOTE: between the files" in lines and "b.py" in lines
    assert lines.count("[...]") == 2 and lines[-1] == "the question?"
