"""A starting gateway builds the encodings its providers' requests are counted with, so a
cold start's first request does not wait for a build (half a second on a 5 MB first request):
first the one of the model its chats used last, the others once no request is under way.
It also opens the sessions database before its first request needs it."""

from __future__ import annotations

import time

from gateway_stack import start_stack, stop_stack
from providers.standin import StandinThread

import ctxlayer.tokenizers as tokenizers
from ctxlayer.store import SessionStore


def started(world, monkeypatch, state_dir):
    """The encodings a gateway started on ``state_dir`` preloaded, in order, and whether it
    opened the sessions database before any request."""
    asked: list[tuple[list[str | None], object]] = []
    real = tokenizers.preload_in_turn

    def noted(models, quiet=None):
        asked.append((list(models), quiet))
        return real(models, quiet=quiet)

    monkeypatch.setattr(tokenizers, "preload_in_turn", noted)
    with StandinThread() as thread:
        gateway, state = start_stack(thread, world / "workspace", state_dir)
        deadline = time.monotonic() + 30
        while not state.sessions_started and time.monotonic() < deadline:
            time.sleep(0.01)
        opened = state.sessions_started
        stop_stack(thread, gateway, state)
    [(models, quiet)] = asked
    assert quiet == state.tokenizers.quiet  # the later builds wait for a quiet server
    encodings = list(dict.fromkeys(tokenizers.model_info(m).encoding for m in models))
    return encodings, opened


def test_a_new_gateway_builds_the_default_models_encoding_first(world, monkeypatch):
    encodings, opened = started(world, monkeypatch, world / "state-start")
    # in turn, the default model's first: built side by side, they slowed the first request
    assert encodings == [tokenizers.model_info(m).encoding for m in ("gpt-4o", "claude-sonnet-4-5")]
    assert opened, "the sessions database was opened without a request"


def test_a_restarted_gateway_builds_the_encoding_its_chats_used_last_first(world, monkeypatch):
    state_dir = world / "state-claude"
    store = SessionStore(state_dir)
    store.create_or_get(str(world / "workspace"), "chat", model="claude-sonnet-4-5",
                        mode="deep", budget=None, now="2026-01-01T00:00:00")
    store.close()
    encodings, _ = started(world, monkeypatch, state_dir)
    assert encodings == [tokenizers.model_info(m).encoding for m in ("claude-sonnet-4-5", "gpt-4o")]
