"""build_system_prompt: the layered system prompt from a PromptSpec.

Owns the order and the framing of the sections; the texts live in texts.py, the tool formats
in tools.py, the history rule in earlier.py. Pure: it never reads files, the clock or the
environment; the workspace parts, skills, context command output and history digests arrive
already gathered.

Layout, most stable first, so a change invalidates as little of the provider's cached
prefix as possible:
  ctx:core       identity (+ working mode, + thinking), tools, user   -- ONE message
  ctx:workspace  workspace parts, in the order given                   -- cacheable
  ctx:skills     skills summary                                        -- cacheable
  ctx:boundary   the cache-boundary marker, only when a dynamic section exists
  ctx:dynamic    context command output, then history                  -- dynamic
Every message is a pinned, hidden system message. `cache_boundary` is the index of
ctx:dynamic (None without it). Empty sections are left out.

Volatile-looking text in a cacheable section is reported in `warnings`, not refused (see
volatile.py for why). Input that cannot be served raises ContextError("invalid") naming the
wire field. Skills are listed only when there are tools (the model needs a tool to read a
skill's file); leaving them out is reported too.
"""

from __future__ import annotations

from typing import Literal, NamedTuple

from ctxlayer.core.errors import ContextError
from ctxlayer.core.text import content_hash, path_line
from ctxlayer.core.tokens import OPENAI_FORMAT, MessageFormat, Tokenizer, message_tokens
from ctxlayer.protocol import Message, PromptSection

from . import texts
from .earlier import history_section
from .spec import (
    INCLUDE_NAMES,
    INCLUDE_PARTS,
    WORKSPACE_PART_NAMES,
    PromptSpec,
    SystemPrompt,
)
from .tools import check_tools, tools_section
from .volatile import volatile_findings

Layer = Literal["core", "cacheable", "dynamic"]

#: the id of the dynamic section's message: an assembly puts it after the history
DYNAMIC_ID = "ctx:dynamic"


class Section(NamedTuple):
    name: str
    text: str
    layer: Layer


def build_system_prompt(
    spec: PromptSpec, counter: Tokenizer, *, fmt: MessageFormat = OPENAI_FORMAT
) -> SystemPrompt:
    """The system prompt for `spec`; `fmt` sets the per-message overhead in `tokens`."""
    _check(spec)
    warnings: list[str] = []
    if spec.context_mode == "full" and spec.include:
        warnings.append("include is ignored: contextMode 'full' sends every part (send "
                        "contextMode 'selective', or leave it out, to send only those named)")
    sections = [s for s in _sections(spec, warnings) if s.text]
    for s in sections:
        if s.layer != "dynamic":
            warnings += [
                f"section {s.name!r}: {f} looks volatile and would break the cached prefix"
                for f in volatile_findings(s.text)
            ]

    messages: list[Message] = []
    boundary: int | None = None
    for msg_id, layer_names in (
        ("ctx:core", {"identity", "tools", "user"}),
        ("ctx:workspace", set(WORKSPACE_PART_NAMES)),
        ("ctx:skills", {"skills"}),
    ):
        _append(messages, msg_id, [s.text for s in sections if s.name in layer_names])
    dynamic = [s.text for s in sections if s.layer == "dynamic"]
    if dynamic:
        _append(messages, "ctx:boundary", [texts.CACHE_BOUNDARY])
        boundary = len(messages)
        _append(messages, DYNAMIC_ID, dynamic)

    prefix = messages[:boundary] if boundary is not None else messages
    return SystemPrompt(
        messages=messages,
        cache_boundary=boundary,
        sections=[
            PromptSection(
                name=s.name,
                tokens=counter.count(s.text),
                hash=content_hash(s.text),
                cacheable=s.layer != "dynamic",
            )
            for s in sections
        ],
        tokens=sum(message_tokens(m, counter, fmt) for m in messages),
        prefix_hash=content_hash("\x00".join(m.content for m in prefix)),
        warnings=warnings,
    )


def _append(messages: list[Message], msg_id: str, parts: list[str]) -> None:
    if parts:
        messages.append(
            Message(
                role="system", content="\n\n".join(parts), id=msg_id, pinned=True, hide=True,
                priority=0,
            )
        )


def _wanted(spec: PromptSpec, name: str) -> bool:
    return spec.context_mode == "full" or name in spec.include


def _sections(spec: PromptSpec, warnings: list[str]) -> list[Section]:
    compact = spec.compact
    identity = (spec.identity or "").strip() or texts.IDENTITY.pick(compact)
    mode = texts.INTERACTIVE if spec.interactive else texts.NON_INTERACTIVE
    core = [identity, mode.pick(compact)]
    if not spec.traits.native_reasoning:
        core.append(texts.THINKING.pick(compact))
    out = [
        Section("identity", "\n\n".join(core), "core"),
        Section(
            "tools",
            tools_section(
                spec.tools, spec.tool_format, spec.traits, spec.tool_format_overrides, compact
            ),
            "core",
        ),
    ]
    user = (spec.user_identity or "").strip()
    if spec.interactive and user:
        out.append(Section("user", f"{texts.USER_HEADING}\n\n{user}", "core"))

    wanted_parts = {INCLUDE_PARTS[n] for n in spec.include if n in INCLUDE_PARTS}
    skills_part = ""  # the workspace segment's own skills summary, already rendered
    for name, text in spec.workspace_parts:
        if name == "skills":
            skills_part = text.strip("\n").rstrip()
        elif spec.context_mode == "full" or name in wanted_parts:
            out.append(Section(name, text.strip("\n").rstrip(), "cacheable"))

    if (spec.skills or skills_part) and _wanted(spec, "skills"):
        if spec.tools and spec.skills:  # given one by one, they win over the segment's part
            lines = [f"- {s.name}: {_one_line(s.description)} (read `{path_line(s.path)}`)"
                     for s in spec.skills]
            out.append(Section("skills", texts.SKILLS.pick(compact) + "\n\n" + "\n".join(lines),
                               "cacheable"))
        elif spec.tools:
            out.append(Section("skills", skills_part, "cacheable"))
        else:
            warnings.append("skills left out: no tools to read a skill's file with")

    cmd = (spec.context_cmd or "").strip("\n").rstrip()
    if cmd and _wanted(spec, "cmd"):
        out.append(Section("contextCmd", f"{texts.CONTEXT_CMD_HEADING}\n\n{cmd}", "dynamic"))
    history = history_section(spec.history, spec.history_text, compact)
    if history and _wanted(spec, "history"):
        out.append(Section("history", history, "dynamic"))
    return out


def _one_line(text: str) -> str:
    return " ".join(text.split()) or "(no description)"


def _check(spec: PromptSpec) -> None:
    if spec.context_mode not in ("full", "selective"):
        raise ContextError(
            "invalid", f"contextMode must be 'full' or 'selective', not {spec.context_mode!r}",
            field="contextMode",
        )
    for i, name in enumerate(spec.include):
        if name not in INCLUDE_NAMES:
            raise ContextError(
                "invalid",
                f"include[{i}] {name!r} is not one of {', '.join(INCLUDE_NAMES)}",
                field="include",
            )
    seen: set[str] = set()
    for i, (name, _text) in enumerate(spec.workspace_parts):
        if (name not in WORKSPACE_PART_NAMES and name != "skills") or name in seen:
            why = "is listed twice" if name in seen else "is not a workspace part name"
            raise ContextError("invalid", f"workspace part {name!r} {why}",
                               field=f"workspaceParts[{i}]")
        seen.add(name)
    check_tools(spec.tools, spec.tool_format)
