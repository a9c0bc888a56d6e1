"""A Responses request whose earlier turns the provider keeps (`previous_response_id`) goes as
it came; its `ctx/why` entry says what was sent: the tokens of its new input and tools, the
same before and after (nothing was cut), as the `x-ctxlayer-tokens` header counts them.

Before, the entry said 0 tokens before and 0 after, for a request of over 3,000 tokens."""

from __future__ import annotations


def _why(stack, conversation_id: str) -> list:
    async def read() -> list:
        return stack.state.conversations.why(stack.gateway.caller.workspace, conversation_id)
    return stack.standin.call(read())


def test_a_request_sent_as_it_came_says_its_tokens(stack):
    client = stack.openai()
    first = client.responses.create(model="gpt-4o", input="Remember the number 7.",
                                    max_output_tokens=100)
    raw = client.responses.with_raw_response.create(
        model="gpt-4o", previous_response_id=first.id,
        input=[{"role": "user", "content": "Which number? " + "pad " * 3000}],
        tools=[{"type": "function", "name": "add", "description": "Add two numbers.",
                "parameters": {"type": "object", "properties": {"a": {"type": "integer"}}}}],
        extra_headers={"x-ctxlayer-conversation": "chained-tokens"})
    assert raw.parse().status == "completed"
    sent = int(raw.headers["x-ctxlayer-tokens"])
    assert sent > 3000
    [entry] = [e for e in _why(stack, "chained-tokens") if e.action == "notFitted"]
    assert "previous_response_id" in entry.reason and "not in the request" in entry.reason
    assert (entry.tokens_before, entry.tokens_after) == (sent, sent), entry
