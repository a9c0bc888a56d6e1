"""ctx/prepare shortens before it summarizes: through the request function (no face), a real
State, the real tokenizer, OpenAI-format requests as a client sends them."""

from __future__ import annotations

import json

from ctxlayer import protocol
from ctxlayer.core.prepare import persist
from ctxlayer.state import Caller, State
from ctxlayer.state.requests import call, chats

MODEL = "gpt-4o"


def worker_log(lines: int, bad_item: int, seed: int) -> str:
    """A long worker log: progress lines full of counters and timings, one traceback."""
    out = []
    for k in range(lines):
        out.append(f"2026-11-30T10:{k // 60 % 60:02d}:{k % 60:02d}Z INFO worker-{seed} "
                   f"processed batch {k} queue={(k * 37 + seed) % 400}, {(k * 13) % 90 + 10} ms, "
                   f"rss={200 + k % 50}MB")
        if k == lines * 2 // 3:
            out += ["Traceback (most recent call last):",
                    f'  File "/srv/app/pipeline/worker_{seed}.py", line {40 + seed}, in run',
                    "    handle(item)",
                    '  File "/srv/app/pipeline/items.py", line 118, in handle',
                    "    raise ValueError(f'bad item {item.id}')",
                    f"ValueError: bad item {bad_item}"]
    return "\n".join(out)


def two_logs_request() -> dict:
    """Two huge tool logs, a short exchange and a question: ten messages."""
    call = {"type": "function", "function": {"name": "run", "arguments": ""}}
    return {"model": MODEL, "temperature": 0.2, "messages": [
        {"role": "system", "content": "You are a careful coding assistant."},
        {"role": "user", "content": "Run both pipeline workers and tell me what failed."},
        {"role": "assistant", "content": None, "tool_calls": [
            {**call, "id": "call_a", "function": {"name": "run",
                                                  "arguments": json.dumps({"worker": 1})}}]},
        {"role": "tool", "tool_call_id": "call_a", "content": worker_log(3000, 17, 1)},
        {"role": "assistant", "content": None, "tool_calls": [
            {**call, "id": "call_b", "function": {"name": "run",
                                                  "arguments": json.dumps({"worker": 2})}}]},
        {"role": "tool", "tool_call_id": "call_b", "content": worker_log(3000, 4999, 2)},
        {"role": "assistant", "content": "Both workers hit a ValueError; see the tracebacks."},
        {"role": "user", "content": "Which items were bad?"},
        {"role": "assistant", "content": "Worker 1 and worker 2 each rejected one item."},
        {"role": "user", "content": "Give me both item ids and the files that raised."},
    ]}


async def test_two_huge_logs_are_outlined_not_summarized(caller):
    body = two_logs_request()
    budget = 111_000
    res = await chats.prepare(caller, protocol.PrepareParams(
        format="openai", request=body, budget=budget))
    sent = res.request["messages"]
    assert len(sent) == 10, "every message kept: the logs outlined, nothing summarized"
    assert not res.compacted
    assert [m["role"] for m in sent] == [m["role"] for m in body["messages"]]
    text = "\n".join(m["content"] or "" for m in sent)
    assert "ValueError: bad item 17" in text and "ValueError: bad item 4999" in text
    assert "worker_1.py" in text and "worker_2.py" in text and "items.py" in text
    # the outline grows with the room: the request uses most of its budget, not 1%
    assert res.tokens <= budget
    assert res.tokens >= budget // 2
    assert {e.action for e in res.truncated} == {"compressed"}
    assert len(res.truncated) == 2
    # every other field of the body comes back
    assert res.request["temperature"] == 0.2 and res.request["model"] == MODEL


async def test_the_next_turn_keeps_the_outlines_and_their_prefix(caller):
    body = two_logs_request()
    first = await chats.prepare(caller, protocol.PrepareParams(
        format="openai", request=body, budget=111_000))
    body = {**body, "messages": [*body["messages"],
                                 {"role": "assistant", "content": "Items 17 and 4999."},
                                 {"role": "user", "content": "Thanks. Now fix items.py."}]}
    second = await chats.prepare(caller, protocol.PrepareParams(
        format="openai", request=body, budget=111_000))
    assert second.conversation_id == first.conversation_id
    assert second.request["messages"][:10] == first.request["messages"]
    assert second.cache_reuse_tokens >= first.tokens - 10
    assert second.notice is None


def aider_request(history_turns: int) -> dict:
    """aider's shape: example exchanges after the system prompt, the repo map acknowledged,
    the chat so far, then the files the user added (a 21 KB file) and the current message."""
    source = "\n".join(f"def handler_{k}(request):\n    return route(request, {k})\n"
                       for k in range(700))
    assert len(source) > 21_000
    msgs = [{"role": "system", "content": "Act as an expert software developer."},
            {"role": "user", "content": "Change get_factorial() to use math.factorial"},
            {"role": "assistant", "content": "To make this change we need to modify "
             "`mathweb/flask/app.py` to:\n\n1. Import the math package.\n2. Remove the "
             "existing factorial() function.\n3. Update get_factorial() to call "
             "math.factorial instead.\n\nWe will keep the route as it is."},
            {"role": "user", "content": "I switched to a new code base. Please don't consider "
             "the above files or try to edit them any longer."},
            {"role": "assistant", "content": "Ok."},
            {"role": "user", "content": "Here are summaries of some files present in my git "
             "repository:\n\nsrc/routes.py:\n  def route(request, n)"},
            {"role": "assistant", "content": "Ok, I won't try and edit those files without "
             "asking first."}]
    for t in range(history_turns):
        msgs += [{"role": "user", "content": f"Step {t}: rename the helper in module_{t}.py "
                  + "and explain the change in detail. " * 40},
                 {"role": "assistant", "content": f"Renamed it in module_{t}.py. "
                  + "The change keeps the public name as an alias. " * 60}]
    msgs += [{"role": "user", "content": "I have *added these files to the chat* so you can go "
              f"ahead and edit them.\n\nsrc/handlers.py\n```\n{source}```"},
             {"role": "assistant", "content": "Ok, any changes I propose will be to those files."},
             {"role": "user", "content": "Make handler_699 return a 404 for a missing route."}]
    return {"model": MODEL, "messages": msgs}


async def test_aider_file_added_to_the_chat_stays_whole(caller):
    body = aider_request(history_turns=30)
    res = await chats.prepare(caller, protocol.PrepareParams(
        format="openai", request=body, budget=16_000))
    sent = res.request["messages"]
    assert res.compacted and res.tokens <= 16_000
    attached = body["messages"][-3]["content"]
    assert any(m["content"] == attached for m in sent), "the attached file was cut"
    assert sent[-1] == body["messages"][-1]


async def test_aider_examples_are_not_the_users_decisions(caller):
    """aider opens with an example exchange and acknowledged context (the repo map): a summary
    of them says nothing of the example's work as the user's, and lists none of its files."""
    body = aider_request(history_turns=5)
    res = await chats.prepare(caller, protocol.PrepareParams(
        format="openai", request=body, budget=14_000))
    sent = res.request["messages"]
    assert res.compacted and res.tokens <= 14_000
    summary = next(m["content"] for m in sent if (m["content"] or "").startswith("[Summary"))
    assert "factorial" not in summary and "mathweb" not in summary
    assert "without asking first" not in summary
    assert "module_0.py" in summary  # the user's own turns are summarized
    # what they were is said, not left for the model to guess from an empty summary
    assert "3 of these messages were the example exchanges" in summary
    attached = body["messages"][-3]["content"]
    assert any(m["content"] == attached for m in sent), "the attached file stays whole"


async def test_aider_files_too_big_for_the_budget_keep_each_file_s_ends(caller):
    """The files aider's user added (six of 150 lines, about 17k tokens, after the repo map's
    short exchange) in a budget of 12,000: the step summarized the repo map and the files
    together (it looked only at the oldest message, the map's), 19 of their 900 lines kept,
    the request sent at 45% of the budget. Now the files' message is shortened instead, every
    file keeping its first and last lines verbatim, so aider's edits can quote them."""
    files = "".join(
        f"mod{k}.txt\n```\nMARK{k}HEAD: module {k} of the adder project\n" + "".join(
            f"    line {j} of module {k}: value_{k}_{j} = compute({j}, {k + 2 * j}) "
            f"# check {k * j}\n" for j in range(150)) + "```\n\n" for k in range(6))
    body = {"model": MODEL, "messages": [
        {"role": "system", "content": "Act as an expert software developer."},
        {"role": "user", "content": "Here are summaries of some files present in my git "
         "repository:\n\nmod0.txt:\n  value_0_0"},
        {"role": "assistant", "content": "Ok, I won't try and edit those files without asking "
         "first."},
        {"role": "user", "content": "I have *added these files to the chat* so you can go "
         f"ahead and edit them.\n\n{files}"},
        {"role": "assistant", "content": "Ok, any changes I propose will be to those files."},
        {"role": "user", "content": "What does value_0_0 in mod0.txt compute?"}]}
    res = await chats.prepare(caller, protocol.PrepareParams(
        format="openai", request=body, budget=12_000))
    sent = [m["content"] for m in res.request["messages"]]
    assert res.tokens <= 12_000 and res.tokens >= 0.6 * 12_000
    assert sent[1:3] == [m["content"] for m in body["messages"][1:3]]  # the map stays
    added = next(c for c in sent if c.startswith("I have *added these files"))
    for k in range(6):
        assert f"MARK{k}HEAD" in added and f"value_{k}_149 = " in added
    assert "value_0_0 = compute(0, 0)" in added
    assert sent[-1] == body["messages"][-1]["content"]


def agent_turns(n: int) -> list[list[dict]]:
    """The requests of an agent loop reading one file after another: each resends all."""
    msgs: list[dict] = [{"role": "system", "content": "You are a careful coding assistant."},
                        {"role": "user", "content": "Find where the retry budget is computed."}]
    out = []
    for k in range(n):
        out.append(list(msgs))
        call = {"id": f"call_{k}", "type": "function", "function": {
            "name": "read", "arguments": json.dumps({"path": f"src/mod_{k}.py"})}}
        msgs += [{"role": "assistant", "content": f"Reading src/mod_{k}.py.",
                  "tool_calls": [call]},
                 {"role": "tool", "tool_call_id": f"call_{k}", "content": "\n".join(
                     f"def step_{k}_{j}(budget):  # retry budget {j}" for j in range(120))}]
    return out


async def test_a_restart_in_the_middle_of_a_conversation_keeps_its_prefix(tmp_path):
    """The window (summary chunks, outlines) is kept in the state folder's SQLite: the first
    request after a restart is the request the same daemon, never restarted, would have sent."""
    requests = agent_turns(30)

    # a budget with turns after the first compaction that move nothing: at 9,000 each later
    # turn outlined the output before it (a chunk's ledger of these 120 names an output takes
    # a quarter of the room), so no turn was calm
    async def turn(caller, k):
        return await chats.prepare(caller, protocol.PrepareParams(
            format="openai", request={"model": MODEL, "messages": requests[k]}, budget=12000))

    def caller_of(state):
        return Caller(state, source="prepare",
                      options=protocol.InitializationOptions(model=MODEL))

    ref_state = State(tmp_path / "reference")
    try:
        ref = [await turn(caller_of(ref_state), k) for k in range(30)]
    finally:
        ref_state.close()
    first = next(k for k, r in enumerate(ref) if r.compacted)
    calm = [k for k in range(first + 1, 30) if ref[k].notice is None]
    assert calm, "some turns after the first compaction move nothing"
    k = calm[-1]

    state = State(tmp_path / "state")
    for j in range(k):
        last = await turn(caller_of(state), j)
    await state.conversations.settled()
    # the window is kept with its messages' counts, so the first request after the restart
    # counts only what was added since (a 5.3 MB history, bench/bigbody_bench.py: +382 and
    # +553 ms before, +39 to +80 ms after)
    (workspace, cid), = state.conversations._live
    row = state.sessions.store.conversation(workspace, cid)
    assert row is not None and cid == last.conversation_id
    kept = persist.decode(row[2])
    assert kept is not None and kept.counted_with.startswith("o200k_base ")
    assert len(kept.tokens) == len(kept.hashes) > 0
    state.close()
    again = State(tmp_path / "state")
    try:
        after = await turn(caller_of(again), k)
    finally:
        again.close()
    assert after.request == ref[k].request, "the same request as without the restart"
    assert after.notice is None and after.compacted
    before = ref[k - 1].request["messages"]
    assert after.request["messages"][:len(before)] == before
    assert after.cache_reuse_tokens > 0
    # without the kept window the first request would start afresh, from another prefix
    fresh = State(tmp_path / "fresh")
    try:
        cold = await turn(caller_of(fresh), k)
    finally:
        fresh.close()
    assert cold.request["messages"][:len(before)] != before


def retry_chat() -> list[dict]:
    """A long test run whose one failure an outline leaves out, then the user naming it."""
    run = "\n".join([f"tests/test_net.py::test_case_{k} PASSED ({k % 7} ms)"
                     for k in range(1500)]
                    + ["tests/test_net.py::test_retry_budget FAILED",
                       "E   AssertionError: retry budget 3 != 4 (src/retry.py:57)"]
                    + [f"tests/test_io.py::test_io_{k} PASSED" for k in range(1500)])
    call = {"id": "call_1", "type": "function",
            "function": {"name": "run", "arguments": json.dumps({"command": "pytest"})}}
    msgs = [{"role": "system", "content": "You are a careful coding assistant."},
            {"role": "user", "content": "Run the tests."},
            {"role": "assistant", "content": None, "tool_calls": [call]},
            {"role": "tool", "tool_call_id": "call_1", "content": run},
            {"role": "assistant", "content": "Most tests pass; a few fail."},
            {"role": "user", "content": "And test_case_777, how long did it take?"}]
    return msgs


async def test_a_fact_named_again_comes_back_in_its_own_words(caller):
    """A test outlined away from a long run, named again by the user later: its exact lines
    come back with the newest message, and stay there, in place, on the next turn."""
    msgs = retry_chat()
    res = await chats.prepare(caller, protocol.PrepareParams(
        format="openai", request={"model": MODEL, "messages": msgs}, budget=3000))
    sent = res.request["messages"]
    assert res.tokens <= 3000
    outline = sent[3]["content"]
    newest = sent[-1]["content"]
    assert newest.startswith("And test_case_777, how long did it take?")
    if "test_case_777" not in outline:  # outlined away: it comes back with the question
        assert "tests/test_net.py::test_case_777 PASSED (0 ms)" in newest
        assert any(e.action == "restored" and "recalled" in e.reason
                   for e in (await call(caller, "ctx/why", protocol.WhyParams(
                       conversation_id=res.conversation_id))).entries)
    else:
        raise AssertionError("the outline kept the test: make the run longer for this test")
    again = await chats.prepare(caller, protocol.PrepareParams(
        format="openai", request={"model": MODEL, "messages": [
            *msgs, {"role": "assistant", "content": "It took no time."},
            {"role": "user", "content": "Thanks."}]}, budget=3000))
    assert again.request["messages"][:len(sent)] == sent  # the recall stays where it was
