"""The ctxlayer format: strict (an unknown field names itself), ids made up for messages
without one and never written back, and the dispatch refusing an unknown format."""

from __future__ import annotations

import pytest

from ctxlayer.core.errors import ContextError
from ctxlayer.core.formats import decode, detect, encode
from ctxlayer.core.tokens import WordTokenizer
from ctxlayer.core.trim import trim

WORDS = WordTokenizer()


def test_unknown_field_is_named():
    with pytest.raises(ContextError) as err:
        decode("ctxlayer", {"messages": [{"role": "user", "content": "a"},
                                         {"role": "user", "content": "b"},
                                         {"role": "user", "content": "c"},
                                         {"role": "user", "content": "d", "pined": True}]}, WORDS)
    assert err.value.kind == "invalid" and err.value.field == "messages[3].pined"


def test_wrong_types_are_named():
    with pytest.raises(ContextError) as err:
        decode("ctxlayer", {"messages": [{"role": "user", "content": "a", "pinned": "yes"}]},
               WORDS)
    assert err.value.field == "messages[0].pinned"


def test_round_trip_keeps_own_ids_and_drops_made_up_ones():
    payload = {"messages": [{"role": "system", "content": "s", "pinned": True},
                            {"role": "user", "content": "hi", "id": "u1", "partsTokens": 5}]}
    d = decode("ctxlayer", payload, WORDS)
    assert d.messages[0].id and d.messages[1].id == "u1"
    out = encode(d, trim(d.messages, 1000, WORDS).messages)
    assert out.payload == payload


def test_unknown_format_is_refused_by_name():
    with pytest.raises(ContextError) as err:
        decode("gemini", {"messages": []}, WORDS)  # type: ignore[arg-type]
    assert err.value.field == "format"


@pytest.mark.parametrize("payload,fmt", [
    ({"messages": [{"role": "user", "content": "x"}]}, "ctxlayer"),
    ({"messages": [{"role": "user", "content": "x", "toolCallId": "c"}]}, "ctxlayer"),
    ({"messages": [{"role": "developer", "content": "x"}]}, "openai"),
    ({"messages": [{"role": "assistant", "content": None, "tool_calls": []}]}, "openai"),
    ({"messages": [{"role": "user", "content": [{"type": "text", "text": "x"}]}]}, "openai"),
    ({"system": "s", "messages": []}, "anthropic"),
    ({"messages": [{"role": "user", "content": [{"type": "tool_result",
                                                 "tool_use_id": "t"}]}]}, "anthropic"),
    # Anthropic's tools, without a system field (they read as OpenAI's, without its prompt)
    ({"model": "x", "tools": [{"name": "f", "input_schema": {"type": "object"}}],
      "messages": [{"role": "user", "content": "x"}]}, "anthropic"),
    # a Claude model on what both formats read alike, however the provider names it
    *(({"model": m, "messages": [{"role": "user", "content": c}]}, "anthropic")
      for m in ("claude-sonnet-4-5", "us.anthropic.claude-3-5-haiku-20241022-v1:0",
                "anthropic/claude-3.5-haiku")
      for c in ("x", [{"type": "text", "text": "x"}])),
    # ... but not where Anthropic could not read it, nor with OpenAI's tools
    ({"model": "claude-sonnet-4-5", "messages": [{"role": "system", "content": "s"},
                                                 {"role": "user", "content": "x"}]}, "ctxlayer"),
    ({"model": "anthropic/claude-sonnet-4.5", "messages": [
        {"role": "user", "content": "x"},
        {"role": "assistant", "content": None, "tool_calls": []}]}, "openai"),
    ({"model": "claude-sonnet-4-5", "tools": [{"type": "function", "function": {"name": "f"}}],
      "messages": [{"role": "user", "content": "x"}]}, "ctxlayer"),
    ({"model": "gpt-4o", "messages": [{"role": "user", "content": "x"}]}, "ctxlayer"),
    # OpenAI's deprecated functions are OpenAI's alone: a Claude body with them was read as
    # Anthropic's, its functions left out of the count and of trim's budget
    ({"model": "anthropic/claude-sonnet-4.5", "functions": [{"name": "f", "parameters": {}}],
      "messages": [{"role": "user", "content": "x"}]}, "openai"),
])
def test_detect(payload, fmt):
    assert detect(payload) == fmt


@pytest.mark.parametrize("kind", [["text"], {"t": "text"}, 3])
def test_a_part_type_that_is_no_string_is_the_decoders_to_name(kind):
    """A part's `type` that is a list or a dict was a TypeError (unhashable) while detecting
    the format: the CLI printed a traceback where `--format openai` named the field."""
    payload = {"messages": [{"role": "user", "content": [{"type": kind, "text": "hi"}]}]}
    fmt = detect(payload)
    with pytest.raises(ContextError) as err:
        decode(fmt, payload, WORDS)
    assert "messages[0].content[0].type" in str(err.value)
