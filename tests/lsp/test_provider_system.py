"""A provider request's system kept outside its messages (Anthropic `system`, Responses
`instructions`): what ctx/count and ctx/trim take, what they give back, and how they refuse
the rest. protocol.ProviderSystem types it (string or text blocks) for the schema, the docs
and the TypeScript types; the daemon takes the same as when it was untyped."""

from __future__ import annotations

import pytest
from conftest import RawDaemon, ask, result

pytestmark = pytest.mark.e2e
HI = [{"role": "user", "content": "hi"}]
BLOCKS = [{"type": "text", "text": "You are terse.", "cache_control": {"type": "ephemeral"}}]


async def test_a_string_or_text_blocks_come_back_as_sent(raw_daemon: RawDaemon):
    for system in ("You are terse.", BLOCKS, [], None):
        out = await result(raw_daemon, "ctx/trim", {
            "format": "anthropic", "messages": HI, "system": system, "budget": 5000})
        # the blocks' own fields (cache_control) pass through: they stay as sent
        assert out.get("system") == (system or None), (system, out)
        counted = await result(raw_daemon, "ctx/count", {
            "format": "anthropic", "messages": HI, "system": system})
        assert counted["total"] > 0
    out = await result(raw_daemon, "ctx/trim", {
        "format": "responses", "messages": HI, "system": "Be brief.", "budget": 5000})
    assert out["system"] == "Be brief."


@pytest.mark.parametrize(("fmt", "system", "field"), [
    ("anthropic", 5, "system"),
    ("anthropic", {"type": "text", "text": "x"}, "system"),
    ("anthropic", ["plain"], "system[0]"),
    ("anthropic", [{"type": "image"}], "system[0].type"),
    ("responses", BLOCKS, "instructions"),
    ("openai", "You are terse.", "system"),
])
async def test_anything_else_is_refused_naming_the_field(raw_daemon: RawDaemon, fmt, system,
                                                          field):
    for method in ("ctx/trim", "ctx/count"):
        out = await ask(raw_daemon, method, {"format": fmt, "messages": HI, "system": system})
        assert out.get("error", {}).get("code") == -32602, out
        assert out["error"].get("data", {}).get("field") == field, out
