"""The system prompt's dynamic section (the context command's output) comes after the history
in every format, so that a new output each turn leaves the history in the provider's cached
prefix. Anthropic's `system` comes before every message: the dynamic section was put there,
so each new output made the provider read the whole history again, and `cacheBoundary` (3)
pointed past the end of the 3 messages it was returned with."""

from __future__ import annotations

import pytest
import pytest_asyncio
from conftest import RawDaemon, hermetic_env, make_repo
from providers.rules import anthropic_problems

pytestmark = [pytest.mark.e2e, pytest.mark.asyncio(loop_scope="module")]

TURNS = [{"role": "user", "content": "q1"}, {"role": "assistant", "content": "a1"},
         {"role": "user", "content": "q2"}]


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def daemon(tmp_path_factory):
    base = tmp_path_factory.mktemp("dynamic")
    d = await RawDaemon.start(env=hermetic_env(base / "world"))
    await d.initialize(make_repo(base / "repo"))
    yield d
    assert await d.close() == 0


async def _assembled(daemon: RawDaemon, sid: str, fmt: str, now: str) -> dict:
    out = await daemon.request(f"{sid}-{fmt}-{now}", "ctx/assemble", {
        "sessionId": sid, "format": fmt,
        "systemPrompt": {"dynamic": {"contextCmd": f"NOW={now}"}}})
    assert "result" in out, out
    return out["result"]


def _texts(value) -> str:
    return repr(value)


async def test_anthropic_puts_the_dynamic_section_in_the_last_user_turn(daemon):
    await daemon.request("o", "ctx/session/open", {"sessionId": "s"})
    await daemon.request("a", "ctx/session/append", {"sessionId": "s", "messages": TURNS})
    first = await _assembled(daemon, "s", "anthropic", "12:00:01")
    second = await _assembled(daemon, "s", "anthropic", "12:00:02")

    assert "NOW=" not in _texts(first["system"])  # never before the history
    assert first["system"] == second["system"]
    assert first["messages"][:-1] == second["messages"][:-1] == TURNS[:-1]
    last = first["messages"][-1]
    assert last["role"] == "user"
    assert last["content"][0] == {"type": "text", "text": "q2"}  # the user's own text first
    assert "NOW=12:00:01" in last["content"][-1]["text"]
    assert second["messages"][-1]["content"][0] == {"type": "text", "text": "q2"}
    assert anthropic_problems({"model": "m", "max_tokens": 8, "system": first["system"],
                               "messages": first["messages"]}) == []
    # the stable prefix: the system blocks before the boundary, all of them here
    boundary = first["cacheBoundary"]
    assert boundary is not None and 0 < boundary <= len(first["system"])
    assert "Static bootstrap content ends above" in first["system"][boundary - 1]["text"]


async def test_anthropic_after_the_assistant_turn_gets_a_user_turn_of_it(daemon):
    await daemon.request("o", "ctx/session/open", {"sessionId": "t"})
    await daemon.request("a", "ctx/session/append", {"sessionId": "t", "messages": [
        *TURNS, {"role": "assistant", "content": "a2"}]})
    out = await _assembled(daemon, "t", "anthropic", "1")
    assert [m["role"] for m in out["messages"]] == ["user", "assistant"] * 2 + ["user"]
    assert out["messages"][-2] == {"role": "assistant", "content": "a2"}
    (block,) = out["messages"][-1]["content"]
    assert "NOW=1" in block["text"] and "NOW=" not in _texts(out["system"])


async def test_a_stored_anthropic_turn_is_sent_as_stored_next_turn(daemon):
    """The block goes into a copy: the stored turn (with its client's cache_control) goes
    out as it came, its blocks first, this turn and the next."""
    asked = {"role": "user", "content": [
        {"type": "text", "text": "q2", "cache_control": {"type": "ephemeral"}}]}
    await daemon.request("o", "ctx/session/open", {"sessionId": "u"})
    await daemon.request("a", "ctx/session/append", {"sessionId": "u", "format": "anthropic",
                                                     "messages": [*TURNS[:2], asked]})
    first = await _assembled(daemon, "u", "anthropic", "1")
    second = await _assembled(daemon, "u", "anthropic", "2")
    for out, now in ((first, "1"), (second, "2")):
        own, dynamic = out["messages"][-1]["content"][:1], out["messages"][-1]["content"][1:]
        assert own == asked["content"]
        assert [b["type"] for b in dynamic] == ["text"] and f"NOW={now}" in dynamic[0]["text"]


@pytest.mark.parametrize("fmt", ["openai", "responses", "ctxlayer"])
async def test_other_formats_keep_it_after_the_history(daemon, fmt):
    await daemon.request("o", "ctx/session/open", {"sessionId": fmt})
    await daemon.request("a", "ctx/session/append", {"sessionId": fmt, "messages": TURNS})
    out = await _assembled(daemon, fmt, fmt, "1")
    messages = out["messages"]
    at = next(k for k, m in enumerate(messages) if "NOW=1" in _texts(m))
    last_user = max(k for k, m in enumerate(messages) if m["role"] == "user")
    assert at > last_user and out.get("system") is None
    boundary = out["cacheBoundary"]
    assert all(m["role"] == "system" for m in messages[:boundary])
    assert messages[boundary]["role"] == "user"


@pytest.mark.parametrize("user_format", ["ctxlayer", "openai", "responses"])
async def test_anthropic_turns_beside_user_turns_of_another_format(daemon, user_format):
    """The user's turns appended in one format, the assistant's answers as Anthropic returned
    them: an Anthropic assembly was refused ("this one has only assistant turns"), the check
    reading the session's Anthropic-format messages alone, and no later user turn but an
    Anthropic one mended it. A tool call stored as Anthropic's with its result in another
    format was refused alike."""
    sid = f"mixed-{user_format}"

    def user(text: str) -> dict:
        return ({"type": "message", "role": "user", "content": text}
                if user_format == "responses" else {"role": "user", "content": text})

    await daemon.request("o", "ctx/session/open", {"sessionId": sid})
    for fmt, msg in ((user_format, user("what does src/app.py do?")),
                     ("anthropic", {"role": "assistant",
                                    "content": [{"type": "text", "text": "It prints hello."}]}),
                     (user_format, user("and then?"))):
        out = await daemon.request("a", "ctx/session/append", {
            "sessionId": sid, "format": fmt, "messages": [msg]})
        assert "result" in out, out
    got = await _assembled(daemon, sid, "anthropic", "3")
    assert [m["role"] for m in got["messages"]] == ["user", "assistant", "user"]
    assert anthropic_problems({"model": "m", "max_tokens": 8, "system": got["system"],
                               "messages": got["messages"]}) == []
