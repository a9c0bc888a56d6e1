"""Whether a relayed stream said it was over: each model API's last event, read from the whole
events the relay passes on.

An upstream that ends its body before that event (a process that died in the middle of an
answer behind a proxy that closes cleanly, a close-delimited body whose connection went away)
ended a client's stream as if it were whole: the official SDKs raised nothing over a cut
answer ('Hello wor', no finish reason). The relay ends such a stream with the provider's
error event instead (forward.py). Pure: no I/O.

What ends an answer, per format:
- Chat Completions: `data: [DONE]`, or a chunk whose choice has a `finish_reason` (the answer
  is whole there; a server that sends no [DONE] after it loses nothing), or an `error` chunk.
- Anthropic Messages: `message_stop`, or an `error` event.
- OpenAI Responses: `response.completed`, `response.failed`, `response.incomplete`, or an
  `error` event.
An error event of the upstream's own ends the stream as it came: it says the answer is cut.
"""

from __future__ import annotations

import json
import re

#: the bytes one of an answer's last events holds (a quote in a text is escaped, so a text that
#: names them does not match): only events holding them are read as JSON
_CANDIDATE = {
    "openai": re.compile(rb'\[DONE\]|"finish_reason"\s*:\s*"|"error"'),
    "anthropic": re.compile(rb'"(?:message_stop|error)"'),
    "responses": re.compile(rb'"(?:response\.(?:completed|failed|incomplete)|error)"'),
}
_LAST_TYPES = {
    "anthropic": frozenset({"message_stop", "error"}),
    "responses": frozenset({"response.completed", "response.failed", "response.incomplete",
                            "error"}),
}
_LINE_END = re.compile(rb"\r\n?|\n")


class Ending:
    """Reads the whole events of a stream in ``fmt`` (a model route's) as they are passed on;
    `over` says whether one of them ended the answer."""

    def __init__(self, fmt: str) -> None:
        self.fmt = fmt
        self.over = False

    def read(self, events: bytes) -> None:
        candidate = _CANDIDATE.get(self.fmt)
        if self.over or candidate is None or not candidate.search(events):
            return
        self.over = any(_ends(self.fmt, event) for event in
                        _LINE_END.sub(b"\n", events).split(b"\n\n") if candidate.search(event))


def _ends(fmt: str, event: bytes) -> bool:
    data = b"\n".join(line[5:].lstrip() for line in event.split(b"\n")
                      if line.startswith(b"data:"))
    if fmt == "openai" and data.strip() == b"[DONE]":
        return True
    try:
        said = json.loads(data)
    except (ValueError, RecursionError):
        return False
    if not isinstance(said, dict):
        return False
    if fmt != "openai":
        return said.get("type") in _LAST_TYPES[fmt]
    choices = said.get("choices")
    return bool(said.get("error")) or isinstance(choices, list) and any(
        isinstance(c, dict) and isinstance(c.get("finish_reason"), str) for c in choices)
