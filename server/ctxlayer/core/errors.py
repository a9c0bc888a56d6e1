"""The one domain error type. lsp/errors.py maps each kind to a JSON-RPC code once."""

from __future__ import annotations

import re
from typing import Literal

ErrorKind = Literal[
    "pinned_over_budget",  # -32001: the pinned system content alone exceeds the budget
    "unknown_session",  # -32002
    "outside_workspace",  # -32003: a path resolves outside the workspace
    "invalid",  # -32602: input that cannot be served; `field` names the culprit
]


class ContextError(Exception):
    """Input the engine cannot serve. Going over budget is NOT one of these: it is reported."""

    def __init__(self, kind: ErrorKind, message: str, *, field: str | None = None) -> None:
        super().__init__(message)
        self.kind = kind
        self.field = field


def said_of_the_budget(exc: ContextError, budget: int, tools: int) -> ContextError:
    """The engine's refusal in terms of the budget the user gave: it is fitted into what the
    tool definitions leave, so it said "over the budget of 63" of a --budget 442 whose tools
    took 379. `ctxlayer trim` and the inspector's pages say it so."""
    over = f"over the budget of {budget - tools}"
    if not tools or not str(exc).endswith(over):
        return exc
    return ContextError(exc.kind, str(exc).removesuffix(over) + (
        f"over the {budget - tools} tokens that the budget of {budget} leaves after the tool "
        f"definitions ({tools} tokens)"), field=exc.field)


#: the most tokens a client may name: the largest integer a JSON number keeps exactly in
#: every client (JavaScript's), far above any window; a larger one overflowed SQLite's
#: integers when a session kept it (an internal error)
MAX_TOKENS = 2**53 - 1

#: why a request holding a value nested about 1,000 levels deep is refused, whichever face it
#: came through: past that, a decoder and a walk of the value both raise RecursionError (a
#: tool's input read fine, then written again deeper in the stack, was an internal error)
TOO_DEEP = "holds JSON nested deeper than ctxlayer follows (about 1,000 levels)"


#: a \uXXXX escape of a UTF-16 surrogate, with the backslashes before it (an even run is an
#: escaped backslash followed by the letter u, no escape at all)
_SURROGATE = re.compile(rb"(\\+)u([dD][89a-fA-F][0-9a-fA-F]{2})")
_LOW = re.compile(rb"\\u[dD][c-fC-F][0-9a-fA-F]{2}")


def lone_surrogate(data: bytes) -> str | None:
    """Why JSON the decoder refused cannot be read, when the cause is a \\uD800-\\uDFFF escape
    without its other half (msgspec says only "Input data was truncated"): a client cut a
    string in the middle of a character. Refused, not replaced by U+FFFD: that would change
    the user's text unasked in a request otherwise sent as it came, the providers refuse it
    too, and the fix (not cutting inside a character) belongs where the text was cut. Every
    face that reads JSON (the CLI, the gateway, the daemon) says it with this one line."""
    skip = -1
    for m in _SURROGATE.finditer(data):
        at = m.start(2) - 2  # the backslash of the escape
        if len(m.group(1)) % 2 == 0 or at < skip:
            continue
        if m.group(2)[1:2].lower() in b"89ab" and _LOW.match(data, m.end()):
            skip = m.end() + 1  # a whole pair: its low half is no lone one
            continue
        return (f"a lone UTF-16 surrogate \\u{m.group(2).decode().lower()} at byte {at}: the "
                "text was cut in the middle of a character (half of a surrogate pair)")
    return None


def not_utf8(data: bytes) -> str | None:
    """Where ``data`` stops being UTF-8 (`not valid UTF-8 at byte N`), None when it is UTF-8.
    The CLI, the gateway and the daemon say a bad byte with this one line (the daemon said
    msgspec's "Invalid UTF-8 encoded string", the gateway no position)."""
    try:
        data.decode("utf-8")
    except UnicodeDecodeError as exc:
        return f"not valid UTF-8 at byte {exc.start}"
    return None


def require_tokens(value: int | None, field: str = "budget") -> None:
    """The one check of a number of tokens a client gives (a budget, a window): positive and
    at most MAX_TOKENS, or not given (None)."""
    if value is not None and value <= 0:
        raise ContextError("invalid", f"must be a positive number of tokens, got {value}",
                           field=field)
    if value is not None and value > MAX_TOKENS:
        raise ContextError("invalid", f"must be at most {MAX_TOKENS:,} tokens, got {value:,}",
                           field=field)
