"""ctx/inspect on the real daemon over stdio: a page for a conversation, clear errors for bad
input, and the page agrees with ctx/trim about what is dropped."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from ctxlayer_client.aio import RpcError
from ctxlayer_client.sync import Client

SERVE = [sys.executable, "-m", "ctxlayer", "serve"]


@pytest.fixture(scope="module")
def daemon(tmp_path_factory):
    base = tmp_path_factory.mktemp("inspect")
    ws = base / "ws"
    ws.mkdir()
    (ws / "README.md").write_text("# demo\n")
    subprocess.run(["git", "init", "-q"], cwd=ws, check=True)
    env = {"HOME": str(base), "XDG_CONFIG_HOME": str(base / "config"),
           "CTXLAYER_STATE_DIR": str(base / "state"), "GIT_CONFIG_NOSYSTEM": "1",
           "GIT_CONFIG_GLOBAL": os.devnull}
    with Client.spawn(SERVE, ws, env=env, options={"model": "gpt-4o"}, timeout=60) as client:
        yield client


def chat(n: int) -> list[dict]:
    msgs = [{"role": "system", "content": "You are terse.", "id": "sys"}]
    for i in range(n):
        role = "user" if i % 2 == 0 else "assistant"
        msgs.append({"role": role, "content": f"message {i} " + "word " * (20 + i), "id": f"m{i}"})
    return msgs


def test_inspect_returns_the_page_with_the_trims_drops(daemon):
    messages = chat(12)
    trimmed = daemon.request("ctx/trim", {"messages": messages, "budget": 200})
    dropped_ids = {e["messageId"] for e in trimmed["dropped"]}
    assert dropped_ids  # the budget is tight enough to drop something
    page = daemon.request("ctx/inspect", {"messages": messages, "budget": 200})
    html = page["html"]
    assert html.startswith("<!doctype html>")
    assert html.count('<li class="msg"') == len(messages)
    for k, m in enumerate(messages):
        state = "dropped" if m["id"] in dropped_ids else "kept"
        assert f'data-index="{k}"' in html
        assert f'data-index="{k}" data-class=' in html
        row = html.split(f'data-index="{k}" ', 1)[1].split(">", 1)[0]
        assert f'data-state="{state}"' in row, (m["id"], row)
    assert "gpt-4o" in html


def test_inspect_names_the_bad_field(daemon):
    with pytest.raises(RpcError) as bad_budget:
        daemon.request("ctx/inspect", {"messages": chat(1), "budget": 0})
    assert bad_budget.value.code == -32602 and "budget" in bad_budget.value.message
    with pytest.raises(RpcError) as nothing:
        daemon.request("ctx/inspect", {})
    assert nothing.value.code == -32602 and "messages" in nothing.value.message
    with pytest.raises(RpcError) as bad_role:
        daemon.request("ctx/inspect", {"messages": [{"role": "robot", "content": "x"}]})
    assert bad_role.value.code == -32602 and "role" in bad_role.value.message


def test_inspect_of_an_unknown_session_is_an_unknown_session_error(daemon):
    with pytest.raises(RpcError) as err:
        daemon.request("ctx/inspect", {"sessionId": "no-such-session"})
    assert err.value.code == -32002


def test_a_session_and_messages_together_is_an_error_naming_messages(daemon):
    """The reported bug: with both, the session's page came back and the messages were left
    unread without a word. A page is of one or the other."""
    daemon.request("ctx/session/open", {"sessionId": "inspect-both"})
    with pytest.raises(RpcError) as both:
        daemon.request("ctx/inspect", {"sessionId": "inspect-both", "messages": chat(2)})
    assert both.value.code == -32602 and "messages" in both.value.message


def test_the_daemon_announces_ctx_inspect(daemon):
    methods = daemon.aio.capabilities["experimental"]["ctxlayer"]["methods"]
    assert "ctx/inspect" in methods


def test_inspect_a_session_shows_its_assembled_context(daemon):
    methods = daemon.aio.capabilities["experimental"]["ctxlayer"]["methods"]
    if "ctx/session/open" not in methods:
        pytest.skip("this daemon serves no sessions yet")
    opened = daemon.request("ctx/session/open", {"sessionId": "inspect-test"})
    daemon.request("ctx/session/append", {"sessionId": opened["sessionId"],
                                          "messages": chat(6)[1:]})
    html = daemon.request("ctx/inspect", {"sessionId": "inspect-test", "budget": 4000})["html"]
    assert "session inspect-test" in html
    assert "message 5" in html
    assert html.count('<li class="msg"') >= 6


def test_inspecting_a_session_at_a_smaller_budget_changes_nothing(daemon):
    """The reported bug: ctx/inspect with a `budget` under the session's own assembled the
    session at it for good (3 messages / 1,788 tokens sent after, instead of 21 / 12,181, and
    19 `summarized` audit entries). The page is a preview: the session is as it was."""
    sid = "inspect-preview"
    daemon.request("ctx/session/open", {"sessionId": sid})
    long_chat = [{"role": "user" if k % 2 == 0 else "assistant", "id": f"p{k}",
                  "content": " ".join(f"w{k}x{i}" for i in range(150))} for k in range(20)]
    daemon.request("ctx/session/append", {"sessionId": sid, "messages": long_chat})
    before = daemon.request("ctx/assemble", {"sessionId": sid})
    audit_before = daemon.request("ctx/session/audit", {"sessionId": sid})["entries"]
    assert before["tokens"]["total"] > 10_000 and not before["compacted"]
    html = daemon.request("ctx/inspect", {"sessionId": sid, "budget": 1500})["html"]
    data = json.loads(html.split('id="ctx-data">', 1)[1].split("</script>", 1)[0])
    assert data["budget"] == 1500 and data["used"] <= 1500  # the page is at the budget asked
    assert len(data["messages"]) < len(before["messages"])  # ... which summarizes the chat
    after = daemon.request("ctx/assemble", {"sessionId": sid})
    assert [m["content"] for m in after["messages"]] == [m["content"] for m in before["messages"]]
    assert after["tokens"]["total"] == before["tokens"]["total"] and not after["compacted"]
    assert daemon.request("ctx/session/audit", {"sessionId": sid})["entries"] == audit_before


def test_a_sessions_working_notes_are_drawn_in_the_working_layer(daemon):
    """The reported bug: the working notes' row (a system message leading the session's
    messages) was tagged `data-layer="system"` while the legend counted it as working."""
    sid = "inspect-working"
    daemon.request("ctx/session/open", {"sessionId": sid})
    daemon.request("ctx/session/append", {"sessionId": sid, "messages": chat(4)[1:]})
    daemon.request("ctx/session/addItem", {"sessionId": sid, "item": {
        "kind": "memory", "content": "the invoice module rounds half up"}})
    data = page_data(daemon.request("ctx/inspect", {"sessionId": sid})["html"])
    rows = [m for m in data["messages"] if m.get("id") == "ctx:working"]
    assert len(rows) == 1 and rows[0]["layer"] == "working", rows
    layers = {layer["name"]: layer["tokens"] for layer in data["layers"]}
    assert layers["working"] > 0
    drawn = sum(m["tokens"] for m in data["messages"] if m.get("layer") == "working")
    assert drawn == layers["working"]


def test_a_sessions_page_lists_what_its_summary_replaces(daemon):
    """The reported bug: the page of a session whose preview summarized 35 of its 40
    messages said "Nothing was dropped or shortened at this budget." (only the assembly's
    dropped and truncated reached it). Its table says what ctx/why says of that assembly."""
    sid = "inspect-summarized"
    daemon.request("ctx/session/open", {"sessionId": sid, "budget": 3000})
    daemon.request("ctx/session/append", {"sessionId": sid, "messages": [
        {"role": "user" if k % 2 == 0 else "assistant", "id": f"s{k}",
         "content": f"Turn {k}: the invoice module rounds half up. " * 12} for k in range(40)]})
    html = daemon.request("ctx/inspect", {"sessionId": sid, "budget": 1200})["html"]
    data = page_data(html)
    assert 'id="no-drops"' not in html
    summarized = {e["messageId"] for e in data["truncated"] if e["action"] == "summarized"}
    assert len(summarized) >= 30, data["truncated"]
    assert all(m.get("state", "kept") == "kept" for m in data["messages"])  # rows: as sent
    daemon.request("ctx/assemble", {"sessionId": sid, "budget": 1200})  # now for real
    why = daemon.request("ctx/why", {"sessionId": sid})["entries"]
    assert summarized == {e["messageId"] for e in why if e["action"] == "summarized"}


def page_data(html: str) -> dict:
    return json.loads(html.split('id="ctx-data">', 1)[1].split("</script>", 1)[0])


def header(html: str) -> str:
    return " ".join(html.split('id="summary">', 1)[1].split("</p>", 1)[0].split())


def test_the_page_counts_a_shortened_message_as_sent(daemon):
    """The reported bug: ctx/trim fitted the chat in 2,987 / 3,000 tokens, shortening one
    message 603 -> 572, but the page's header said 3,015 / 3,000 (its layers counted that
    message at 603): over budget, for a chat that fits."""
    msgs = [{"role": "user" if k % 2 == 0 else "assistant",
             "content": " ".join(f"w{k}x{i}" for i in range(150))} for k in range(20)]
    trimmed = daemon.request("ctx/trim", {"messages": msgs, "budget": 3000})
    assert trimmed["truncated"] and trimmed["tokens"] <= 3000
    html = daemon.request("ctx/inspect", {"messages": msgs, "budget": 3000})["html"]
    data = page_data(html)
    assert data["used"] == trimmed["tokens"]
    assert f"{trimmed['tokens']:,} / 3,000 tokens" in header(html)
    # the layers are the messages the result keeps, at their size in it
    layers = sum(layer["tokens"] for layer in data["layers"])
    assert layers + data["overhead"] == trimmed["tokens"]
    shortened = [m for m in data["messages"] if m.get("state") == "truncated"]
    assert [(m["tokens"], m["tokensAfter"]) for m in shortened] == [
        (e["tokensBefore"], e["tokensAfter"]) for e in trimmed["truncated"]]
    assert f"{shortened[0]['tokens']:,} → {shortened[0]['tokensAfter']:,}" in html


def test_the_page_names_the_model_it_counted_with(tmp_path):
    """With no model given (none at initialize, none in the request), the header said
    `default`; the counts are the default tokenizer's, gpt-4o's."""
    ws = tmp_path / "ws"
    ws.mkdir()
    env = {"HOME": str(tmp_path), "XDG_CONFIG_HOME": str(tmp_path / "config"),
           "CTXLAYER_STATE_DIR": str(tmp_path / "state"), "GIT_CONFIG_NOSYSTEM": "1",
           "GIT_CONFIG_GLOBAL": os.devnull}
    with Client.spawn(SERVE, ws, env=env, timeout=60) as client:
        html = client.request("ctx/inspect", {"messages": chat(3), "budget": 3000})["html"]
    assert header(html).startswith("gpt-4o · "), header(html)
    assert page_data(html)["model"] == "gpt-4o"


def test_a_sessions_page_names_and_counts_with_the_sessions_own_model(daemon):
    """The reported bug: a session opened on claude-sonnet-4-5 (the daemon's model: gpt-4o)
    measured 2,616 / 184,000 tokens in a window of 200,000, but its page said `model gpt-4o
    window 184000`, its rows counted by gpt-4o's tokenizer (1,379 tokens beside layers of
    2,616). Another model asked for a session's page is refused naming `model`: ctx/assemble
    counts the session with its own."""
    sid = "inspect-claude"
    daemon.request("ctx/session/open", {"sessionId": sid, "model": "claude-sonnet-4-5"})
    budget = daemon.request("ctx/session/append", {"sessionId": sid, "messages": [
        {"role": "user", "content": "ünïcødé 日本語 " * 200},
        {"role": "assistant", "content": "ok " * 50}, {"role": "user", "content": "go"}]})
    for asked in ({}, {"model": "claude-sonnet-4-5"}):
        data = page_data(daemon.request("ctx/inspect", {"sessionId": sid, **asked})["html"])
        assert (data["model"], data["window"], data["budget"], data["used"]) == (
            "claude-sonnet-4-5", budget["window"], budget["limit"], budget["used"]), asked
        layers = {layer["name"]: layer["tokens"] for layer in data["layers"]}
        assert layers == budget["byLayer"]
        rows = sum(m["tokens"] for m in data["messages"])
        assert rows + data["overhead"] == data["used"], (rows, data["overhead"], data["used"])
    with pytest.raises(RpcError) as other:
        daemon.request("ctx/inspect", {"sessionId": sid, "model": "gpt-4o"})
    assert other.value.code == -32602 and other.value.data["field"] == "model"
    assert "claude-sonnet-4-5" in other.value.message
