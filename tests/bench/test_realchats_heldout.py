"""The held-out real transcripts (bench/realchats/heldout/) load as valid chats the benchmark
can score, and the shapes they come in convert as the providers mean them.

Only the loading and the benchmark's own needed-facts extractor run here: no engine scores,
so the held-out set stays unseen by whoever tunes the engine."""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path

import pytest

REALCHATS = Path(__file__).resolve().parents[2] / "bench" / "realchats"
sys.path.insert(0, str(REALCHATS))

import load  # noqa: E402
import shapes  # noqa: E402
from needed import needed  # noqa: E402

from ctxlayer.tokenizers import counter_for  # noqa: E402

HELDOUT = load.paths("heldout")


def _bench():
    spec = importlib.util.spec_from_file_location("realchats_bench", REALCHATS / "bench.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_heldout_set_is_other_agents_than_the_dev_set():
    assert len(HELDOUT) >= 20
    held, dev = set(load.agents("heldout")), set(load.agents("dev"))
    assert len(held) >= 2
    assert held.isdisjoint(dev)
    assert load.agents("all") == [*load.agents("dev"), *load.agents("heldout")]


def test_an_unknown_set_is_named_in_the_error():
    with pytest.raises(ValueError, match="set: 'test'"):
        load.paths("test")


@pytest.mark.parametrize("path", HELDOUT, ids=[p.stem for p in HELDOUT])
def test_every_heldout_transcript_is_a_valid_chat(path):
    msgs = load.load(path)
    assert len(msgs) >= 14
    rest = [m for m in msgs if m.role != "system"]
    assert msgs[0].role in ("system", "user")
    assert rest and rest[0].role == "user"
    assert all(m.content or m.tool_calls for m in rest)
    calls: set[str] = set()
    answered: set[str] = set()
    for m in msgs:
        if m.role == "tool":
            assert m.tool_call_id in calls, f"{m.id} answers no earlier call"
            answered.add(m.tool_call_id)
        calls.update(c.id for c in m.tool_calls or ())
    # only the agent's very last turn may end on a call nothing answered (its finish)
    last = [m for m in msgs if m.role == "assistant"][-1]
    assert calls - answered <= {c.id for c in last.tool_calls or ()}


def test_the_needed_facts_extractor_finds_facts_in_most_heldout_transcripts():
    bench, counter = _bench(), counter_for("gpt-4o")
    with_facts = 0
    for path in HELDOUT:
        msgs = load.load(path)
        at = bench.cut(msgs, counter)
        with_facts += bool(needed(msgs[:at], msgs[at:]))
    assert with_facts >= 0.75 * len(HELDOUT)


def test_an_anthropic_turn_splits_into_tool_results_then_the_users_words():
    messages = [
        {"role": "user", "content": "fix the cache"},
        {"role": "assistant", "content": [
            {"type": "text", "text": "Looking."},
            {"type": "tool_use", "id": "t1", "name": "ViewCode", "input": {"path": "a.py"}}]},
        {"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": "t1",
             "content": [{"type": "text", "text": "def f(): pass"}]},
            {"type": "text", "text": "and the tests too"}]},
    ]
    out = shapes.from_chat("You fix code.", messages, "x")
    assert [(m.role, m.content) for m in out] == [
        ("system", "You fix code."), ("user", "fix the cache"), ("assistant", "Looking."),
        ("tool", "def f(): pass"), ("user", "and the tests too")]
    assert out[2].tool_calls[0].name == "ViewCode"
    assert json.loads(out[2].tool_calls[0].arguments) == {"path": "a.py"}
    assert out[3].tool_call_id == "t1"


def test_openhands_events_give_one_assistant_turn_per_model_response():
    said = {"content": "Two looks.", "tool_calls": [
        {"id": "c1", "function": {"name": "execute_bash", "arguments": '{"command": "ls"}'}},
        {"id": "c2", "function": {"name": "execute_bash", "arguments": '{"command": "pwd"}'}}]}
    response = {"id": "r1", "choices": [{"message": said}]}
    history = [
        {"id": 0, "source": "agent", "action": "system", "args": {"content": "You are OpenHands."}},
        {"id": 1, "source": "user", "action": "message", "args": {"content": "fix it"}},
        {"id": 2, "source": "user", "action": "recall", "args": {"query": "fix it"}},
        {"id": 3, "source": "environment", "observation": "recall", "content": "context"},
        {"id": 4, "source": "agent", "action": "run",
         "tool_call_metadata": {"tool_call_id": "c1", "model_response": response}},
        {"id": 5, "source": "agent", "action": "run",
         "tool_call_metadata": {"tool_call_id": "c2", "model_response": response}},
        {"id": 6, "source": "agent", "observation": "run", "content": "a.py",
         "tool_call_metadata": {"tool_call_id": "c1", "model_response": response}},
        {"id": 7, "source": "agent", "observation": "run", "content": "/w",
         "tool_call_metadata": {"tool_call_id": "c2", "model_response": response}},
    ]
    out = shapes.from_openhands_events(history, "oh")
    assert [(m.role, m.content) for m in out] == [
        ("system", "You are OpenHands."), ("user", "fix it"), ("assistant", "Two looks."),
        ("tool", "a.py"), ("tool", "/w")]
    assert [c.id for c in out[2].tool_calls] == ["c1", "c2"]
    assert [m.tool_call_id for m in out[3:]] == ["c1", "c2"]
