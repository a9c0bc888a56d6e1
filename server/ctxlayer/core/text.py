"""Small text helpers every core module shares: content hashes and one-line summaries."""

from __future__ import annotations

import hashlib

from ctxlayer.protocol import Message


def content_hash(text: str) -> str:
    """A short, stable content hash (sha256, 16 hex digits) for sections, parts and caches."""
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:16]


def normalized_hash(text: str) -> str:
    """sha256 of whitespace-normalised text: two texts differing only in spacing match, so dedup
    catches a copy that was re-indented or re-wrapped."""
    return hashlib.sha256(" ".join(text.split()).encode("utf-8", "surrogatepass")).hexdigest()


def one_line(text: str, width: int = 80) -> str:
    """The first non-empty line of a text, cut to `width` characters."""
    for line in text.splitlines():
        line = line.strip()
        if line:
            return line if len(line) <= width else line[: width - 1] + "…"
    return "(empty)"


def describe(msg: Message, width: int = 80) -> str:
    """A one-line summary of what a message was, for audit entries."""
    head = msg.role
    if msg.kind and msg.kind != "chat":
        head += f"/{msg.kind}"
    if msg.tool_calls:
        head += " calling " + ", ".join(c.name for c in msg.tool_calls)
    if msg.tool_call_id:
        head += f" result of {msg.tool_call_id}"
    lines = msg.content.count("\n") + 1 if msg.content else 0
    return f"{head} ({lines} lines): {one_line(msg.content, width)}"
