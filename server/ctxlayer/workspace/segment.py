"""Parts into one `WorkspaceSegment`: order, text, hash, version.

Owns: the part order (most stable first: agentFiles, skills, files, tree, git), joining the
non-empty texts (a file name's bytes that are not UTF-8 escaped, `core.text.sound`), the hash
of the joined text, and the version rule (it increments exactly when
the hash changes; `updatedAt` is when that happened). Pure but for the clock.

The skills summary comes right after the agent files: both change only when the user edits
their instructions, so they sit in front of what changes with every edit.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime

from ctxlayer.core.text import content_hash, sound
from ctxlayer.protocol import LeftOut, SegmentPart, WorkspaceSegment

PART_ORDER = ("agentFiles", "skills", "files", "tree", "git")
SEPARATOR = "\n\n"


def make_part(name: str, text: str, count: Callable[[str], int]) -> SegmentPart:
    text = sound(text)  # a file name's bytes that are not UTF-8, escaped
    return SegmentPart(name=name, text=text, tokens=count(text) if text else 0,
                       hash=content_hash(text))


def now_iso() -> str:
    return datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def assemble(parts: list[SegmentPart], left_out: list[LeftOut],
             previous: WorkspaceSegment | None, count: Callable[[str], int]) -> WorkspaceSegment:
    """The segment for `parts` (already in order). Keeps the previous version and time when
    the text is unchanged."""
    text = SEPARATOR.join(p.text for p in parts if p.text)
    digest = content_hash(text)
    if previous is not None and previous.hash == digest:
        version, updated_at, tokens = previous.version, previous.updated_at, previous.tokens
    else:
        version = previous.version + 1 if previous is not None else 1
        updated_at = now_iso()
        tokens = count(text) if text else 0
    return WorkspaceSegment(text=text, tokens=tokens, hash=digest, version=version,
                            updated_at=updated_at, parts=list(parts),
                            left_out=[_sound(item) for item in left_out])


def _sound(item: LeftOut) -> LeftOut:
    path, reason = sound(item.path), sound(item.reason)
    if path is item.path and reason is item.reason:
        return item
    return LeftOut(part=item.part, path=path, reason=reason)
