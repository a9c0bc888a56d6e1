"""With its state folder failing (a full disk), the gateway still serves a chat: every request
goes upstream fitted, and `x-ctxlayer-warning` says what was not kept. Before, each turn that
cut something answered 500 ("sessions database: the disk is full")."""

from __future__ import annotations

import sqlite3

import pytest
from gateway_stack import prose, small_stack


def test_a_chat_is_served_with_the_state_folder_full_and_told(tmp_path):
    with small_stack(tmp_path) as stack, pytest.MonkeyPatch.context() as mp:
        def full(*_args, **_kwargs):
            raise sqlite3.OperationalError("database or disk is full")

        for name in ("create_or_get", "add_audit", "put_conversation", "conversation",
                     "family_conversations"):
            mp.setattr(stack.state.sessions.store, name, full)
        client = stack.openai()
        messages: list[dict] = [{"role": "system", "content": "You help with code."}]
        warnings, cut = [], 0
        for turn in range(12):
            messages.append({"role": "user", "content": prose(f"question {turn}")})
            raw = client.chat.completions.with_raw_response.create(
                model="standin-small", max_tokens=16, messages=messages)
            answer = raw.parse().choices[0].message.content
            messages.append({"role": "assistant", "content": answer})
            warnings.append(raw.headers.get("x-ctxlayer-warning", ""))
            cut += int(raw.headers["x-ctxlayer-dropped"]) + int(
                raw.headers["x-ctxlayer-shortened"])
        sent = stack.model_requests()
    assert len(sent) == 12 and cut > 0  # the chat passed its window: steps cut it
    assert all("the state folder could not open this chat's session" in w
               and "the disk is full" in w for w in warnings), warnings
