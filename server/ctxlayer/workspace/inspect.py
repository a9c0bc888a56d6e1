"""`ctxlayer inspect`: a workspace segment as a readable table.

Owns: rendering a `WorkspaceSegment` for people: the parts with tokens, characters and hash,
then what the scan left out and why, a path that would break its row quoted
(`core.text.path_line`). Pure text; the CLI prints it.
"""

from __future__ import annotations

from ctxlayer.core.text import path_line, visible
from ctxlayer.protocol import WorkspaceSegment


def render_inspect(segment: WorkspaceSegment) -> str:
    """The segment's parts and left-out items as aligned plain-text tables."""
    lines = [
        (f"Workspace segment  version {segment.version}  hash {segment.hash}  "
         f"{segment.tokens:,} tokens  {len(segment.text):,} chars  updated {segment.updated_at}"),
        "",
    ]
    rows = [("part", "tokens", "chars", "hash")]
    for part in segment.parts:
        rows.append((part.name, f"{part.tokens:,}", f"{len(part.text):,}",
                     part.hash if part.text else "(empty)"))
    rows.append(("total", f"{segment.tokens:,}", f"{len(segment.text):,}", segment.hash))
    lines += _table(rows, right={1, 2})
    left = segment.left_out or []
    lines += ["", f"Left out ({len(left)}):" if left else "Left out: nothing."]
    if left:
        lines += _table([("part", "path", "why")]
                        + [(item.part, path_line(item.path), visible(item.reason))
                           for item in left])
    return "\n".join(lines) + "\n"


def _table(rows: list[tuple[str, ...]], right: set[int] = frozenset()) -> list[str]:
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    out = []
    for n, row in enumerate(rows):
        cells = [cell.rjust(w) if i in right else cell.ljust(w)
                 for i, (cell, w) in enumerate(zip(row, widths, strict=True))]
        out.append("  " + "  ".join(cells).rstrip())
        if n == 0:
            out.append("  " + "  ".join("-" * w for w in widths))
    return out
