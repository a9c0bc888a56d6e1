"""What a live chat's request asks of its turn, read off the request and its caller: the model
it is counted as, the budget it asks for, the client run it came under, and the prompt and
cache figures the provider's answer reported (`Conversations.report_usage`).

Must not: keep state, or do I/O.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ctxlayer import protocol
from ctxlayer.core.errors import ContextError, require_tokens
from ctxlayer.state import identity
from ctxlayer.state.chatcodec import no_room, reserve_field

if TYPE_CHECKING:  # a protocol: the Caller names the State, which imports the conversations
    from ctxlayer.state.seams import Asker as Caller


def read_usage(usage: Any) -> tuple[int, int | None] | None:
    """(prompt tokens, tokens read from the provider's cache) of an OpenAI or Anthropic usage
    object; None when it is neither."""
    if not isinstance(usage, dict):
        return None

    def num(value: Any) -> int | None:
        return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 \
            else None

    if num(usage.get("prompt_tokens")) is not None:  # openai
        details = usage.get("prompt_tokens_details")
        cached = num(details.get("cached_tokens")) if isinstance(details, dict) else None
        return usage["prompt_tokens"], cached
    if num(usage.get("input_tokens")) is not None:  # anthropic: input is the uncached part
        read = num(usage.get("cache_read_input_tokens")) or 0
        written = num(usage.get("cache_creation_input_tokens")) or 0
        return usage["input_tokens"] + read + written, read
    return None



def nominal_budget(caller: Caller, p: protocol.PrepareParams, model: str) -> int:
    """The budget the request asks for: `budget`, else its `contextWindow` less the output
    reserve, else the model's default (the client's own `max_tokens` as the reserve)."""
    if p.reserve_output is not None and p.reserve_output < 0:
        raise ContextError("invalid", "must not be negative", field="reserveOutput")
    require_tokens(p.budget)
    require_tokens(p.context_window, "contextWindow")
    # the params' own field, else the request's, named from the params' root (the gateway
    # names it from the body: gateway/errors.py)
    field, reserve = (("reserveOutput", p.reserve_output) if p.reserve_output is not None
                      else reserve_field(p.request, p.format) or ("", None))
    field = field if field in ("reserveOutput", "") else f"request.{field}"
    if p.budget is not None:
        return p.budget
    window = p.context_window or caller.options.context_window or model_window(model)
    if reserve is not None and reserve >= window:
        # the prompt would get no room at all: said of the field, not as a budget of 1 token
        # that the newest message alone is over
        raise ContextError("invalid", no_room(reserve, window, model), field=field)
    if p.context_window is not None:
        return _window_budget(model, p.context_window, reserve)
    return caller.default_budget(model, reserve)



def run_of(p: protocol.PrepareParams, hint: str | None) -> str | None:
    """The client run a request came under, on any model: a session id the client sends with
    every request of one run (Claude Code's header, Anthropic `metadata.user_id`), the chat and
    its sub-agents alike. Not OpenAI's `user` or `prompt_cache_key`: one names a person across
    chats, the other one chat."""
    if hint is None or not (p.client_session_id or p.format == "anthropic"):
        return None
    return identity.hinted_id(p.format, hint, "")


def model_of(caller: Caller, p: protocol.PrepareParams) -> str:
    return caller.model(p.model or _str(p.request.get("model"))) or _default_model()


def counted_alike(a: str, b: str) -> bool:
    """Whether two models' messages are counted alike (the same encoding and correction): a
    window's counts hold for the other (Claude Code's `/model` from one Claude to another)."""
    from ctxlayer.tokenizers import counted_as

    return a == b or counted_as(a) == counted_as(b)


def model_window(model: str) -> int:
    from ctxlayer.tokenizers import model_info
    return model_info(model).context_window


def _window_budget(model: str, window: int, reserve: int | None) -> int:
    """The window the request was given, minus its output room (else the model's usual)."""
    from ctxlayer.tokenizers import model_info

    return max(1, window - (reserve if reserve is not None else
                            min(model_info(model).output_allowance, window // 2)))


def _str(value: Any) -> str | None:
    return value if isinstance(value, str) and value else None


def _default_model() -> str:
    from ctxlayer.tokenizers import DEFAULT_MODEL

    return DEFAULT_MODEL
