"""Cross-session history: which conversations are kept, and how each one reads."""

from __future__ import annotations

import pytest

from ctxlayer.core.errors import ContextError
from ctxlayer.core.prompt import (
    ConversationDigest,
    PromptSpec,
    build_system_prompt,
    render_digest,
    select_history,
)
from ctxlayer.core.tokens import WordTokenizer


def convo(i: int, messages: int) -> ConversationDigest:
    return ConversationDigest(f"c{i}", f"u{i}", f"a{i}", f"last{i}", messages)


def titles(digests: list[ConversationDigest]) -> list[str]:
    return [d.title for d in digests]


@pytest.mark.parametrize(
    ("sizes", "kw", "want"),
    [
        ([], {}, []),
        ([10, 10, 10], {}, ["c0", "c1", "c2"]),
        ([10] * 8, {}, ["c3", "c4", "c5", "c6", "c7"]),  # last 5, oldest first
        ([10, 2, 10, 3, 4], {}, ["c0", "c2", "c4"]),  # fewer than 4 messages: dropped
        # only the last 20 are considered: old long ones do not refill the list
        ([10] * 5 + [1] * 18 + [10, 10], {}, ["c23", "c24"]),
        ([10] * 5 + [1] * 15, {}, ["c0", "c1", "c2", "c3", "c4"]),
        ([10] * 6, {"keep": 2}, ["c4", "c5"]),
        ([10] * 6, {"keep": 0}, []),
        ([10] * 6, {"max_considered": 3}, ["c3", "c4", "c5"]),
        ([1, 2, 3], {"min_messages": 0}, ["c0", "c1", "c2"]),
    ],
)
def test_select_history(sizes: list[int], kw: dict, want: list[str]) -> None:
    assert titles(select_history([convo(i, n) for i, n in enumerate(sizes)], **kw)) == want


@pytest.mark.parametrize("kw", [{"keep": -1}, {"max_considered": -1}, {"min_messages": -2}])
def test_select_history_rejects_negative_numbers(kw: dict) -> None:
    with pytest.raises(ContextError) as err:
        select_history([], **kw)
    assert err.value.kind == "invalid" and err.value.field


@pytest.mark.parametrize(
    ("digest", "want"),
    [
        (ConversationDigest("Fix", "Why?", "Because.", "Done.", 9),
         "## Fix\nUser: Why?\nAssistant: Because.\n... (6 messages omitted) ...\nLast reply: Done."),
        (ConversationDigest("Two", "q", "a", "b", 3), "## Two\nUser: q\nAssistant: a\nLast reply: b"),
        (ConversationDigest("Same", "q", "a  b", "a\nb", 7), "## Same\nUser: q\nAssistant: a b"),
        (ConversationDigest("  ", "q", "a", "", 5), "## (untitled)\nUser: q\nAssistant: a"),
    ],
)
def test_render_digest(digest: ConversationDigest, want: str) -> None:
    assert render_digest(digest) == want


def test_turns_are_cut_to_a_few_hundred_characters() -> None:
    long = "word " * 500
    text = render_digest(ConversationDigest("t", long, long, "end " * 500, 50))
    lines = text.splitlines()
    assert len(lines) == 5
    for line in (lines[1], lines[2], lines[4]):
        body = line.split(": ", 1)[1]
        assert 250 <= len(body) <= 300 and body.endswith("…")


def test_history_section_in_the_prompt_keeps_the_last_five() -> None:
    digests = [convo(i, 10) for i in range(7)]
    result = build_system_prompt(PromptSpec(history=digests), WordTokenizer())
    dynamic = result.messages[result.cache_boundary].content
    assert dynamic.startswith("# Earlier conversations\n\n")
    assert [ln for ln in dynamic.splitlines() if ln.startswith("## ")] == [
        f"## c{i}" for i in range(2, 7)
    ]
    assert [s.name for s in result.sections][-1] == "history"
