"""A chat client that sends the same request again through the gateway (a retry after a
dropped connection, a regenerated answer) gets the same `x-ctxlayer-*` figures as the first
time, and the editors' status bars the same notice: the request that goes upstream is the
cut one. Before: the engine's retry answered notice None and nothing cut, so the
`ctx/budgetChanged` the editors got for it said nothing was summarized."""

from __future__ import annotations

from gateway_stack import fresh_stack, prose

FIGURES = ("x-ctxlayer-tokens", "x-ctxlayer-dropped", "x-ctxlayer-shortened",
           "x-ctxlayer-compacted", "x-ctxlayer-conversation")


def test_a_request_sent_again_gets_the_same_figures_and_notice(tmp_path):
    with fresh_stack(tmp_path, {"gpt-4o": 3000}) as stack:
        notices: list[str | None] = []
        stack.state.events.budget_listeners.append(
            lambda _ws, budget, _caller: notices.append(budget.notice)
            if budget.conversation_id == "again" else None)
        client = stack.openai()
        msgs: list[dict] = [{"role": "system", "content": "You are terse."}]
        for k in range(8):
            msgs.append({"role": "user" if k % 2 == 0 else "assistant",
                         "content": prose(f"m{k}", 200)})
        said = []
        for _ in range(2):
            raw = client.chat.completions.with_raw_response.create(
                model="gpt-4o", max_tokens=500, messages=msgs,
                extra_headers={"x-ctxlayer-conversation": "again"})
            assert raw.parse().choices
            said.append({h: raw.headers[h] for h in FIGURES})
        first, again = stack.model_requests()[-2:]
        assert again["body"]["messages"] == first["body"]["messages"]
        assert said[0] == said[1]
        assert int(said[0]["x-ctxlayer-shortened"]) + int(said[0]["x-ctxlayer-dropped"]) > 0
        # the turn's budget event (the usage report's may follow it, and says no notice)
        told = [n for n in notices if n]
        assert len(told) == 2 and told[0] == told[1], notices
