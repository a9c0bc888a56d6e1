"""What the layered system prompt is built from (PromptSpec) and what it returns (SystemPrompt).

Owns the input and output types of `build_system_prompt` and their conversion from and to the
wire (`ctx/systemPrompt`). Holds no prompt text and no logic beyond defaults and conversion;
the model table that fills ModelTraits lives outside the core.
"""

from __future__ import annotations

import msgspec

from ctxlayer.protocol import (
    ContextMode,
    Message,
    PromptSection,
    SystemPromptParams,
    SystemPromptResult,
    ToolFormat,
    ToolSpec,
)

#: Names of the components a selective prompt may include. `skills` and `history` are
#: ctxlayer additions: in selective mode they too are kept only when listed.
INCLUDE_NAMES: tuple[str, ...] = ("files", "cmd", "tree", "git", "agent", "skills", "history")
#: include name -> workspace part name
INCLUDE_PARTS: dict[str, str] = {
    "files": "files",
    "tree": "tree",
    "git": "git",
    "agent": "agentFiles",
}
WORKSPACE_PART_NAMES: tuple[str, ...] = ("tree", "git", "agentFiles", "files")


class ModelTraits(msgspec.Struct, frozen=True, kw_only=True):
    """What the prompt must know about the model; the model table fills these.

    native_reasoning: the model reasons on its own, so no thinking-tag instructions.
    enforce_tool_use: the family tends to describe a tool call instead of making it.
    reasoning_model: skip few-shot examples when tools go through native function calling.
    """

    native_reasoning: bool = False
    enforce_tool_use: bool = False
    reasoning_model: bool = False


class Skill(msgspec.Struct, frozen=True):
    """A skill the model can read on demand: only name, description and path go in."""

    name: str
    description: str
    path: str


class ConversationDigest(msgspec.Struct, frozen=True):
    """One earlier conversation, as the history section needs it."""

    title: str
    first_user: str
    first_assistant: str
    last_reply: str
    messages: int


class PromptSpec(msgspec.Struct, kw_only=True):
    """Everything the builder needs, already gathered; every default is usable as is."""

    interactive: bool = True
    compact: bool = False
    identity: str | None = None
    user_identity: str | None = None
    tool_format: ToolFormat = "markdown"
    tools: list[ToolSpec] = []
    #: "<format>" replaces that format's generated wrapper text; "<format>/<tool name>"
    #: replaces that tool's instructions in that format (e.g. a short "tool/shell" summary
    #: written to fit the native description cap).
    tool_format_overrides: dict[str, str] = {}
    traits: ModelTraits = msgspec.field(default_factory=ModelTraits)
    context_mode: ContextMode = "full"
    include: list[str] = []
    #: (part name, rendered text) from the workspace package, in the order to emit them.
    workspace_parts: list[tuple[str, str]] = []
    skills: list[Skill] = []
    context_cmd: str | None = None
    history: list[ConversationDigest] = []
    history_text: str | None = None


class SystemPrompt(msgspec.Struct, kw_only=True):
    """The built prompt.

    messages: system messages, pinned and hidden, ids beginning with "ctx:".
    cache_boundary: index of the first dynamic message, None when there is none.
    sections: every section in prompt order, with content-only token counts.
    tokens: what the messages cost in a request (content plus per-message overhead).
    prefix_hash: hash of every message before the boundary: when it is unchanged, the
        provider's cached prefix still applies.
    warnings: volatile-looking text found in cacheable sections, and parts left out.
    """

    messages: list[Message]
    cache_boundary: int | None
    sections: list[PromptSection]
    tokens: int
    prefix_hash: str
    warnings: list[str] = []

    def to_result(self) -> SystemPromptResult:
        """The wire result of ctx/systemPrompt."""
        return SystemPromptResult(
            messages=self.messages,
            cache_boundary=self.cache_boundary,
            sections=self.sections,
            tokens=self.tokens,
            prefix_hash=self.prefix_hash,
            warnings=self.warnings or None,
        )


def spec_from_params(
    params: SystemPromptParams,
    *,
    traits: ModelTraits | None = None,
    workspace_parts: list[tuple[str, str]] | None = None,
    skills: list[Skill] | None = None,
    user_identity: str | None = None,
    compact: bool = False,
    tool_format_overrides: dict[str, str] | None = None,
    history: list[ConversationDigest] | None = None,
) -> PromptSpec:
    """A PromptSpec from ctx/systemPrompt params plus what the daemon knows itself (the
    params' own `compact` and `userIdentity` win)."""
    dynamic = params.dynamic
    return PromptSpec(
        interactive=params.interactive,
        compact=params.compact or compact,
        identity=params.identity,
        user_identity=params.user_identity or user_identity,
        history=list(history or []),
        tool_format=params.tool_format,
        tools=list(params.tools or []),
        tool_format_overrides=dict(tool_format_overrides or {}),
        traits=traits or ModelTraits(),
        # an include list alone means selective: ignoring it said nothing (the CLI's
        # --include has always implied it)
        context_mode=params.context_mode or ("selective" if params.include else "full"),
        include=list(params.include or []),
        workspace_parts=list(workspace_parts or []),
        skills=list(skills or []),
        context_cmd=dynamic.context_cmd if dynamic else None,
        history_text=dynamic.history if dynamic else None,
    )
