"""What the provider says it used: token usage read from an answer as it passes through.

Owns: `Usage` and the readers of every provider's shape (`SHAPES`): a whole JSON answer
(`from_answer`), or an SSE stream watched chunk by chunk (`StreamUsage.feed`), without
holding the stream (only an unfinished event is kept between chunks). Pure: no I/O.

OpenAI: `usage.prompt_tokens` (cache reads included, in
`prompt_tokens_details.cached_tokens`), `completion_tokens`; streamed only in the last chunk
when the client set `stream_options.include_usage`. Anthropic: `input_tokens` excludes the
cache, so the prompt is `input_tokens + cache_read_input_tokens + cache_creation_input_tokens`;
streamed in message_start (input) and message_delta (output, sometimes input again).
OpenAI Responses: `usage.input_tokens` (cache reads included, in
`input_tokens_details.cached_tokens`), `output_tokens`; streamed in `response.completed`.
A refusal of a prompt over the window says the provider's count of it and its window too
(`refusal`): Anthropic's and Chat Completions' messages, llama.cpp's fields; the Responses
API's says neither.
"""

from __future__ import annotations

import json
import re
from typing import Any

import msgspec

from ctxlayer.gateway.answers import AnswerHead, whole_text


class Usage(msgspec.Struct, kw_only=True):
    """One answer's tokens as the provider counted them."""

    prompt_tokens: int  # the whole input, cached parts included
    completion_tokens: int = 0
    cache_read_tokens: int = 0
    cache_write_tokens: int = 0
    #: the answer's first characters (answers.py: what a helper of the chat may be asked)
    answer: str = ""
    #: the provider's id of the answer, where a later request may name it (a Responses
    #: request's `previous_response_id`): the chat it goes on
    answer_id: str = ""


def _int(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


def _copy(values: dict[str, int], usage: dict, keys: tuple[str, ...]) -> None:
    for key in keys:
        if key in usage and usage[key] is not None:
            _put(values, key, _int(usage[key]))


def _put(values: dict[str, int], key: str, value: int) -> None:
    """A later report of a number replaces the earlier one, but for a 0 after a count: an
    Anthropic-compatible server may close a stream with `input_tokens: 0` after message_start
    said the count (envoyproxy/ai-gateway PR 1631 fixed its own); taken, it told the editors
    that the chat used no tokens, and left the chat uncalibrated."""
    if value or not values.get(key):
        values[key] = value


def _cached(values: dict[str, int], details: Any) -> None:
    if isinstance(details, dict) and "cached_tokens" in details:
        _put(values, "cached_tokens", _int(details["cached_tokens"]))


class Shape:
    """How one provider writes its usage: the numbers of a usage object, the Usage they make,
    and where an SSE event's payload carries a usage object."""

    def take(self, values: dict[str, int], usage: dict) -> None:
        raise NotImplementedError

    def usage(self, v: dict[str, int]) -> Usage:
        raise NotImplementedError

    def in_event(self, payload: dict) -> Any:
        return payload.get("usage")

    def answer_id(self, payload: dict) -> str | None:
        """The id a later request may name this answer by, in a whole answer or an SSE
        event's payload (None: this API names none)."""
        return None


class OpenAIShape(Shape):
    """OpenAI's APIs: the prompt count holds the cache reads (its details' `cached_tokens`);
    Chat Completions names them `prompt_tokens` / `completion_tokens`, Responses
    `input_tokens` / `output_tokens`."""

    def __init__(self, prompt: str, completion: str) -> None:
        self.prompt, self.completion = prompt, completion

    def take(self, values: dict[str, int], usage: dict) -> None:
        _copy(values, usage, (self.prompt, self.completion))
        _cached(values, usage.get(f"{self.prompt}_details"))

    def usage(self, v: dict[str, int]) -> Usage:
        return Usage(prompt_tokens=v.get(self.prompt, 0),
                     completion_tokens=v.get(self.completion, 0),
                     cache_read_tokens=v.get("cached_tokens", 0))


class MessagesShape(Shape):
    """Anthropic Messages: `input_tokens` is the uncached part; streamed in message_start and
    message_delta."""

    def take(self, values: dict[str, int], usage: dict) -> None:
        _copy(values, usage, ("input_tokens", "output_tokens", "cache_read_input_tokens",
                              "cache_creation_input_tokens"))

    def usage(self, v: dict[str, int]) -> Usage:
        read, write = v.get("cache_read_input_tokens", 0), v.get(
            "cache_creation_input_tokens", 0)
        return Usage(prompt_tokens=v.get("input_tokens", 0) + read + write,
                     completion_tokens=v.get("output_tokens", 0),
                     cache_read_tokens=read, cache_write_tokens=write)

    def in_event(self, payload: dict) -> Any:
        if payload.get("type") == "message_start":
            message = payload.get("message")
            return message.get("usage") if isinstance(message, dict) else None
        return payload.get("usage") if payload.get("type") == "message_delta" else None


class ResponsesShape(OpenAIShape):
    """OpenAI Responses: streamed in the final `response.completed` (or `response.incomplete` /
    `response.failed`) event's `response.usage`."""

    def __init__(self) -> None:
        super().__init__("input_tokens", "output_tokens")

    def in_event(self, payload: dict) -> Any:
        response = payload.get("response")
        if payload.get("type") in ("response.completed", "response.incomplete",
                                   "response.failed") and isinstance(response, dict):
            return response.get("usage")
        return None

    def answer_id(self, payload: dict) -> str | None:
        # a whole answer is the response; a stream's events carry it under `response`
        response = payload.get("response") if str(payload.get("type", "")).startswith(
            "response.") else payload
        found = response.get("id") if isinstance(response, dict) else None
        return found if isinstance(found, str) and found else None


#: every provider's usage shape, by its format (gateway/providers.py names it)
SHAPES: dict[str, Shape] = {"openai": OpenAIShape("prompt_tokens", "completion_tokens"),
                            "anthropic": MessagesShape(), "responses": ResponsesShape()}


class _Fields:
    """The usage numbers seen so far; a later report of a number replaces the earlier one
    (not a 0 after a count, `_put`)."""

    def __init__(self, fmt: str) -> None:
        self.shape = SHAPES[fmt]
        self.seen = False
        self.values: dict[str, int] = {}

    def take(self, usage: Any) -> None:
        if isinstance(usage, dict):
            self.seen = True
            self.shape.take(self.values, usage)

    def usage(self) -> Usage | None:
        return self.shape.usage(self.values) if self.seen else None


#: a provider's words when a prompt is over the model's window, with its count of the prompt
_TOO_LONG = {
    "anthropic": re.compile(r"prompt is too long: (\d+) tokens > \d+ maximum"
                            r"|exceed context limit: (\d+) \+ \d+ > \d+"),
    # OpenAI; OpenRouter ("about N tokens (M of text input"); vLLM ("your request has N
    # input tokens"); OpenAI's older wording ("(N in your prompt; ...")
    "openai": re.compile(r"you requested (?:about )?\d+ tokens \((\d+) (?:in the messages|of "
                         r"text input|in your prompt)|your messages resulted in (\d+) tokens"
                         r"|your request has (\d+) input tokens", re.IGNORECASE),
}
#: ... and the window they state
_WINDOW_IS = {
    "anthropic": re.compile(r"tokens > (\d+) maximum|exceed context limit: \d+ \+ \d+ > (\d+)"),
    "openai": re.compile(r"maximum context length is (\d+) tokens", re.IGNORECASE),
}
# an OpenAI-compatible server serving the Responses API words its refusals alike
_TOO_LONG["responses"], _WINDOW_IS["responses"] = _TOO_LONG["openai"], _WINDOW_IS["openai"]
#: llama.cpp's server (an OpenAI-compatible upstream) says both as fields of its error
_LLAMA_CPP = "exceed_context_size_error"
#: LM Studio's server says both in its words, its `error` a string, not an object: the tokens
#: it would have to keep (the prompt) and the context the model is loaded with
_LM_STUDIO = re.compile(r"n_keep: (\d+) ?>= ?n_ctx: (\d+)"
                        r"|Trying to keep the first (\d+) tokens when context the overflows\. "
                        r"However, the model is loaded with context length of only (\d+) tokens"
                        r"|Input length (\d+) exceeds context length (\d+)")
#: ... or, in a stream's error event (an `error` object) and in its MLX engine's words, neither
#: (the words of thane-ai-agent's test of the frame LM Studio sent it, and of LM Studio's bug
#: tracker, issue 2339): the prompt is over the window, by how much unsaid
_LM_STUDIO_UNSAID = re.compile(r"tokens to keep from the initial prompt is greater than the "
                               r"context length|Context size has been exceeded")
#: llama.cpp's server words it without a count where its error has no fields for one: in a
#: stream of a 2025 build (its `error:` line, llama.cpp issue 16104; coddy-agent's pull
#: request 106 quotes it), "the request exceeds the available context size"
_LLAMA_CPP_UNSAID = re.compile(r"the request exceeds the available context size")
#: ... and with both in its current words, which its Anthropic-compatible route may carry
#: without the fields ("request (6009 tokens) exceeds the available context size (4096
#: tokens)", as lemonade's pull request 2975 quotes it)
_LLAMA_CPP_SAID = re.compile(r"request \((\d+) tokens\) exceeds the available context size "
                             r"\((\d+) tokens\)")
#: where `_error_of` puts an `error` that is a string (no provider's key)
_WORDS_ALONE = "\x00words"

#: how far above the budget a prompt refused as over the window without a count (the
#: Responses API says none) is taken to be: the request fitted again is that much smaller
UNSTATED_OVER = 1.15


class Refusal(msgspec.Struct, frozen=True):
    """A provider's 400 refusing a prompt as over the model's window."""

    count: int | None  # its count of the prompt, when it says it
    window: int | None  # the window it states, when it does
    #: in LM Studio's words: its own API says the context it loaded the model with
    lm_studio: bool = False


def refusal(fmt: str, status: int, body: bytes) -> Refusal | None:
    """The refusal of a prompt as over the model's window that a provider's answer is, or
    None: by its count or window in the words of `fmt`'s family, llama.cpp's fields or words,
    LM Studio's words, or OpenAI's `context_length_exceeded` alone. ``status``: a 400, or a
    200 whose body is an error alone (LM Studio's: its bug tracker, issue 2322)."""
    if status not in (200, 400) or status == 200 and b'"error"' not in body:
        return None
    try:
        answer = json.loads(body)
    except (ValueError, RecursionError):  # not JSON, or nested past the decoder's depth
        return None
    if not isinstance(answer, dict) or status == 200 and _answers(answer):
        return None
    return _refusal_in(fmt, _error_of(answer))


def refused_error(fmt: str, answer: dict) -> dict | None:
    """``answer`` (an event of a stream, read: `forward.first_refusal`) as an error body when
    it refuses the prompt as over the window: as it came where its `error` is one, else
    `{"error": ...}`; None when it does not."""
    if _answers(answer):
        return None
    error = _error_of(answer)
    if _refusal_in(fmt, error) is None:
        return None
    return answer if isinstance(answer.get("error"), (str, dict)) else {"error": error}


def _answers(answer: dict) -> bool:
    """Whether a 200's body (or a stream's chunk) answers: never a refusal."""
    return any(answer.get(k) for k in ("choices", "content", "output"))


def _error_of(answer: dict) -> dict:
    """The error an answer holds, in each provider's shape: an `error` object (a string for
    LM Studio's: the words alone); the error of a failed Responses stream (`response.failed`,
    as Codex's tests have it); the error itself, not nested (vLLM's older builds, `"object":
    "error"`; the `error:` line of llama.cpp's 2025 builds: a message and a code); a chunk
    whose `error_message` says it (a hosted vLLM: DeepInfra, Venice; hermes-agent's issues
    65631 and 68451). Empty when it holds none."""
    error = answer.get("error")
    if isinstance(error, str):
        return {_WORDS_ALONE: error}
    if isinstance(error, dict):
        return error
    failed = answer.get("response") if answer.get("type") == "response.failed" else None
    if isinstance(failed, dict) and isinstance(failed.get("error"), dict):
        return failed["error"]
    if isinstance(answer.get("error_message"), str):
        return {"message": answer["error_message"], "type": answer.get("error_type"),
                "code": answer.get("code")}
    if answer.get("object") == "error" or (isinstance(answer.get("message"), str)
                                           and "code" in answer):
        return answer
    return {}


def _refusal_in(fmt: str, error: dict) -> Refusal | None:
    """The refusal an error (`_error_of`) is, or None."""
    if error.get("type") == _LLAMA_CPP:
        return Refusal(_count(error.get("n_prompt_tokens")), _count(error.get("n_ctx")))
    words = error.get(_WORDS_ALONE, error.get("message"))
    if isinstance(words, str):
        found = _LM_STUDIO.search(words)
        if found is not None:
            count, window = [int(g) for g in found.groups() if g]
            return Refusal(count, window, lm_studio=True)
        if _LM_STUDIO_UNSAID.search(words):
            return Refusal(None, None, lm_studio=True)
        found = _LLAMA_CPP_SAID.search(words)
        if found is not None:
            return Refusal(int(found.group(1)), int(found.group(2)))
        if _LLAMA_CPP_UNSAID.search(words):
            return Refusal(None, None)
    if _WORDS_ALONE in error:
        return None
    said = Refusal(_stated(_TOO_LONG.get(fmt), error), _stated(_WINDOW_IS.get(fmt), error))
    if said.count is None and said.window is None and \
            error.get("code") != "context_length_exceeded":
        return None
    return said


def _stated(pattern: re.Pattern[str] | None, error: dict) -> int | None:
    message = error.get("message")
    found = pattern.search(message) if pattern is not None and isinstance(message, str) else None
    return int(next(g for g in found.groups() if g)) if found else None


def _count(value: object) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 \
        else None


def from_answer(fmt: str, body: bytes) -> Usage | None:
    """The usage of a whole (non-streamed) JSON answer, or None when it has none."""
    try:
        answer = json.loads(body)
    except (ValueError, RecursionError):  # not JSON, or nested past the decoder's depth
        return None
    fields = _Fields(fmt)
    if isinstance(answer, dict):
        fields.take(answer.get("usage"))
    usage = fields.usage()
    if usage is None or not isinstance(answer, dict):
        return usage
    return msgspec.structs.replace(usage, answer=whole_text(fmt, answer),
                                   answer_id=fields.shape.answer_id(answer) or "")


#: an SSE line end: CRLF, LF or CR, all three allowed (a stream of CR-ended lines was one
#: unfinished event, its usage never read)
_LINE_END = re.compile(rb"\r\n?|\n")


class StreamUsage:
    """Reads the usage out of an SSE stream fed chunk by chunk, as the chunks pass."""

    def __init__(self, fmt: str) -> None:
        self.fmt = fmt
        self._fields = _Fields(fmt)
        self._answer = AnswerHead(fmt)
        self._tail = b""
        self._answer_id = ""

    def feed(self, chunk: bytes) -> None:
        data = self._tail + chunk
        # a CR last may be half a CRLF: read with the next chunk, not as a line end of its own
        held = b"\r" if data.endswith(b"\r") else b""
        events = _LINE_END.sub(b"\n", data[:len(data) - len(held)]).split(b"\n\n")
        self._tail = events.pop() + held  # an unfinished event waits for the next chunk
        for event in events:
            # most events are content deltas: once the answer's head is in, skip them unparsed
            if b"usage" in event or not self._answer.full():
                self._event(event)

    def _event(self, event: bytes) -> None:
        lines = [line[5:].lstrip() for line in event.split(b"\n") if line.startswith(b"data:")]
        try:
            payload = json.loads(b"\n".join(lines))
        except (ValueError, RecursionError):  # not JSON, or nested past the decoder's depth
            return
        if isinstance(payload, dict):
            self._fields.take(self._fields.shape.in_event(payload))
            self._answer_id = self._fields.shape.answer_id(payload) or self._answer_id
            if not self._answer.full():
                self._answer.take(payload)

    def usage(self) -> Usage | None:
        """The usage reported so far, with the answer's head (None when the stream carried
        no usage)."""
        if self._tail.strip():
            self.feed(b"\n\n")
        usage = self._fields.usage()
        return None if usage is None else msgspec.structs.replace(
            usage, answer=self._answer.text(), answer_id=self._answer_id)
