"""A pasted log bigger than the budget, after a long first question, through ctx/prepare
(`[gateway.models] "gpt-4o" = 6000`, max_tokens 1000: a budget of 5,000): the log is
shortened to its head and tail, its error line kept, and the request uses its budget. Only
the first long user message (the question) was looked at for shortening: the gateway sent 311
of 5,000 tokens, the question and the log one 759-character summary without the error line."""

from __future__ import annotations

from gateway_stack import fresh_stack

MODEL = "gpt-4o"
WINDOW = 6000
MAX_TOKENS = 1000
ERROR = "2026-01-01 ERROR step 300 failed: disk full at /var/lib/db (errno 28)"


def test_the_error_line_of_a_pasted_log_reaches_the_model(tmp_path):
    log = "\n".join(ERROR if k == 300 else f"2026-01-01 INFO step {k} ok" for k in range(600))
    messages = [{"role": "system", "content": "be nice"},
                {"role": "user", "content": "q0 " + "please look at this. " * 150},
                {"role": "assistant", "content": "a0"},
                {"role": "user", "content": "here is the log\n" + log},
                {"role": "assistant", "content": "ok"},
                {"role": "user", "content": "what failed?"}]
    with fresh_stack(tmp_path, {MODEL: WINDOW}, windows={MODEL: WINDOW}) as stack:
        raw = stack.openai().chat.completions.with_raw_response.create(
            model=MODEL, max_tokens=MAX_TOKENS, messages=messages)
        assert raw.parse().choices[0].message.content
        (request,) = stack.model_requests()
    assert request["status"] == 200 and request["problems"] == [], request["problems"]
    sent = request["body"]["messages"]
    assert [m["role"] for m in sent] == [m["role"] for m in messages]
    assert sent[1] == messages[1] and sent[-1] == messages[-1]  # the question, whole
    assert sent[3]["content"].startswith("here is the log\n") and ERROR in sent[3]["content"]
    assert raw.headers["x-ctxlayer-dropped"] == "0"
    budget = WINDOW - MAX_TOKENS
    assert budget // 2 <= int(raw.headers["x-ctxlayer-tokens"]) <= budget
