"""A shortened text told back out to the text parts it was read from (`share_text`): each part
that keeps words keeps its own fields, the parts joined say the shortened text again (what
the fit counted is what goes), and the parts left with nothing are named.

Before, the text went into the first part and the others were removed, their fields with
them (`x_second` on a tool result's second part), and nothing said which went."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from ctxlayer.core.formats.common import share_text


def _is_text(p: dict) -> bool:
    return p.get("type") == "text"


def _texts(parts: list[dict]) -> list[str]:
    return [p["text"] for p in parts if _is_text(p)]


A = "\n".join(f"a{i}" for i in range(10))
B = "\n".join(f"b{i}" for i in range(10))
C = "\n".join(f"c{i}" for i in range(10))
PARTS = [{"type": "text", "text": A, "x": 1}, {"type": "image", "id": "img"},
         {"type": "text", "text": B, "x": 2}, {"type": "text", "text": C, "x": 3}]


def check(parts: list[dict], new: str, texts: list[str | None], gone: list[int]) -> None:
    out, went = share_text(parts, new, _is_text)
    assert went == gone
    assert [p.get("text") for p in out if _is_text(p)] == [t for t in texts if t is not None]
    kept = [p for k, p in enumerate(parts) if k not in gone]
    assert [{k: v for k, v in p.items() if k != "text"} for p in out] == [
        {k: v for k, v in p.items() if k != "text"} for p in kept]
    assert "\n".join(_texts(out)) == new


def test_a_head_and_a_tail_go_to_the_first_and_the_last_part():
    new = "a0\na1\n[... 27 lines omitted ...]\nc8\nc9"
    check(PARTS, new, ["a0\na1\n[... 27 lines omitted ...]", "c8\nc9"], [2])


def test_parts_still_whole_at_either_end_keep_their_text():
    new = A + "\nb0\n[... 9 lines omitted ...]\n" + C
    check(PARTS, new, [A, "b0\n[... 9 lines omitted ...]", C], [])


def test_a_tail_alone_goes_to_the_last_part():
    new = "c7\nc8\nc9"
    check(PARTS, new, [None, None, "c7\nc8\nc9"], [0, 2])


def test_a_text_that_is_no_cut_of_them_goes_to_the_first_part():
    check(PARTS, "a summary of it all", ["a summary of it all", None, None], [2, 3])


def test_a_cache_marker_on_a_part_that_went_moves_to_the_one_before():
    parts = [{"type": "text", "text": A}, {"type": "text", "text": B,
                                           "cache_control": {"type": "ephemeral"}},
             {"type": "text", "text": C}]
    out, went = share_text(parts, "a0\n[...]\nc9", _is_text)
    assert went == [1]
    assert out == [{"type": "text", "text": "a0\n[...]", "cache_control": {"type": "ephemeral"}},
                   {"type": "text", "text": "c9"}]


def test_a_blank_text_removes_the_text_parts_and_names_them():
    out, went = share_text(PARTS, " ", _is_text)
    assert out == [{"type": "image", "id": "img"}] and went == [0, 2, 3]


@given(st.lists(st.text(alphabet="ab\n ", max_size=12), min_size=1, max_size=4),
       st.text(alphabet="ab\n[]", max_size=30))
def test_the_parts_joined_are_the_new_text(texts, new):
    parts = [{"type": "text", "text": t, "n": k} for k, t in enumerate(texts)]
    out, went = share_text(parts, new, _is_text)
    if new.strip():
        assert "\n".join(_texts(out)) == new
    assert [p["n"] for p in out] == [k for k in range(len(texts)) if k not in went]
