"""The slider's verdicts are the engine's: at every budget the page data carries, what it marks
kept, shortened and dropped is what core.trim (a chat given as messages) or core.prepare (a
live chat, from its state) does at that budget, and at the current budget it is the table."""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys

import pytest

from ctxlayer.core.prepare import audit_of, prepare_turn
from ctxlayer.core.tokens import CountCache, WordTokenizer
from ctxlayer.core.trim import TrimOptions, trim
from ctxlayer.inspector import (
    inspect_conversation,
    prepare_runner,
    render_inspector,
    step_budgets,
    verdicts,
)
from ctxlayer.inspector.steps import split_audit
from ctxlayer.protocol import Message, ToolCall

LETTER = {"kept": "k", "truncated": "s", "dropped": "d"}


def conversation(seed: int, tool_words: int = 120) -> list[Message]:
    rng = random.Random(seed)
    msgs = [Message(role="system", content="system prompt " * rng.randint(5, 40), id="sys")]
    for i in range(rng.randint(5, 30)):
        words = " ".join(f"w{seed}-{i}-{k}" for k in range(rng.randint(3, 120)))
        if rng.random() < 0.25:
            out = "\n".join(f"line {k}: w{seed}-{i}-{k}" for k in range(rng.randint(3, tool_words)))
            msgs.append(Message(role="assistant", content="", id=f"call{i}",
                                tool_calls=[ToolCall(id=f"t{i}", name="grep", arguments="{}")]))
            msgs.append(Message(role="tool", content=out, id=f"res{i}", tool_call_id=f"t{i}"))
        else:
            role = "user" if i % 2 == 0 else "assistant"
            msgs.append(Message(role=role, content=words, id=f"m{i}",
                                pinned=rng.random() < 0.05))
    msgs.append(Message(role="user", content="and now?", id="question"))
    return msgs


def engine_letters(msgs, budget, counter) -> str:
    r = trim(msgs, budget, counter, options=TrimOptions(strategy="pipeline"))
    return verdicts(msgs, r.dropped, r.truncated)


@pytest.mark.parametrize("seed", range(12))
def test_every_step_is_what_trim_does_at_that_budget(seed):
    msgs = conversation(seed)
    counter = CountCache(WordTokenizer())
    total = sum(len(m.content.split()) + 3 for m in msgs)
    budget = random.Random(seed).randint(total // 4, total)
    data = inspect_conversation(msgs, budget, counter, model="test", window=total)
    assert [s.budget for s in data.steps] == step_budgets(total, budget)
    assert len(data.steps) >= 20
    for step in data.steps:
        if step.error:  # the engine itself refuses this budget
            with pytest.raises(Exception, match="budget"):
                trim(msgs, step.budget, counter)
            continue
        assert step.verdicts == engine_letters(msgs, step.budget, counter), step.budget
    current = next(s for s in data.steps if s.budget == budget)
    assert current.verdicts == "".join(LETTER[m.state] for m in data.messages)


def test_a_compressed_and_kept_tool_result_is_never_would_drop_at_the_budget(big_chat):
    """The reported bug: with a 32k budget the slider marked as dropped the tool results
    the table showed outlined and kept."""
    msgs = big_chat
    counter = CountCache(WordTokenizer())
    data = inspect_conversation(msgs, 32_000, counter, model="test", window=128_000)
    current = next(s for s in data.steps if s.budget == 32_000)
    shortened_tools = [m for m in data.messages if m.role == "tool" and m.state == "truncated"]
    assert shortened_tools  # the chat is big enough for the engine to outline its outputs
    for m in shortened_tools:
        assert current.verdicts[m.index] == "s"
    html = render_inspector(data)
    for m in shortened_tools:
        row = html.split(f'<li class="msg" data-index="{m.index}" ', 1)[1].split(">", 1)[0]
        assert 'data-state="truncated"' in row and 'data-would="shortened"' in row, row


def test_cli_page_at_32k_agrees_with_its_table(tmp_path, big_chat):
    """`ctxlayer inspect --html --chat FILE --budget 32k`, end to end: the page's initial
    marks and its current step are the table's states."""
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "README.md").write_text("# Demo\n\nA project.\n")
    subprocess.run(["git", "init", "-q"], cwd=ws, check=True)
    chat = tmp_path / "chat.json"
    chat.write_text(json.dumps([json.loads(_wire(m)) for m in big_chat]))
    env = {**os.environ, "HOME": str(tmp_path), "XDG_CONFIG_HOME": str(tmp_path / "config"),
           "GIT_CONFIG_NOSYSTEM": "1", "GIT_CONFIG_GLOBAL": os.devnull}
    done = subprocess.run([sys.executable, "-m", "ctxlayer", "inspect", str(ws), "--html",
                           "--chat", str(chat), "--budget", "32k"], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    html = done.stdout
    data = json.loads(html.split('id="ctx-data">', 1)[1].split("</script>", 1)[0])
    current = next(s for s in data["steps"] if s["budget"] == 32_000)
    assert current["verdicts"] == "".join(LETTER[m.get("state", "kept")]
                                          for m in data["messages"])
    tools = [m for m in data["messages"] if m["role"] == "tool"]
    assert any(m.get("state") == "truncated" for m in tools)
    assert all(current["verdicts"][m["index"]] != "d" for m in tools
               if m.get("state") == "truncated")
    assert 'data-state="truncated" data-would="dropped"' not in html


def _wire(m: Message) -> str:
    import msgspec

    return msgspec.json.encode(m).decode()


def test_live_chat_steps_are_what_prepare_does_from_its_state(big_chat):
    msgs = big_chat
    counter = CountCache(WordTokenizer())
    turn = prepare_turn(None, msgs, 40_000, counter)
    state = turn.state
    before = (list(state.messages), list(state.tokens), state.chunks, dict(state.rewrites))
    run = prepare_runner(state, counter)
    for b in (6_000, 12_000, 40_000, 90_000):
        dropped, shortened, tokens = run(b)
        again = prepare_turn(state, state.messages, b, counter)
        want = split_audit(audit_of(again.state))
        assert verdicts(msgs, dropped, shortened) == verdicts(msgs, *want), b
        assert tokens == again.tokens
    assert (list(state.messages), list(state.tokens), state.chunks,
            dict(state.rewrites)) == before  # the chat's state is only read
    # and the smaller budgets really do more to the chat than the bigger ones
    small = verdicts(msgs, *run(6_000)[:2])
    big = verdicts(msgs, *run(90_000)[:2])
    assert small.count("k") < big.count("k")


def test_cli_page_of_a_request_body_fits_it_as_trim_does(tmp_path):
    """The reported bug: `inspect --html --chat BODY` ignored the body's `model` (it counted
    with gpt-4o and a 128k window), its `max_tokens` and its tool definitions, so at the same
    budget the page dropped other messages than `ctxlayer trim BODY` did. Now both take the
    model, the budget and the tools' share of it alike (an empty workspace adds only the
    page's own system prompt)."""
    from ctxlayer.core.tokens import tools_tokens
    from ctxlayer.tokenizers import counter_for

    def words(n, k):
        return " ".join(f"w{k}x{i}" for i in range(n))

    body = {"model": "claude-sonnet-4-5", "max_tokens": 1000, "system": "Be brief.",
            "tools": [{"name": f"tool{i}", "description": words(80, 100 + i),
                       "input_schema": {"type": "object"}} for i in range(5)],
            "messages": [{"role": "user" if k % 2 == 0 else "assistant", "content": words(150, k)}
                         for k in range(20)]}
    ws = tmp_path / "ws"
    ws.mkdir()
    chat = tmp_path / "body.json"
    chat.write_text(json.dumps(body))
    env = {**os.environ, "HOME": str(tmp_path), "XDG_CONFIG_HOME": str(tmp_path / "config"),
           "GIT_CONFIG_NOSYSTEM": "1", "GIT_CONFIG_GLOBAL": os.devnull}

    def ctxlayer(*args):
        done = subprocess.run([sys.executable, "-m", "ctxlayer", *args], cwd=tmp_path, env=env,
                              capture_output=True, text=True, timeout=300)
        assert done.returncode == 0, done.stderr
        return done.stdout

    tools = tools_tokens(body, counter_for("claude-sonnet-4-5"), "anthropic")
    for budget in ([], ["--budget", "4000"]):
        audit = json.loads(ctxlayer("trim", str(chat), *budget))["ctxlayer"]
        html = ctxlayer("inspect", str(ws), "--html", "--chat", str(chat), *budget)
        data = json.loads(html.split('id="ctx-data">', 1)[1].split("</script>", 1)[0])
        assert data["model"] == "claude-sonnet-4-5" and data["window"] == 200_000
        assert data["budget"] == audit["budget"] == (4000 if budget else 199_000)
        page_chat = [m for m in data["messages"] if m["role"] != "system"]
        states = [m.get("state", "kept") for m in page_chat]
        # what is cut, not how far: the page's own system prompt takes a little of the room,
        # so what the fit leaves (and brings back shortened, reclaim) may differ: the messages
        # dropped or shortened are the same number (the codec's entries name no index)
        cut = {e["index"] for e in audit["dropped"] + audit["truncated"]
               if e.get("index") is not None}
        gone = [e for e in audit["dropped"] if e.get("index") is None]
        assert len(states) - states.count("kept") == len(cut) + len(gone), budget
        system = next(layer["tokens"] for layer in data["layers"] if layer["name"] == "system")
        assert system > tools  # the tool definitions share the budget, in the system layer
        assert data["used"] <= data["budget"]
