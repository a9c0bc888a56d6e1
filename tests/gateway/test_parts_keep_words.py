"""A turn whose bulk is not its text (Claude's thinking sealed in its signature, a web search's
results, an image in a tool's output), in a chat past its window: an outline shortens the
text and keeps the parts whole, but never cuts the text to nothing. The parts had counted
against the outline's cap (160 tokens here), so a 432-token thinking block left the answer
beside it no room: every answer was cut to "" to save its 17 tokens, the newest one included,
the request never came down to its target, and the summary said nothing of them."""

from __future__ import annotations

import base64
import json

from gateway_stack import fresh_stack, prose
from providers import standin_thinking

MODEL = "claude-sonnet-4-6"
WINDOW = 4096
MAX_TOKENS = 300
PNG = base64.b64encode(bytes.fromhex(
    "89504e470d0a1a0a0000000d49484452000000010000000108060000001f15c4890000000d49444154789c63"
    "60000002000154a24f5d0000000049454e44ae426082")).decode()


def _thinking_chat(turns: int, answer_words: int) -> list[dict]:
    """Claude Code's way: each answer after its thinking, the thinking's text omitted and
    the whole of it in the signature; then a question about the answers."""
    history: list[dict] = []
    for k in range(turns):
        history.append({"role": "user", "content": f"Question {k}: the capital of country {k}?"})
        answer = f"ANSWER{k}: the capital of country {k} is City{k}."
        if answer_words:
            answer += " " + prose(f"why{k}", answer_words) + f" END{k}."
        history.append({"role": "assistant", "content": [
            standin_thinking.block({"thinking": {"display": "omitted"}}, 250, k),
            {"type": "text", "text": answer}]})
    history.append({"role": "user", "content": "Which capital did you name first?"})
    return history


def _sent(stack, client, history: list[dict], **extra) -> tuple[str, dict]:
    raw = client.messages.with_raw_response.create(model=MODEL, max_tokens=MAX_TOKENS,
                                                   messages=history, **extra)
    assert raw.parse().content
    request = stack.model_requests()[-1]
    assert request["status"] == 200 and request["problems"] == [], request["problems"]
    assert int(raw.headers["x-ctxlayer-tokens"]) <= WINDOW - MAX_TOKENS
    return json.dumps(request["body"]), raw.headers


def test_answers_beside_hidden_thinking_reach_upstream(tmp_path):
    with fresh_stack(tmp_path, {MODEL: WINDOW}, windows={MODEL: WINDOW}) as stack:
        up, _ = _sent(stack, stack.anthropic(), _thinking_chat(8, 0))
    messages = json.loads(up)["messages"]
    answers = [m for m in messages if m["role"] == "assistant"]
    assert answers  # (every one of them had gone upstream as its thinking alone)
    for m in answers:
        said = [b["text"] for b in m["content"] if b["type"] == "text"]
        assert len(said) == 1 and said[0].startswith("ANSWER"), m["content"]
    assert "ANSWER7: the capital of country 7 is City7." in up  # the newest, whole
    # the summary standing for the older turns names what they answered
    summary = json.dumps(messages[0])
    assert "Summary of" in summary and "is City" in summary, summary


def test_a_long_answer_beside_thinking_keeps_its_head_and_tail(tmp_path):
    with fresh_stack(tmp_path, {MODEL: WINDOW}, windows={MODEL: WINDOW}) as stack:
        client = stack.anthropic()
        up, headers = _sent(stack, client, _thinking_chat(4, 300))
        cid = headers["x-ctxlayer-conversation"]
        outlined = [e for e in stack.standin.call(_why(stack, cid)) if e.action == "truncated"]
    assert outlined  # the chat is over its window: the answers are outlined
    for k in range(4):  # a 745-token answer had been cut to nothing, its thinking kept
        assert f"ANSWER{k}: the capital of country {k} is City{k}." in up
        assert f"END{k}." in up
    # each outline saves most of its words: none rewritten for a few tokens
    assert all(e.tokens_before - e.tokens_after > 300 for e in outlined), outlined


def test_answers_beside_web_search_results_reach_upstream(tmp_path):
    history: list[dict] = []
    for k in range(6):
        sid = f"srvtoolu_{k:02d}"
        history.append({"role": "user", "content": f"Question {k}: the capital of country {k}?"})
        history.append({"role": "assistant", "content": [
            {"type": "text", "text": "I'll search for that."},
            {"type": "server_tool_use", "id": sid, "name": "web_search",
             "input": {"query": f"capital of country {k}"}},
            {"type": "web_search_tool_result", "tool_use_id": sid, "content": [{
                "type": "web_search_result", "url": f"https://example.org/{k}",
                "title": f"Country {k}", "encrypted_content": "Eq" + prose(f"enc{k}", 200),
                "page_age": None}]},
            {"type": "text", "text": f"ANSWER{k}: the capital of country {k} is City{k}.",
             "citations": [{"type": "web_search_result_location",
                            "url": f"https://example.org/{k}", "title": f"Country {k}",
                            "encrypted_index": "Eo8", "cited_text": f"City{k} is the capital"}]}]})
    history.append({"role": "user", "content": "Which capital did you find first?"})
    tools = [{"type": "web_search_20250305", "name": "web_search", "max_uses": 3}]
    with fresh_stack(tmp_path, {MODEL: WINDOW}, windows={MODEL: WINDOW}) as stack:
        up, _ = _sent(stack, stack.anthropic(), history, tools=tools)
    assert [k for k in range(6) if f"City{k}" not in up] == []
    assert [k for k in range(3, 6) if f"ANSWER{k}: the capital" not in up] == []


def test_a_tool_output_holding_an_image_keeps_its_text_head_and_tail(tmp_path):
    items: list[dict] = [{"type": "message", "role": "user", "content": prose("task", 50)}]
    for i in range(3):
        items += [{"type": "function_call", "call_id": f"call_{i}", "name": "shot",
                   "arguments": "{}"},
                  {"type": "function_call_output", "call_id": f"call_{i}", "output": [
                      {"type": "input_text", "text": f"HEAD{i} " + prose(f"out{i}", 600)
                       + f" TAIL{i}"},
                      {"type": "input_image", "image_url": f"data:image/png;base64,{PNG}"}]}]
    with fresh_stack(tmp_path, {"standin-small": WINDOW},
                     windows={"standin-small": WINDOW}) as stack:
        raw = stack.openai().responses.with_raw_response.create(
            model="standin-small", input=items, max_output_tokens=200)
        assert raw.parse().output
        request = stack.model_requests()[-1]
    assert request["status"] == 200 and request["problems"] == [], request["problems"]
    assert int(raw.headers["x-ctxlayer-shortened"]) > 0  # over the window: outlined
    outputs = [it for it in request["body"]["input"] if it["type"] == "function_call_output"]
    for i, item in enumerate(outputs):  # the text had gone, the image alone kept
        text = " ".join(p["text"] for p in item["output"] if p["type"] == "input_text")
        assert f"HEAD{i}" in text and f"TAIL{i}" in text, item
        assert [p["type"] for p in item["output"]].count("input_image") == 1


async def _why(stack, cid: str) -> list:
    return stack.state.conversations.why(stack.gateway.caller.workspace, cid)
