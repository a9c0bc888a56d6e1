"""`ctxlayer inspect --html`: the budget inspector page for a workspace, written to a file or
stdout, for browsers (Neovim's `:Ctxlayer inspect` opens it). The page shows the layered
system prompt of the workspace, plus a chat when one is given (`--chat FILE`), trimmed into
the budget by the real engine. Owns argument handling and file output only; the page is
rendered by `ctxlayer.inspector`.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import NamedTuple


def add_arguments(parser) -> None:
    from ctxlayer.commands.io import positive

    parser.add_argument("--html", action="store_true",
                        help="write the budget inspector page (self-contained HTML)")
    parser.add_argument("--chat", default=None,
                        help="with --html: a chat to show after the system prompt: a JSON list "
                             "of messages or a request body, as `ctxlayer trim` reads it (its "
                             "`model`, output reserve and tools count as there)")
    parser.add_argument("--budget", type=positive, default=None,
                        help="with --html: token budget (default: the model's window minus the "
                             "--chat body's max_tokens, else minus the model's output allowance)")
    parser.add_argument("--out", default=None, help="with --html: write to this file, not stdout")


def run_html(args) -> int:
    from ctxlayer.cli import UsageError
    from ctxlayer.commands.prompt import build
    from ctxlayer.inspector import inspect_conversation, render_inspector
    from ctxlayer.tokenizers import counter_for, model_info

    chat = _chat(args.chat, args.model, args.budget) if args.chat else None
    model = chat.model if chat else args.model
    info = model_info(model)
    prompt, _segment = build(Path(args.path).expanduser(), model)
    budget, tools = (chat.budget, chat.tools) if chat else (args.budget or info.default_budget, 0)
    data = inspect_conversation(
        [*prompt.messages, *(chat.messages if chat else [])], budget, counter_for(model),
        model=model or info.name, window=max(info.context_window, budget),
        title=f"ctxlayer · {Path(args.path).expanduser().resolve().name}",
        cache_boundary=prompt.cache_boundary, tools=tools,
        user_first=chat.user_first if chat else False,
    )
    html = render_inspector(data)
    if args.out:
        try:
            Path(args.out).write_text(html, encoding="utf-8")
        except OSError as exc:
            raise UsageError(f"--out {args.out}: cannot write it ({exc})") from None
        print(args.out)
    else:
        sys.stdout.write(html)
    return 0


class _Chat(NamedTuple):
    messages: list
    model: str | None
    budget: int
    tools: int
    user_first: bool  # its format starts with a user turn: the fit keeps none before it


def _chat(source: str, requested_model: str | None, budget: int | None) -> _Chat:
    """The chat of `--chat`, with the model, budget and tool tokens `ctxlayer trim` takes for
    it (its functions, so the page and `trim` fit a request body alike): `--model`, else the
    body's `model`; `--budget`, else the window less the body's output reserve
    (`max_tokens`, ...); its tool definitions sharing the budget."""
    from ctxlayer.commands.io import (
        chat_model,
        decode_chat,
        engine_messages,
        load_chat,
        output_room,
        read_input,
    )
    from ctxlayer.commands.trim import AUDIT_KEY, budget_and_tools
    from ctxlayer.core.formats import trim_options
    from ctxlayer.tokenizers import counter_for, model_info

    payload, _is_body = load_chat(read_input(source), source)
    payload.pop(AUDIT_KEY, None)  # a previous trim's audit: never part of the request
    model = chat_model(requested_model, payload, source)
    counter = counter_for(model)
    decoded = decode_chat(payload, source, counter, model=model)
    output_room(payload, decoded.fmt, source)
    fitted, tools = budget_and_tools(budget, None, decoded, model_info(model), counter)
    first = trim_options(decoded.fmt, decoded).user_first
    return _Chat(engine_messages(decoded), model, fitted, tools, first)
