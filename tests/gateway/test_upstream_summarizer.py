"""`[gateway] summarizer = "upstream"`: an agent loop through the real gateway to the strict
stand-in crosses `precompact_at`; the chat's own upstream, with the chat's key and
`summarizer_model`, writes the next summary chunk in the background, and the offline one
stands in when it fails or misreads."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from pathlib import Path

import pytest
from gateway_stack import Stack, start_stack, stop_stack
from providers.standin import StandinThread

CHAT, SMALL = "gpt-4o", "gpt-4o-mini"
KEY = "sk-upsum-do-not-leak-7f3a9c"
#: on the topic of the tool outputs below (the off-topic check reads their words)
UPSTREAM_TEXT = ("Decided: the retry queue keeps item ordering; every case test passed. "
                 "Open: the backoff of the retry queue.")
TOOLS = [{"type": "function", "function": {
    "name": "run", "description": "run a command",
    "parameters": {"type": "object", "properties": {"cmd": {"type": "string"}}}}}]


def _output(k: int) -> str:
    lines = [f"ran pytest -k case_{k}: tests/test_queue.py::test_case_{k} PASSED "
             f"(src/queue_{k}.py line {10 * k})"]
    lines += [f"retry queue step {j} of case {k}: item ordering kept, backoff {j * k} ms"
              for j in range(14)]
    return "\n".join(lines)


@pytest.fixture
def make_stack(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator:
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    made: list = []

    def make(name: str, models: dict | None = None, windows: dict | None = None,
             standin: dict | None = None, **config) -> Stack:
        root, state_dir = tmp_path / name / "workspace", tmp_path / name / "state"
        root.mkdir(parents=True)
        state_dir.mkdir()
        thread = StandinThread(windows=windows or {}, **(standin or {})).__enter__()
        gateway, state = start_stack(thread, root, state_dir, models=models or {CHAT: 8000},
                                     **config)
        made.append((thread, gateway, state))
        return Stack(thread, gateway, state)

    yield make
    for thread, gateway, state in made:
        stop_stack(thread, gateway, state)
        thread.__exit__(None, None, None)


def _turn(stack: Stack, messages: list, k: int) -> tuple[dict, str]:
    """One round of the agent loop: the request, then the tool call and its output appended
    (the same every run, whatever the stand-in answers). Returns (the stand-in's record of
    the chat request, x-ctxlayer-compacted)."""
    raw = stack.openai(key=KEY).chat.completions.with_raw_response.create(
        model=CHAT, messages=messages, tools=TOOLS, max_tokens=1000,
        extra_headers={"x-ctxlayer-conversation": "loop"})
    raw.parse()
    messages.append({"role": "assistant", "content": None, "tool_calls": [{
        "id": f"call_{k}", "type": "function",
        "function": {"name": "run", "arguments": f'{{"cmd": "pytest -k case_{k}"}}'}}]})
    messages.append({"role": "tool", "tool_call_id": f"call_{k}", "content": _output(k)})
    chat = [r for r in stack.standin.requests() if r["body"] and r["body"]["model"] == CHAT]
    return chat[-1], raw.headers["x-ctxlayer-compacted"]


def _start() -> list:
    return [{"role": "system", "content": "You are a careful coding agent."},
            {"role": "user", "content": "Make the retry queue keep item ordering; run the "
                                        "case tests one by one."}]


def _summary(request: dict) -> str | None:
    got = [m["content"] for m in request["body"]["messages"]
           if m["role"] == "user" and str(m["content"]).startswith("[Summary of")]
    return got[0] if got else None


def _summarizations(stack: Stack) -> list[dict]:
    return [r for r in stack.standin.requests() if r["body"] and r["body"]["model"] == SMALL]


def _loop_until_summary(stack: Stack, messages: list, start: int = 0) -> tuple[str, int]:
    for k in range(start, 60):
        request, _ = _turn(stack, messages, k)
        text = _summary(request)
        if text is not None:
            return text, k
    raise AssertionError("the loop never compacted")


def _settle(stack: Stack) -> None:
    stack.thread.call(stack.state.conversations.settled())


def test_upstream_writes_the_next_chunk_in_the_background(make_stack, caplog) -> None:
    caplog.set_level(logging.DEBUG)
    stack = make_stack("up", summarizer="upstream", summarizer_model=SMALL)
    stack.standin.for_model(SMALL, text=UPSTREAM_TEXT, hold=True)
    messages = _start()
    k = 0
    while not _summarizations(stack):  # until the loop crosses precompact_at
        _, compacted = _turn(stack, messages, k)
        assert compacted == "false"
        k += 1
        assert k < 40, "never asked for a summary"
    # the summary is held by the stand-in: the chat goes on, its answers do not wait for it
    _, compacted = _turn(stack, messages, k)
    k += 1
    held = _summarizations(stack)
    assert len(held) == 1 and held[0]["status"] is None  # still unanswered
    stack.standin.release_model(SMALL)
    stack.wait_for(lambda rs: any(r["body"] and r["body"]["model"] == SMALL and r["status"]
                                  for r in rs), "the summary answered")
    _settle(stack)
    text, _ = _loop_until_summary(stack, messages, k)
    asked = _summarizations(stack)
    assert len(asked) == 1  # exactly one, for the one step
    assert asked[0]["headers"]["authorization"] == f"Bearer {KEY}"
    assert asked[0]["body"]["stream"] is False
    assert 0 < asked[0]["body"]["max_tokens"] < 1000
    assert UPSTREAM_TEXT in text
    # the facts of what it stands for are beside it, made as for any chunk
    assert "Facts ledger" in text or "Actions" in text
    why = stack.thread.call(_why(stack))
    assert any("summary written by the upstream's 'gpt-4o-mini'" in e.reason for e in why)
    # the key is in no log line and no file of the state folder
    assert all(KEY not in r.getMessage() for r in caplog.records)
    for f in stack.state.state_dir.rglob("*"):
        if f.is_file():
            assert KEY.encode() not in f.read_bytes(), f


async def _why(stack: Stack) -> list:
    return stack.state.conversations.why(stack.gateway.caller.workspace, "loop")


def _offline_chunk(make_stack, name: str, **config) -> tuple[str, Stack]:
    stack = make_stack(name, **config)
    messages = _start()
    for k in range(60):
        _turn(stack, messages, k)
        _settle(stack)  # whatever is asked in the background has its answer before the next
        if _summary(stack.model_requests()[-1]) is not None:
            return _summary(stack.model_requests()[-1]), stack  # type: ignore[return-value]
    raise AssertionError("never compacted")


@pytest.mark.parametrize("script", [{"status": 500}, {"text": "Lorem ipsum dolor sit amet, "
                                                       "consectetur adipiscing elit."}],
                         ids=["fails", "off-topic"])
def test_the_offline_chunk_stands_in(make_stack, script) -> None:
    offline, plain = _offline_chunk(make_stack, "offline")
    # offline (the default): no request but the chat's own
    assert all(r["body"]["model"] == CHAT for r in plain.standin.requests())
    stack = make_stack("up", summarizer="upstream", summarizer_model=SMALL)
    stack.standin.for_model(SMALL, **script)
    messages = _start()
    for k in range(60):
        asked = len(_summarizations(stack))  # everything asked before this turn has settled
        request, _ = _turn(stack, messages, k)
        text = _summary(request)
        if text is not None:
            break
        _settle(stack)
    # one ask before the step, for what it took (a step that lands past precompact_at asks
    # for the next chunk right after it: that ask is not this step's)
    assert asked == 1
    assert text == offline  # the same bytes
    why = stack.thread.call(_why(stack))
    said = "failed: the upstream answered 500" if "status" in script else "was refused: off-topic"
    assert any(said in e.reason for e in why), [e.reason for e in why]


@pytest.mark.parametrize("fmt", ["openai", "anthropic", "responses"])
def test_each_providers_summary_request_is_valid_and_its_answer_read(fmt: str) -> None:
    """Every provider row's summary request passes the strict stand-in as its provider's
    request, and the text of the answer is read back from where that provider puts it."""
    import json
    import urllib.request

    from ctxlayer.gateway.providers import BY_FORMAT

    provider = BY_FORMAT[fmt]
    body = provider.summary_request(SMALL, "Summarize the conversation.",
                                    "user: fix the retry queue", 64)
    with StandinThread() as thread:
        standin = thread.standin
        standin.for_model(SMALL, text=UPSTREAM_TEXT)
        base = standin.anthropic + "/v1" if fmt == "anthropic" else standin.openai
        headers = ({"x-api-key": KEY, "anthropic-version": "2023-06-01"}
                   if fmt == "anthropic" else {"authorization": f"Bearer {KEY}"})
        request = urllib.request.Request(f"{base}/{provider.upstream}",
                                         data=json.dumps(body).encode(), method="POST",
                                         headers={**headers,
                                                  "content-type": "application/json"})
        with urllib.request.urlopen(request, timeout=30) as got:
            status, answer = got.status, json.loads(got.read())
    assert status == 200, answer
    assert provider.answer_text(answer) == UPSTREAM_TEXT


#: an answer's `content` that is no text: a number, an object, a list of parts none of them
#: holding a string
NOT_TEXT = {"int": 12345, "dict": {"text": UPSTREAM_TEXT},
            "list of non-text": [{"type": "text", "text": 7}]}


def _loop_settled(stack: Stack, messages: list) -> tuple[str, int]:
    """Turns, each with what it set going in the background settled, until one compacts."""
    for k in range(60):
        request, _ = _turn(stack, messages, k)  # a 500 raises here
        _settle(stack)
        text = _summary(request)
        if text is not None:
            return text, k
    raise AssertionError("the loop never compacted")


def test_an_answer_of_text_parts_is_read_as_its_text(make_stack) -> None:
    """Chat Completions' `content` as a list of parts (Mistral's Magistral answers its thinking
    and its text so): the text parts are the summary, the thinking is not."""
    stack = make_stack("parts", summarizer="upstream", summarizer_model=SMALL)
    stack.standin.for_model(SMALL, content=[
        {"type": "thinking", "thinking": [{"type": "text", "text": "Let me think it over."}]},
        {"type": "text", "text": UPSTREAM_TEXT[:60]}, {"type": "text", "text": UPSTREAM_TEXT[60:]}])
    text, _ = _loop_settled(stack, _start())
    assert UPSTREAM_TEXT in text and "think it over" not in text
    why = stack.thread.call(_why(stack))
    assert any(e.reason.endswith("summary written by the upstream's 'gpt-4o-mini'")
               for e in why), [e.reason for e in why]


@pytest.mark.parametrize("content", list(NOT_TEXT.values()), ids=list(NOT_TEXT))
def test_an_answer_that_is_no_text_leaves_the_offline_chunk(make_stack, content) -> None:
    """A summary whose `content` is no text: every chat turn is answered as the provider
    answered it (the answer kept for the step made each later turn a 500, 19 of 40), the
    offline summary stands in and the audit says why."""
    offline, _ = _offline_chunk(make_stack, "offline")
    stack = make_stack("up", summarizer="upstream", summarizer_model=SMALL)
    stack.standin.for_model(SMALL, content=content)
    messages = _start()
    text, k = _loop_settled(stack, messages)
    assert text == offline
    for j in range(k + 1, k + 12):  # and on past the step, while the answer is kept
        _turn(stack, messages, j)
        _settle(stack)
    assert all(r["status"] == 200 for r in stack.standin.requests())
    why = stack.thread.call(_why(stack))
    said = "failed: the upstream's answer has no text where the provider puts it"
    assert any(said in e.reason for e in why), [e.reason for e in why]


def test_a_failure_keeping_the_summary_never_fails_the_answered_turn(
        make_stack, monkeypatch, caplog) -> None:
    """Whatever fails on the summarizer's path after a turn's answer is logged: the client
    has the answer the provider gave (and billed), the offline summary stands in."""
    import ctxlayer.state.upkeep as upkeep

    def broken(*args, **kw):
        raise RuntimeError("a bug in keeping the summary")

    monkeypatch.setattr(upkeep, "take_summary", broken)
    offline, _ = _offline_chunk(make_stack, "offline")
    stack = make_stack("up", summarizer="upstream", summarizer_model=SMALL)
    stack.standin.for_model(SMALL, text=UPSTREAM_TEXT)
    messages = _start()
    text, k = _loop_settled(stack, messages)
    for j in range(k + 1, k + 8):
        _turn(stack, messages, j)
        _settle(stack)
    assert text == offline
    assert any("a bug in keeping the summary" in (r.exc_text or "") or
               (r.exc_info and "a bug in keeping" in str(r.exc_info[1]))
               for r in caplog.records)


@pytest.mark.parametrize(("fmt", "answer"), [
    ("openai", {"choices": [{"message": {"content": 12345}}]}),
    ("openai", {"choices": [{"message": {"content": [{"type": "text", "text": None}]}}]}),
    ("anthropic", {"content": [{"type": "text", "text": {"t": "x"}}]}),
    ("anthropic", {"content": "Decided: a string where the blocks go"}),
    ("responses", {"output": [{"type": "message", "content": [
        {"type": "output_text", "text": 3}]}]}),
    ("responses", {"output": {"type": "message"}}),
    ("responses", {"output": [{"type": "message", "content": "not a list"}]}),
])
def test_each_providers_reader_says_an_answer_of_no_text_failed(fmt: str, answer: dict) -> None:
    import json

    from ctxlayer.gateway.providers import BY_FORMAT
    from ctxlayer.gateway.upsum import SummaryFailed, answer_text

    with pytest.raises(SummaryFailed, match="no text where the provider puts it"):
        answer_text(BY_FORMAT[fmt], json.dumps(answer).encode())


@pytest.mark.parametrize(("fmt", "answer"), [
    ("openai", {"choices": [{"message": {"content": [
        {"type": "thinking", "thinking": "hm"}, {"type": "text", "text": "Decided: x."}]}}]}),
    ("anthropic", {"content": [{"type": "thinking", "thinking": "hm", "signature": "s"},
                               {"type": "text", "text": "Decided: x."}]}),
    ("responses", {"output": [{"type": "reasoning", "summary": []}, {
        "type": "message", "content": [{"type": "output_text", "text": "Decided: x."}]}]}),
])
def test_each_providers_reader_takes_the_text_blocks(fmt: str, answer: dict) -> None:
    import json

    from ctxlayer.gateway.providers import BY_FORMAT
    from ctxlayer.gateway.upsum import answer_text

    assert answer_text(BY_FORMAT[fmt], json.dumps(answer).encode()) == "Decided: x."


@pytest.mark.parametrize("model", ["gpt-5", "o3"])
def test_a_reasoning_models_summary_asks_max_completion_tokens(make_stack, model) -> None:
    """OpenAI's reasoning models refuse `max_tokens` (the stand-in too): the summary request
    asks `max_completion_tokens`, the summary's size and room for the model's thinking, both
    within the 8000-token window `[gateway] models` gives it (it asked 16k beyond the summary
    here, over the window: a real upstream refuses every such summary)."""
    from ctxlayer.gateway.upsum import MIN_REASONING_ROOM

    stack = make_stack("reasoning", models={model: 8000}, summarizer="upstream")
    messages = _start()
    asked: list = []
    for k in range(40):
        stack.openai(key=KEY).chat.completions.create(
            model=model, messages=messages, tools=TOOLS, max_completion_tokens=1000,
            extra_headers={"x-ctxlayer-conversation": "loop"})
        messages += [{"role": "assistant", "content": None, "tool_calls": [{
            "id": f"call_{k}", "type": "function",
            "function": {"name": "run", "arguments": f'{{"cmd": "pytest -k case_{k}"}}'}}]},
            {"role": "tool", "tool_call_id": f"call_{k}", "content": _output(k)}]
        _settle(stack)
        asked = [r for r in stack.standin.requests() if "tools" not in r["body"]]
        if asked:
            break
    assert asked, "never asked for a summary"
    body = asked[0]["body"]
    assert "max_tokens" not in body
    assert MIN_REASONING_ROOM < body["max_completion_tokens"]
    assert asked[0]["prompt_tokens"] + body["max_completion_tokens"] <= 8000
    assert asked[0]["status"] == 200, asked[0]["problems"]


@pytest.mark.parametrize("known", [True, False], ids=["configured", "stated by its refusal"])
def test_the_transcript_is_fitted_to_the_summarizers_window(make_stack, known) -> None:
    """A summarizer whose window is smaller than what a step takes (a 1M-window Sonnet chat,
    Haiku's 200k, scaled down): what it is shown is fitted to its window, the oldest messages
    as their offline summary, and the audit says so. Its window known from `[gateway] models`
    (or the table), or stated by the provider when it refused a first summary as over it."""
    models = {CHAT: 24000, SMALL: 5000} if known else {CHAT: 24000}
    stack = make_stack("fit", models=models, windows={SMALL: 5000}, summarizer="upstream",
                       summarizer_model=SMALL)
    stack.standin.for_model(SMALL, text=UPSTREAM_TEXT)
    messages = _start()
    upstream = "summary written by the upstream's 'gpt-4o-mini' (shown the oldest "
    for k in range(200):
        request, _ = _turn(stack, messages, k)
        _settle(stack)
        # every chunk (the step a refused summary left to the offline one is one of them)
        text = "\n".join(m["content"] for m in request["body"]["messages"]
                         if m["role"] == "user" and str(m["content"]).startswith("[Summary of"))
        reasons = [e.reason for e in stack.thread.call(_why(stack))]
        if any(upstream in r for r in reasons):
            break
    else:
        raise AssertionError(f"no summary by the upstream: {_summarizations(stack)}")
    asked = _summarizations(stack)
    refused = [r for r in asked if r["status"] != 200]
    assert len(refused) == (0 if known else 1), [r["problems"] for r in refused]
    fitted = [r for r in asked if r["status"] == 200]
    assert fitted and all(r["prompt_tokens"] + r["body"]["max_tokens"] <= 5000 for r in fitted)
    shown = fitted[-1]["body"]["messages"][1]["content"]
    assert shown.startswith("[The ") and "earlier messages, as their extractive summary" in shown
    assert UPSTREAM_TEXT in text and "Facts ledger" in text
    assert any("to fit its window of 5000 tokens)" in r for r in reasons), reasons


def _first_asked(stack: Stack) -> int:
    """The turn of the loop whose answer set the summary ahead of need going."""
    messages = _start()
    for k in range(40):
        _turn(stack, messages, k)
        _settle(stack)
        if _summarizations(stack):
            return k
    raise AssertionError("never asked for a summary")


def test_precompact_at_says_when_the_next_summary_is_set_going(make_stack, tmp_path) -> None:
    """PROTOCOL.md names it as a setting; it was a constant (`[gateway] precompact_at` was an
    unknown setting, ignored)."""
    usual = _first_asked(make_stack("usual", summarizer="upstream", summarizer_model=SMALL))
    config = tmp_path / "config" / "ctxlayer"
    config.mkdir(parents=True)
    (config / "ctxlayer.toml").write_text("[gateway]\nprecompact_at = 0.3\n")
    early = _first_asked(make_stack("early", summarizer="upstream", summarizer_model=SMALL))
    assert early < usual, (early, usual)


def test_a_summary_answered_compressed_though_asked_plain_is_read(make_stack) -> None:
    """The chat's answers were decoded on the way, the summary's not: every summary of an
    upstream that compresses anyway failed as "no text where the provider puts it"."""
    stack = make_stack("gzip", summarizer="upstream", summarizer_model=SMALL,
                       standin={"compressing": (CHAT, SMALL)})
    stack.standin.for_model(SMALL, text=UPSTREAM_TEXT)
    messages = _start()
    text, _ = _loop_until_summary(stack, messages)
    assert _summarizations(stack) and UPSTREAM_TEXT in text
