"""A starting gateway builds the encodings its providers' requests are counted with, so a
cold start's first request does not wait for a build (half a second on a 5 MB first request)."""

from __future__ import annotations

from gateway_stack import start_stack, stop_stack
from providers.standin import StandinThread

import ctxlayer.tokenizers as tokenizers


def test_a_starting_gateway_builds_the_encodings_of_the_providers_it_serves(world, monkeypatch):
    asked: list[list[str | None]] = []
    real = tokenizers.preload_in_turn
    monkeypatch.setattr(tokenizers, "preload_in_turn",
                        lambda models, quiet=None: asked.append(list(models))
                        or real(models, quiet=quiet))
    with StandinThread() as thread:
        gateway, state = start_stack(thread, world / "workspace", world / "state-start")
        stop_stack(thread, gateway, state)
    # in turn, the default model's first: built side by side, they slowed the first request
    [models] = asked
    encodings = list(dict.fromkeys(tokenizers.model_info(m).encoding for m in models))
    assert encodings == [tokenizers.model_info(m).encoding for m in ("gpt-4o", "claude-sonnet-4-5")]
