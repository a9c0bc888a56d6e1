"""Anthropic's own compaction (the `compact_20260112` edit, beta `compact-2026-01-12`): the
provider answers with a `compaction` block, its summary of the conversation so far, and drops
every block before it from then on. The chat sends it back in its assistant turn. The gateway
keeps that turn whole where it is, whatever it fits around it: no summary of ours stands in
for the provider's, and the block goes upstream byte for byte (its signature covers it)."""

from __future__ import annotations

import json

from gateway_stack import fresh_stack, prose

MODEL = "claude-opus-5-5"
WINDOW = 6000
BETAS = ["compact-2026-01-12", "context-management-2025-06-27"]
EDITS = {"edits": [{"type": "compact_20260112", "trigger": {"type": "input_tokens",
                                                            "value": 50_000}}]}
COMPACTION = {"type": "compaction", "content": "Summary of steps 0-7: the retry budget is "
              "computed in src/retry.py:compute_budget, test_retry_5851 fails on an empty "
              "queue, and the user wants no new dependencies.",
              "signature": "c2VhbGVkIGJ5IHRoZSBwcm92aWRlcg=="}


def test_the_providers_compaction_stays_whole_where_it_is(tmp_path):
    with fresh_stack(tmp_path, {MODEL: WINDOW}, windows={MODEL: WINDOW}) as stack:
        messages = stack.anthropic().beta.messages
        history: list[dict] = []
        for k in range(24):
            history.append({"role": "user", "content": prose(f"step {k}", 220)})
            answer = messages.create(model=MODEL, max_tokens=500, messages=history,
                                     betas=BETAS, context_management=EDITS)
            blocks = [b.model_dump(exclude_none=True) for b in answer.content]
            if k == 8:  # the provider compacted here: its block opens the answer
                blocks = [COMPACTION, *blocks]
            history.append({"role": "assistant", "content": blocks})
        sent = stack.model_requests()
    assert all(r["status"] == 200 for r in sent), [r["problems"] for r in sent if r["problems"]]
    later = sent[9:]
    assert any(r["prompt_tokens"] < sum(len(json.dumps(m)) // 4 for m in r["body"]["messages"])
               for r in later), "the blocks before the compaction are not read"
    for r in later:
        kept = [m for m in r["body"]["messages"] if m["role"] == "assistant"
                and m["content"][0] == COMPACTION]
        assert len(kept) == 1, [m["content"] for m in r["body"]["messages"]][:3]
    # the gateway fitted the chat: it summarized the turns around the compaction's
    assert any("[Summary of" in json.dumps(r["body"]["messages"]) for r in later)
