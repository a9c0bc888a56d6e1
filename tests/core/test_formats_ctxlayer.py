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
])
def test_detect(payload, fmt):
    assert detect(payload) == fmt
