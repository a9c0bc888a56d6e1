"""The summary quotes the newest request it replaced by its ends (`compaction._cut_middle`):
whole lines where they fit, else the start of the first and the end of the last. A request on
one line (a pasted log with the question after it) kept no end at all: "evt0=ok ... evt12=o…"
and the question at its end was gone, in about 60% of the room."""

from __future__ import annotations

import pytest

from ctxlayer.core.assembly.compaction import _cut_middle

ONE_LINE = {
    "log then question": "Here is the log: " + " ".join(f"evt{k}=ok" for k in range(1500))
    + " QUESTION_END: why did the parser crash?",
    "no blanks": "A" * 5000 + "ENDMARK",
    "json": '{"q": "' + "v" * 3000 + '", "ask": "fix the END"}',
    "cjk": "解析器" * 2000 + "为什么崩溃？",
}


@pytest.mark.parametrize("name", sorted(ONE_LINE))
@pytest.mark.parametrize("room", [240, 600, 1200])
def test_a_request_on_one_line_keeps_its_start_and_its_end(name, room):
    text = ONE_LINE[name]
    out = _cut_middle(text, room)
    head, marker, tail = out.split("\n")
    assert len(out) <= room and len(out) >= room - 20, len(out)
    assert text.startswith(head.rstrip("…")) and text.endswith(tail.lstrip("…")), out
    assert text[-7:] in tail and marker.endswith("characters cut ...]")
    cut = int(marker.split()[1].replace(",", ""))
    assert cut == len(text) - len(head.rstrip("…")) - len(tail.lstrip("…")), marker


def test_the_ends_of_a_line_of_words_are_whole_words():
    out = _cut_middle(ONE_LINE["log then question"], 600)
    head, _, tail = out.split("\n")
    assert head.rstrip("…").split()[-1].startswith("evt") and head.endswith("=ok…"), head
    assert tail.startswith("…evt") and tail.endswith("why did the parser crash?"), tail
