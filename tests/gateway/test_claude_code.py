"""Claude Code on every model: `role: "system"` messages between turns (the
`mid-conversation-system` beta) are passed through the gateway byte for byte and counted, the
`context-1m-*` beta opens the 1M window where the model has one (Claude Code's default model
has it with no beta), and `[gateway.models]` overrides a model's window. The official Anthropic
SDK drives the real gateway; the strict stand-in refuses what Anthropic refuses (a system
message between turns without the beta)."""

from __future__ import annotations

import json

import anthropic
import httpx2 as httpx
import pytest
from gateway_stack import start_stack, stop_stack
from providers.standin import StandinThread

from ctxlayer.statefiles import read_token, token_file

MID = "mid-conversation-system-2026-04-07"
LONG = "context-1m-2025-08-07"
REMINDER = {"role": "system", "content": [
    {"type": "text", "text": "The user switched to plan mode: do not edit files."}]}


def chat(*extra: dict) -> list[dict]:
    return [{"role": "user", "content": [{"type": "text", "text": "list the files"}]},
            REMINDER,
            {"role": "assistant", "content": [{"type": "text", "text": "a.py and b.py"}]},
            {"role": "user", "content": [{"type": "text", "text": "which is longer?"}]}, *extra]


def test_the_stand_in_refuses_a_system_message_between_turns_without_the_beta(stack):
    body = {"model": "claude-opus-4-8", "max_tokens": 64, "messages": chat()}
    headers = {"x-api-key": "k", "anthropic-version": "2023-06-01"}
    plain = httpx.post(stack.standin.anthropic + "/v1/messages", json=body, headers=headers)
    assert plain.status_code == 400 and "role" in plain.text
    beta = httpx.post(stack.standin.anthropic + "/v1/messages", json=body,
                      headers=headers | {"anthropic-beta": f"{MID},{LONG}"})
    assert beta.status_code == 200, beta.text
    misplaced = dict(body, messages=[REMINDER, *chat()])
    bad = httpx.post(stack.standin.anthropic + "/v1/messages", json=misplaced,
                     headers=headers | {"anthropic-beta": MID})
    assert bad.status_code == 400 and "first message" in bad.text


@pytest.mark.parametrize("model", ["claude-opus-4-8", "claude-sonnet-4-5-20250929",
                                   "claude-haiku-4-5"])
def test_claude_code_system_messages_between_turns_go_through_unchanged(stack, model):
    client = stack.anthropic()
    raw = client.beta.messages.with_raw_response.create(
        model=model, max_tokens=256, system="You are Claude Code.", messages=chat(),
        betas=[MID, LONG], metadata={"user_id": f"user_1_session_{model}"})
    assert raw.parse().content[0].text.startswith("stand-in answer")
    (seen,) = stack.model_requests()
    assert seen["status"] == 200 and seen["problems"] == []
    assert MID in seen["headers"]["anthropic-beta"]
    assert seen["body"]["messages"][1] == REMINDER  # in place, byte for byte
    assert seen["body"]["system"] in ("You are Claude Code.", [
        {"type": "text", "text": "You are Claude Code.", "cache_control": {"type": "ephemeral"}}])
    assert int(raw.headers["x-ctxlayer-tokens"]) > len(REMINDER["content"][0]["text"].split())


def bearer(state_dir) -> dict[str, str]:
    """The token /ctxlayer/* asks for: the state folder's, as `ctxlayer chats` sends it."""
    return {"Authorization": f"Bearer {read_token(token_file(state_dir))}"}


def plain(value):
    if isinstance(value, dict):
        return {k: plain(v) for k, v in value.items() if k != "cache_control"}
    if isinstance(value, list):
        return [plain(v) for v in value]
    return value


def conversation_budget(stack, cid: str) -> int:
    listing = httpx.get(stack.gateway_url + "/ctxlayer/conversations",
                        headers=bearer(stack.state.state_dir)).json()
    return next(c["budget"] for c in listing["conversations"] if c["conversationId"] == cid)


@pytest.fixture
def gateway_url(stack):
    host = stack.anthropic_url
    stack.gateway_url = host
    return host


@pytest.mark.parametrize("model,betas,window", [
    ("claude-sonnet-4-5-20250929", [LONG], 1_000_000),
    ("claude-opus-4-6", [LONG], 1_000_000),
    ("claude-opus-5-5", [], 1_000_000),  # its own window: 1M with no beta (it was 200k)
    ("claude-sonnet-4-6", [], 1_000_000),
    ("claude-sonnet-4-5-20250929", [], 200_000),
    ("claude-opus-4-5", [LONG], 200_000),  # no 1M window: the beta changes nothing
    ("claude-haiku-4-5", [LONG], 200_000),
])
# the SDK says Opus 4.5 is deprecated (its end of life 2027-01-22): a window, not a warning, is
# what this test reads
@pytest.mark.filterwarnings("ignore:The model 'claude-opus-4-5' is deprecated")
def test_the_1m_beta_opens_the_1m_window(stack, gateway_url, model, betas, window):
    raw = stack.anthropic().beta.messages.with_raw_response.create(
        model=model, max_tokens=32_000, messages=[{"role": "user", "content": "hi"}],
        betas=betas or anthropic.NOT_GIVEN, extra_headers={
            "x-ctxlayer-conversation": f"window-{model}-{bool(betas)}"})
    assert conversation_budget(stack, raw.headers["x-ctxlayer-conversation"]) == \
        window - 32_000


def test_gateway_models_overrides_a_window_and_the_fit_keeps_system_messages(tmp_path):
    """`[gateway.models]` wins over the table and the beta: the request is fitted to it (the
    stand-in, given the same window, refuses anything larger), and the system message between
    turns stays, in a valid place."""
    root = tmp_path / "ws"
    root.mkdir()
    (tmp_path / "state").mkdir()
    with StandinThread(windows={"claude-opus-4-8": 3000}) as thread:
        gateway, state = start_stack(thread, root, tmp_path / "state",
                                     models={"claude-opus-4-8": 3000})
        try:
            client = anthropic.Anthropic(base_url=gateway.urls.anthropic, api_key="k",
                                         max_retries=0, timeout=30)
            long = " ".join(f"line {i} of a long build log" for i in range(2000))
            messages = [{"role": "user", "content": "build it"}, REMINDER,
                        {"role": "assistant", "content": long},
                        {"role": "user", "content": "and now?"}]
            raw = client.beta.messages.with_raw_response.create(
                model="claude-opus-4-8", max_tokens=500, messages=messages, betas=[MID, LONG])
            assert int(raw.headers["x-ctxlayer-tokens"]) <= 2500
            listing = httpx.get(gateway.urls.anthropic + "/ctxlayer/conversations",
                                headers=bearer(state.state_dir)).json()
            assert listing["conversations"][0]["budget"] == 2500
            (sent,) = [r for r in thread.requests() if r["path"] == "/v1/messages"]
            assert sent["status"] == 200 and sent["problems"] == []
            kept = sent["body"]["messages"]
            # kept whole (a cache breakpoint may be added to it: the client set none)
            assert [plain(m) for m in kept if m["role"] == "system"] == [REMINDER]
            assert len(json.dumps(sent["body"])) < len(json.dumps(messages))
        finally:
            stop_stack(thread, gateway, state)


def test_gateway_models_is_read_from_ctxlayer_toml_a_bad_entry_named(tmp_path):
    from ctxlayer.config import load_config

    (tmp_path / "ctxlayer.toml").write_text(
        '[gateway.models]\n"claude-opus-4-8" = 200000\n"gpt-4o" = -5\n')
    config, problems = load_config(tmp_path, tmp_path / "no-user-config")
    assert config.gateway.models == {"claude-opus-4-8": 200000}
    assert len(problems) == 1 and "gateway.models.gpt-4o" in problems[0]
