"""The model's messages in a Responses chat's history, as gpt-5 and Codex send them: a run of
several `message` items (a commentary, then the final answer; a refusal, then an answer).
Fitted into a small window through the gateway, each message goes with its own text, part
types and fields (its `phase`, its `id`), or the audit names it: the strict stand-in takes
every request, turn after turn."""

from __future__ import annotations

import pydantic
from gateway_stack import prose
from openai.types.responses import ResponseInputItemParam

_SDK = pydantic.TypeAdapter(list[ResponseInputItemParam])


def _said(mid: str, text: str, phase: str | None = None) -> dict:
    content = [{"type": "output_text", "text": text, "annotations": []}] if text else [
        {"type": "refusal", "refusal": "I can't share that part."}]
    return {"type": "message", "role": "assistant", "id": mid, "status": "completed",
            **({"phase": phase} if phase else {}), "content": content}


def _chat(turns: int, run) -> list[dict]:
    items: list[dict] = []
    for k in range(turns):
        items += [{"role": "user", "content": prose(f"u{k}", 60)}, *run(k)]
    return [*items, {"role": "user", "content": "And the last question?"}]


def _why(stack, conversation_id: str) -> list:
    async def read() -> list:
        return stack.state.conversations.why(stack.gateway.caller.workspace, conversation_id)
    return stack.standin.call(read())


def test_a_commentary_and_a_final_answer_are_each_sent_as_they_are(small):
    items = _chat(5, lambda k: [_said(f"msg_c{k}", f"Let me think about {k}.", "commentary"),
                                _said(f"msg_f{k}", prose(f"final{k}", 400), "final_answer")])
    _SDK.validate_python(items)
    raw = small.openai().responses.with_raw_response.create(
        model="standin-small", input=items, max_output_tokens=300,
        extra_headers={"x-ctxlayer-conversation": "commentary"})
    assert raw.parse().status == "completed"
    assert int(raw.headers["x-ctxlayer-shortened"]) > 0
    seen = small.model_requests()[-1]
    assert seen["status"] == 200 and seen["problems"] == [], seen["problems"]
    sent = {i["id"]: i for i in seen["body"]["input"] if i.get("id")}
    named = {e.message_id for e in _why(small, "commentary")} | {
        e.summary.removeprefix("message ") for e in _why(small, "commentary")}
    for item in items:
        if item.get("type") != "message":
            continue
        assert item["id"] in sent or item["id"] in named, item["id"]
        if item["id"] in sent:
            assert sent[item["id"]]["phase"] == item["phase"]
    # the commentaries, short, are sent as they came; the long final answers shortened
    assert all(sent[f"msg_c{k}"] == items[3 * k + 1] for k in range(5))
    assert all(sent[f"msg_f{k}"]["content"][0]["text"].startswith(f"final{k}: ")
               for k in range(4))


def test_a_refusal_then_an_answer_stays_a_chat_the_provider_takes(small):
    """Before, the answer's text went into the refusal's message as a `text` part: 400, on
    this turn and every later one."""
    items = _chat(4, lambda k: [_said(f"msg_r{k}", ""),
                                _said(f"msg_f{k}", prose(f"final{k}", 500))])
    client = small.openai()
    for turn in range(2):
        raw = client.responses.with_raw_response.create(
            model="standin-small", input=items, max_output_tokens=300,
            extra_headers={"x-ctxlayer-conversation": "refusal"})
        done = raw.parse()
        assert done.status == "completed"
        assert turn or int(raw.headers["x-ctxlayer-shortened"]) > 0
        seen = small.model_requests()[-1]
        assert seen["status"] == 200 and seen["problems"] == [], seen["problems"]
        for item in seen["body"]["input"]:
            if item.get("id", "").startswith("msg_r"):
                assert item["content"] == items[1]["content"]  # the refusal, as it came
        items = [*items, *[o.model_dump(exclude_none=True) for o in done.output],
                 {"role": "user", "content": f"one more, {turn}"}]
