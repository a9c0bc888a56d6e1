"""docs/protocol.md must be what protocol.py generates (protocol drift fails CI)."""

from pathlib import Path

from ctxlayer.protocol_doc import render

DOC = Path(__file__).parent.parent / "docs" / "protocol.md"


def test_protocol_doc_is_up_to_date():
    assert DOC.read_text(encoding="utf-8") == render(), (
        "docs/protocol.md is stale: run `ctxlayer schema --markdown > docs/protocol.md`")


def test_every_method_of_the_contract_is_documented():
    text = render()
    for method in ("ctx/segment", "ctx/systemPrompt", "ctx/count", "ctx/trim", "ctx/assemble",
                   "ctx/session/open", "ctx/segmentChanged", "ctx/budgetChanged", "ctx/summarize"):
        assert f"### `{method}`" in text
