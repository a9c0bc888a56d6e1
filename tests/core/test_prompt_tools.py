"""Tool instructions: the native 1,024-character cap, overrides, examples per format."""

from __future__ import annotations

import pytest

from ctxlayer.core.errors import ContextError
from ctxlayer.core.prompt import (
    NATIVE_DESCRIPTION_CAP,
    ModelTraits,
    PromptSpec,
    build_system_prompt,
    cut_at_word,
    native_tool_descriptions,
)
from ctxlayer.core.tokens import WordTokenizer
from ctxlayer.protocol import ToolSpec


@pytest.mark.parametrize(
    ("text", "limit", "want"),
    [
        ("short", 10, "short"),
        ("exactly10!", 10, "exactly10!"),
        ("hello world foo", 10, "hello…"),
        ("hello wor ld", 10, "hello wor…"),
        ("abcdefghijklmnop", 6, "abcde…"),  # one long word: hard cut
        ("one two", 1, "…"),
        ("a\nbb ccc dddd", 8, "a\nbb…"),
    ],
)
def test_cut_at_word(text: str, limit: int, want: str) -> None:
    got = cut_at_word(text, limit)
    assert got == want
    assert len(got) <= limit


def test_cut_needs_a_positive_limit() -> None:
    with pytest.raises(ContextError):
        cut_at_word("x", 0)


def words(n: int) -> str:
    return " ".join(f"w{i:03d}" for i in range(n))  # 5 characters per word with its space


@pytest.mark.parametrize(
    ("length", "cut"),
    [(1023, False), (1024, False), (1025, True), (5000, True)],
)
def test_native_cap(length: int, cut: bool) -> None:
    text = (words(1000) + " x" * 1000)[:length].rstrip()
    text = text + "y" * (length - len(text))  # exact length, no trailing space
    desc = native_tool_descriptions([ToolSpec(name="t", instructions=text)])["t"]
    assert len(desc) <= NATIVE_DESCRIPTION_CAP
    if not cut:
        assert desc == text
    else:
        assert desc.endswith("…")
        head = desc[:-1]
        assert text.startswith(head) and text[len(head)].isspace()  # a word boundary
        assert len(desc) > NATIVE_DESCRIPTION_CAP - 10


def test_native_cap_applies_to_the_override_too() -> None:
    tools = [ToolSpec(name="t", instructions="long " * 400)]
    got = native_tool_descriptions(tools, {"tool/t": "Short summary."})
    assert got == {"t": "Short summary."}
    got = native_tool_descriptions(tools, {"tool/t": "much " * 400})
    assert len(got["t"]) <= NATIVE_DESCRIPTION_CAP and got["t"].endswith("…")
    spec = PromptSpec(tool_format="tool", tools=tools)
    core = build_system_prompt(spec, WordTokenizer()).messages[0].content
    assert ("long " * 204).strip() + "…" in core and ("long " * 205) not in core


EX = ToolSpec(name="shell", instructions="Run it.", examples="echo hi")


@pytest.mark.parametrize(
    ("fmt", "reasoning", "has_examples"),
    [
        ("markdown", False, True),
        ("markdown", True, True),  # examples are documentation in text formats
        ("xml", True, True),
        ("tool", False, True),
        ("tool", True, False),  # few-shot dropped for reasoning models in native format
    ],
)
def test_examples_per_format(fmt: str, reasoning: bool, has_examples: bool) -> None:
    spec = PromptSpec(tool_format=fmt, tools=[EX], traits=ModelTraits(reasoning_model=reasoning))
    core = build_system_prompt(spec, WordTokenizer()).messages[0].content
    assert ("echo hi" in core) == has_examples


@pytest.mark.parametrize(
    ("fmt", "block"),
    [
        ("markdown", "## shell\n\nRun it.\n\n### Examples\n\n```\necho hi\n```"),
        ("xml", ('<tool name="shell">\n<instructions>\nRun it.\n</instructions>\n'
                 "<examples>\necho hi\n</examples>\n</tool>")),
        ("tool", "## shell\n\nRun it.\n\n### Examples\n\n```\necho hi\n```"),
    ],
)
def test_tool_block_shape(fmt: str, block: str) -> None:
    core = build_system_prompt(PromptSpec(tool_format=fmt, tools=[EX]), WordTokenizer())
    assert block in core.messages[0].content


def test_fenced_examples_are_not_fenced_twice() -> None:
    tool = ToolSpec(name="shell", instructions="Run it.", examples="```shell\nls\n```")
    core = build_system_prompt(PromptSpec(tools=[tool]), WordTokenizer()).messages[0].content
    assert "### Examples\n\n```shell\nls\n```" in core and "```\n```" not in core


@pytest.mark.parametrize("fmt", ["markdown", "xml", "tool"])
def test_format_override_replaces_the_wrapper_only(fmt: str) -> None:
    plain = build_system_prompt(PromptSpec(tool_format=fmt, tools=[EX]), WordTokenizer())
    over = build_system_prompt(
        PromptSpec(tool_format=fmt, tools=[EX], tool_format_overrides={fmt: "CUSTOM WRAPPER"}),
        WordTokenizer(),
    )
    a, b = plain.messages[0].content, over.messages[0].content
    assert "# Tools\n\nCUSTOM WRAPPER\n\n" in b and "CUSTOM WRAPPER" not in a
    assert a.split("\n\n", 1)[0] == b.split("\n\n", 1)[0]  # identity untouched
    assert a[a.index("\n\n", a.index("# Tools\n\n") + 9):] == b[b.index("CUSTOM WRAPPER") + 14:]


def test_override_for_another_format_is_ignored() -> None:
    spec = PromptSpec(tools=[EX], tool_format_overrides={"xml": "X", "xml/shell": "Y"})
    core = build_system_prompt(spec, WordTokenizer()).messages[0].content
    assert "\nX\n" not in core and "\nY\n" not in core and "Run it." in core
