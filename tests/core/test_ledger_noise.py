"""A data dump a tool printed does not fill the facts ledger with what only looks like facts:
its serials are no identifiers and a one-letter path is no file; the real names stay."""

from __future__ import annotations

from ctxlayer.core.compress.ledger import add_messages, render_ledger
from ctxlayer.protocol import Message

DUMP = "id,key,value,dir\n" + "\n".join(
    f"{k},v{k % 9}_{22032 + k * 7},{k * 3.5},/a/" for k in range(12))
ASKED = Message(role="user", id="u", content=(
    "Why does parse_rows fail in RowParser? tests/test_rows.py::test_parse_rows fails with "
    "ZEBRA-ERR-4411 in src/rows.py on x86_64"))
ANSWER = Message(role="assistant", id="a", content=(
    "The parse_rows loop in src/rows.py skips empty keys, then RowParser.read_all raises."))


def ledger_lines(*msgs: Message) -> dict[str, str]:
    text = render_ledger(add_messages(None, list(msgs)), 2000)
    return dict(line.removeprefix("- ").split(": ", 1) for line in text.splitlines())


def test_a_dumps_serials_and_one_letter_paths_stay_out_of_the_ledger():
    """Before: "identifiers: parse_rows, RowParser, test_parse_rows, v0_22032, v1_22039, ...
    (12 serials)" and "paths: src/rows.py, tests/test_rows.py, /a/"."""
    dump = Message(role="user", kind="toolOutput", id="t", content=DUMP)
    got = ledger_lines(ASKED, dump, ANSWER)
    assert got["paths"] == "src/rows.py, tests/test_rows.py"
    assert "_220" not in got["identifiers"]
    for name in ("parse_rows", "RowParser", "test_parse_rows", "x86_64"):
        assert name in got["identifiers"], got
    assert got["tests"] == "tests/test_rows.py::test_parse_rows"


def test_a_serial_said_in_someones_own_words_is_kept():
    """The user asks about one row of the dump: that serial is a fact of the work, from then
    on kept as any identifier, the dump's mentions adding to it."""
    dump = Message(role="user", kind="toolOutput", id="t", content=DUMP)
    said = Message(role="user", id="u2", content="Why is v7_22081 missing from the output?")
    got = ledger_lines(ASKED, said, dump, dump)
    assert "v7_22081" in got["identifiers"] and "v6_22074" not in got["identifiers"]
