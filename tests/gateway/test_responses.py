"""The OpenAI Responses API through the gateway: the official SDK's `responses.create`
(streamed and not) against the strict stand-in, tool loops of several rounds, a long
conversation fitted with its call pairs whole and its reasoning byte for byte, a
`previous_response_id` or a provider's `conversation` sent as it came, and every other `/v1`
path forwarded unchanged."""

from __future__ import annotations

import json

import httpx2 as httpx
import msgspec
import pytest
from gateway_stack import Stack, StandinThread, start_stack, stop_stack
from providers.standin_responses import encrypted, problems

TOOLS = [{"type": "function", "name": "read_file", "description": "Read a file.",
          "parameters": {"type": "object", "properties": {"round": {"type": "integer"}}}}]


@pytest.fixture
def small_window(stack):
    """The gateway's caller told the window is 4096 tokens (the stand-in's for
    `standin-small`), as an editor's initialize would."""
    caller = stack.gateway.caller
    before = caller.options
    caller.options = msgspec.structs.replace(before, context_window=4096)
    yield
    caller.options = before


async def conversations(stack) -> list:
    from ctxlayer import protocol
    from ctxlayer.state.requests import call

    listed = await call(stack.gateway.caller, "ctx/conversations", protocol.Empty())
    return listed.conversations


def why(stack, conversation_id: str) -> list:
    async def read() -> list:
        return stack.state.conversations.why(stack.gateway.caller.workspace, conversation_id)
    return stack.standin.call(read())


def responses_requests(stack) -> list[dict]:
    return [r for r in stack.standin.requests() if r["path"] == "/v1/responses"]


def test_sdk_create_comes_back_unchanged_with_our_headers(stack):
    raw = stack.openai("sk-live-resp").responses.with_raw_response.create(
        model="gpt-4o", instructions="Be terse.", input="What does this project do?")
    done = raw.parse()
    assert done.output_text == "stand-in answer after 0 tool results to 1 items."
    assert done.usage.input_tokens > 0
    assert int(raw.headers["x-ctxlayer-tokens"]) > 0
    assert raw.headers["x-ctxlayer-dropped"] == "0"
    (seen,) = responses_requests(stack)
    assert seen["headers"]["authorization"] == "Bearer sk-live-resp"
    assert seen["status"] == 200 and seen["problems"] == []
    # an untouched request is forwarded as the client sent it
    assert seen["body"]["input"] == "What does this project do?"
    assert seen["body"]["instructions"] == "Be terse."


def test_sdk_stream_relays_the_events_and_reports_usage(stack):
    budgets: list = []
    listener = lambda workspace, budget, caller=None: budgets.append(budget)  # noqa: E731
    stack.state.events.budget_listeners.append(listener)
    try:
        events = list(stack.openai().responses.create(
            model="gpt-4o", input=[{"role": "user", "content": "Hello"}], stream=True))
        stack.wait_for(lambda rs: any(b.source == "gateway" and b.used > 0 and
                                      b.cached_tokens is not None for b in budgets),
                       "the stream's usage reported")
    finally:
        stack.state.events.budget_listeners.remove(listener)
    kinds = [e.type for e in events]
    assert kinds[0] == "response.created" and kinds[-1] == "response.completed"
    assert [e.sequence_number for e in events] == list(range(len(events)))
    text = "".join(e.delta for e in events if e.type == "response.output_text.delta")
    assert text == events[-1].response.output_text
    reported = [b for b in budgets if b.source == "gateway" and b.cached_tokens is not None]
    assert reported[-1].used == events[-1].response.usage.input_tokens


def test_a_streamed_tool_loop_of_several_rounds(stack):
    """The client runs the tools and sends each call and its output back, with the reasoning
    the provider gave (store=false, encrypted content): the stand-in, checking pairs and
    reasoning, accepts every round."""
    stack.standin.call(_set_agent(stack.standin.standin, 3))  # type: ignore[union-attr]
    client = stack.openai()
    items: list = [{"role": "user", "content": "Read the files, then sum up."}]
    for _ in range(6):
        stream = client.responses.create(model="gpt-4o", input=items, tools=TOOLS, store=False,
                                         include=["reasoning.encrypted_content"], stream=True)
        final = [e for e in stream if e.type == "response.completed"][0].response
        output = [o.model_dump(exclude_none=True) for o in final.output]
        items += output
        calls = [o for o in output if o["type"] == "function_call"]
        if not calls:
            break
        items += [{"type": "function_call_output", "call_id": c["call_id"],
                   "output": f"contents of round {json.loads(c['arguments'])['round']}"}
                  for c in calls]
    assert final.output_text == "stand-in answer after 3 tool results to 10 items."
    seen = responses_requests(stack)
    assert len(seen) == 4 and all(r["status"] == 200 and not r["problems"] for r in seen)
    reasoning = [i for i in seen[-1]["body"]["input"] if i.get("type") == "reasoning"]
    assert len(reasoning) == 3 and all(r["encrypted_content"] for r in reasoning)


async def _set_agent(standin, rounds: int) -> None:
    standin.agent(rounds)


def long_conversation(rounds: int, words: int) -> list[dict]:
    """A user question, then `rounds` rounds of reasoning + call + a large output."""
    items: list[dict] = [{"role": "user", "content": "Look through the logs for the error."}]
    for k in range(rounds):
        items.append({"type": "reasoning", "id": f"rs_{k}", "summary": [],
                      "encrypted_content": encrypted(f"reasoning {k} " + "z" * 50)})
        items.append({"type": "function_call", "id": f"fc_{k}", "call_id": f"call_{k}",
                      "name": "read_file", "arguments": json.dumps({"round": k})})
        items.append({"type": "function_call_output", "call_id": f"call_{k}",
                      "output": f"log part {k}: " + " ".join(f"line{k}x{j} ok"
                                                            for j in range(words))})
    items.append({"role": "user", "content": [{"type": "input_text",
                                               "text": "So which line failed?"}]})
    return items


def test_a_long_conversation_is_fitted_pairs_whole_reasoning_byte_for_byte(stack,
                                                                         small_window):
    items = long_conversation(12, 150)
    raw = stack.openai().responses.with_raw_response.create(
        model="gpt-4o", input=items, tools=TOOLS, max_output_tokens=500,
        extra_headers={"x-ctxlayer-conversation": "long-responses"})
    assert raw.parse().status == "completed"
    (seen,) = responses_requests(stack)
    # fitted: older outputs outlined (before anything is summarized) or summarized away
    outlined = [i for i in seen["body"]["input"] if i.get("type") == "function_call_output"
                and json.dumps(i, sort_keys=True) not in {json.dumps(x, sort_keys=True)
                                                          for x in items}]
    assert int(raw.headers["x-ctxlayer-dropped"]) > 0 or outlined
    assert int(raw.headers["x-ctxlayer-shortened"]) >= len(outlined)  # each one said
    assert seen["status"] == 200 and seen["problems"] == [], seen["problems"]
    assert seen["prompt_tokens"] + 500 <= 4096
    sent = seen["body"]["input"]
    assert sent[-1] == items[-1]  # the question
    originals = {json.dumps(i, sort_keys=True) for i in items}
    calls = {i["call_id"] for i in sent if i.get("type") == "function_call"}
    outputs = {i["call_id"] for i in sent if i.get("type") == "function_call_output"}
    assert calls == outputs and calls
    for item in sent:
        if item.get("type") in ("reasoning", "function_call"):
            assert json.dumps(item, sort_keys=True) in originals  # untouched, byte for byte
    for k, item in enumerate(sent):
        if item.get("type") == "reasoning":
            assert sent[k + 1]["type"] == "function_call"
    assert len(calls) >= 2  # the newest rounds kept whole


def test_previous_response_id_is_forwarded_as_sent_and_audited(stack, small_window):
    client = stack.openai()
    first = client.responses.create(model="gpt-4o", input="Remember the number 7.",
                                    max_output_tokens=100)
    follow = [{"role": "user", "content": "Which number? " + "pad " * 3000}]
    raw = client.responses.with_raw_response.create(
        model="gpt-4o", previous_response_id=first.id, input=follow,
        extra_headers={"x-ctxlayer-conversation": "chained"})
    assert raw.parse().status == "completed"
    seen = responses_requests(stack)[-1]
    assert seen["body"]["input"] == follow and seen["body"]["previous_response_id"] == first.id
    assert int(raw.headers["x-ctxlayer-tokens"]) > 3000  # its new input, counted
    assert raw.headers["x-ctxlayer-shortened"] == "0"  # before, 1: the entry below counted
    entries = why(stack, "chained")
    assert any(e.action == "notFitted" and "previous_response_id" in e.reason
               for e in entries), entries


def test_a_conversation_the_provider_keeps_is_forwarded_as_sent(stack, small_window):
    """The Agents SDK on a conversation the provider keeps (`conversation_id`: the Conversations
    API, whose items the provider puts before each request's input): the request holds only
    the new input, so there is nothing to fit. It goes as the client sent it, and `ctx/why`
    says why (before, its new input alone was fitted to the budget: here the gateway refused
    it, 400, as the question alone over the budget)."""
    import asyncio

    import openai
    from agents import Agent, OpenAIResponsesModel, Runner, set_tracing_disabled

    set_tracing_disabled(True)
    question = "Which number? " + "pad " * 5000

    async def run() -> tuple[str, str]:
        client = openai.AsyncOpenAI(base_url=stack.openai_url, api_key="sk-agents",
                                    max_retries=0,
                                    default_headers={"x-ctxlayer-conversation": "kept"})
        conversation = await client.conversations.create()
        agent = Agent(name="helper", instructions="Answer briefly.",
                      model=OpenAIResponsesModel(model="gpt-4o", openai_client=client))
        await Runner.run(agent, "Remember the number 7.", conversation_id=conversation.id)
        result = await Runner.run(agent, question, conversation_id=conversation.id)
        await client.close()
        return conversation.id, result.final_output

    conversation, final = asyncio.run(run())
    assert final.startswith("stand-in answer")
    first, second = responses_requests(stack)[-2:]
    assert first["status"] == second["status"] == 200
    assert second["body"]["conversation"] == conversation
    (item,) = second["body"]["input"]
    assert item["content"] == question  # as it came, though past the budget
    assert second["prompt_tokens"] > first["prompt_tokens"] + 5000  # the provider's history
    entries = why(stack, "kept")
    assert any(e.action == "notFitted" and e.reason.startswith("conversation:")
               for e in entries), entries


@pytest.mark.parametrize("stream", [False, True])
def test_a_chain_of_previous_response_ids_is_one_conversation(stack, stream):
    """Each turn of a chain the provider keeps (`previous_response_id`: its input only the new
    items) was a conversation of its own: a chat of four turns was listed as four, its
    budget and `ctx/why` split among them. The answer each names is the conversation's. The
    provider's counts of a history it keeps calibrate nothing (its whole chain against our
    count of the new items)."""
    client = stack.openai()
    previous, seen = None, []
    for question in ("Remember the number 7.", "And also 9.", "Which numbers?", "Add them."):
        asked = {"previous_response_id": previous} if previous else {}
        if stream:
            with client.responses.with_streaming_response.create(
                    model="gpt-4o", input=question, stream=True, **asked) as raw:
                done = [e for e in raw.parse() if e.type == "response.completed"]
                previous = done[0].response.id
        else:
            raw = client.responses.with_raw_response.create(model="gpt-4o", input=question,
                                                            **asked)
            previous = raw.parse().id
        seen.append(raw.headers["x-ctxlayer-conversation"])
    assert len(set(seen)) == 1, seen
    entries = why(stack, seen[0])
    assert any(e.action == "notFitted" for e in entries), entries
    listed = [c for c in stack.standin.call(conversations(stack)) if c.conversation_id in seen]
    assert len(listed) == 1
    sessions = stack.state.sessions
    stack.reported()
    assert sessions.kept_bias(stack.gateway.caller.workspace, [f"chat-{seen[0]}"],
                              "gpt-4o")[0] == 1.0


def test_a_chain_goes_on_in_its_conversation_after_a_restart(tmp_path):
    """The answer ids a chain names were remembered in memory only: after a gateway restart
    the chain's next turn (`previous_response_id` naming an answer given before it) started a
    conversation of its own (its session uncalibrated, its window not found), listed beside
    the one it went on. The state folder keeps which conversation each answer was of."""
    for sub in ("ws", "state", "config"):
        (tmp_path / sub).mkdir()
    seen = []
    with pytest.MonkeyPatch.context() as mp, StandinThread() as thread:
        mp.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
        previous = None
        for questions in (("Remember the number 7.", "And also 9."), ("Which numbers?",)):
            stack = Stack(thread, *start_stack(thread, tmp_path / "ws", tmp_path / "state"))
            try:
                for question in questions:
                    asked = {"previous_response_id": previous} if previous else {}
                    raw = stack.openai().responses.with_raw_response.create(
                        model="gpt-4o", input=question, **asked)
                    previous = raw.parse().id
                    seen.append(raw.headers["x-ctxlayer-conversation"])
            finally:
                stop_stack(thread, stack.gateway, stack.state)
    assert len(set(seen)) == 1, seen


def test_two_chains_that_open_alike_are_two_conversations_from_where_they_differ(stack):
    """Two chains whose first requests are the same (`input: "Hello."`) are one conversation
    until one goes on from an answer that is no longer its newest: both then went on in one,
    listed as one chat. Now the second goes on in a conversation of its own, every one of its
    requests, while the other, and a chain that goes on from its newest answer, stay."""
    client = stack.openai()

    def ask(question: str, previous: str | None) -> tuple[str, str]:
        asked = {"previous_response_id": previous} if previous else {}
        raw = client.responses.with_raw_response.create(model="gpt-4o", input=question,
                                                        **asked)
        return raw.parse().id, raw.headers["x-ctxlayer-conversation"]

    a1, first = ask("Hello, two chains open so.", None)
    b1, again = ask("Hello, two chains open so.", None)
    assert first == again  # nothing tells them apart yet
    b2, b_went = ask("I am chain B.", b1)  # from the newest answer: the same conversation
    a2, a_went = ask("I am chain A.", a1)  # from an older one: one of its own
    _, a_again = ask("Still chain A.", a2)
    _, a_retry = ask("I am chain A (retried).", a1)
    _, b_again = ask("Still chain B.", b2)
    assert b_went == b_again == first
    assert a_went == a_again == a_retry != first


def test_a_string_input_is_one_user_message_of_its_conversation(stack):
    """A string `input` was no message to the chain: the same request sent again (a retry)
    was a new conversation each time, and the list that extends it (the next turn, the
    SDK's way: the first item the question, as a plain or a `message` item) another."""
    client = stack.openai()
    seen = [client.responses.with_raw_response.create(model="gpt-4o", input="Hello there.")
            for _ in range(3)]
    answer = seen[-1].parse()
    for first in ({"role": "user", "content": "Hello there."},
                  {"type": "message", "role": "user",
                   "content": [{"type": "input_text", "text": "Hello there."}]}):
        grown = [first, *(item.model_dump(exclude_none=True) for item in answer.output),
                 {"role": "user", "content": "And then?"}]
        seen.append(client.responses.with_raw_response.create(model="gpt-4o", input=grown))
    ids = {raw.headers["x-ctxlayer-conversation"] for raw in seen}
    assert len(ids) == 1, ids


def test_the_turns_of_a_conversation_the_provider_keeps_are_one_conversation(stack):
    client = stack.openai()
    kept = client.conversations.create()
    seen = {client.responses.with_raw_response.create(
        model="gpt-4o", input=question, conversation=kept.id).headers["x-ctxlayer-conversation"]
        for question in ("Remember the number 7.", "Which number?")}
    assert len(seen) == 1, seen


def test_a_request_without_input_is_forwarded_as_sent(stack):
    """`input` is optional: a stored `prompt`, or an earlier response, is the provider's. Such
    a request holds nothing to fit and nothing for a conversation to keep: it goes as it came,
    its tools counted (before, a 400: "`input` must be a string or a list of items", and for
    `input: []` "a conversation needs at least one message")."""
    client = stack.openai()
    first = client.responses.create(model="gpt-4o", input="Remember the number 7.")
    for asked in [{"prompt": {"id": "pmpt_abc", "variables": {"city": "Paris"}}},
                  {"prompt": {"id": "pmpt_abc"}, "input": []},
                  {"previous_response_id": first.id},
                  {"previous_response_id": first.id, "input": [], "tools": TOOLS}]:
        raw = client.responses.with_raw_response.create(model="gpt-4o", **asked)
        assert raw.parse().status == "completed", asked
        seen = responses_requests(stack)[-1]
        assert seen["status"] == 200 and seen["body"] == {"model": "gpt-4o", **asked}
        assert raw.headers["x-ctxlayer-shortened"] == "0"
        assert "x-ctxlayer-conversation" not in raw.headers  # none keeps it
        assert (int(raw.headers["x-ctxlayer-tokens"]) > 0) == ("tools" in asked)
    # its output room is read all the same
    too_much = httpx.post(f"{stack.openai_url}/responses", json={
        "model": "gpt-4o", "prompt": {"id": "pmpt_abc"}, "max_output_tokens": 10**7})
    assert too_much.status_code == 400
    assert too_much.json()["error"]["param"] == "max_output_tokens"
    # and a chat after them goes on as ever
    raw = client.responses.with_raw_response.create(
        model="gpt-4o", input="Which number?", extra_headers={"x-ctxlayer-conversation": "after"})
    assert raw.parse().status == "completed" and raw.headers["x-ctxlayer-conversation"]


def test_a_bad_input_is_a_400_in_openais_shape(stack):
    answer = httpx.post(f"{stack.openai_url}/responses", json={"model": "gpt-4o", "input": 5})
    assert answer.status_code == 400
    error = answer.json()["error"]
    assert error["param"] == "input" and "input" in error["message"]
    assert stack.standin.requests() == []


def test_a_chat_completions_body_is_a_400_naming_input_not_forwarded_unfitted(stack):
    # `input` is optional, so `messages` without it went upstream as it came, never fitted
    before = len(responses_requests(stack))
    answer = httpx.post(f"{stack.openai_url}/responses", json={
        "model": "gpt-4o", "messages": [{"role": "user", "content": "q"}]})
    assert answer.status_code == 400
    error = answer.json()["error"]
    assert error["param"] == "input" and "/v1/chat/completions" in error["message"]
    assert len(responses_requests(stack)) == before

    from ctxlayer import protocol
    from ctxlayer.core.errors import ContextError
    from ctxlayer.state.requests import call

    async def prepare() -> None:  # ctx/prepare, as the JSON-RPC face calls it
        await call(stack.gateway.caller, "ctx/prepare", protocol.PrepareParams(
            format="responses", request={"model": "gpt-4o", "messages": [
                {"role": "user", "content": "q"}]}))

    with pytest.raises(ContextError) as refused:
        stack.standin.call(prepare())
    assert refused.value.field == "request.input" and "format ctxlayer, openai" in str(refused.value)


def test_embeddings_and_one_model_are_forwarded_unchanged(stack):
    client = stack.openai("sk-embed")
    got = client.embeddings.create(model="text-embedding-3-small", input=["a", "bcd"])
    assert [d.embedding[0] for d in got.data] == [1.0, 3.0]
    model = client.models.retrieve("gpt-4o")
    assert model.id == "gpt-4o" and model.owned_by == "standin"
    (seen,) = [r for r in stack.standin.requests() if r["path"] == "/v1/embeddings"]
    assert seen["headers"]["authorization"] == "Bearer sk-embed"
    assert seen["body"] == {"model": "text-embedding-3-small", "input": ["a", "bcd"],
                            "encoding_format": "base64"} or seen["body"]["input"] == ["a", "bcd"]
    missing = httpx.get(f"{stack.openai_url}/models/no-such-model")
    assert missing.status_code == 404 and missing.json()["error"]["code"] == "model_not_found"


def test_unknown_paths_are_json_404s_in_the_providers_shape(stack):
    plain = httpx.get(f"{stack.anthropic_url}/nowhere")
    assert plain.status_code == 404
    assert plain.headers["content-type"].startswith("application/json")
    assert plain.json()["error"]["code"] == "not_found"
    claude = httpx.post(f"{stack.anthropic_url}/elsewhere", json={},
                        headers={"anthropic-version": "2023-06-01"})
    assert claude.status_code == 404
    assert claude.json()["type"] == "error"
    assert claude.json()["error"]["type"] == "not_found_error"


def test_the_agents_sdk_runs_a_streamed_tool_loop(stack):
    """The OpenAI Agents SDK's own loop (Runner.run_streamed with a function tool) through the
    gateway: every round's request is valid for the strict stand-in, and the answer arrives."""
    import asyncio

    import openai
    from agents import Agent, OpenAIResponsesModel, Runner, function_tool, set_tracing_disabled

    set_tracing_disabled(True)  # traces would go to api.openai.com
    reads: list[int] = []

    @function_tool
    def read_file(round: int) -> str:
        """Read the file of one round."""
        reads.append(round)
        return f"contents of round {round}"

    stack.standin.call(_set_agent(stack.standin.standin, 3))  # type: ignore[union-attr]

    async def run() -> tuple[str, list[str]]:
        client = openai.AsyncOpenAI(base_url=stack.openai_url, api_key="sk-agents",
                                    max_retries=0)
        agent = Agent(name="reader", instructions="Read the files, then answer.",
                      tools=[read_file],
                      model=OpenAIResponsesModel(model="gpt-4o", openai_client=client))
        result = Runner.run_streamed(agent, "What do the files say?", max_turns=8)
        kinds = [event.type async for event in result.stream_events()]
        await client.close()
        return result.final_output, kinds

    final, kinds = asyncio.run(run())
    assert final == "stand-in answer after 3 tool results to 7 items."  # question, 3 pairs
    assert reads == [1, 2, 3] and "raw_response_event" in kinds
    seen = responses_requests(stack)
    assert len(seen) == 4 and all(r["status"] == 200 and not r["problems"] for r in seen)
    assert all(r["stream"] for r in seen)
    assert seen[-1]["headers"]["authorization"] == "Bearer sk-agents"


def test_usage_is_read_from_the_json_and_from_any_chunking_of_the_stream():
    from providers.standin_answers import Reply, Usage
    from providers.standin_responses import events, output_items, response

    from ctxlayer.gateway.usage import StreamUsage, from_answer
    from ctxlayer.gateway.usage import Usage as Read

    sent = Usage(prompt=900, completion=12, cache_read=700)
    body = {"model": "gpt-4o", "input": "hi"}
    output = output_items("r1", Reply("hello there"), reasoning=True)
    want = Read(prompt_tokens=900, completion_tokens=12, cache_read_tokens=700,
                answer="hello there",  # the answer's head, streamed or whole
                answer_id="resp_r1")  # what a later request names it by
    assert from_answer("responses", json.dumps(response("r1", body, 0, output, sent)).encode()) \
        == want
    stream = b"".join(events("r1", body, 0, output, sent))
    for size in (1, 7, 64, len(stream)):
        reader = StreamUsage("responses")
        for k in range(0, len(stream), size):
            reader.feed(stream[k:k + size])
        assert reader.usage() == want


def test_trim_and_count_take_the_responses_format(stack):
    """ctx/trim and ctx/count over the state (as the JSON-RPC face calls them): `messages`
    are the input items, `system` the instructions."""
    from ctxlayer import protocol
    from ctxlayer.state.requests import call

    items = long_conversation(6, 150)
    caller = stack.gateway.caller

    async def go():
        trimmed = await call(caller, "ctx/trim", protocol.TrimParams(
            format="responses", messages=items, system="Be terse.", budget=1500,
            model="gpt-4o"))
        counted = await call(caller, "ctx/count", protocol.CountParams(
            format="responses", messages=items[:1], system="Be terse.", model="gpt-4o"))
        return trimmed, counted

    trimmed, counted = stack.standin.call(go())
    assert trimmed.system == "Be terse." and trimmed.tokens <= 1500 and trimmed.dropped
    assert trimmed.messages[-1] == items[-1]
    assert problems({"model": "gpt-4o", "input": trimmed.messages}, []) == []
    # one entry per input item; the instructions are counted apart
    assert len(counted.tokens) == 1 and counted.system_tokens
    assert counted.total == sum(counted.tokens) + counted.system_tokens + counted.reply_priming


def test_a_session_takes_and_gives_the_responses_format(stack):
    """ctx/session/append of Responses items, ctx/assemble written back as Responses items."""
    from ctxlayer import protocol
    from ctxlayer.state.requests import call

    items = long_conversation(3, 40)
    caller = stack.gateway.caller

    async def go():
        opened = await call(caller, "ctx/session/open", protocol.SessionOpenParams(
            model="gpt-4o"))
        await call(caller, "ctx/session/append", protocol.SessionAppendParams(
            session_id=opened.session_id, messages=items, format="responses"))
        return await call(caller, "ctx/assemble", protocol.AssembleParams(
            session_id=opened.session_id, format="responses", budget=20_000))

    assembled = stack.standin.call(go())
    written = assembled.messages
    assert problems({"model": "gpt-4o", "input": written}, []) == []
    calls = [i["call_id"] for i in written if i.get("type") == "function_call"]
    assert calls == ["call_0", "call_1", "call_2"]
    assert [i["call_id"] for i in written if i.get("type") == "function_call_output"] == calls


@pytest.mark.parametrize("path, family", [("/v1/responses", "openai"),
                                          ("/v1/realtime?model=gpt-4o", "openai"),
                                          ("/v1/messages", "anthropic")])
def test_a_websocket_is_refused_with_the_426_that_sends_a_client_over_to_https(stack, path,
                                                                               family):
    """Codex asks for the Responses API as a WebSocket first on OpenAI's own provider; on a
    426 it goes over to HTTPS at once, on any other refusal only after five retries."""
    answer = httpx.get(stack.anthropic_url + path, headers={
        "connection": "Upgrade", "upgrade": "websocket", "sec-websocket-version": "13",
        "sec-websocket-key": "dGhlIHNhbXBsZSBub25jZQ==",
        **({"anthropic-version": "2023-06-01"} if family == "anthropic" else {})})
    assert answer.status_code == 426
    body = answer.json()
    message = body["error"]["message"]
    assert "over HTTPS only" in message and "WebSocket" in message
    assert (body.get("type") == "error") == (family == "anthropic")
    assert stack.standin.requests() == []  # never forwarded
