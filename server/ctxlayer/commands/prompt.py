"""`ctxlayer prompt PATH`: the layered system prompt for a workspace, then a table of its
sections with tokens, hashes and whether the provider can cache them."""

from __future__ import annotations

import sys
from pathlib import Path

import msgspec

from ctxlayer.cli import UsageError
from ctxlayer.core.prompt.spec import INCLUDE_NAMES  # the one list the core checks against
from ctxlayer.paths import named_absolute


def add_arguments(parser) -> None:
    parser.add_argument("path", nargs="?", default=".", help="workspace folder (default: .)")
    parser.add_argument("--model", default=None, help="model name (default gpt-4o)")
    parser.add_argument("--tool-format", choices=("markdown", "xml", "tool"), default="markdown")
    parser.add_argument("--non-interactive", action="store_true")
    parser.add_argument("--compact", action="store_true", help="compact guidance texts")
    parser.add_argument("--include", default=None,
                        help=f"selective context: comma-separated {','.join(INCLUDE_NAMES)}")
    parser.add_argument("--tools", default=None, metavar="FILE",
                        help="tools to describe: a JSON list of {name, instructions, examples} "
                             "or of OpenAI tool definitions ({type: function, function: ...})")
    parser.add_argument("--json", action="store_true", help="print ctx/systemPrompt's result")
    parser.add_argument("--table-only", action="store_true", help="print only the section table")


def build(path: Path, model: str | None, **spec_fields):
    """The SystemPrompt for a workspace folder (also used by `ctxlayer demo`)."""
    from ctxlayer.config import default_user_config_dir, load_config
    from ctxlayer.core.prompt import PromptSpec, build_system_prompt
    from ctxlayer.tokenizers import counter_for, prompt_traits
    from ctxlayer.workspace import Workspace

    if not path.is_dir():
        raise UsageError(f"{path}: not a folder; name the workspace folder to describe")
    counter = counter_for(model)
    # the user's settings as the editor's daemon reads them: what this shows is what it builds
    config, problems = load_config(path.resolve(), default_user_config_dir(), None)
    for problem in problems:
        print(f"ctxlayer: config: {problem}", file=sys.stderr)
    # the folder as named too: ~/work/AGENTS.md is read for ~/work/proj, ~/work a symlink
    segment = Workspace(path.resolve(), config, counter.count,
                        opened_as=named_absolute(path)).scan()
    spec = PromptSpec(traits=prompt_traits(model),
                      workspace_parts=[(p.name, p.text) for p in segment.parts if p.text],
                      **spec_fields)
    return build_system_prompt(spec, counter), segment


def table(prompt) -> str:
    rows = [("section", "tokens", "hash", "cacheable")]
    rows += [(s.name, str(s.tokens), s.hash, "yes" if s.cacheable else "no")
             for s in prompt.sections]
    widths = [max(len(r[k]) for r in rows) for k in range(4)]
    lines = ["  ".join(c.ljust(w) if k != 1 else c.rjust(w) for k, (c, w) in
                       enumerate(zip(r, widths, strict=True))) for r in rows]
    boundary = "none (no dynamic section)" if prompt.cache_boundary is None else (
        f"before message {prompt.cache_boundary}")
    lines.append(f"total {prompt.tokens} tokens in {len(prompt.messages)} messages; "
                 f"cache boundary: {boundary}; prefix hash {prompt.prefix_hash}")
    return "\n".join(lines)


def read_tools(path: str) -> list:
    """ToolSpecs from a JSON file: ctxlayer's own shape, or OpenAI tool definitions."""
    from ctxlayer.protocol import ToolSpec

    try:
        data = msgspec.json.decode(Path(path).read_bytes())
    except OSError as exc:
        raise UsageError(f"--tools {path}: cannot read it ({exc.strerror})") from None
    except msgspec.DecodeError as exc:
        raise UsageError(f"--tools {path}: not JSON ({exc})") from None
    if not isinstance(data, list):
        raise UsageError(f"--tools {path}: expected a JSON list of tools")
    tools = []
    for k, raw in enumerate(data):
        if isinstance(raw, dict) and isinstance(raw.get("function"), dict):  # OpenAI's shape
            fn = raw["function"]
            raw = {"name": fn.get("name"), "instructions": fn.get("description") or ""}
        try:
            tools.append(msgspec.convert(raw, ToolSpec))
        except msgspec.ValidationError as exc:
            raise UsageError(f"--tools {path}: tool [{k}]: {exc}") from None
    return tools


def run(args) -> int:
    include = [s.strip() for s in args.include.split(",")] if args.include else []
    tools = read_tools(args.tools) if args.tools else []
    prompt, _ = build(
        Path(args.path), args.model, interactive=not args.non_interactive, compact=args.compact,
        tool_format=args.tool_format, context_mode="selective" if include else "full",
        include=include, tools=tools,
    )
    for warning in prompt.warnings:
        print(f"ctxlayer prompt: warning: {warning}", file=sys.stderr)
    if args.json:
        sys.stdout.write(msgspec.json.encode(prompt.to_result()).decode() + "\n")
        return 0
    if not args.table_only:
        for m in prompt.messages:
            print(f"----- {m.id} ({m.role}) -----")
            print(m.content)
        print("=====")
    print(table(prompt))
    return 0
