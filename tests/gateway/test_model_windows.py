"""A model's window as its provider documents it, through the real gateway: GPT-4 Turbo under
its older names and GPT-4.5 Preview took the `gpt-4` row's 8,192 tokens (the longest prefix
that matched), and a 39k-token chat went out summarized to a few dozen tokens. The stand-in
here is told each model's documented window, so it refuses what the provider would."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from gateway_stack import Stack, fresh_stack, prose

#: the windows OpenAI documents (developers.openai.com/api/docs/models/gpt-4-turbo,
#: .../gpt-4-turbo-preview; GPT-4.5 Preview's 128,000)
DOCUMENTED = {"gpt-4-turbo-preview": 128_000, "gpt-4-1106-preview": 128_000,
              "gpt-4-0125-preview": 128_000, "gpt-4-vision-preview": 128_000,
              "gpt-4.5-preview": 128_000}


@pytest.fixture(scope="module")
def documented(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stack]:
    with fresh_stack(tmp_path_factory.mktemp("documented"), windows=DOCUMENTED) as stack:
        yield stack


def _chat(turns: int) -> list[dict]:
    msgs: list[dict] = []
    for k in range(turns):
        msgs += [{"role": "user", "content": prose(f"turn {k}", 1500)},
                 {"role": "assistant", "content": f"noted {k}"}]
    return [*msgs, {"role": "user", "content": "and now, what do they share?"}]


@pytest.mark.parametrize("model", sorted(DOCUMENTED))
def test_a_chat_well_within_the_documented_window_goes_out_whole(documented, model):
    documented.standin.reset()
    msgs = _chat(12)
    raw = documented.openai().chat.completions.with_raw_response.create(model=model,
                                                                        messages=msgs)
    assert raw.http_response.status_code == 200
    tokens = int(raw.headers["x-ctxlayer-tokens"])
    assert 30_000 < tokens < 128_000 - 16_384
    assert raw.headers["x-ctxlayer-dropped"] == "0"
    assert raw.headers["x-ctxlayer-compacted"] == "false"
    (seen,) = documented.model_requests()
    assert seen["status"] == 200 and seen["problems"] == []
    assert seen["body"]["messages"] == msgs
