"""`ctxlayer trim`: fit a chat into a budget; the result on stdout, a one-line summary on stderr.

A request body (`{"messages": [...], ...}`, or a Responses request with `input`) comes back
whole, ready to send: every field of the input as it was, `messages` (and `system`, or the
Responses `input`) fitted, and the audit beside them under AUDIT_KEY, which the sender
removes. A bare list of messages gives ctx/trim's TrimResult (`messages`, `tokens`, `budget`,
`dropped`, `truncated`). The tool definitions share the budget, counted as the gateway counts
them, so `trim --budget N` and the gateway fit a body alike.
"""

from __future__ import annotations

import sys

import msgspec

from ctxlayer.cli import UsageError
from ctxlayer.commands.io import (
    DETECTED,
    FORMATS_NAMED,
    chat_model,
    decode_chat,
    load_chat,
    output_room,
    positive,
    read_input,
    reserve,
)
from ctxlayer.core.errors import ContextError, said_of_the_budget
from ctxlayer.core.formats.common import FORMATS, Decoded

#: where a request body's result carries the audit ({tokens, budget, dropped, truncated}). No
#: OpenAI or Anthropic request has this field, so it never stands for one of the body's own;
#: remove it before sending (`jq 'del(.ctxlayer)'`). An input that has it (trim's own result
#: trimmed again) has it replaced, never sent on.
AUDIT_KEY = "ctxlayer"

FORMAT_HELP = "format of the input and the output: " + FORMATS_NAMED + DETECTED


def add_arguments(parser) -> None:
    parser.add_argument("file", nargs="?", help="chat JSON file (default: stdin)")
    parser.add_argument("--format", choices=FORMATS, default=None,
                        help=FORMAT_HELP)
    parser.add_argument("--model", default=None,
                        help="model name (default: the body's `model`, else gpt-4o)")
    parser.add_argument("--budget", type=positive, default=None,
                        help="tokens the prompt may use (default: window minus reserved output)")
    parser.add_argument("--reserve-output", type=reserve, default=None,
                        help="tokens kept free for the reply when --budget is absent (default: "
                        "the body's max_completion_tokens or max_tokens, else the model's usual)")
    parser.add_argument("--strategy", choices=("pipeline", "priority"), default=None,
                        help="default: [trim] strategy of ctxlayer.toml (the user's, then the "
                        "--workspace folder's), else pipeline")
    parser.add_argument("--doc", action="append", default=[], metavar="FILE",
                        help="a retrieved document to include (P3); repeatable")
    parser.add_argument("--workspace", default=".", metavar="PATH",
                        help="folder that files attached to messages are read from (default: .);"
                        " paths outside it are refused")
    parser.add_argument("--quiet", "-q", action="store_true", help="no summary on stderr")


def _budget(reserve_output: int | None, payload: dict, fmt: str, info) -> int:
    """The window less the output reserve: --reserve-output, else the body's own field (as the
    gateway reads it), else the model's usual. A reserve that leaves the prompt nothing is
    refused naming where it came from, as the daemon refuses it, not made a budget of one
    token that the question alone is then over."""
    from ctxlayer.state.chatcodec import no_room, reserve_field

    found = (("--reserve-output", reserve_output) if reserve_output is not None
             else reserve_field(payload, fmt))
    if found is None:
        return info.default_budget
    field, reserve = found
    if reserve >= info.context_window:
        raise UsageError(f"{field}: {no_room(reserve, info.context_window, info.name)}; pass "
                         f"--budget or a smaller {field}")
    return info.context_window - reserve


def budget_and_tools(budget: int | None, reserve_output: int | None, decoded: Decoded,
                     info, counter) -> tuple[int, int]:
    """(the budget a chat is fitted into, its tool definitions' tokens, which share it):
    `budget` when given, else the window less the output reserve (_budget). Tools that fill
    the budget alone are refused. `ctxlayer inspect --html --chat` takes them here too, so
    its page and `trim` fit a body alike."""
    from ctxlayer.core.tokens import tools_tokens  # the gateway's count

    payload, fmt = decoded.payload, decoded.fmt
    budget = budget or _budget(reserve_output, payload, fmt, info)
    tools = tools_tokens(payload, counter, fmt, decoded.model)
    if tools >= budget:
        raise UsageError(f"the tool definitions alone need {tools} tokens, over the budget of "
                         f"{budget}")
    return budget, tools


def run(args) -> int:
    from pathlib import Path

    from ctxlayer.config import default_user_config_dir, load_config
    from ctxlayer.core.formats import codec, encode, written
    from ctxlayer.core.text import counted
    from ctxlayer.core.trim import trim
    from ctxlayer.tokenizers import counter_for, model_info
    from ctxlayer.workspace.attachments import attached_paths, read_attachments

    if not Path(args.workspace).is_dir():  # its files were said missing, one by one
        raise UsageError(f"--workspace {args.workspace}: not a folder; name the folder the "
                         "files a message attaches are read from")
    source = args.file or "stdin"
    payload, is_body = load_chat(read_input(args.file), source, args.format)
    payload.pop(AUDIT_KEY, None)  # a previous trim's audit: never part of the request
    model = chat_model(args.model, payload, source)
    counter, info = counter_for(model), model_info(model)
    decoded = decode_chat(payload, source, counter, args.format, model)
    output_room(payload, decoded.fmt, source)
    messages = decoded.messages
    budget, tools = budget_and_tools(args.budget, args.reserve_output, decoded, info, counter)
    docs = [read_input(d) for d in args.doc]
    attachments = read_attachments(Path(args.workspace), attached_paths(messages))
    # `[trim]` as the daemon's ctx/trim reads it: the user's settings, then the folder's
    config, problems = load_config(Path(args.workspace).resolve(), default_user_config_dir())
    for problem in problems:
        print(f"ctxlayer: config: {problem}", file=sys.stderr)
    options = config.trim.options(args.strategy, decoded.fmt, decoded)
    try:
        report = trim(messages, budget - tools, counter, docs=docs, attachments=attachments,
                      options=options)
    except ContextError as exc:
        raise said_of_the_budget(exc, budget, tools) from None
    encoded = encode(decoded, report.messages)
    dropped = [*report.dropped, *(e for e in encoded.audit if e.action == "dropped")]
    truncated = [*report.truncated, *(e for e in encoded.audit if e.action != "dropped")]
    # counted from what goes out: the encoder's repairs (a call left without its result
    # removed, Anthropic turns merged) change it after the fit, and `count` of the output
    # must say the same number
    sent, tokens = written(decoded, encoded)
    audit = {"tokens": tokens, "budget": budget,
             "dropped": msgspec.to_builtins(dropped), "truncated": msgspec.to_builtins(truncated)}
    if is_body:
        result = {**encoded.payload, AUDIT_KEY: audit}
    else:  # ctx/trim's result, whatever the format: a Responses list came back as `input`
        result = {"messages": encoded.payload[codec(decoded.fmt).conversation], **audit}
    sys.stdout.write(msgspec.json.encode(result).decode() + "\n")
    if not args.quiet:
        print(f"trim: {counted(len(messages), 'message')} in, {len(sent.messages)} kept, "
              f"{audit['tokens']}/{budget} tokens ({info.name}, {options.strategy}, {decoded.fmt}); "
              f"{len(dropped)} dropped, {len(truncated)} shortened", file=sys.stderr)
    return 0
