"""docs/protocol.md must be what protocol.py generates (protocol drift fails CI)."""

import re
from pathlib import Path

from ctxlayer import protocol
from ctxlayer.lsp import errors as lsp_errors
from ctxlayer.protocol_doc import error_codes, render

DOC = Path(__file__).parent.parent / "docs" / "protocol.md"


def test_protocol_doc_is_up_to_date():
    assert DOC.read_text(encoding="utf-8") == render(), (
        "docs/protocol.md is stale: run `ctxlayer schema --markdown > docs/protocol.md`")


def test_every_method_of_the_contract_is_documented():
    text = render()
    for method in ("ctx/segment", "ctx/systemPrompt", "ctx/count", "ctx/trim", "ctx/assemble",
                   "ctx/session/open", "ctx/segmentChanged", "ctx/budgetChanged", "ctx/summarize"):
        assert f"### `{method}`" in text


def defined_and_named(text: str) -> tuple[set[str], set[str]]:
    """The types the document defines (its bold headings) and those its fields name (a
    capitalized word of a field's type, outside quotes and the parenthesized notes)."""
    defined = set(re.findall(r"^\*\*[^*]+\*\* `(\w+)`", text, re.M))
    named: set[str] = set()
    for kind in re.findall(r"^- `[\w?]+`: (.+)$", text, re.M):
        kind = re.sub(r'"[^"]*"|\([^)]*\)', "", kind)
        named |= set(re.findall(r"\b[A-Z]\w*", kind))
    return defined, named


def test_every_type_the_document_names_is_defined_in_it():
    """It says it is the exact shape, and named 11 types it never defined (SessionInfo,
    RuleSpec, ...), message lists as `Metadata`, and not the initialize announcement."""
    defined, named = defined_and_named(render())
    assert named - defined == set()
    assert {"SessionInfo", "ConversationInfo", "WorkingItemSpec", "RuleSpec", "ToolSpec",
            "DynamicContext", "SegmentPart", "PromptSection", "AssembleTokens",
            "ModeSuggestion", "LeftOut", "ServerAnnouncement", "GatewayUrls",
            "ModeInfo"} <= defined
    assert "Metadata" not in named and "AnyType" not in named


def test_the_check_of_named_types_sees_a_missing_one():
    defined, named = defined_and_named(
        "**type** `A`\n\n- `b`: [B] | null\n- `c`: \"Quoted\" / int (Said Here)\n")
    assert (defined, named) == ({"A"}, {"B"})


def test_every_error_code_the_daemon_sends_is_listed():
    errors = render().split("## Errors", 1)[1]
    codes = {*error_codes().values(), *(v for k, v in vars(lsp_errors).items()
                                        if k.isupper() and isinstance(v, int))}
    assert protocol.ERROR_STORE in codes
    for code in codes:
        assert str(code) in errors, code
