"""A chat whose history holds a run of a million blanks (a tool's output padded with spaces)
goes upstream, that turn and the next: tiktoken's regex failed on it, the gateway answered
500 "preparing the request failed", and since a chat sends its history again every turn,
every later turn failed too."""

from __future__ import annotations

import httpx2 as httpx
from gateway_stack import fresh_stack

MODEL = "gpt-4o"
PADDED = "here is the output:" + " " * 1_000_000 + "done"


def _ask(stack, messages: list[dict]) -> httpx.Response:
    return httpx.post(stack.openai_url + "/chat/completions",
                      json={"model": MODEL, "messages": messages},
                      headers={"Authorization": "Bearer sk-test"}, timeout=120)


def test_a_history_with_a_million_blanks_goes_upstream_turn_after_turn(tmp_path):
    first = [{"role": "user", "content": PADDED}]
    with fresh_stack(tmp_path) as stack:
        answer = _ask(stack, first)
        assert answer.status_code == 200, answer.text
        reply = answer.json()["choices"][0]["message"]
        again = _ask(stack, [*first, {"role": "assistant", "content": reply["content"]},
                             {"role": "user", "content": "and then?"}])
        assert again.status_code == 200, again.text
        sent = stack.model_requests()
    assert [r["status"] for r in sent] == [200, 200]
    assert sent[-1]["body"]["messages"][0]["content"] == PADDED
