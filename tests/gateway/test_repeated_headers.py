"""A header the client sends on two lines goes upstream on two, and one the upstream answers
on two comes back on two. Before, both ways built a plain dict: two `anthropic-beta` lines,
both read for the window (`context-1m-...` fitted the request to 1M), went up as the last one
alone, so the provider was asked for a 1M prompt without the beta that allows it; two `Link`
or `Vary` lines of an answer came back as the last."""

from __future__ import annotations

import json
from pathlib import Path

import httpx2 as httpx
from gateway_stack import fresh_stack
from multidict import CIMultiDict

from ctxlayer.gateway.forward import answer_headers, upstream_headers

BETAS = ["context-1m-2025-08-07", "interleaved-thinking-2025-05-14"]


def test_two_lines_of_a_header_go_upstream_as_two(tmp_path: Path) -> None:
    body = {"model": "claude-sonnet-4-5", "max_tokens": 10,
            "messages": [{"role": "user", "content": "q"}]}
    with fresh_stack(tmp_path) as stack:
        answer = httpx.post(f"{stack.anthropic_url}/v1/messages", content=json.dumps(body),
                            timeout=30, headers=[
                                ("content-type", "application/json"),
                                ("x-api-key", "sk-ant-test"),
                                ("anthropic-version", "2023-06-01"),
                                *(("anthropic-beta", b) for b in BETAS),
                                ("x-title", "one"), ("x-title", "two")])
        received = stack.model_requests()
    assert answer.status_code == 200, answer.text
    lines = received[-1]["header_lines"]
    assert [v for k, v in lines if k == "anthropic-beta"] == BETAS
    assert [v for k, v in lines if k == "x-title"] == ["one", "two"]
    assert [v for k, v in lines if k == "accept-encoding"] == ["identity"]


def test_repeated_lines_are_kept_both_ways_and_ours_replace_theirs() -> None:
    client = CIMultiDict([("OpenAI-Beta", "a=v1"), ("OpenAI-Beta", "b=v2"),
                          ("Accept-Encoding", "gzip"), ("X-Ctxlayer-Conversation", "c1")])
    sent = upstream_headers(client)
    assert sent.getall("openai-beta") == ["a=v1", "b=v2"]
    assert sent.getall("accept-encoding") == ["identity"] and "x-ctxlayer-conversation" not in sent
    upstream = CIMultiDict([("Link", "<a>"), ("Link", "<b>"), ("Vary", "Origin"),
                            ("Vary", "Accept-Encoding"), ("x-ctxlayer-tokens", "9")])
    back = answer_headers(upstream, {"x-ctxlayer-tokens": "3"})
    assert back.getall("link") == ["<a>", "<b>"]
    assert back.getall("vary") == ["Origin", "Accept-Encoding"]
    assert back.getall("x-ctxlayer-tokens") == ["3"]
