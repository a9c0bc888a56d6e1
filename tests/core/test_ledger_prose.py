"""Commands a user names in their own words reach the facts ledger (issue 19, part 5)."""

from __future__ import annotations

import json
import random

import pytest

from ctxlayer.core.assembly import Compaction, History, assemble
from ctxlayer.core.assembly.assemble import AssemblyInput
from ctxlayer.core.compress.facts import prose_commands
from ctxlayer.core.compress.ledger import SAID_SCORE, add_messages
from ctxlayer.core.prepare import prepare_turn
from ctxlayer.core.tokens import CountCache, WordTokenizer, message_tokens
from ctxlayer.core.zones import DEFAULT_MODES
from ctxlayer.protocol import Message, ToolCall

COUNTER = CountCache(WordTokenizer())
COMMANDS = [
    "pytest -k test_retry_5851", "python scripts/migrate_1.py --dry-run", "npm run build:2",
    "make lint", "git log --oneline -5", "cargo test retry", "go test ./pkg/queue/...",
    "pytest tests/test_api.py::test_limits -x", "python -m pip check", "git diff HEAD~2",
]


@pytest.mark.parametrize(("text", "want"), [
    ("Please look at pytest -k test_retry_5851", ["pytest -k test_retry_5851"]),
    ("Please look at pytest -k test_retry_5851 before you go on.", ["pytest -k test_retry_5851"]),
    ("Then run make lint test.", ["make lint test"]),
    ("Run python scripts/migrate_1.py --dry-run, it failed.",
     ["python scripts/migrate_1.py --dry-run"]),
    ("npm run build:2 failed", ["npm run build:2"]),
    ("Please run go test ./... again", ["go test ./..."]),
    ("git log --oneline -5 shows it", ["git log --oneline -5"]),
    ("Use cargo test retry -- --nocapture.", ["cargo test retry -- --nocapture"]),
    ("- git status\n- make bench", ["git status", "make bench"]),
    ("Try pytest tests/test_a.py::test_b -x: it fails", ["pytest tests/test_a.py::test_b -x"]),
    ("git commit -m 'fix the retry and more'", ["git commit -m 'fix the retry and more'"]),
    ("(see python -m pytest -q)", ["python -m pytest -q"]),
])
def test_commands_in_prose_are_taken_to_the_end_of_their_clause(text, want):
    assert prose_commands(text) == want


@pytest.mark.parametrize(("text", "want"), [
    # the sentence goes on after a complete command: its next word is not an argument
    ("Please look at pytest -k test_case_2 next.", "pytest -k test_case_2"),
    ("Please look at pytest -k test_case_2 first.", "pytest -k test_case_2"),
    ("Check pytest -k test_retry again.", "pytest -k test_retry"),
    ("Could you run cargo test --release -p core tomorrow?", "cargo test --release -p core"),
    ("Please look at pytest -k test_case_2 quickly.", "pytest -k test_case_2"),
    ("Run git log --oneline -5 carefully", "git log --oneline -5"),
    ("Try npm run build:prod locally", "npm run build:prod"),
    ("then run python scripts/migrate_1.py --dry-run quickly", "python scripts/migrate_1.py --dry-run"),
    ("Run git status today's way", "git status"),
    # real commands whose arguments are plain words stay whole
    ('git commit -m "fix it"', 'git commit -m "fix it"'),
    ("Run make test", "make test"),
    ("cargo test --release -p core", "cargo test --release -p core"),
    ("Run git push origin main", "git push origin main"),
    ("Run go test -run TestRetry ./pkg/queue", "go test -run TestRetry ./pkg/queue"),
    ("Then run python manage.py migrate", "python manage.py migrate"),
    ("npm run build", "npm run build"),
    ("Run pytest -m slow tests/api", "pytest -m slow tests/api"),
])
def test_a_prose_command_ends_where_its_arguments_do(text, want):
    assert prose_commands(text) == [want]


@pytest.mark.parametrize("text", [
    "make sure the tests pass", "Make sure it works.", "We'll make it work.",
    "make test cases for it", "go to the store and back", "let's go test it on staging",
    "git gud, noob", "I like python for scripting", "npm is slow today", "pytest",
    "Run `pytest -x` please",  # backticked: extract_facts reads it, not twice
    "```\nmake test\n```",  # a code block: extract_facts reads it
    "the ago test of cargo cult", "legit status",
])
def test_english_that_only_looks_like_a_command_is_not_taken(text):
    assert prose_commands(text) == []


def test_a_command_the_user_names_outranks_one_an_agent_ran_once():
    msgs = [Message(role="user", content="Please run make lint before you commit.", id="u"),
            Message(role="assistant", content="", id="a", tool_calls=[ToolCall(
                id="c", name="bash", arguments=json.dumps({"command": "ls -la"}))])]
    led = add_messages(None, msgs)
    scores = {e.value: e.score for e in led.kinds["commands"]}
    assert scores["make lint"] == SAID_SCORE > scores["ls -la"]
    # an assistant's or a tool's words are not the user's asking
    other = add_messages(None, [Message(role="tool", content="then run make lint", id="t",
                                        tool_call_id="c")])
    assert "make lint" not in {e.value for e in other.kinds.get("commands", [])}


def _detail(r: random.Random, n: int) -> str:
    """A sentence dense in facts of its own, so a summary's details cannot quote every turn."""
    words = " ".join(r.choice(("cache", "token", "budget", "parser", "router")) for _ in range(25))
    return (f"The handler in src/app/mod_{n}.py raised KeyError at line {n + 3} when the queue "
            f"held {n * 7} items, and ServiceUnavailable{n} showed up in logs/run_{n}.log right "
            f"after the retry. {words}.")


def agent_chat(tokens: int = 60_000) -> list[Message]:
    """An agent's chat of about ``tokens`` words: the user's turns dense in facts, ten of them
    naming a command in prose, and the agent running a hundred commands of its own."""
    r = random.Random(3)
    msgs = [Message(role="system", content="You are a coding agent.", id="sys")]
    said = {12 + 11 * j: c for j, c in enumerate(COMMANDS)}
    size, n = 0, 0
    while size < tokens:
        if n in said:
            new = [Message(role="user", id=f"u{n}", content=_detail(r, n) + " Please look at "
                           f"{said[n]} before you go on. " + _detail(r, n + 1))]
        elif n % 2 == 0:
            new = [Message(role="user", id=f"u{n}",
                           content=_detail(r, n) + " " + _detail(r, n + 7))]
        else:
            call = ToolCall(id=f"c{n}", name="bash",
                            arguments=json.dumps({"command": f"pytest tests/test_mod_{n}.py -x"}))
            out = "\n".join(f"line {j} src/mod_{n}/file_{j}.py ok " + " ".join(
                r.choice(("retry", "worker", "queue")) for _ in range(30)) for j in range(20))
            new = [Message(role="assistant", content="Running it.", id=f"a{n}", tool_calls=[call]),
                   Message(role="tool", content=out, id=f"t{n}", tool_call_id=f"c{n}")]
        msgs += new
        size += sum(message_tokens(m, COUNTER) for m in new)
        n += 1
    return [*msgs, Message(role="user", content="What is left?", id="last")]


def _summary(messages: list[Message]) -> str:
    return "\n".join(m.content for m in messages if m.kind == "summary")


def _summarized_commands(chat: list[Message], window: list[Message]) -> list[str]:
    """The commands named in messages the window no longer shows (they were summarized)."""
    kept = {m.id for m in window}
    return [c for c in COMMANDS if any(c in m.content and m.id not in kept for m in chat)]


def test_a_60k_chat_compacted_by_assembly_keeps_the_commands_the_user_named():
    chat = agent_chat()
    history = History()
    for k, m in enumerate(chat[1:]):
        history.append(m, k, message_tokens(m, COUNTER))
    out = assemble(history, Compaction(), AssemblyInput(
        budget=12_000, mode="deep", mode_spec=DEFAULT_MODES["deep"], system=chat[:1]), COUNTER)
    summary = _summary(out.result.messages)
    summarized = _summarized_commands(chat, out.result.messages)
    assert len(summarized) == 10  # all of them were in the replaced part
    assert sum(c in summary for c in summarized) >= 9, summary


def test_a_60k_chat_prepared_keeps_the_commands_the_user_named():
    chat = agent_chat()
    turn = prepare_turn(None, chat, 12_000, COUNTER)
    summary = _summary(turn.messages)
    summarized = _summarized_commands(chat, turn.messages)
    assert len(summarized) == 10
    assert sum(c in summary for c in summarized) >= 9, summary
