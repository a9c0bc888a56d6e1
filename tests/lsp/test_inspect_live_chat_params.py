"""ctx/inspect of a live chat's session with a `budget` or a `model`: its page is its last
request as fitted, at its budget, for its model, so another is refused naming the field.
Before, `budget: 3000`, `budget: 10` and `model: gpt-4o` all answered the page at 199,000
for claude-sonnet-4-5, without a word. The real daemon over stdio."""

from __future__ import annotations

import json

import pytest
from conftest import ask, result

pytestmark = pytest.mark.e2e


def page_data(html: str) -> dict:
    return json.loads(html.split('id="ctx-data">', 1)[1].split("</script>", 1)[0])


async def test_a_live_chats_page_refuses_a_budget_or_model_not_its_own(own_daemon):
    prepared = await result(own_daemon, "ctx/prepare", {"format": "anthropic", "request": {
        "model": "claude-sonnet-4-5", "max_tokens": 1000, "system": "s",
        "messages": [{"role": "user", "content": "word " * 3000},
                     {"role": "assistant", "content": "ok"},
                     {"role": "user", "content": "next " * 2000}]}})
    sid, budget = prepared["sessionId"], prepared["budget"]
    for asked in ({}, {"budget": budget}, {"model": "claude-sonnet-4-5"}):
        page = page_data((await result(own_daemon, "ctx/inspect",
                                       {"sessionId": sid, **asked}))["html"])
        assert (page["budget"], page["model"], page["used"]) == (
            budget, "claude-sonnet-4-5", prepared["tokens"]), asked
    for asked, field in (({"budget": 3000}, "budget"), ({"budget": 10}, "budget"),
                         ({"model": "gpt-4o"}, "model")):
        answer = await ask(own_daemon, "ctx/inspect", {"sessionId": sid, **asked})
        error = answer.get("error")
        assert error is not None, (asked, answer)
        assert error["code"] == -32602 and error["data"]["field"] == field, error
        own = f"{budget:,}" if field == "budget" else "claude-sonnet-4-5"
        assert own in error["message"], error  # what the page is at instead


async def test_a_sessions_own_model_is_taken_however_its_provider_spells_it(own_daemon):
    """A session on `openai/gpt-4o` refused `model: gpt-4o` as another model; a live chat on
    OpenRouter's Claude likewise Anthropic's name. Compared by the name the tables key them by;
    another model is still refused."""
    await result(own_daemon, "ctx/session/open", {"sessionId": "prefixed",
                                                  "model": "openai/gpt-4o"})
    for asked in ("gpt-4o", "openai/gpt-4o", "GPT-4o"):
        page = page_data((await result(own_daemon, "ctx/inspect", {
            "sessionId": "prefixed", "model": asked}))["html"])
        assert page["model"] == "openai/gpt-4o", (asked, page["model"])
    other = await ask(own_daemon, "ctx/inspect", {"sessionId": "prefixed", "model": "gpt-4.1"})
    assert other["error"]["data"]["field"] == "model", other
    prepared = await result(own_daemon, "ctx/prepare", {"format": "anthropic", "request": {
        "model": "anthropic/claude-3.5-haiku", "max_tokens": 100,
        "messages": [{"role": "user", "content": "hello"}]}})
    page = page_data((await result(own_daemon, "ctx/inspect", {
        "sessionId": prepared["sessionId"], "model": "claude-3-5-haiku"}))["html"])
    assert page["used"] == prepared["tokens"]
