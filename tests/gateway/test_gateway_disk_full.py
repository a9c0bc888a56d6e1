"""With its state folder failing (a full disk), the gateway still serves a chat: every request
goes upstream fitted, and `x-ctxlayer-warning` says what was not kept. Before, each turn that
cut something answered 500 ("sessions database: the disk is full")."""

from __future__ import annotations

import sqlite3

import httpx2 as httpx
import pytest
from gateway_stack import prose, small_stack

from ctxlayer.statefiles import read_token, token_file


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


def test_a_state_folder_of_a_newer_ctxlayer_is_said_in_one_line_where_chats_are_listed(
        tmp_path):
    """`ctxlayer chats` got "500: Internal Server Error / Server got itself in trouble" (and the
    gateway's log a traceback): the listing and ctx/why let the store's error through."""
    (tmp_path / "state").mkdir()
    db = sqlite3.connect(tmp_path / "state" / "sessions.sqlite3")
    db.execute("PRAGMA user_version=99")
    db.commit()
    db.close()
    with small_stack(tmp_path) as stack:
        answer = stack.openai().chat.completions.create(
            model="standin-small", max_tokens=16, messages=[{"role": "user", "content": "hi"}])
        assert answer.choices  # the chat itself is served
        auth = {"Authorization": f"Bearer {read_token(token_file(stack.state.state_dir))}"}
        for route in ("/ctxlayer/conversations", "/ctxlayer/why?conversationId=x"):
            got = httpx.get(stack.anthropic_url + route, headers=auth, timeout=30)
            assert got.status_code == 503, (route, got.text)
            message = got.json()["error"]["message"]
            assert message.startswith("sessions database: ") and "newer" in message, message
            assert message.count("upgrade ctxlayer") == 1, message
