"""Table tests for build_system_prompt: layout, cache boundary, hashes, toggles, selection,
validation and volatility warnings."""

from __future__ import annotations

import msgspec
import pytest

from ctxlayer.core.errors import ContextError
from ctxlayer.core.prompt import (
    CACHE_BOUNDARY,
    ConversationDigest,
    ModelTraits,
    PromptSpec,
    Skill,
    build_system_prompt,
    spec_from_params,
)
from ctxlayer.core.tokens import CONTENT_ONLY, OPENAI_FORMAT, WordTokenizer
from ctxlayer.protocol import DynamicContext, SystemPromptParams, SystemPromptResult, ToolSpec

WORDS = WordTokenizer()
TOOL = ToolSpec(name="shell", instructions="Run a command.")
PARTS = [("agentFiles", "Follow AGENTS.md."), ("files", "README text."),
         ("tree", "src/\n  a.py"), ("git", "branch: main")]
DIGEST = ConversationDigest("t", "question", "answer", "final answer", 8)


def build(**kw):
    return build_system_prompt(PromptSpec(**kw), WORDS)


def ids(result) -> list[str]:
    return [m.id for m in result.messages]


def section_names(result) -> list[str]:
    return [s.name for s in result.sections]


@pytest.mark.parametrize(
    ("kw", "want_ids", "boundary"),
    [
        ({}, ["ctx:core"], None),
        ({"workspace_parts": PARTS}, ["ctx:core", "ctx:workspace"], None),
        ({"context_cmd": "out"}, ["ctx:core", "ctx:boundary", "ctx:dynamic"], 2),
        ({"history": [DIGEST]}, ["ctx:core", "ctx:boundary", "ctx:dynamic"], 2),
        ({"history_text": "earlier"}, ["ctx:core", "ctx:boundary", "ctx:dynamic"], 2),
        ({"context_cmd": "out", "workspace_parts": PARTS, "tools": [TOOL],
          "skills": [Skill("s", "d", "p")]},
         ["ctx:core", "ctx:workspace", "ctx:skills", "ctx:boundary", "ctx:dynamic"], 4),
        ({"context_cmd": "  \n\n"}, ["ctx:core"], None),  # empty output: no dynamic section
        ({"history": [ConversationDigest("t", "q", "a", "a", 2)]}, ["ctx:core"], None),
        ({"context_cmd": "out", "context_mode": "selective", "include": ["files"]},
         ["ctx:core"], None),
    ],
)
def test_boundary_placement(kw, want_ids, boundary) -> None:
    result = build(**kw)
    assert ids(result) == want_ids
    assert result.cache_boundary == boundary
    if boundary is not None:
        assert result.messages[boundary - 1].content == CACHE_BOUNDARY
        assert all(not s.cacheable for s in result.sections if s.name in ("contextCmd", "history"))
    assert CACHE_BOUNDARY == ("# System Prompt Cache Boundary\nStatic bootstrap content ends "
                              "above. Session-volatile context starts below.")


def test_every_message_is_pinned_hidden_system() -> None:
    result = build(workspace_parts=PARTS, context_cmd="x", tools=[TOOL], user_identity="me")
    for m in result.messages:
        assert (m.role, m.pinned, m.hide, m.id[:4]) == ("system", True, True, "ctx:")
    core = result.messages[0].content  # identity, tools and user joined into one message
    assert "# Tools" in core and "# About the user\n\nme" in core
    assert result.tokens == sum(OPENAI_FORMAT.per_message + WORDS.count(m.content) for m in result.messages)
    content_only = build_system_prompt(PromptSpec(), WORDS, fmt=CONTENT_ONLY)
    assert content_only.tokens == WORDS.count(content_only.messages[0].content)


def test_section_order_is_most_stable_first() -> None:
    result = build(workspace_parts=PARTS, tools=[TOOL], user_identity="me", context_cmd="c",
                   history=[DIGEST], skills=[Skill("s", "d", "p")])
    assert section_names(result) == ["identity", "tools", "user", "agentFiles", "files", "tree",
                                     "git", "skills", "contextCmd", "history"]
    assert [s.cacheable for s in result.sections] == [True] * 8 + [False] * 2


@pytest.mark.parametrize(
    ("change", "changed"),
    [
        ({}, set()),
        ({"workspace_parts": [*PARTS[:3], ("git", "branch: dev")]}, {"git"}),
        ({"context_cmd": "other output"}, {"contextCmd"}),
        ({"user_identity": "someone else"}, {"user"}),
        ({"tools": [ToolSpec(name="shell", instructions="Run two commands.")]}, {"tools"}),
        ({"interactive": False}, {"identity", "user"}),  # user section disappears
    ],
)
def test_hash_changes_iff_text_changes(change, changed) -> None:
    base = {"workspace_parts": PARTS, "tools": [TOOL], "user_identity": "me", "context_cmd": "c"}
    before = build(**base)
    after = build(**{**base, **change})
    old = {s.name: s.hash for s in before.sections}
    new = {s.name: s.hash for s in after.sections}
    differs = {n for n in old.keys() | new.keys() if old.get(n) != new.get(n)}
    assert differs == changed
    prefix_same = not (changed - {"contextCmd", "history"})
    assert (before.prefix_hash == after.prefix_hash) == prefix_same


@pytest.mark.parametrize(
    ("traits", "interactive", "thinking", "enforced"),
    [
        (ModelTraits(), True, True, False),
        (ModelTraits(native_reasoning=True), True, False, False),
        (ModelTraits(enforce_tool_use=True), False, True, True),
        (ModelTraits(native_reasoning=True, enforce_tool_use=True), False, False, True),
    ],
)
def test_thinking_and_enforcement_follow_traits(traits, interactive, thinking, enforced):
    for compact in (False, True):
        core = build(traits=traits, interactive=interactive, tools=[TOOL], compact=compact,
                     user_identity="me").messages[0].content
        assert ("<thinking>" in core) == thinking
        assert ("call it" in core) == enforced
        assert ("# About the user" in core) == interactive
        assert ("Working with the user" if interactive else "Working alone") in core


def test_compact_is_shorter_and_identity_override_replaces_identity_only() -> None:
    full = build(tools=[TOOL], skills=[Skill("s", "d", "p")], history=[DIGEST])
    compact = build(tools=[TOOL], skills=[Skill("s", "d", "p")], history=[DIGEST], compact=True)
    for a, b in zip(full.sections, compact.sections, strict=True):
        assert b.tokens < a.tokens, a.name
    core = build(identity="You are Bob.").messages[0].content
    assert core.startswith("You are Bob.\n\n## Working with the user")


@pytest.mark.parametrize(
    ("include", "want"),
    [
        ([], ["identity"]),
        (["files"], ["identity", "files"]),
        (["agent", "tree"], ["identity", "agentFiles", "tree"]),
        (["git", "cmd"], ["identity", "git", "contextCmd"]),
        (["files", "cmd", "tree", "git", "agent", "history"],
         ["identity", "agentFiles", "files", "tree", "git", "contextCmd", "history"]),
    ],
)
def test_selective_keeps_only_included(include, want) -> None:
    result = build(context_mode="selective", include=include, workspace_parts=PARTS,
                   context_cmd="c", history=[DIGEST])
    assert section_names(result) == want
    full = build(include=include, workspace_parts=PARTS, context_cmd="c", history=[DIGEST])
    assert len(full.sections) == 7  # full mode ignores the include list


@pytest.mark.parametrize(
    ("kw", "field"),
    [
        ({"tool_format": "json"}, "toolFormat"),
        ({"context_mode": "some"}, "contextMode"),
        ({"context_mode": "selective", "include": ["files", "secrets"]}, "include"),
        ({"workspace_parts": [("readme", "x")]}, "workspaceParts[0]"),
        ({"workspace_parts": [("git", "x"), ("git", "y")]}, "workspaceParts[1]"),
        ({"tools": [TOOL, TOOL]}, "tools[1].name"),
        ({"tools": [ToolSpec(name="two words", instructions="x")]}, "tools[0].name"),
        ({"history": [DIGEST], "history_text": "x"}, "history"),
    ],
)
def test_bad_input_names_the_field(kw, field) -> None:
    with pytest.raises(ContextError) as err:
        build(**kw)
    assert (err.value.kind, err.value.field) == ("invalid", field)


@pytest.mark.parametrize(
    ("kw", "needle"),
    [
        ({"workspace_parts": [("git", "last commit 2025-03-04T05:06:07Z")]}, "'git': ISO"),
        ({"workspace_parts": [("tree", "built at 12:30:05")]}, "'tree': clock time"),
        ({"identity": "Session 123e4567-e89b-12d3-a456-426614174000."}, "'identity': uuid"),
        ({"skills": [Skill("s", "d", "p")]}, "skills left out"),
    ],
)
def test_volatile_cacheable_text_is_reported(kw, needle) -> None:
    result = build(**kw)
    assert len(result.warnings) == 1 and needle in result.warnings[0]


def test_volatile_dynamic_text_and_plain_dates_are_fine() -> None:
    result = build(context_cmd="now 2025-03-04T05:06:07", tools=[TOOL],
                   workspace_parts=[("tree", "notes/2025-03-04.md\nsrc/a.py:12:4")])
    assert result.warnings == []


def test_spec_from_params_and_wire_result() -> None:
    params = msgspec.json.decode(
        b'{"interactive": false, "toolFormat": "xml", "tools": [{"name": "shell", '
        b'"instructions": "Run."}], "contextMode": "selective", "include": ["git", "cmd"], '
        b'"dynamic": {"contextCmd": "up 3 days", "history": "before"}}',
        type=SystemPromptParams,
    )
    assert params.dynamic == DynamicContext(context_cmd="up 3 days", history="before")
    spec = spec_from_params(params, workspace_parts=PARTS, traits=ModelTraits(
        native_reasoning=True))
    result = build_system_prompt(spec, WORDS)
    assert section_names(result) == ["identity", "tools", "git", "contextCmd"]
    wire = msgspec.json.decode(msgspec.json.encode(result.to_result()), type=SystemPromptResult)
    assert wire.cache_boundary == 3 and wire.tokens == result.tokens
    assert b'"cacheBoundary":3' in msgspec.json.encode(result.to_result())


SKILLS_PART = ("skills", "# Skills\n\nRead it first.\n\n- review: Review a diff (read `skills/review/SKILL.md`)")


def test_the_segments_skills_part_is_the_skills_summary() -> None:
    with_tools = build(workspace_parts=[*PARTS, SKILLS_PART], tools=[TOOL])
    assert ids(with_tools) == ["ctx:core", "ctx:workspace", "ctx:skills"]
    skills_msg = next(m for m in with_tools.messages if m.id == "ctx:skills")
    assert "skills/review/SKILL.md" in skills_msg.content
    workspace_msg = next(m for m in with_tools.messages if m.id == "ctx:workspace")
    assert "SKILL.md" not in workspace_msg.content  # once, in its own message

    without_tools = build(workspace_parts=[*PARTS, SKILLS_PART])
    assert "skills" not in section_names(without_tools)
    assert any("skills left out" in w for w in without_tools.warnings)

    given = build(workspace_parts=[*PARTS, SKILLS_PART], tools=[TOOL],
                  skills=[Skill("other", "Given one by one", "x/SKILL.md")])
    text = next(m.content for m in given.messages if m.id == "ctx:skills")
    assert "Given one by one" in text and "review" not in text

    selective = build(workspace_parts=[*PARTS, SKILLS_PART], tools=[TOOL],
                      context_mode="selective", include=["tree"])
    assert "skills" not in section_names(selective)
    assert build(workspace_parts=[*PARTS, ("skills", "")], tools=[TOOL]).warnings == []
