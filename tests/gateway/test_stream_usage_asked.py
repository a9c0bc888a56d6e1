"""A Chat Completions client that streams without `stream_options.include_usage` (aider does)
gives the gateway no usage: no calibration for its chat, no sight of a server that cuts
prompts. The gateway asks for it upstream and reads it, and the client gets its stream as it
asked for it: no usage-only chunk, no `usage: null`. A server that refuses `stream_options`
(Azure's older API versions) gets the request as the client sent it, then and from then on."""

from __future__ import annotations

import json

import httpx2 as httpx
from gateway_stack import fresh_stack

MODEL = "gpt-4o"
QUESTION = [{"role": "user", "content": "What does add(2, 3) return?"}]


def _stream(stack, **extra) -> tuple[int, list[dict]]:
    """(status, the data of every event) of a raw streamed request through the gateway."""
    answer = httpx.post(stack.openai_url + "/chat/completions", json={
        "model": MODEL, "messages": QUESTION, "stream": True, **extra},
        headers={"Authorization": "Bearer sk-test"}, timeout=30)
    events = [line[len("data: "):] for line in answer.text.splitlines()
              if line.startswith("data: ")]
    return answer.status_code, [json.loads(e) for e in events if e != "[DONE]"]


def test_the_usage_is_asked_for_and_hidden_from_a_client_that_did_not_ask(tmp_path):
    with fresh_stack(tmp_path) as stack:
        status, chunks = _stream(stack)
        asked = stack.model_requests()[-1]["body"]
        _, with_usage = _stream(stack, stream_options={"include_usage": True})
        client_asked = stack.model_requests()[-1]["body"]
    assert status == 200 and asked["stream_options"] == {"include_usage": True}
    assert chunks and all(c["choices"] and "usage" not in c for c in chunks), chunks
    assert "".join(c["choices"][0]["delta"].get("content") or "" for c in chunks)
    # a client that asked gets it as the provider sent it
    assert client_asked["stream_options"] == {"include_usage": True}
    assert with_usage[-1]["choices"] == [] and with_usage[-1]["usage"]["prompt_tokens"] > 0


def test_a_client_that_said_no_usage_gets_none_and_its_chat_is_calibrated(tmp_path):
    """`stream_options: {"include_usage": false}` is a client that did not ask for the usage,
    as one that says nothing: the gateway asks upstream (the other options as they came),
    reads it for the chat's calibration, and the client gets the stream it asked for. Before,
    the request went as it came and the chat was never calibrated (the probe's c2)."""
    budgets: list = []
    with fresh_stack(tmp_path) as stack:
        stack.state.events.budget_listeners.append(
            lambda workspace, budget, caller=None: budgets.append((workspace, budget)))
        status, chunks = _stream(stack, stream_options={"include_usage": False,
                                                        "include_obfuscation": False})
        stack.reported()
        asked = stack.model_requests()[-1]["body"]
        reports = stack.reports(*_chat(budgets))
        _, unasked = _stream(stack)
    assert status == 200
    assert asked["stream_options"] == {"include_usage": True, "include_obfuscation": False}
    assert reports == 1  # the usage was read
    assert chunks and all(c["choices"] and "usage" not in c for c in chunks), chunks
    assert [sorted(c) for c in chunks] == [sorted(c) for c in unasked]
    assert "".join(c["choices"][0]["delta"].get("content") or "" for c in chunks)


def test_a_server_that_refuses_stream_options_gets_the_request_as_it_came(tmp_path):
    with fresh_stack(tmp_path, old_azure=(MODEL,)) as stack:
        first = _stream(stack)
        second = _stream(stack)
        sent = stack.model_requests()
    assert first[0] == 200 and second[0] == 200 and first[1] and second[1]
    # asked once, refused, sent again as it came; the next request is not asked again
    assert [r["status"] for r in sent] == [400, 200, 200]
    assert ["stream_options" in r["body"] for r in sent] == [True, False, False]


def test_an_answer_compressed_although_asked_plain_is_read_and_goes_as_asked(tmp_path):
    """A proxy before the provider gzips every answer, `Accept-Encoding: identity` or not.
    The gateway decodes it: the stream's usage is read (the chat's calibration takes the
    provider's count), the client that did not ask for it gets none, and answers come plain, without
    the Content-Encoding. Before, the bytes went on compressed: the usage was never read and
    the usage chunk reached the client."""
    budgets: list = []
    # the provider counts above us: its count, once read, goes to the calibration
    with fresh_stack(tmp_path, compressing=(MODEL,), counts={MODEL: 1.5}) as stack:
        stack.state.events.budget_listeners.append(
            lambda workspace, budget, caller=None: budgets.append((workspace, budget)))
        status, chunks = _stream(stack)
        stack.reported()
        streamed_reports = stack.reports(*_chat(budgets))
        whole = httpx.post(stack.openai_url + "/chat/completions", json={
            "model": MODEL, "messages": QUESTION + [{"role": "user", "content": "Again?"}]},
            headers={"Authorization": "Bearer sk-test"}, timeout=30)
        stack.reported()
        answered = stack.model_requests()[-1]
        answered_reports = stack.reports(*_chat(budgets))
    assert status == 200 and chunks and all(c["choices"] and "usage" not in c for c in chunks)
    assert streamed_reports == 1  # the streamed usage was read
    assert whole.status_code == 200 and "content-encoding" not in whole.headers
    assert whole.json()["usage"]["prompt_tokens"] == answered["prompt_tokens"]
    assert answered_reports == 2


def _chat(published: list) -> tuple[str, str]:
    """(workspace, session) of the last chat whose budget was published."""
    workspace, budget = published[-1]
    return workspace, budget.session_id


def test_the_usage_is_left_out_whatever_the_servers_spacing():
    """vLLM writes `"usage": null` with spaces and may end events with CRLF; a text that
    quotes the words is left alone (its quotes are escaped)."""
    from ctxlayer.gateway.forward import without_usage

    chunk = (b'data: {"id": "c1", "choices": [{"index": 0, "delta": {"content": '
             b'"say \\"usage\\": null, ok"}}], "usage": null}\r\n\r\n')
    last = b'data: {"id": "c1", "choices": [], "usage": {"prompt_tokens": 9}}\r\n\r\n'
    done = b"data: [DONE]\r\n\r\n"
    out = without_usage(chunk + last + done)
    assert out == chunk.replace(b', "usage": null', b"") + done
    assert json.loads(out.split(b"\r\n")[0][len(b"data: "):])["choices"][0]["delta"][
        "content"] == 'say "usage": null, ok'


def test_azures_filter_chunk_reaches_a_client_that_did_not_ask_for_the_usage(tmp_path):
    """Azure OpenAI opens a stream with a chunk of no choices that carries the prompt's
    `prompt_filter_results` (and `usage: null` once the usage is asked for). It was taken for
    the usage-only chunk and dropped: only that one is hidden, the filter results pass."""
    with fresh_stack(tmp_path, azure=(MODEL,)) as stack:
        status, chunks = _stream(stack)
        asked = stack.model_requests()[-1]
        _, with_usage = _stream(stack, stream_options={"include_usage": True})
    assert status == 200 and asked["body"]["stream_options"] == {"include_usage": True}
    first, *rest = chunks
    assert first["choices"] == [] and first["prompt_filter_results"][0]["prompt_index"] == 0
    assert "usage" not in first  # the `usage: null` the gateway's asking added
    assert rest and all(c["choices"] and "usage" not in c for c in rest), rest
    # the client that asked gets the stream as Azure sent it
    assert "prompt_filter_results" in with_usage[0] and with_usage[0]["usage"] is None
    assert with_usage[-1]["choices"] == [] and with_usage[-1]["usage"]["prompt_tokens"] > 0


def test_a_stream_of_cr_ended_lines_comes_whole_without_the_usage(tmp_path):
    """SSE lines may end in a bare CR. The gateway knew only LF and CRLF: the whole stream
    was one event, which held the usage-only chunk, and a client that did not ask for the
    usage got a 200 with an empty body."""
    budgets: list = []
    # the provider counts above us: its count, once read from the stream, goes to the calibration
    with fresh_stack(tmp_path, cr_lines=(MODEL,), counts={MODEL: 1.5}) as stack:
        stack.state.events.budget_listeners.append(
            lambda workspace, budget, caller=None: budgets.append((workspace, budget)))
        answer = httpx.post(stack.openai_url + "/chat/completions", json={
            "model": MODEL, "messages": QUESTION, "stream": True},
            headers={"Authorization": "Bearer sk-test"}, timeout=30)
        asked = stack.model_requests()[-1]
        stack.reported()
        reports = stack.reports(*_chat(budgets))
        streamed = stack.openai().chat.completions.create(model=MODEL, messages=QUESTION,
                                                          stream=True)
        words = "".join(c.choices[0].delta.content or "" for c in streamed)
    assert answer.status_code == 200 and asked["body"]["stream_options"]["include_usage"]
    assert b"\n" not in answer.content  # passed on as it came, its own line ends
    events = [e for e in answer.content.split(b"\r\r") if e]
    assert events[-1] == b"data: [DONE]"
    chunks = [json.loads(e.removeprefix(b"data: ")) for e in events[:-1]]
    assert len(chunks) >= 3 and all(c["choices"] and "usage" not in c for c in chunks)
    assert "".join(c["choices"][0]["delta"].get("content") or "" for c in chunks) == words
    assert words and reports == 1  # the usage was read


def test_only_the_usage_only_chunk_is_left_out():
    """The usage-only chunk goes, whatever the line ends; an event that says anything else
    with it, or does not read as a chunk, passes as it came."""
    from ctxlayer.gateway.forward import _event_end, without_usage

    usage = b'data: {"id": "c1", "choices": [], "usage": {"prompt_tokens": 9}}'
    passing = [
        b'data: {"choices": [], "prompt_filter_results": [{"prompt_index": 0}]}',
        b'data: {"choices": [], "usage": {"prompt_tokens": 9}, "said": "more"}',
        b'data: {"choices": [], "usage": {"prompt_tokens": 9}',  # cut: not JSON
        b': a comment naming "usage" and "choices": []',
    ]
    for end in (b"\n\n", b"\r\n\r\n", b"\r\r", b"\r\n\n", b"\n\r"):
        stream = b"".join(event + end for event in [*passing, usage, b"data: [DONE]"])
        assert without_usage(stream) == b"".join(e + end for e in [*passing, b"data: [DONE]"])
        assert _event_end(stream) == len(stream)
        assert _event_end(usage + end[:1]) == 0  # one line end: the event goes on
    # a CRLF is one line end, never a CR and an LF: an event of two lines is one event
    assert _event_end(b"event: delta\r\ndata: {}") == 0
    two_lines = b"event: delta\r\ndata: {}\r\n\r\n"
    assert _event_end(two_lines + b"event: x\r\ndata: y") == len(two_lines)
    assert without_usage(two_lines + usage + b"\r\n\r\n") == two_lines


async def test_a_responses_refusal_after_its_opening_events_is_found_whatever_the_line_ends():
    # `_OPENING`'s `^data:` matched after an LF only: with CR line ends the opening event was
    # taken for what the stream says, and its `response.failed` (over the window) went to the
    # client as a 200 stream, never fitted again
    from ctxlayer.gateway.forward import _first_event, first_refusal
    from ctxlayer.gateway.usage import StreamUsage

    failed = json.dumps({"type": "response.failed", "response": {"status": "failed", "error": {
        "code": "context_length_exceeded", "message": "Your input exceeds the context window "
        "of this model."}}}).encode()
    for end in (b"\n", b"\r", b"\r\n"):
        events = [b"event: response.created" + end + b'data: {"type": "response.created"}',
                  b"event: response.in_progress" + end
                  + b'data: {"type": "response.in_progress"}',
                  b"event: response.failed" + end + b"data: " + failed]

        async def chunks(events=events, end=end):
            for event in events:
                yield event + end + end

        first = await _first_event("http://up", chunks(), StreamUsage("responses"))
        assert failed in first, (end, first[-80:])
        refused = first_refusal("responses", first)
        assert refused is not None and b"context_length_exceeded" in refused, end


def test_what_goes_on_of_a_stream_over_the_limit_ends_at_its_last_events_end():
    # a 1.1 MB event, its end, then half the usage-only chunk: all of it went at once past
    # the limit, the half chunk could not be read as the usage-only one, and a client that
    # never asked for the usage got it (chunk.choices[0]: IndexError)
    from ctxlayer.gateway.forward import MAX_PENDING, writable

    big = b'data: {"choices": [{"delta": {"content": "' + b"A" * MAX_PENDING + b'"}}]}\n\n'
    half = b'data: {"id": "c1", "choices": [], "usa'
    assert writable(big + half) == len(big)
    assert writable(big[:-2]) == len(big) - 2  # one event over the limit goes on as it comes
    assert writable(big[:100]) == 0  # under it, an event waits for its end
