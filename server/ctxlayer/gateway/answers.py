"""The first words of an answer, as the provider wrote them: what a client may pass on to a
helper of its chat (aider's architect answers, and its editor is asked that answer, under a
system prompt of its own), so the helper is known as the chat's (state/asides.py `helps`).

Read as the answer goes by: a stream's events are parsed only until HEAD characters are in
(most are a few characters of text; the usage events are parsed anyway).
Must not log the answer's text.
"""

from __future__ import annotations

from ctxlayer.gateway.providers import BY_FORMAT

#: how much of an answer is kept: enough to know it where a helper quotes it
HEAD = 400


def delta_text(fmt: str, payload: dict) -> str | None:
    """The text a stream's event adds to the answer, in the provider's format, or None."""
    if fmt == "openai":
        choices = payload.get("choices")
        first = choices[0] if isinstance(choices, list) and choices else None
        delta = first.get("delta") if isinstance(first, dict) else None
        text = delta.get("content") if isinstance(delta, dict) else None
    elif fmt == "anthropic":
        delta = payload.get("delta") if payload.get("type") == "content_block_delta" else None
        text = delta.get("text") if isinstance(delta, dict) and \
            delta.get("type") == "text_delta" else None
    else:  # responses
        text = payload.get("delta") if payload.get("type") == "response.output_text.delta" \
            else None
    return text if isinstance(text, str) else None


def whole_text(fmt: str, answer: dict) -> str:
    """The first HEAD characters of a whole (non-streamed) answer's text, as the provider's
    row reads it (`Provider.answer_text`); empty when it holds none in that shape."""
    try:
        text = BY_FORMAT[fmt].answer_text(answer)
    except (KeyError, TypeError, IndexError, AttributeError):
        return ""
    return text[:HEAD] if isinstance(text, str) else ""


class AnswerHead:
    """The answer's first HEAD characters, taken from its stream's events."""

    def __init__(self, fmt: str) -> None:
        self.fmt = fmt
        self._parts: list[str] = []
        self._size = 0

    def full(self) -> bool:
        return self._size >= HEAD

    def take(self, payload: dict) -> None:
        text = delta_text(self.fmt, payload)
        if text:
            self._parts.append(text)
            self._size += len(text)

    def text(self) -> str:
        return "".join(self._parts)[:HEAD]
