"""Conversations larger than the model's window go through the gateway fitted: the stand-in
(as strict as the provider, counting with tiktoken) receives only valid requests within the
window, the client's question always among them, and the usage the provider reports comes
back to the editors as the conversation's budget."""

from __future__ import annotations

import random
import time

import anthropic
import httpx2 as httpx
import pytest

from ctxlayer.tokenizers import counter_for, model_info

WORDS = ("parser token budget window cache prefix session editor stream answer question "
         "function module import error result value change commit branch test failure "
         "retry timeout socket header payload schema field record index").split()


def prose(seed: int, tokens: int) -> str:
    """About `tokens` tokens of varied text (no two turns alike, so nothing deduplicates)."""
    rng = random.Random(seed)
    words = [rng.choice(WORDS) + (str(rng.randint(0, 99)) if rng.random() < 0.2 else "")
             for _ in range(tokens)]
    return f"turn {seed}: " + " ".join(words)


def chat(total_tokens: int, per_turn: int = 2000) -> list[dict]:
    msgs: list[dict] = [{"role": "system", "content": "You are a careful assistant."}]
    counter, i, total = counter_for("gpt-4o"), 0, 0
    while total < total_tokens:
        msgs.append({"role": "user" if i % 2 == 0 else "assistant",
                     "content": prose(i, per_turn)})
        total += counter.count(msgs[-1]["content"])
        i += 1
    if msgs[-1]["role"] != "user":
        msgs.append({"role": "user", "content": "So what is the answer? " + prose(i, 50)})
    return msgs


def text_of(content: str | list) -> str:
    """An Anthropic content's text (a string may come back as a text block carrying the
    cache breakpoint the gateway placed)."""
    if isinstance(content, str):
        return content
    return "".join(b["text"] for b in content if b.get("type") == "text")


def tokens_of(model: str, msgs: list[dict]) -> int:
    counter = counter_for(model)
    return sum(counter.count(m["content"]) for m in msgs)


def within_window(seen: list[dict]) -> None:
    for r in seen:
        assert r["status"] == 200 and r["problems"] == [], r["problems"]
        model = r["body"]["model"]
        assert r["prompt_tokens"] <= model_info(model).context_window


def test_a_300k_token_conversation_into_a_128k_model(stack):
    msgs = chat(300_000)
    assert tokens_of("gpt-4o", msgs) > 300_000
    raw = stack.openai().chat.completions.with_raw_response.create(model="gpt-4o",
                                                                   messages=msgs)
    done = raw.parse()
    assert done.choices[0].message.content.startswith("stand-in answer")
    assert int(raw.headers["x-ctxlayer-dropped"]) > 0
    assert int(raw.headers["x-ctxlayer-tokens"]) <= 128_000
    (seen,) = stack.model_requests()
    within_window([seen])
    sent = seen["body"]["messages"]
    assert sent[-1] == msgs[-1]  # the question, whole
    assert sent[0] == msgs[0]  # the system prompt
    assert {k: v for k, v in seen["body"].items() if k != "messages"} == {"model": "gpt-4o"}


def test_a_300k_token_conversation_streams_into_claude(stack):
    msgs = chat(300_000)
    system, rest = msgs[0]["content"], msgs[1:]
    with stack.anthropic().messages.stream(model="claude-sonnet-4", max_tokens=1000,
                                           system=system, messages=rest) as stream:
        assert "stand-in answer" in "".join(stream.text_stream)
    (seen,) = stack.model_requests()
    within_window([seen])
    last = seen["body"]["messages"][-1]
    assert last["role"] == "user" and text_of(last["content"]) == rest[-1]["content"]
    assert seen["body"]["max_tokens"] == 1000


def test_twenty_turns_of_a_growing_conversation(stack):
    """gpt-4 has an 8k window: the conversation outgrows it around turn 10, and keeps going."""
    budgets: list = []
    listener = lambda workspace, budget, caller=None: budgets.append(budget)  # noqa: E731
    stack.state.events.budget_listeners.append(listener)
    try:
        msgs, dropped, cached, conversation = talk(stack.openai(), 20)
    finally:
        stack.state.events.budget_listeners.remove(listener)
    seen = stack.model_requests()
    assert len(seen) == 20
    within_window(seen)
    assert all(r["body"]["messages"][-1] == {"role": "user", "content": prose(100 + i, 600)}
               for i, r in enumerate(seen))
    # it outgrew the window and was fitted, in steps (a turn reports what it newly cut)
    assert dropped[0] == 0 and sum(dropped) > 0
    assert len(seen[-1]["body"]["messages"]) < len(msgs) - 1
    assert len(conversation) == 1  # one conversation, recognized turn after turn
    assert sum(1 for c in cached if c > 0) >= 10  # the provider's cache keeps being hit
    ours = [b for b in budgets if b.source == "gateway"]
    assert ours and ours[-1].conversation_id in conversation
    assert ours[-1].cached_tokens == cached[-1]
    assert ours[-1].used == seen[-1]["prompt_tokens"]  # the provider's count, reported


def talk(client, turns: int) -> tuple[list[dict], list[int], list[int], set]:
    msgs: list[dict] = [{"role": "system", "content": "Answer briefly."}]
    dropped, cached, conversation = [], [], set()
    for turn in range(turns):
        msgs.append({"role": "user", "content": prose(100 + turn, 600)})
        raw = client.chat.completions.with_raw_response.create(
            model="gpt-4", messages=msgs, max_tokens=500)
        answer = raw.parse()
        dropped.append(int(raw.headers["x-ctxlayer-dropped"]))
        conversation.add(raw.headers.get("x-ctxlayer-conversation"))
        cached.append(answer.usage.prompt_tokens_details.cached_tokens)
        msgs.append({"role": "assistant", "content": answer.choices[0].message.content})
    return msgs, dropped, cached, conversation


def test_pinned_content_over_the_budget_is_a_clear_400(stack):
    huge = prose(7, 250_000)
    with pytest.raises(anthropic.BadRequestError) as raised:
        stack.anthropic().messages.create(model="claude-sonnet-4", max_tokens=100, system=huge,
                                          messages=[{"role": "user", "content": "hi"}])
    assert raised.value.status_code == 400
    message = raised.value.body["error"]["message"]
    assert message.startswith("ctxlayer gateway: ") and "budget" in message
    assert stack.standin.requests() == []


def test_the_conversation_header_names_the_conversation(stack):
    body = {"model": "gpt-4o", "messages": [{"role": "user", "content": "hello there"}]}
    a = httpx.post(f"{stack.openai_url}/chat/completions", json=body,
                   headers={"x-ctxlayer-conversation": "my-chat-1"})
    assert a.headers["x-ctxlayer-conversation"] == "my-chat-1"
    b = httpx.post(f"{stack.openai_url}/chat/completions", json=body)
    assert b.headers["x-ctxlayer-conversation"] not in ("", "my-chat-1")


def test_a_streamed_anthropic_answer_reports_its_usage_with_cache_reads(stack):
    budgets: list = []
    workspace: list = []
    listener = lambda ws, budget, caller=None: (  # noqa: E731
        budgets.append(budget), workspace.append(ws))
    stack.state.events.budget_listeners.append(listener)
    client = stack.anthropic()
    msgs = [{"role": "user", "content": prose(500, 800)}]
    try:
        for turn in range(2):
            with client.messages.stream(model="claude-sonnet-4", max_tokens=200,
                                        system="Be kind.", messages=msgs) as stream:
                final = stream.get_final_message()
            msgs += [{"role": "assistant", "content": final.content[0].text},
                     {"role": "user", "content": prose(501 + turn, 50)}]
        u = final.usage
        assert u.cache_read_input_tokens > 0
        # the report follows the stream's end on the gateway's side: wait for it
        reported = wait_until(lambda: [b for b in budgets if b.source == "gateway"
                                       and b.cached_tokens == u.cache_read_input_tokens])
    finally:
        stack.state.events.budget_listeners.remove(listener)
    # the figures are ours, as every face says them (the status line's byLayer adds up to
    # them); the provider's count of the prompt (its system prompt counted its own way) went
    # to the calibration. Before, `used` was the provider's count: 4 more than byLayer's sum
    last = reported[-1]
    layers = last.by_layer
    assert last.used == layers.system + layers.workspace + layers.rules + layers.working + (
        layers.history)
    (listed,) = [c for c in stack.state.conversations.list(workspace[-1])
                 if c.conversation_id == last.conversation_id]
    assert listed.tokens == last.used
    billed = u.input_tokens + u.cache_read_input_tokens + (u.cache_creation_input_tokens or 0)
    assert billed != last.used  # the case: the provider counts the system prompt otherwise
    bias = stack.bias(workspace[-1], last.session_id)
    assert bias != 1.0 and (bias > 1.0) == (billed > last.used)


def wait_until(found, timeout: float = 15):
    """`found()` once it is not empty (an event awaited, not a timing asserted)."""
    deadline = time.monotonic() + timeout
    while not (result := found()):
        assert time.monotonic() < deadline, "the event never came"
        time.sleep(0.02)
    return result


def test_the_headers_count_the_messages_left_out_and_those_sent_shortened(stack):
    """Two long tool logs over a 128k window: the older one goes out outlined, nothing is
    left out, and the headers say so (`x-ctxlayer-dropped` alone said 0: nothing cut)."""
    def log(n: int, bad: int) -> str:
        lines = [f"12:{k // 60 % 60:02d}:{k % 60:02d} INFO worker-{k % 7} item {k} "
                 f"queue={k * 3} took {k % 90} ms" for k in range(n)]
        return "\n".join([*lines, f"ValueError: bad item {bad}"])

    def call(cid: str) -> dict:
        return {"role": "assistant", "content": None, "tool_calls": [{
            "id": cid, "type": "function", "function": {"name": "logs", "arguments": "{}"}}]}

    msgs = [{"role": "user", "content": "Why does the worker crash?"},
            call("call_a"), {"role": "tool", "tool_call_id": "call_a", "content": log(5000, 17)},
            call("call_b"), {"role": "tool", "tool_call_id": "call_b", "content": log(5000, 99)},
            {"role": "user", "content": "Which items failed?"}]
    assert tokens_of("gpt-4o", [m for m in msgs if m["content"]]) > 128_000
    tools = [{"type": "function", "function": {"name": "logs", "parameters": {
        "type": "object", "properties": {}}}}]
    raw = stack.openai().chat.completions.with_raw_response.create(
        model="gpt-4o", messages=msgs, tools=tools)
    assert raw.parse().choices
    (seen,) = stack.model_requests()
    within_window([seen])
    sent = seen["body"]["messages"]
    changed = [m for m in sent if m not in msgs]
    assert len(sent) == len(msgs) and len(changed) >= 1
    assert raw.headers["x-ctxlayer-dropped"] == "0"
    assert int(raw.headers["x-ctxlayer-shortened"]) == len(changed)


@pytest.mark.parametrize("order", ["document first", "text first", "a later turn"])
def test_a_text_document_attached_earlier_goes_out_outlined_never_summarized_whole(
        tmp_path, order):
    """It was a part of its message: the live path summarized the message to one line of
    identifiers (68 of the 4,096-token window's tokens sent), the user's file gone. Then a
    piece of its own, it was outlined only where it opened the chat: after the words that
    introduce it, or in a later turn, the summary took it (the outline step left every user
    message to the summary)."""
    from gateway_stack import small_stack

    lines = [f"def handler_{i}(x):  # step {i} of the pipeline" for i in range(400)]
    document = {"type": "document", "title": "handlers.py", "source": {
        "type": "text", "media_type": "text/plain", "data": "\n".join(lines)}}
    words = {"type": "text", "text": "What is it?"}
    attached = {"role": "user", "content": [words, document] if order == "text first"
                else [document, words]}
    opening = [{"role": "user", "content": "Hello."}, {"role": "assistant", "content": "Hi."}]
    msgs = [*(opening if order == "a later turn" else []), attached,
            {"role": "assistant", "content": "A pipeline of 400 handlers."},
            {"role": "user", "content": "What does the last one do?"}]
    with small_stack(tmp_path) as small:
        raw = small.anthropic().messages.with_raw_response.create(
            model="standin-small", max_tokens=512, messages=msgs)
        assert raw.parse().content
        (seen,) = small.model_requests()
    assert seen["status"] == 200 and seen["problems"] == []
    sent_msgs = seen["body"]["messages"]
    assert [text_of(m["content"]) for m in sent_msgs] == [text_of(m["content"]) for m in msgs]
    sent = next(b for b in sent_msgs[-3]["content"] if b["type"] == "document")
    assert {k: v for k, v in sent.items() if k != "source"} == {
        "type": "document", "title": "handlers.py"}
    kept = sent["source"]["data"].split("\n")
    assert kept[:3] == lines[:3] and lines[-1] in kept and 100 < len(kept) < len(lines)
    assert raw.headers["x-ctxlayer-shortened"] == "1" and raw.headers["x-ctxlayer-dropped"] == "0"


def test_a_chat_switched_to_a_model_with_room_for_all_of_it_goes_whole(tmp_path):
    """`/model` from a small window to a bigger one counted alike: the chat went on with the
    summaries of the small window (3 of 11 messages, 233 tokens sent where the window held
    all 16k), as README says it does not."""
    from gateway_stack import fresh_stack

    messages: list[dict] = []
    for turn in range(4):
        messages += [{"role": "user", "content": prose(turn, 1800)},
                     {"role": "assistant", "content": f"fixed file{turn}.py"}]
    messages.append({"role": "user", "content": "next?"})
    with fresh_stack(tmp_path, {"claude-haiku-4-5": 6000}) as stack:
        client = stack.anthropic()
        for model, extra in (("claude-haiku-4-5", []), ("claude-sonnet-4-5", [
                {"role": "assistant", "content": "ok"}, {"role": "user", "content": "and?"}])):
            messages += extra
            raw = client.messages.with_raw_response.create(model=model, max_tokens=500,
                                                           messages=messages)
            assert raw.parse().content
            seen = stack.model_requests()[-1]
            assert seen["status"] == 200 and seen["problems"] == []
            compacted = raw.headers["x-ctxlayer-compacted"] == "true"
            assert compacted == (model == "claude-haiku-4-5"), model
        assert [text_of(m["content"]) for m in seen["body"]["messages"]] == \
            [text_of(m["content"]) for m in messages]
