"""Tool instructions in the three tool formats: markdown, xml and native "tool".

Owns the tools section's text and the native description cap. Overrides come from
PromptSpec.tool_format_overrides: "<format>" replaces the generated wrapper text of that
format, "<format>/<tool name>" replaces one tool's instructions in that format (gptme's
`instructions_format`, used so a tool can give a short summary that fits the native cap).

In native format the descriptions are also what a client puts into the provider's function
schema; `native_tool_descriptions` returns them capped at 1,024 characters (OpenAI's limit),
cut at a word boundary with an ellipsis. Few-shot examples are dropped in native format for
reasoning models (function-calling guidance); in markdown and xml they are documentation and
stay.
"""

from __future__ import annotations

from ctxlayer.core.errors import ContextError
from ctxlayer.protocol import ToolFormat, ToolSpec

from . import texts
from .spec import ModelTraits

NATIVE_DESCRIPTION_CAP = 1024
TOOL_FORMATS: tuple[str, ...] = ("markdown", "xml", "tool")
ELLIPSIS = "…"


def cut_at_word(text: str, limit: int) -> str:
    """`text` if it fits in `limit` characters, else its longest word-boundary prefix that
    fits together with an ellipsis (a hard cut when a single word is longer than the limit)."""
    if limit < 1:
        raise ContextError("invalid", f"a cut needs a limit of at least 1, not {limit}")
    if len(text) <= limit:
        return text
    room = text[: limit - len(ELLIPSIS) + 1]  # one extra char: is the cut on a boundary?
    head = room[:-1]
    if not room[-1].isspace():
        space = max(head.rfind(" "), head.rfind("\n"), head.rfind("\t"))
        if space > 0:
            head = head[:space]
    return head.rstrip() + ELLIPSIS


def tool_instructions(tool: ToolSpec, fmt: str, overrides: dict[str, str]) -> str:
    """One tool's instructions in one format: its override if any, else its own text."""
    text = overrides.get(f"{fmt}/{tool.name}", tool.instructions).strip()
    if fmt == "tool":
        text = cut_at_word(text, NATIVE_DESCRIPTION_CAP)
    return text


def native_tool_descriptions(
    tools: list[ToolSpec], overrides: dict[str, str] | None = None
) -> dict[str, str]:
    """tool name -> the description to put into a provider's function schema."""
    return {t.name: tool_instructions(t, "tool", overrides or {}) for t in tools}


def check_tools(tools: list[ToolSpec], fmt: str) -> None:
    """Raise ContextError("invalid") naming the field for a bad format or tool list."""
    if fmt not in TOOL_FORMATS:
        raise ContextError(
            "invalid", f"toolFormat must be one of {', '.join(TOOL_FORMATS)}, not {fmt!r}",
            field="toolFormat",
        )
    seen: set[str] = set()
    for i, tool in enumerate(tools):
        name = tool.name.strip()
        if not name or any(c.isspace() for c in name):
            raise ContextError(
                "invalid", f"tool name {tool.name!r} must be one word", field=f"tools[{i}].name"
            )
        if name in seen:
            raise ContextError(
                "invalid", f"tool {name!r} is listed twice", field=f"tools[{i}].name"
            )
        seen.add(name)


def _fenced(examples: str) -> str:
    if "```" in examples:
        return examples
    return f"```\n{examples}\n```"


def _xml_attr(value: str) -> str:
    return (
        value.replace("&", "&amp;").replace('"', "&quot;").replace("<", "&lt;").replace(">", "&gt;")
    )


def _tool_block(tool: ToolSpec, fmt: str, overrides: dict[str, str], examples: bool) -> str:
    body = tool_instructions(tool, fmt, overrides)
    sample = (tool.examples or "").strip() if examples else ""
    if fmt == "xml":
        lines = [f'<tool name="{_xml_attr(tool.name)}">', "<instructions>", body, "</instructions>"]
        if sample:
            lines += ["<examples>", sample, "</examples>"]
        lines.append("</tool>")
        return "\n".join(lines)
    parts = [f"## {tool.name}", body]
    if sample:
        parts += [texts.EXAMPLES_HEADING, _fenced(sample)]
    return "\n\n".join(p for p in parts if p)


def tools_section(
    tools: list[ToolSpec],
    fmt: ToolFormat,
    traits: ModelTraits,
    overrides: dict[str, str],
    compact: bool,
) -> str:
    """The whole tools section, or "" when there are no tools.

    The tool-use enforcement sentence closes the section for model families that describe
    calls instead of making them; without tools there is nothing to call, so it is left out.
    """
    if not tools:
        return ""
    wrapper = overrides.get(fmt, texts.TOOL_WRAPPERS[fmt].pick(compact)).strip()
    examples = not (fmt == "tool" and traits.reasoning_model)
    parts = [texts.TOOLS_HEADING, wrapper]
    parts += [_tool_block(t, fmt, overrides, examples) for t in tools]
    if traits.enforce_tool_use:
        parts.append(texts.TOOL_USE_ENFORCEMENT.pick(compact))
    return "\n\n".join(p for p in parts if p)
