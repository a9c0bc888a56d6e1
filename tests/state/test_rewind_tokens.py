"""A rewind onto a question that holds a document (the user regenerates the answer to it): the
turn's `tokens` are what ctx/count says of the body it returns, as on a daemon that never saw
the longer request. Before, the document question, costed as two pieces while a later message
asked the question, was taken over as such: 60 tokens said of a body of 56 (the probe's
`t_rewind_doc.py cc`). A real State and tokenizer, through the request functions."""

from __future__ import annotations

from ctxlayer import protocol
from ctxlayer.state import Caller, State
from ctxlayer.state.requests import call

MODEL = "claude-opus-4-1"
DOC = {"type": "document", "source": {"type": "text", "media_type": "text/plain",
                                      "data": "the build fails in file.py line 3: NameError"}}
MESSAGES = [
    {"role": "user", "content": "hello, a question about the build"},
    {"role": "assistant", "content": "sure, send the log"},
    {"role": "user", "content": [{"type": "text", "text": "here is the log"}, DOC]},
    {"role": "assistant", "content": "the NameError comes from file.py"},
    {"role": "user", "content": "thanks, and how do I fix it?"}]


def params(upto: int, conversation: str | None) -> protocol.PrepareParams:
    return protocol.PrepareParams(format="anthropic", budget=2000, conversation_id=conversation,
                                  request={"model": MODEL, "max_tokens": 100, "system": [
                                      {"type": "text", "text": "sys",
                                       "cache_control": {"type": "ephemeral"}}],
                                      "messages": MESSAGES[:upto]})


async def counted(caller, result: protocol.PrepareResult) -> int:
    out = await call(caller, "ctx/count", protocol.CountParams(
        format="anthropic", model=MODEL, messages=result.request["messages"],
        system=result.request["system"]))
    return out.total


async def test_a_rewound_turn_says_what_its_body_costs(tmp_path):
    state = State(tmp_path / "state")
    try:
        caller = Caller(state, source="prepare",
                        options=protocol.InitializationOptions(model=MODEL))
        whole = await call(caller, "ctx/prepare", params(5, "doc"))
        assert whole.tokens == await counted(caller, whole)
        rewound = await call(caller, "ctx/prepare", params(3, "doc"))
        fresh = await call(caller, "ctx/prepare", params(3, "fresh"))
        assert rewound.request == fresh.request
        assert rewound.tokens == await counted(caller, rewound) == fresh.tokens
        assert rewound.cache_reuse_tokens <= rewound.tokens
    finally:
        state.close()
