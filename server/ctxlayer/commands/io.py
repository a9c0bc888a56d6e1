"""Reading CLI inputs: text or a chat from a file or stdin, with messages that say what to fix."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import msgspec

from ctxlayer.cli import UsageError
from ctxlayer.core.chatformat import parse_messages
from ctxlayer.protocol import Message


def read_input(path: str | None) -> str:
    if path in (None, "-"):
        if sys.stdin.isatty():
            raise UsageError("no input: pipe a chat into stdin or name a file")
        return sys.stdin.read()
    try:
        return Path(path).read_text(encoding="utf-8")
    except FileNotFoundError:
        raise UsageError(f"{path}: no such file") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise UsageError(f"{path}: cannot read it as UTF-8 text ({exc})") from None


def parse_chat(text: str, source: str = "stdin") -> list[Message]:
    if not text.strip():
        raise UsageError(f"{source} is empty: expected a JSON list of messages")
    try:
        data = msgspec.json.decode(text)
    except msgspec.DecodeError as exc:
        raise UsageError(f"{source} is not valid JSON ({exc}); expected a list of messages") from None
    return parse_messages(data)


def positive(value: str) -> int:
    """argparse type for token budgets: 128000, 128_000 or 128k."""
    try:
        n = int(value.replace("_", "").replace(",", "").rstrip("kK")) * (
            1000 if value.lower().endswith("k") else 1)
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"expected a number of tokens such as 128000 or 128k, got {value!r}") from None
    if n <= 0:
        raise argparse.ArgumentTypeError(f"expected a positive number of tokens, got {value!r}")
    return n
