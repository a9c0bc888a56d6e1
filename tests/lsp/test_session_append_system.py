"""ctx/session/append takes the system prompt a provider format keeps apart from its messages
(Anthropic `system`, Responses `instructions`) as it takes an OpenAI system message appended at
that point. Before, an Anthropic `system` was dropped without a word: the append succeeded,
no assembly had it, the audit was empty. The real daemon over stdio."""

from __future__ import annotations

import pytest
from conftest import RawDaemon, ask, result
from providers.rules import anthropic_problems

pytestmark = pytest.mark.e2e

PROMPT = "SYSTEM-PROMPT-XYZ: always answer in French."
HELLO = [{"role": "user", "content": "hello"}]
# the same append as an OpenAI client makes it: the system message, then the turn
AS_OPENAI = {"format": "openai",
             "messages": [{"role": "system", "content": PROMPT}, *HELLO]}
CASES = {
    "anthropic string": {"format": "anthropic", "system": PROMPT, "messages": HELLO},
    "anthropic blocks": {"format": "anthropic", "messages": HELLO,
                         "system": [{"type": "text", "text": PROMPT}]},
    "responses": {"format": "responses", "system": PROMPT,
                  "messages": [{"type": "message", "role": "user", "content": "hello"}]},
}


async def appended(daemon: RawDaemon, session: str, append: dict) -> tuple[dict, dict, dict]:
    """(the append's budget, the session assembled in the OpenAI format, in Anthropic's)."""
    await result(daemon, "ctx/session/open", {"sessionId": session, "model": "gpt-4o"})
    budget = await result(daemon, "ctx/session/append", {"sessionId": session, **append})
    openai = await result(daemon, "ctx/assemble", {"sessionId": session, "format": "openai"})
    anthropic = await result(daemon, "ctx/assemble",
                             {"sessionId": session, "format": "anthropic"})
    return budget, openai, anthropic


@pytest.mark.parametrize("case", list(CASES))
async def test_taken_as_an_openai_system_message_is(own_daemon: RawDaemon, case: str):
    budget, openai, anthropic = await appended(own_daemon, f"s-{case}", CASES[case])
    want_budget, want_openai, want_anthropic = await appended(
        own_daemon, f"o-{case}", AS_OPENAI)
    assert PROMPT in str(anthropic["system"]) and PROMPT in str(openai["messages"])
    assert budget["byLayer"] == want_budget["byLayer"]
    assert openai["messages"] == want_openai["messages"]
    assert anthropic["system"] == want_anthropic["system"]
    assert anthropic["messages"] == want_anthropic["messages"]
    audit = await result(own_daemon, "ctx/session/audit", {"sessionId": f"s-{case}"})
    assert audit["entries"] == []  # nothing of it left out


async def test_what_a_block_carries_besides_its_text_goes_out_with_it(own_daemon: RawDaemon):
    # it was named in the session's audit as not kept; now the block is kept as it came
    # (tests/lsp/test_session_system_blocks.py: after a restart, in another format)
    blocks = [{"type": "text", "text": "Be brief."},
              {"type": "text", "text": PROMPT, "cache_control": {"type": "ephemeral"}}]
    await result(own_daemon, "ctx/session/open", {"sessionId": "s", "model": "gpt-4o"})
    await result(own_daemon, "ctx/session/append", {
        "sessionId": "s", "format": "anthropic", "messages": HELLO, "system": blocks})
    out = await result(own_daemon, "ctx/assemble", {"sessionId": "s", "format": "anthropic"})
    assert out["system"][-2:] == blocks, out["system"]
    assert (await result(own_daemon, "ctx/session/audit", {"sessionId": "s"}))["entries"] == []


@pytest.mark.parametrize("fmt", ["openai", "ctxlayer"])
async def test_a_format_without_one_refuses_it_naming_it(own_daemon: RawDaemon, fmt: str):
    await result(own_daemon, "ctx/session/open", {"sessionId": "s", "model": "gpt-4o"})
    out = await ask(own_daemon, "ctx/session/append", {
        "sessionId": "s", "format": fmt, "messages": HELLO, "system": PROMPT})
    assert out.get("error", {}).get("code") == -32602, out
    assert out["error"]["data"]["field"] == "system", out
    empty = await result(own_daemon, "ctx/assemble", {"sessionId": "s", "format": "openai"})
    assert "hello" not in str(empty["messages"])  # nothing of the refused append was kept


BLANK = {
    "openai system": {"format": "openai",
                      "messages": [{"role": "system", "content": "  \n"}, *HELLO]},
    "openai developer": {"format": "openai",
                         "messages": [{"role": "developer", "content": ""}, *HELLO]},
    "responses instructions": {"format": "responses", "system": " ", "messages": [
        {"type": "message", "role": "user", "content": "hello"}]},
}


@pytest.mark.parametrize("case", list(BLANK))
async def test_a_blank_system_prompt_is_left_out_of_an_anthropic_assembly_saying_so(
        own_daemon: RawDaemon, case: str):
    # each valid for its own provider; assembled for Anthropic, a system block of whitespace
    # went out, which Anthropic refuses ("text blocks must contain non-whitespace text")
    _, _, anthropic = await appended(own_daemon, f"blank-{case}", BLANK[case])
    assert anthropic_problems({"model": "m", "max_tokens": 8, "system": anthropic["system"],
                               "messages": anthropic["messages"]}) == [], anthropic["system"]
    assert any("empty system message" in e["reason"] for e in anthropic["dropped"]), anthropic
