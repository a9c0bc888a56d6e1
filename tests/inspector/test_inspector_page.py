"""The inspector page as HTML: self-contained, escaped, each layer in its own colour, and the
slider's steps (the engine's outcomes) carried as data."""

from __future__ import annotations

import re

import pytest

from ctxlayer.inspector import InspectorStep, build_inspector_data, render_inspector
from ctxlayer.protocol import Message


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
    assert 'data-index="1" data-class="2" data-layer="history" data-tokens="50" data-state="dropped"' in html
    assert "dropped: over budget: oldest history first" in html
    assert 'id="cache-boundary"' in html
    assert "compaction at 1,400" in html
    # one row per message; the page computes no order of its own to reorder
    assert html.count('<li class="msg"') == len(sample_data.messages)
    assert 'id="priority-order"' not in html


def test_classes_follow_role_kind_and_age(sample_data):
    by_id = {m.id: m.priority_class for m in sample_data.messages}
    assert by_id["sys"] == 0
    assert by_id["doc"] == 3
    assert by_id["m9"] == 1 and by_id["m5"] == 1  # the newest 8 non-system messages
    assert by_id["m4"] == 2 and by_id["m0"] == 2


def test_the_current_step_is_the_table(sample_data):
    """At the budget, the slider's verdicts are the table's states, however the steps were
    made: the current step is built from the very audit the table shows."""
    current = [s for s in sample_data.steps if s.budget == sample_data.budget]
    assert len(current) == 1
    letters = {"kept": "k", "truncated": "s", "dropped": "d"}
    assert current[0].verdicts == "".join(letters[m.state] for m in sample_data.messages)
    html = render_inspector(sample_data)
    assert 'data-state="dropped" data-would="dropped"' in html
    assert 'data-state="kept" data-would="dropped"' not in html


def test_steps_given_are_carried_sorted_and_the_budgets_step_replaced():
    msgs = [Message(role="system", content="s"), Message(role="user", content="q")]
    d = build_inspector_data(
        msgs, [10, 10], model="m", window=100, budget=50,
        steps=[InspectorStep(budget=90, verdicts="kk", tokens=20),
               InspectorStep(budget=50, verdicts="dd", tokens=0),  # not the table: replaced
               InspectorStep(budget=5, error="pinned over budget")])
    assert [(s.budget, s.verdicts) for s in d.steps] == [(5, ""), (50, "kk"), (90, "kk")]
    html = render_inspector(d)
    assert 'min="5" max="90"' in html and "disabled" not in html.split('id="budget-slider"')[1][:80]


def test_a_page_with_one_step_says_so_and_disables_the_slider():
    msgs = [Message(role="user", content="q")]
    html = render_inspector(build_inspector_data(msgs, [5], model="m", window=100, budget=50))
    assert "at this budget only" in html
    assert " disabled>" in html


def test_the_workspace_row_has_its_own_colour():
    """The workspace block is a leading system message, but it is drawn as the workspace
    layer, not in the system colour."""
    msgs = [Message(role="system", content="You are terse.", id="sys"),
            Message(role="system", content="# Project\nfiles", id="ctx:workspace"),
            Message(role="user", content="q", id="q")]
    d = build_inspector_data(msgs, [5, 40, 3], model="m", window=100, budget=80)
    html = render_inspector(d)
    row = html.split('data-index="1" ', 1)[1].split(">", 1)[0]
    assert 'data-layer="workspace"' in row
    assert 'data-layer="system"' in html.split('data-index="0" ', 1)[1].split(">", 1)[0]
    css = {rule.split("{")[0].strip(): rule.split("{")[1]
           for rule in html.split("<style>")[1].split("</style>")[0].split("}") if "{" in rule}
    workspace = css['.msg[data-layer="workspace"] .bar']
    system = css['.msg[data-layer="system"] .bar']
    assert "var(--workspace)" in workspace and workspace != system
    root = css[":root"]
    colour = {name: root.split(f"--{name}:")[1].split(";")[0].strip()
              for name in ("system", "workspace")}
    assert colour["system"] != colour["workspace"]


def test_token_counts_must_match_messages():
    with pytest.raises(ValueError, match="tokens"):
        build_inspector_data([Message(role="user", content="x")], [], model="m", window=1,
                             budget=1)
