"""Long runs: how the time of each path a message takes grows with one long repeated run in it.

    .venv/bin/python bench/long_runs.py [--paths trim,prepare,session,formats] [--upto 64000]
        [--stop-at 1.5] [--all]

A text pattern or a loop that gives back characters can take time growing with the square or
the cube of a run (stop 55 found six: a 10,000-character line of "=" took 9 minutes to score as
a log line). Each piece below, a short string, is repeated into a run of 1,000 characters, then
2,000, ... up to --upto, with " x" after it so that a pattern looking for the run's end misses;
the run goes into a small agent chat three times (in an earlier user message, an assistant
reply and a tool output) and into its newest question, and the chat goes through one path at a
budget that makes it shorten and summarize:
- trim: the trim engine (`ctx/trim`), naming the facts of what it cuts;
- prepare: two turns of `ctx/prepare`'s engine, the second one message longer;
- session: a session over SQLite (`ctx/session/append`, working items of kinds "log" and "note"
  and a rule made of the run, `ctx/assemble`), as the daemon runs it, minus the JSON-RPC face;
- formats: the chat as OpenAI and Anthropic bodies, read and written back, and counted;
- workspace: a git repository whose AGENTS.md, skill, .gitignore and one file's name hold the
  run, scanned and built into the system prompt (`ctxlayer prompt`).
A size that takes longer than --stop-at seconds ends its piece's doubling. Reported per path
and piece: the largest size timed, its time, and how much the last doubling multiplied the
time (about 2 for a linear path); a line is marked when that is over 3 and the time over 20 ms
in two tries.
Not a test: timings are this machine's; what it finds becomes a test of the text's result.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from ctxlayer import protocol
from ctxlayer.core.errors import ContextError
from ctxlayer.core.formats import decode, encode
from ctxlayer.core.prepare import prepare_turn
from ctxlayer.core.tokens import CountCache
from ctxlayer.core.trim import TrimOptions, trim
from ctxlayer.protocol import Message, ToolCall
from ctxlayer.state.session_service import SessionService
from ctxlayer.store import SessionStore
from ctxlayer.tokenizers import counter_for

#: the pieces: what patterns look for (paths, tests, fences, logs, markup, numbers, quotes),
#: what they miss by one character, and what sits at word and line edges
PIECES = [
    "a", "a ", "ab", "a.", "a-", "a_", "a/", "/a", "./", "../", "a.py", "a.py:", "a.py:1:",
    "x/y.ts ", "src/", ".", "..", "-", "--", "_", "=", "==", "#", "*", "**", "~", "`", "``",
    "```", "```\n", "~~~\n", "> ", "| a ", "|", "- [ ] ", "1. ", "  ", "\t", "\n", "\n\n",
    " \n", "a\n", "1", "1.", "0x1f", "1e5", "12ms ", "3.5s ", ":", "::", "a::b", "::test_a ",
    "test_", "a=", "a=1 ", "k: v\n", "=1", "(", ")", "()", "[", "]", "{", "}", "{\"a\":",
    "[1,", "\"", "\"a\" ", "'", "\\", "\\n", "<", ">", "<a>", "</a>", "<!--", "&amp;", "@",
    "$ ", "$(", "${", "%", "+", "+-", "é", "中", "\u200b", "Error: ", "error ", "FAILED ",
    "E   ", "at a (a.js:1:2)\n", "  File \"a.py\", line 1, in f\n", "Traceback ", "    at ",
    "WARN ", "ok ", "pytest ", "git ", "Please look at ", "Decided: ", "TODO ", "http://a/",
    "https://a.b/c?d=e&", "www.", "a@b.c ", "#1 ", "v1.2.3 ", "2026-12-06T04:04:47Z ",
    "[INFO] ", "pid=7 ", "0.0.0.0:80 ",
]
BUDGET = 1_500
SYSTEM = "You are a coding agent. Answer briefly."
FILLER = "We went through the retry logic of the payment worker and its queue once more. " * 6


def chat(run: str) -> list[Message]:
    """An agent chat with the run in an earlier user message, a reply, a tool output and the
    question, and enough history around it that a small budget summarizes."""
    msgs = [Message(role="system", content=SYSTEM),
            Message(role="user", content=f"Please fix this: {run} x", id="u0")]
    for k in range(4):
        msgs += [
            Message(role="assistant", content=f"Looking at it.\n{run} x\n{FILLER}", id=f"a{k}",
                    tool_calls=[ToolCall(id=f"c{k}", name="bash", arguments=json.dumps(
                        {"command": f"grep -n {run[:300]!r} src"}))]),
            Message(role="tool", content=f"$ make test\n{run} x\n{FILLER}\nexit 1",
                    tool_call_id=f"c{k}", id=f"t{k}"),
            Message(role="user", content=f"{FILLER} Go on.", id=f"u{k + 1}"),
        ]
    msgs.append(Message(role="user", content=f"What is wrong with {run} x?", id="q"))
    return msgs


def via_trim(msgs: list[Message], counter) -> None:
    trim(msgs, BUDGET, counter, options=TrimOptions(name_cut_facts=True))


def via_prepare(msgs: list[Message], counter) -> None:
    first = prepare_turn(None, msgs[:-1], BUDGET, counter)
    prepare_turn(first.state, msgs, BUDGET, counter)


def via_session(msgs: list[Message], counter) -> None:
    run = msgs[1].content
    with tempfile.TemporaryDirectory() as folder:
        svc = SessionService(SessionStore(Path(folder)), lambda model: counter,
                             default_model=lambda: "gpt-4o", default_budget=lambda model: BUDGET)
        svc.open("/ws", protocol.SessionOpenParams(session_id="s", budget=BUDGET))
        svc.add_rule("/ws", "s", protocol.RuleSpec(text=f"Never touch {run}", weight=1))
        for kind in ("log", "note"):
            svc.add_item("/ws", "s", protocol.WorkingItemSpec(kind=kind, content=run))
        svc.append("/ws", "s", [m for m in msgs if m.role != "system"])
        svc.assemble("/ws", "s")


def via_formats(msgs: list[Message], counter) -> None:
    openai = [{"role": m.role, "content": m.content} | (
        {"tool_calls": [{"id": c.id, "type": "function", "function": {
            "name": c.name, "arguments": c.arguments}} for c in m.tool_calls]}
        if m.tool_calls else {}) | ({"tool_call_id": m.tool_call_id} if m.tool_call_id else {})
        for m in msgs]
    d = decode("openai", {"model": "gpt-4o", "messages": openai}, counter)
    encode(d, d.messages)
    anthropic = [{"role": "user" if m.role == "tool" else m.role, "content": m.content}
                 for m in msgs[1:]]
    d = decode("anthropic", {"model": "claude-sonnet-4-5", "system": SYSTEM,
                             "messages": anthropic, "max_tokens": 100}, counter)
    encode(d, d.messages)
    counter.count(openai[-1]["content"])


def via_workspace(msgs: list[Message], counter) -> float:
    """A repository whose agent files, skill, ignore rules and one file's name hold the run,
    scanned and built into the system prompt (`ctxlayer prompt`)."""
    from ctxlayer.config import load_config
    from ctxlayer.core.prompt import PromptSpec, build_system_prompt
    from ctxlayer.workspace import Workspace

    run = msgs[1].content.removeprefix("Please fix this: ")
    with tempfile.TemporaryDirectory() as folder:
        root = Path(folder)
        subprocess.run(["git", "init", "-q", str(root)], check=True)
        (root / "AGENTS.md").write_text(f"# Rules\n{run}\n")
        (root / ".gitignore").write_text(f"{run}\n*.log\n")
        (root / ".claude" / "skills" / "s").mkdir(parents=True)
        (root / ".claude" / "skills" / "s" / "SKILL.md").write_text(
            f"---\nname: s\ndescription: {run}\n---\n{run}\n")
        name = "".join(c for c in run if c not in "/\0\n").encode()[:200].decode(
            errors="ignore") or "x"  # a file name is at most 255 bytes
        (root / f"{name}.md").write_text(run)
        config, _ = load_config(root, None, None)
        t = time.perf_counter()  # the repository's making is not the path's time
        segment = Workspace(root, config, counter.count).scan()
        build_system_prompt(PromptSpec(workspace_parts=[(p.name, p.text) for p in segment.parts
                                                        if p.text]), counter)
        return time.perf_counter() - t


PATHS: dict[str, Callable] = {"trim": via_trim, "prepare": via_prepare,
                              "session": via_session, "formats": via_formats,
                              "workspace": via_workspace}


def grow(path: Callable, piece: str, upto: int, stop_at: float) -> tuple[int, float, float]:
    """(the largest size timed, its seconds, the last doubling's factor)."""
    size, times = 1_000, []
    while size <= upto:
        run = piece * max(1, size // len(piece))
        counter = CountCache(counter_for("gpt-4o"))  # nothing counted before
        t, took = time.perf_counter(), None
        try:
            took = path(chat(run), counter)  # a path that times itself says so
        except ContextError:
            pass  # a refusal is an answer: its time counts
        times.append(took if took is not None else time.perf_counter() - t)
        if times[-1] > stop_at:
            break
        size *= 2
    factor = times[-1] / times[-2] if len(times) > 1 and times[-2] > 0 else 0.0
    return min(size, upto), times[-1], factor


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--paths", default=",".join(PATHS))
    ap.add_argument("--upto", type=int, default=64_000)
    ap.add_argument("--stop-at", type=float, default=1.5)
    ap.add_argument("--all", action="store_true", help="print every piece, not the marked")
    args = ap.parse_args()
    print(f"long runs: {len(PIECES)} pieces, runs of 1,000 to {args.upto:,} characters, "
          f"a {BUDGET:,}-token budget\n")
    print("| path | piece | largest run | time | last doubling | |")
    print("|---|---|---|---|---|---|")
    marked = 0
    for name in args.paths.split(","):
        worst = 0.0
        for piece in PIECES:
            size, seconds, factor = grow(PATHS[name], piece, args.upto, args.stop_at)
            if factor > 3 and seconds > 0.02:  # once more: a busy moment is not a finding
                size, seconds, factor = min((size, seconds, factor), grow(
                    PATHS[name], piece, args.upto, args.stop_at), key=lambda r: r[2])
            mark = factor > 3 and seconds > 0.02
            marked += mark
            worst = max(worst, factor if seconds > 0.02 else 0.0)
            if mark or args.all:
                print(f"| {name} | {piece!r} | {size:,} | {seconds * 1000:,.1f} ms "
                      f"| {factor:.1f}x | {'MARKED' if mark else ''} |", flush=True)
        worst_text = f"{worst:.1f}x" if worst else "every run under 20 ms"
        print(f"| {name} | (worst of {len(PIECES)}) | | | {worst_text} | |", flush=True)
    print(f"\n{marked} marked")
    sys.exit(0)


if __name__ == "__main__":
    main()
