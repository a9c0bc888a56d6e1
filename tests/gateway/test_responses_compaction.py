"""The Responses API's server-side compaction (`context_management` with `compact_threshold`):
the provider answers with a `compaction` item, encrypted, that carries the conversation so
far; a stateless client appends it with the rest of the output, as usual, and the provider
renders nothing before it from then on (its guide says those items may be dropped). The
gateway sends them on as they came and costs them nothing; the compaction item heads the
conversation, so the gateway's own summaries go after it, where the provider reads them."""

from __future__ import annotations

import json

from gateway_stack import fresh_stack, prose
from providers.standin_responses import encrypted

MODEL, WINDOW, ANSWER = "gpt-5.4", 6000, 500
COMPACTION = {"type": "compaction", "id": "cmp_8",
              "encrypted_content": encrypted("steps 0-7 as the provider keeps them")}


def _after_compaction(items: list[dict]) -> list[dict]:
    at = max((k for k, i in enumerate(items) if i.get("type") == "compaction"), default=0)
    return items[at:]


def test_what_the_gateway_summarizes_after_a_compaction_is_read(tmp_path):
    """On 2f1ac27 the gateway costed the items before the compaction and wrote its summary
    of the turns after it before the item, where the provider reads nothing."""
    with fresh_stack(tmp_path, {MODEL: WINDOW}, windows={MODEL: WINDOW}) as stack:
        client = stack.openai()
        items: list[dict] = []
        for k in range(24):
            items.append({"role": "user", "content":
                          f"Keep src/mod_{k}.py in mind. " + prose(f"step {k}", 220)})
            answer = client.responses.create(
                model=MODEL, input=items, store=False, max_output_tokens=ANSWER,
                context_management=[{"type": "compaction", "compact_threshold": 50_000}])
            output = [o.model_dump(exclude_none=True) for o in answer.output]
            if k == 8:  # the provider compacted here: its item opens the answer
                output = [COMPACTION, *output]
            items += output
        sent = stack.model_requests()
    assert len(sent) == 24 and all(r["status"] == 200 for r in sent), \
        [r["problems"] for r in sent if r["problems"]]
    at = items.index(COMPACTION)
    for j, r in enumerate(sent):
        body = r["body"]["input"]
        if j > 8:  # what the provider does not read goes on as the client sent it
            assert body[:at + 1] == items[:at + 1]
        read = json.dumps(_after_compaction(body))
        missing = [k for k in range(9, j + 1) if f"src/mod_{k}.py" not in read]
        assert not missing, (j, missing)
    assert any("[Summary of" in json.dumps(_after_compaction(r["body"]["input"]))
               for r in sent[9:]), "the gateway fitted the chat after the compaction"
    # the items the provider does not read cost nothing: its budget holds what it reads
    use = sum(r["prompt_tokens"] for r in sent[-8:]) / 8 / (WINDOW - ANSWER)
    assert use >= 0.75, use
