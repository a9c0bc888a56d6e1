"""What the rest of a conversation needs from before a cut: this benchmark's own extractor.

Written apart from ctxlayer's facts extraction, with its own small regexes, so that the score
does not grade the ledger by its own definition: paths, commands (the tool calls' commands),
test names, error names and line numbers that occur before the cut AND again after it.
A fact counts as kept when its exact text occurs in the fitted context (contents and tool-call
arguments).
"""

from __future__ import annotations

import json
import re

from ctxlayer.protocol import Message

PATH = re.compile(r"(?:[\w.-]+/)+[\w-]+\.[A-Za-z]{1,5}\b|\b[\w-]+\.(?:py|js|ts|c|h|cpp|rs|go|"
                  r"java|rb|sh|md|txt|json|ya?ml|toml|cfg|ini|html|css|php)\b")
TEST = re.compile(r"\btest_\w+")
ERROR = re.compile(r"\b[A-Z]\w*(?:Error|Exception)\b")
LINE = re.compile(r"\b[\w./-]+\.py:\d+\b|\bline \d+\b")
KINDS = ("path", "command", "test", "error", "line")


def text_of(msg: Message) -> str:
    return msg.content + "".join("\n" + c.arguments for c in msg.tool_calls or ())


def commands(msg: Message) -> list[str]:
    out = []
    for call in msg.tool_calls or ():
        try:
            args = json.loads(call.arguments or "{}")
        except ValueError:
            continue
        cmd = args.get("command") if isinstance(args, dict) else None
        if isinstance(cmd, str) and cmd.strip():
            first = cmd.strip().splitlines()[0].strip()
            if 3 <= len(first) <= 100:
                out.append(first)
    return out


def facts(messages: list[Message]) -> set[tuple[str, str]]:
    found: set[tuple[str, str]] = set()
    for m in messages:
        text = text_of(m)
        found.update(("path", v) for v in PATH.findall(text))
        found.update(("test", v) for v in TEST.findall(text))
        found.update(("error", v) for v in ERROR.findall(text))
        found.update(("line", v) for v in LINE.findall(text))
        found.update(("command", v) for v in commands(m))
    return found


def needed(before: list[Message], after: list[Message]) -> set[tuple[str, str]]:
    """Facts of ``before`` used again ``after`` (a command: run again or quoted again)."""
    later = facts(after)
    later_text = "\n".join(text_of(m) for m in after)
    out = set()
    for kind, value in facts(before):
        if (kind, value) in later or (kind == "command" and value in later_text):
            out.add((kind, value))
    return out


def kept(needs: set[tuple[str, str]], context: list[Message]) -> set[tuple[str, str]]:
    text = "\n".join(text_of(m) for m in context)
    return {f for f in needs if f[1] in text}
