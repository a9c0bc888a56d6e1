"""The inspector page as HTML: self-contained, escaped, and the drop order it replays."""

from __future__ import annotations

import re

import pytest

from ctxlayer.inspector import build_inspector_data, render_inspector, would_drop
from ctxlayer.protocol import Message, ToolCall


def test_page_is_self_contained(sample_data):
    html = render_inspector(sample_data, nonce="abc")
    assert "default-src 'none'" in html
    assert "script-src 'nonce-abc'" in html
    # nothing is loaded from anywhere: no src= or href= attributes at all
    assert not re.search(r"\b(src|href)\s*=", html)
    assert "http://" not in html.replace("https://json-schema.org", "")
    assert html.count("<script") == 2


def test_message_content_is_escaped(sample_data):
    html = render_inspector(sample_data)
    assert "<b>bold?</b>" not in html
    assert "&lt;b&gt;bold?&lt;/b&gt;" in html


def test_script_payload_cannot_close_the_script_tag():
    msgs = [Message(role="user", content="</script><script>alert(1)</script>", id="x")]
    html = render_inspector(build_inspector_data(msgs, [5], model="m", window=100, budget=50))
    payload = html.split('id="ctx-data">', 1)[1].split("</script>", 1)[0]
    assert "<" not in payload


def test_rows_show_tokens_state_and_reason(sample_data):
    html = render_inspector(sample_data)
    assert 'data-index="1" data-class="2" data-tokens="50" data-state="dropped"' in html
    assert "dropped: over budget: oldest history first" in html
    assert 'id="cache-boundary"' in html
    assert "compaction at 1,400" in html
    # one row per message, one button pair per droppable class
    assert html.count('<li class="msg"') == len(sample_data.messages)
    assert html.count('class="up"') == 3


def test_classes_follow_role_kind_and_age(sample_data):
    by_id = {m.id: m.priority_class for m in sample_data.messages}
    assert by_id["sys"] == 0
    assert by_id["doc"] == 3
    assert by_id["m9"] == 1 and by_id["m5"] == 1  # the newest 8 non-system messages
    assert by_id["m4"] == 2 and by_id["m0"] == 2


def test_would_drop_is_the_pipeline_limit_step(sample_data):
    ids = {m.index: m.id for m in sample_data.messages}
    # newest first by whole groups; m6 does not fit, the smaller, older m3 still does
    dropped = {ids[i] for i in would_drop(sample_data.messages, 700)}
    assert dropped == {"m0", "m1", "m2", "m4", "m5", "m6"}
    assert "sys" not in {ids[i] for i in would_drop(sample_data.messages, 0)}
    assert would_drop(sample_data.messages, 10**6) == set()
    # the reply priming counts against the budget too
    assert len(would_drop(sample_data.messages, 700, overhead=100)) > len(dropped)


def test_reordering_classes_changes_what_is_cut(sample_data):
    ids = {m.index: m.id for m in sample_data.messages}
    docs_last = {ids[i] for i in would_drop(sample_data.messages, 700, order=(1, 2, 3))}
    assert "doc" in docs_last
    docs_first = {ids[i] for i in would_drop(sample_data.messages, 700, order=(3, 1, 2))}
    assert "doc" not in docs_first
    history_first = {ids[i] for i in would_drop(sample_data.messages, 700, order=(2, 1, 3))}
    assert "m0" not in history_first and "m9" in history_first
    assert "m8" not in history_first  # the newest question is never dropped


def test_tool_result_goes_with_its_call():
    msgs = [
        Message(role="system", content="s", pinned=True),
        Message(role="assistant", content="", tool_calls=[ToolCall(id="c1", name="ls")]),
        Message(role="tool", content="out", tool_call_id="c1", priority=1),
        Message(role="user", content="newest"),
    ]
    # the call (40) does not fit but its result (10) would: the result is dropped too
    d = build_inspector_data(msgs, [10, 40, 10, 10], model="m", window=100, budget=35)
    assert would_drop(d.messages, 35) == {1, 2}


def test_token_counts_must_match_messages():
    with pytest.raises(ValueError, match="tokens"):
        build_inspector_data([Message(role="user", content="x")], [], model="m", window=1,
                             budget=1)
