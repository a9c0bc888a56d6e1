"""Anthropic's own compaction (the `compact_20260112` edit, beta `compact-2026-01-12`): the
provider answers with a `compaction` block, its summary of the conversation so far, and drops
every block before it from then on. The chat sends it back in its assistant turn. The gateway
keeps that turn whole where it is, whatever it fits around it: no summary of ours stands in
for the provider's, and the block goes upstream byte for byte (its signature covers it). What
comes before it is never read: it goes on as the client sent it and costs nothing, and the
gateway's own summaries go after the block, where the provider reads them."""

from __future__ import annotations

import json

from gateway_stack import fresh_stack, prose
from providers.standin_checks import after_compaction

MODEL = "claude-opus-5-5"
WINDOW = 6000
BETAS = ["compact-2026-01-12", "context-management-2025-06-27"]
EDITS = {"edits": [{"type": "compact_20260112", "trigger": {"type": "input_tokens",
                                                            "value": 50_000}}]}
COMPACTION = {"type": "compaction", "content": "Summary of steps 0-7: the retry budget is "
              "computed in src/retry.py:compute_budget, test_retry_5851 fails on an empty "
              "queue, and the user wants no new dependencies.",
              "signature": "c2VhbGVkIGJ5IHRoZSBwcm92aWRlcg=="}


def _chat(tmp_path) -> tuple[list[dict], list[dict]]:
    """24 turns, each naming its own file; the provider compacts at the ninth."""
    with fresh_stack(tmp_path, {MODEL: WINDOW}, windows={MODEL: WINDOW}) as stack:
        messages = stack.anthropic().beta.messages
        history: list[dict] = []
        for k in range(24):
            history.append({"role": "user",
                            "content": f"Keep src/mod_{k}.py in mind. " + prose(f"step {k}", 220)})
            answer = messages.create(model=MODEL, max_tokens=500, messages=history,
                                     betas=BETAS, context_management=EDITS)
            blocks = [b.model_dump(exclude_none=True) for b in answer.content]
            if k == 8:  # the provider compacted here: its block opens the answer
                blocks = [COMPACTION, *blocks]
            history.append({"role": "assistant", "content": blocks})
        return history, stack.model_requests()


def test_the_providers_compaction_stays_whole_where_it_is(tmp_path):
    history, sent = _chat(tmp_path)
    assert all(r["status"] == 200 for r in sent), [r["problems"] for r in sent if r["problems"]]
    for r in sent[9:]:
        msgs = r["body"]["messages"]
        # what the provider drops goes on as the client sent it (17 messages: steps 0-8)
        assert msgs[:17] == history[:17]
        kept = [{k: v for k, v in m["content"][0].items() if k != "cache_control"}
                for m in msgs if m["role"] == "assistant" and m["content"][0]["type"] ==
                "compaction"]
        assert kept == [COMPACTION]


def test_what_the_gateway_summarizes_after_a_compaction_is_read(tmp_path):
    """On 2f1ac27 the gateway costed the blocks the provider drops and put its summary of the
    turns after the compaction before the block: steps 9-16 were read nowhere."""
    _, sent = _chat(tmp_path)
    for j, r in enumerate(sent):
        read = json.dumps(after_compaction(r["body"]["messages"]))
        missing = [k for k in range(9, j + 1) if f"src/mod_{k}.py" not in read]
        assert not missing, (j, missing)
    later = [r for r in sent[9:] if "[Summary of" in json.dumps(after_compaction(
        r["body"]["messages"]))]
    assert later, "the gateway fitted the chat after the compaction"
    # the blocks the provider drops cost nothing: the budget (window less max_tokens) is used
    # by what it reads (on 2f1ac27: 67% over the last eight)
    use = sum(r["prompt_tokens"] for r in sent[-8:]) / 8 / (WINDOW - 500)
    assert use >= 0.75, use
