"""Summaries ahead of need written by the chat's own upstream (`[gateway] summarizer =
"upstream"`): the model call the state's upkeep makes once a conversation's next step is
near (`precompact_at` of its budget passed, or one more request like its biggest recent one
would pass the budget), after the answer that got it there.

Owns the summarization call (each provider's request and answer shapes are its row in
providers.py: a plain, non-streamed request with the core's instructions and a transcript of
the messages the next step takes, fitted to the summarizing model's window by the core,
`max_tokens` the size of the part it stands in, plus room to think for a reasoning model),
and `asker`: the one closure that holds the client's headers (its API key) for that one
call. They live in memory only while the
call is under way, and are never stored nor logged.
Must not log headers, bodies or the answer's text.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable

import msgspec

from ctxlayer.core.groups import is_output
from ctxlayer.core.prepare import SummaryAsk
from ctxlayer.gateway.forward import Upstream
from ctxlayer.gateway.providers import Provider
from ctxlayer.gateway.usage import refusal
from ctxlayer.protocol import Message

#: seconds the upstream has to answer a summary (the chat goes on meanwhile; past it, the
#: offline summary stands in)
TIMEOUT = 120.0


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


def asker(upstream: Upstream, provider: Provider, url: str, headers: dict[str, str],
          model: str, stated: Callable[[int], None] | None = None
          ) -> Callable[[SummaryAsk], Awaitable[str]]:
    """The call the state's upkeep makes: ``url`` (the chat's own route upstream) with the
    chat request's own ``headers``, held by this closure alone. ``stated``: told the window
    the upstream states when it refuses the request as over it (a summarizing model whose
    window the gateway did not know: the next summary is fitted to it)."""

    async def ask(want: SummaryAsk) -> str:
        body = provider.summary_request(model, want.instructions, transcript(want.shown),
                                        want.max_tokens)
        status, raw = await upstream.post(url, headers, msgspec.json.encode(body), TIMEOUT)
        if status >= 300:
            refused = refusal(provider.fmt, status, raw)
            if refused is None or refused.window is None or stated is None:
                raise SummaryFailed(f"the upstream answered {status}")
            stated(refused.window)
            raise SummaryFailed(f"the upstream answered {status}: over its window of "
                                f"{refused.window} tokens, the next summary is fitted to it")
        return answer_text(provider, raw)

    return ask
