"""A session's summaries keep the agent's task, in the user's own words, across compactions,
over real stdio. The task is the only user message before a run of tool calls: the first
compaction showed it as "the latest request (verbatim)", not among the summary's asks, and
the next compaction, with a newer question, replaced it: from then on no request held the
task ("Refactor the payment module ..."), its summary's "Asked" being "Go on with part 2".
A long task at a small budget left the asks out whole; the context a client wraps in
`<system-reminder>` took the verbatim request's room."""

from __future__ import annotations

import json

import pytest
from conftest import RawDaemon, result

pytestmark = pytest.mark.e2e

TASK = "Refactor the payment module so refunds are idempotent"
REMINDER = ("<system-reminder>\nAs you answer the user's questions, you can use the following "
            "context:\n# claudeMd\nUse tabs.\n</system-reminder>\n")
LOG = "\n".join(f"entry {n}: processed ok" for n in range(40))


def tools(start: int, n: int) -> list[dict]:
    out: list[dict] = []
    for k in range(start, start + n):
        out.append({"role": "assistant", "content": "", "id": f"a{k}", "toolCalls": [
            {"id": f"c{k}", "name": "bash", "arguments": json.dumps({"cmd": f"cat x{k}.log"})}]})
        out.append({"role": "tool", "content": LOG, "id": f"t{k}", "toolCallId": f"c{k}"})
    return out


async def _run(daemon: RawDaemon, sid: str, task: str, budget: int) -> list[str]:
    """The summaries of four assemblies, a newer question and more tool calls between them."""
    await daemon.request(f"{sid}o", "ctx/session/open", {"sessionId": sid, "budget": budget})
    await daemon.request(f"{sid}a", "ctx/session/append", {"sessionId": sid, "messages": [
        {"role": "user", "content": REMINDER + task, "id": "u0"}, *tools(0, 12)]})
    summaries = []
    for step in range(4):
        got = await daemon.request(f"{sid}{step}", "ctx/assemble", {"sessionId": sid})
        result = got["result"]
        assert result["tokens"]["total"] <= budget
        summaries += [m["content"] for m in result["messages"] if m.get("kind") == "summary"]
        assert task[:30] in json.dumps(result), (step, summaries[-1:])
        await daemon.request(f"{sid}m{step}", "ctx/session/append", {"sessionId": sid, "messages": [
            {"role": "assistant", "content": f"Finished part {step}.", "id": f"f{step}"},
            {"role": "user", "content": f"Go on with part {step + 1}", "id": f"q{step}"},
            *tools(100 * (step + 1), 12)]})
    return summaries


async def test_the_task_stays_in_every_summary_after_newer_questions(own_daemon):
    summaries = await _run(own_daemon, "s", TASK, 3000)
    assert len(summaries) >= 2, "never compacted twice: the test would show nothing"
    # shown verbatim as the latest request of the first summary, and not again as its ask
    assert summaries[0].count(TASK) == 1, summaries[0][:600]
    last = summaries[-1]
    assert f"Asked:\n- {TASK}" in last, last[:600]
    assert "claudeMd" not in last and "<system-reminder>" not in last


async def test_a_long_task_at_a_small_budget_keeps_its_head(own_daemon):
    task = TASK + ", " + ", ".join(f"and keep step {k} of the ledger unchanged" for k in range(6))
    summaries = await _run(own_daemon, "l", task, 1500)
    assert summaries, "never compacted: the test would show nothing"
    assert "Asked:\n- " + task[:40] in summaries[-1], summaries[-1][:600]


@pytest.mark.parametrize("asks", [
    ["Fix issue #1", "Fix issue #3", "Fix issue #5", "Fix issue #12"],
    ["q1", "q2", "q19"],
    ["continue billing 1", "continue billing 2", "continue billing 16"],
])
async def test_an_ask_the_latest_request_only_extends_stays_listed(own_daemon, asks):
    """The latest request is shown verbatim, and an ask it repeats is not listed again; but
    "Fix issue #12" does not repeat "Fix issue #1" (a substring test left #1 out of the
    asks, and the summary named no request for issue #1 at all)."""
    await result(own_daemon, "ctx/session/open", {"sessionId": "s", "budget": 20000})
    for i, ask in enumerate(asks):
        await result(own_daemon, "ctx/session/append", {"sessionId": "s", "messages": [
            {"role": "user", "content": ask, "id": f"u{i}"},
            {"role": "assistant", "content": "Done with that one.", "id": f"a{i}"}]})
    got = await result(own_daemon, "ctx/session/compact", {"sessionId": "s", "keepRecent": 0})
    summary = got["summary"]["content"]
    assert "(verbatim):\n" + asks[-1] + "\n" in summary, summary
    listed = summary.split("Asked:\n")[1].split("\n")
    for ask in asks[:-1]:
        assert "- " + ask in listed, summary
    assert "- " + asks[-1] not in listed, summary  # shown once, as the latest request


MIGRATION = {
    "order after a semicolon": "Migrate the billing service from MySQL to Postgres; never drop "
                               "the invoices table. Run `make migrate-check` after each step.",
    "order of its own": "Migrate the billing service from MySQL to Postgres. Never drop the "
                        "invoices table. Run `make migrate-check` after each step.",
}


def agent_turn(t: int) -> list[dict]:
    """A read, its output, a reply naming a file's line, and the user's "go on"."""
    return [
        {"role": "assistant", "content": f"Step {t}: reading file", "id": f"a{t}", "toolCalls": [
            {"id": f"c{t}", "name": "read",
             "arguments": json.dumps({"path": f"billing/models_{t}.py"})}]},
        {"role": "tool", "toolCallId": f"c{t}", "id": f"t{t}",
         "content": f"billing/models_{t}.py:{t + 10}: class Invoice{t}(Model): ...\n" * 20},
        {"role": "assistant", "id": f"b{t}",
         "content": f"Changed billing/models_{t}.py line {t + 10}; error E{1000 + t} fixed."},
        {"role": "user", "id": f"u{t}",
         "content": f"ok continue with module {t + 1}, check tests/test_models_{t}.py too"}]


@pytest.mark.parametrize("task", MIGRATION.values(), ids=MIGRATION.keys())
async def test_the_task_and_its_order_outlast_many_compactions(own_daemon, task):
    """The task, then 24 agent turns each followed by an assembly at a budget of 1500: from
    turn 15 on, every summary had lost the task (its ask was cut with decided/open while the
    ledger kept "line 24, line 23, ..."), and "...; never drop the invoices table", an order
    after a semicolon, was never a hard constraint, so it went with the task."""
    await result(own_daemon, "ctx/session/open",
                 {"sessionId": "m", "model": "claude-sonnet-4", "budget": 1500})
    await result(own_daemon, "ctx/session/append", {"sessionId": "m", "messages": [
        {"role": "user", "content": task, "id": "task"}]})
    summaries = []
    for t in range(24):
        await result(own_daemon, "ctx/session/append",
                     {"sessionId": "m", "messages": agent_turn(t)})
        got = await result(own_daemon, "ctx/assemble", {"sessionId": "m"})
        assert got["tokens"]["total"] <= 1500
        sent = "\n".join(m["content"] for m in got["messages"])
        assert task[:60] in sent, (t, sent[:800])
        summaries += [m["content"] for m in got["messages"] if m.get("kind") == "summary"]
    assert len(summaries) > 10, "compacted too seldom: the test would show nothing"
    orders = summaries[-1].split("Hard constraints (the user's, verbatim):\n")[-1]
    assert "ever drop the invoices table." in orders.split("\n\n")[0], summaries[-1][:800]
