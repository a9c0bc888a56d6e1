"""Summaries ahead of need written by the chat's own upstream (`[gateway] summarizer =
"upstream"`): the model call the state's upkeep makes once a conversation's next step is
near (`precompact_at` of its budget passed, or one more request like its biggest recent one
would pass the budget), after the answer that got it there.

Owns the summarization call (each provider's request and answer shapes are its row in
providers.py: a plain, non-streamed request with the core's instructions and a transcript of
the messages the next step takes, fitted to the summarizing model's window by the core,
`max_tokens` the size of the part it stands in, plus room to think for a reasoning model
within its window: `room_to_think`, None when it cannot be asked in it),
and `asker`: the one closure that holds the client's headers (its API key) for that one
call. They live in memory only while the
call is under way, and are never stored nor logged.
Must not log headers, bodies or the answer's text.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping

import msgspec

from ctxlayer.core.groups import is_output
from ctxlayer.core.model_names import is_claude
from ctxlayer.core.prepare import SummaryAsk
from ctxlayer.gateway.forward import Upstream
from ctxlayer.gateway.providers import Provider
from ctxlayer.gateway.usage import refusal
from ctxlayer.protocol import Message
from ctxlayer.tokenizers import model_info

#: seconds the upstream has to answer a summary (the chat goes on meanwhile; past it, the
#: offline summary stands in)
TIMEOUT = 120.0


#: output tokens a reasoning model's summary request has beyond the summary's own, for its
#: thinking: its output cap counts the reasoning too, and with the summary's size alone
#: (a few hundred tokens) the reasoning took all of it and the answer came back empty. A cap,
#: not a cost: what is billed is what it thinks. A summary is a plain task: OpenAI's advice of
#: 25k "when starting" is for hard problems; 16k leaves a 128k-window summarizer most of it.
REASONING_ROOM = 16_384
#: the share of a smaller summarizer's window its thinking may have at most: the room comes
#: out of the window the transcript is fitted to (16k of a 12k window left it none: every
#: summary was refused as over the window)
REASONING_SHARE = 0.25
#: the least room to think worth asking with: less, and the thinking takes the whole output
MIN_REASONING_ROOM = 1_024
#: the least of its window a summarizer must have besides its thinking: the instructions,
#: the summary (a few hundred tokens) and a transcript worth summarizing
MIN_WINDOW = 2_048


def room_to_think(model: str, window: int) -> int | None:
    """The output a summary request for ``model`` asks beyond the summary's, within its
    ``window``: `REASONING_ROOM` for the reasoning models the table knows (o-series, gpt-5),
    at most `REASONING_SHARE` of the window; 0 for any other model. None: the window is too
    small to ask it for a summary at all."""
    room = (min(REASONING_ROOM, int(window * REASONING_SHARE))
            if model_info(model).reasoning_model else 0)
    if window - room < MIN_WINDOW or 0 < room < MIN_REASONING_ROOM:
        return None
    return room


def summarizer_names(setting: str) -> tuple[str, ...]:
    """The models `[gateway] summarizer_model` names, in order: one, or one per provider
    family for a gateway both kinds of clients use ("claude-haiku-4-5, gpt-4o-mini"); each
    trimmed (a name pasted with its newline was sent upstream as such)."""
    return tuple(n.strip() for n in setting.split(",") if n.strip())


def summarizer_for(names: tuple[str, ...], chat_model: str) -> tuple[str, str | None]:
    """The model that writes the summaries of a chat with ``chat_model``: the first of
    ``names`` of its family (Claude or not), else the chat's own model, with what to say of
    that once (None: the one asked for). A Claude name was sent to an OpenAI chat's upstream
    (`/v1/chat/completions`), which refuses it: every summary fell back to the offline one."""
    for name in names:
        if is_claude(name) == is_claude(chat_model):
            return name, None
    if not names:
        return chat_model, None
    family = "Claude" if is_claude(chat_model) else "non-Claude"
    return chat_model, (f"summarizer_model {', '.join(map(ascii, names))} names no "
                        f"{family} model for the chats of {ascii(chat_model)}: their own "
                        "model writes their summaries (name one per provider, separated by "
                        "commas)")


class SummaryFailed(Exception):
    """The upstream did not give a summary (said in the chunk's audit: no key, no body)."""


def transcript(messages: list[Message]) -> str:
    """The messages as one text to summarize: who said what, the tool calls and results."""
    out = []
    for m in messages:
        if m.kind == "summary":  # the older messages' own summary, when they did not fit
            out.append(m.content)
            continue
        who = "tool result" if is_output(m) else m.role
        lines = [f"{who}: {m.content}"] if m.content else []
        lines += [f"{m.role} called {c.name}({c.arguments})" for c in m.tool_calls or ()]
        out.append("\n".join(lines) or f"{who}: (empty)")
    return "\n\n".join(out)


def answer_text(provider: Provider, raw: bytes) -> str:
    """The text of a summarization answer, or SummaryFailed when it has none."""
    try:
        text = provider.answer_text(msgspec.json.decode(raw))
    except (msgspec.DecodeError, KeyError, IndexError, TypeError, AttributeError) as exc:
        why = f" ({exc})" if isinstance(exc, TypeError) else ""
        raise SummaryFailed(f"the upstream's answer has no text where the provider puts "
                            f"it{why}") from exc
    if not isinstance(text, str):  # a reader that let something else through
        raise SummaryFailed(f"the upstream's answer holds a {type(text).__name__}, not text")
    return text


def asker(upstream: Upstream, provider: Provider, url: str, headers: Mapping[str, str],
          model: str, room: int = 0, stated: Callable[[int], bool] | None = None
          ) -> Callable[[SummaryAsk], Awaitable[str]]:
    """The call the state's upkeep makes: ``url`` (the chat's own route upstream) with the
    chat request's own ``headers``, held by this closure alone; ``room``: the output asked
    beyond the summary's (`room_to_think`). ``stated``: told the window the upstream states
    when it refuses the request as over it, says whether the gateway takes it (a summarizing
    model whose window the gateway did not know: the next summary is fitted to it)."""

    async def ask(want: SummaryAsk) -> str:
        body = provider.summary_request(model, want.instructions, transcript(want.shown),
                                        want.max_tokens + room)
        status, raw = await upstream.post(url, headers, msgspec.json.encode(body), TIMEOUT)
        if status >= 300:
            refused = refusal(provider.fmt, status, raw)
            if refused is None or refused.window is None:
                raise SummaryFailed(f"the upstream answered {status}")
            # said only when it is so: a window the gateway knew already changes nothing
            taken = stated is not None and stated(refused.window)
            then = ", the next summary is fitted to it" if taken else ""
            raise SummaryFailed(f"the upstream answered {status}: over its window of "
                                f"{refused.window} tokens{then}")
        return answer_text(provider, raw)

    return ask
