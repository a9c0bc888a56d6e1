"""What a summary chunk reads of a message shown as nothing (core/prepare/summaries.py): an
outline an earlier version kept, which cut the answer beside a thinking block to "", left the
summary to list the question it answered as open, and the answer nowhere."""

from __future__ import annotations

import msgspec

from ctxlayer.core.prepare.model import DEFAULT_POLICY
from ctxlayer.core.prepare.summaries import make_chunk
from ctxlayer.core.tokens import CountCache, WordTokenizer, message_tokens
from ctxlayer.protocol import Message

COUNTER = CountCache(WordTokenizer())


def test_a_summary_reads_the_original_of_a_text_shown_as_nothing():
    originals = [
        Message(role="user", id="q", content="Which port does the proxy listen on?"),
        Message(role="assistant", id="a", parts_tokens=432, parts=["thinking (432 tokens)"],
                content="The proxy listens on port 8443, set in deploy/proxy.toml."),
    ]
    shown = [originals[0], msgspec.structs.replace(originals[1], content="")]
    tokens = [message_tokens(m, COUNTER) for m in shown]
    chunk = make_chunk(shown, originals, [0, 1], tokens, 0, 2, COUNTER, DEFAULT_POLICY, 2000)
    assert "listens on port 8443" in chunk.message.content, chunk.message.content
