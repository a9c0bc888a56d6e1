"""`x-ctxlayer-tokens` is `ctxlayer count` of the body the gateway sent (README: "count counts a
chat as the gateway does ... the two agree to the token"). Once an Anthropic chat compacted
and its summary came to stand before a user turn, the two were merged into one message (roles
must alternate), and the header still counted them as two: 2047 for a body `count` said was
2045, one message's overhead more. The real gateway before the strict stand-in."""

from __future__ import annotations

import json

from gateway_stack import fresh_stack, prose

from ctxlayer.cli import main

MODEL = "claude-sonnet-4-5"
WINDOW = 4096


def _count(body: dict, tmp_path, capsys) -> int:
    """`ctxlayer count --json` of ``body``, as a user runs it on the body sent upstream."""
    path = tmp_path / "sent.json"
    path.write_text(json.dumps(body))
    capsys.readouterr()
    assert main(["count", "--format", "anthropic", "--json", str(path)]) == 0
    return json.loads(capsys.readouterr().out)["total"]


def test_the_tokens_header_counts_a_summary_merged_with_the_next_user_turn(tmp_path, capsys):
    merged = 0
    with fresh_stack(tmp_path / "stack", {MODEL: WINDOW}, windows={MODEL: WINDOW}) as stack:
        client = stack.anthropic()
        msgs: list[dict] = []
        for k in range(10):
            msgs.append({"role": "user", "content": prose(f"q{k}", 200)})
            raw = client.messages.with_raw_response.create(model=MODEL, max_tokens=500,
                                                           messages=msgs)
            answer = raw.parse().content[0].text
            seen = stack.model_requests()[-1]
            assert seen["status"] == 200 and seen["problems"] == [], seen["problems"]
            body = seen["body"]
            header = int(raw.headers["x-ctxlayer-tokens"])
            assert header == _count(body, tmp_path, capsys), (k, header)
            first = body["messages"][0]["content"]
            # the summary and the user turn after it, one message of two text blocks
            merged += isinstance(first, list) and len(first) == 2 \
                and first[0]["text"].startswith("[Summary of")
            msgs.append({"role": "assistant", "content": f"{answer} {prose(f'a{k}', 100)}"})
    assert merged >= 1  # the case this is about happened
