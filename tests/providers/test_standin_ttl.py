"""The stand-in refuses an Anthropic request with a 1-hour breakpoint after a 5-minute one, as
the provider does (it reads the prompt tools, system, messages; longer lifetimes come first):
before, it counted the breakpoints only, and a session that sent its kept "1h" system block
after a plain one passed here."""

from __future__ import annotations

from providers.standin_checks import ttl_order


def block(text: str, ttl: str | None) -> dict:
    cc = {"type": "ephemeral"} if ttl is None else {"type": "ephemeral", "ttl": ttl}
    return {"type": "text", "text": text, "cache_control": cc}


def body(system: list[dict], messages: list[dict], tools: list[dict] | None = None) -> dict:
    return {"model": "claude-sonnet-4-5", "max_tokens": 10, "system": system,
            "messages": messages, **({"tools": tools} if tools else {})}


def test_a_one_hour_breakpoint_after_a_five_minute_one_is_refused():
    later = body([block("a", None)], [{"role": "user", "content": [block("q", "1h")]}])
    assert ttl_order(later)
    system = body([block("a", None), block("b", "1h")], [{"role": "user", "content": "q"}])
    assert ttl_order(system)
    tool = body([block("a", "1h")], [{"role": "user", "content": "q"}],
                tools=[{"name": "t", "input_schema": {}, "cache_control": {"type": "ephemeral"}}])
    assert ttl_order(tool)


def test_longer_lifetimes_first_pass():
    ok = body([block("a", "1h"), block("b", "1h")],
              [{"role": "user", "content": [block("q", None)]}])
    assert ttl_order(ok) == []
    assert ttl_order(body([block("a", None)], [{"role": "user", "content": "q"}])) == []
