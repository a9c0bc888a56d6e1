"""Sessions end to end over real stdio: a client that answers ctx/summarize (pytest-lsp), one
that never answers (the offline summary after the timeout), and a daemon killed with -9 and
restarted with every acknowledged message still there."""

from __future__ import annotations

import asyncio
import itertools
import os
import signal

import pytest
import pytest_lsp
from conftest import ENV, SERVE, WORLD, RawDaemon, make_repo
from lsprotocol import types
from pygls.exceptions import JsonRpcException
from pytest_lsp import ClientServerConfig, LanguageClient

pytestmark = [pytest.mark.e2e, pytest.mark.asyncio(loop_scope="module")]
TIMEOUT = 60
_repos = itertools.count()
USELESS = "The conversation covered several topics."
CONSTRAINT = "You must never change the signature of billing.charge_card()."
FACT = "The failing test is tests/test_invoice.py:88 with error E7731."


def plain(value):
    if hasattr(value, "_asdict"):
        return {k: plain(v) for k, v in value._asdict().items()}
    if isinstance(value, list | tuple):
        return [plain(v) for v in value]
    return value


@pytest_lsp.fixture(scope="module",
                    config=ClientServerConfig(server_command=SERVE, server_env=ENV))
async def client(lsp_client: LanguageClient):
    root = make_repo(WORLD / f"sessions-{next(_repos)}")
    lsp_client.summarize_calls = []  # type: ignore[attr-defined]

    @lsp_client.feature("ctx/summarize")
    def summarize(params):
        lsp_client.summarize_calls.append(plain(params))  # type: ignore[attr-defined]
        return {"text": USELESS}

    await lsp_client.initialize_session(types.InitializeParams(
        capabilities=types.ClientCapabilities(
            experimental={"ctxlayer": {"summarize": True}}),
        workspace_folders=[types.WorkspaceFolder(uri=root.as_uri(), name="demo")],
        initialization_options={"model": "gpt-4o"},
    ))
    yield
    await lsp_client.shutdown_session()


async def call(client: LanguageClient, method: str, params: dict):
    return plain(await asyncio.wait_for(client.protocol.send_request_async(method, params),
                                        TIMEOUT))


async def call_pushing(client: LanguageClient, method: str, params: dict):
    """A request and the ctx/budgetChanged it causes (waiting starts before the request)."""
    pushed = asyncio.ensure_future(client.wait_for_notification("ctx/budgetChanged"))
    result = await call(client, method, params)
    return result, plain(await asyncio.wait_for(pushed, TIMEOUT))


def chat(n: int, start: int = 0) -> list[dict]:
    out = []
    for k in range(start, start + n):
        text = (f"Turn {k}: we discussed the invoice module and its rounding rules at some "
                "length, weighing options without settling anything. ") * 4
        if k == 4:
            text = CONSTRAINT + " " + text
        if k == 7:
            text = FACT + " " + text
        out.append({"role": "user" if k % 2 == 0 else "assistant", "content": text,
                    "id": f"m{k}"})
    return out


async def test_a_session_lives_through_rules_items_appends_and_compaction(client):
    opened = await call(client, "ctx/session/open", {"sessionId": "e2e", "mode": "deep"})
    assert opened["sessionId"] == "e2e" and opened["mode"] == "deep"
    assert opened["budget"] > 100_000  # gpt-4o's window minus its output allowance
    again = await call(client, "ctx/session/open", {"sessionId": "e2e", "mode": "short"})
    assert again == opened  # reopening returns it unchanged

    rule, budget = await call_pushing(client, "ctx/session/addRule", {
        "sessionId": "e2e", "rule": {"text": "Never use floats for money.", "weight": 5}})
    assert rule["demoted"] == [] and "warning" not in rule
    assert budget["sessionId"] == "e2e" and budget["byLayer"]["rules"] > 0
    vague = await call(client, "ctx/session/addRule", {
        "sessionId": "e2e", "rule": {"text": "The team usually rounds half up.", "weight": 1}})
    assert "imperative" in vague["warning"]
    item = await call(client, "ctx/session/addItem", {
        "sessionId": "e2e", "item": {"kind": "log", "content":
                                     "2026-01-01T10:00:00Z ERROR invoice.py:12 Decimal overflow",
                                     "optional": False}})
    assert item["itemId"]

    for k in range(0, 60, 10):
        appended, pushed = await call_pushing(client, "ctx/session/append",
                                              {"sessionId": "e2e", "messages": chat(10, k)})
        assert pushed["used"] == appended["used"]
    assert appended["byLayer"]["history"] > 3000 and appended["nextCompactionAt"] > 0

    result = await call(client, "ctx/assemble", {"sessionId": "e2e", "budget": 3000})
    assert result["compacted"] and result["tokens"]["total"] <= 3000
    calls = client.summarize_calls  # type: ignore[attr-defined]
    assert len(calls) == 1 and calls[0]["maxTokens"] > 0
    assert [m["id"] for m in calls[0]["messages"]][:2] == ["m0", "m1"]
    text = "\n".join(m["content"] for m in result["messages"])
    assert "Never use floats for money." in text and "__RULE__" in text
    assert "The team usually rounds half up." in text
    assert CONSTRAINT in text  # hard constraints survive a useless summarizer
    assert USELESS not in text  # off-topic: replaced by the offline summary
    for fact in ("tests/test_invoice.py", "88", "E7731"):
        assert fact in text  # the facts ledger
    assert [m["id"] for m in result["messages"][-6:]] == [f"m{k}" for k in range(54, 60)]
    assert result["tokens"]["total"] >= 0.85 * 3000  # the newest that fit stay verbatim

    second = await call(client, "ctx/assemble", {"sessionId": "e2e", "budget": 3000})
    assert not second["compacted"] and len(calls) == 1
    assert second["cacheReuseTokens"] == second["tokens"]["total"] - 3

    audit = await call(client, "ctx/session/audit", {"sessionId": "e2e", "limit": 5})
    assert len(audit["entries"]) == 5
    assert all(e["action"] == "summarized" for e in audit["entries"])
    newest = next(m["id"] for m in result["messages"] if m["id"].startswith("m"))
    assert audit["entries"][0]["messageId"] == f"m{int(newest[1:]) - 1}"  # newest first

    bias = await call(client, "ctx/session/reportUsage",
                      {"sessionId": "e2e", "promptTokens": 1100, "estimatedTokens": 1000})
    assert bias["bias"] == pytest.approx(1.1)
    bias, pushed = await call_pushing(client, "ctx/session/reportUsage", {
        "sessionId": "e2e", "promptTokens": 1300, "estimatedTokens": 1000})
    assert bias["bias"] == pytest.approx(1.2)
    # the bias shrinks what the budget leaves: the status bars are told (they were not)
    assert pushed["sessionId"] == "e2e" and pushed["limit"] == int(opened["budget"] / 1.2)
    moded, pushed = await call_pushing(client, "ctx/session/setMode",
                                       {"sessionId": "e2e", "mode": "debug"})
    assert pushed == moded
    assert moded["errorBand"] == pytest.approx(0.1414, abs=1e-3)
    assert moded["limit"] == int(opened["budget"] / 1.2)  # we under-count: budget shrinks
    listed = await call(client, "ctx/session/list", {})
    (info,) = [s for s in listed["sessions"] if s["sessionId"] == "e2e"]
    assert info["messages"] == 60 and info["mode"] == "debug"
    await call(client, "ctx/session/removeRule", {"sessionId": "e2e", "ruleId": rule["ruleId"]})


async def test_compact_on_request(client):
    await call(client, "ctx/session/open", {"sessionId": "manual"})
    await call(client, "ctx/session/append", {"sessionId": "manual", "messages": chat(12)})
    out = await call(client, "ctx/session/compact", {"sessionId": "manual", "keepRecent": 2})
    assert out["replaced"] == 10 and out["summary"]["id"].startswith("ctx:summary:")
    assert CONSTRAINT in out["summary"]["content"]


async def test_errors_name_the_session_and_the_field(client):
    with pytest.raises(JsonRpcException) as err:
        await call(client, "ctx/session/append", {"sessionId": "nope", "messages": []})
    assert err.value.code == -32002
    with pytest.raises(JsonRpcException) as err:
        await call(client, "ctx/session/append", {"sessionId": "e2e",
                                                  "messages": [{"role": "robot",
                                                                "content": "x"}]})
    assert err.value.code == -32602 and "messages[0].role" in err.value.message
    with pytest.raises(JsonRpcException) as err:
        await call(client, "ctx/session/setMode", {"sessionId": "e2e", "mode": "turbo"})
    assert err.value.code == -32602 and "mode" in err.value.message


async def test_fifty_sessions_do_not_cross(client):
    async def one(k: int) -> None:
        sid = f"iso-{k}"
        await call(client, "ctx/session/open", {"sessionId": sid})
        await call(client, "ctx/session/addRule",
                   {"sessionId": sid, "rule": {"text": f"Always sign replies with S{k}."}})
        await call(client, "ctx/session/append", {"sessionId": sid, "messages": [
            {"role": "user", "content": f"secret of session {k}"}]})

    await asyncio.gather(*(one(k) for k in range(50)))
    for k in range(50):
        out = await call(client, "ctx/assemble", {"sessionId": f"iso-{k}"})
        text = "\n".join(m["content"] for m in out["messages"])
        assert f"secret of session {k}" in text and f"S{k}." in text
        others = [j for j in range(50) if j != k and (f"session {j}\n" in text + "\n"
                                                      or f"S{j}." in text)]
        assert others == []


async def _raw_initialize(daemon: RawDaemon, root, options: dict, summarize: bool) -> None:
    caps = {"experimental": {"ctxlayer": {"summarize": True}}} if summarize else {}
    await daemon.request(0, "initialize", {"processId": None, "capabilities": caps,
                                           "rootUri": root.as_uri(),
                                           "initializationOptions": options})
    await daemon.send({"jsonrpc": "2.0", "method": "initialized", "params": {}})


async def test_a_client_summarizer_that_never_answers_falls_back_offline():
    root = make_repo(WORLD / f"silent-{next(_repos)}")
    daemon = await RawDaemon.start()
    try:
        await _raw_initialize(daemon, root, {"config": {"session": {"summarizerTimeout": 0.5}}},
                              summarize=True)
        await daemon.request(1, "ctx/session/open", {"sessionId": "slow"})
        await daemon.request(2, "ctx/session/append", {"sessionId": "slow",
                                                       "messages": chat(40)})
        out = await daemon.request(3, "ctx/assemble", {"sessionId": "slow", "budget": 2500})
        result = out["result"]
        assert result["compacted"]
        asked = [n for n in daemon.notifications if n.get("method") == "ctx/summarize"]
        assert len(asked) == 1 and "id" in asked[0]  # asked once, never answered
        summary = next(m for m in result["messages"] if m.get("kind") == "summary")
        assert CONSTRAINT in summary["content"] and "E7731" in summary["content"]
    finally:
        await daemon.close()


async def test_a_summary_answered_after_the_timeout_is_dropped_quietly():
    """The client's ctx/summarize answer that comes after the wait for it ended: the offline
    summary stood in, the answer is dropped with at most one line, never an ERROR with a
    traceback (pygls set the result of the future the timeout had cancelled)."""
    root = make_repo(WORLD / f"late-{next(_repos)}")
    log = WORLD / f"late-{next(_repos)}.log"
    daemon = await RawDaemon.start("--log-file", str(log))
    try:
        await _raw_initialize(daemon, root, {"config": {"session": {"summarizerTimeout": 0.5}}},
                              summarize=True)
        await daemon.request(1, "ctx/session/open", {"sessionId": "late"})
        await daemon.request(2, "ctx/session/append", {"sessionId": "late",
                                                       "messages": chat(40)})
        out = await daemon.request(3, "ctx/assemble", {"sessionId": "late", "budget": 2500})
        assert out["result"]["compacted"]
        (asked,) = [n for n in daemon.notifications if n.get("method") == "ctx/summarize"]
        await daemon.send({"jsonrpc": "2.0", "id": asked["id"],
                           "result": {"text": "We discussed the invoice module's rounding."}})
        # read after the late answer (stdin is read in order): the daemon goes on
        listed = await daemon.request(4, "ctx/session/list", {})
        assert [s["sessionId"] for s in listed["result"]["sessions"]] == ["late"]
    finally:
        await daemon.close()
    lines = log.read_text().splitlines()
    assert not [line for line in lines if "ERROR" in line or "Traceback" in line], lines
    late = [line for line in lines if "after" in line and "summarize" in line]
    assert len(late) <= 1, late


async def test_kill_9_then_restart_keeps_every_acknowledged_message():
    root = make_repo(WORLD / f"restart-{next(_repos)}")
    daemon = await RawDaemon.start()
    acknowledged = 0
    await _raw_initialize(daemon, root, {}, summarize=False)
    await daemon.request(1, "ctx/session/open", {"sessionId": "durable"})
    for k in range(30):
        out = await daemon.request(10 + k, "ctx/session/append", {
            "sessionId": "durable", "messages": chat(1, k)})
        assert "result" in out
        acknowledged += 1
    os.kill(daemon.proc.pid, signal.SIGKILL)
    await daemon.proc.wait()

    again = await RawDaemon.start()
    try:
        await _raw_initialize(again, root, {}, summarize=False)
        listed = await again.request(1, "ctx/session/list", {})
        (info,) = [s for s in listed["result"]["sessions"] if s["sessionId"] == "durable"]
        assert info["messages"] == acknowledged
        out = await again.request(2, "ctx/assemble", {"sessionId": "durable"})
        ids = [m.get("id") for m in out["result"]["messages"]]
        assert [i for i in ids if i and i.startswith("m")] == [f"m{k}" for k in range(30)]
    finally:
        await again.close()


async def test_system_prompt_honours_compact_user_identity_and_session_history(client):
    await call(client, "ctx/session/open", {"sessionId": "earlier-work"})
    await call(client, "ctx/session/append", {"sessionId": "earlier-work", "messages": [
        {"role": "user", "content": "Port the CSV exporter to the streaming writer."},
        {"role": "assistant", "content": "I will start with the header row handling."},
        {"role": "user", "content": "Keep the column order stable."},
        {"role": "assistant", "content": "Done: the exporter now streams rows in order."},
    ]})
    full = await call(client, "ctx/systemPrompt", {})
    short = await call(client, "ctx/systemPrompt", {"compact": True})
    assert short["tokens"] < full["tokens"]
    who = await call(client, "ctx/systemPrompt", {"userIdentity": "Ada, who writes Rust"})
    assert any("Ada, who writes Rust" in m["content"] for m in who["messages"])
    assert not any("Port the CSV exporter" in m["content"] for m in full["messages"])
    with_history = await call(client, "ctx/systemPrompt", {"sessionHistory": True})
    text = "\n".join(m["content"] for m in with_history["messages"])
    assert "Port the CSV exporter" in text and "streams rows in order" in text
    assert with_history["cacheBoundary"] is not None  # history is dynamic: after the boundary


async def test_session_files_are_read_inside_the_workspace_only(client):
    await call(client, "ctx/session/open", {"sessionId": "with-files"})
    await call(client, "ctx/session/append", {"sessionId": "with-files", "messages": [
        {"role": "user", "content": "What does the README say?", "files": ["README.md"]}]})
    assembled = await call(client, "ctx/assemble", {"sessionId": "with-files"})
    asked = next(m for m in assembled["messages"] if m["role"] == "user")
    assert "A project for the daemon tests." in asked["content"]  # the file, embedded
    with pytest.raises(JsonRpcException) as err:
        await call(client, "ctx/session/append", {"sessionId": "with-files", "messages": [
            {"role": "user", "content": "and this?", "files": ["../../etc/passwd"]}]})
    assert err.value.code == -32003


async def test_add_item_and_compact_push_the_budget(client):
    await call(client, "ctx/session/open", {"sessionId": "pushes"})
    await call(client, "ctx/session/append", {"sessionId": "pushes", "messages": chat(12)})
    _, pushed = await call_pushing(client, "ctx/session/addItem", {
        "sessionId": "pushes", "item": {"kind": "note", "content": "remember the rounding rule"}})
    assert pushed["sessionId"] == "pushes" and pushed["byLayer"]["working"] > 0
    _, pushed = await call_pushing(client, "ctx/session/compact", {"sessionId": "pushes"})
    assert pushed["sessionId"] == "pushes"


PIXEL_PNG = ("iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA"
             "60e6kgAAAABJRU5ErkJggg==")
OPENAI_CHAT = [
    {"role": "user", "content": [{"type": "text", "text": "What is in this picture?"},
                                 {"type": "image_url", "image_url": {
                                     "url": "data:image/png;base64," + PIXEL_PNG,
                                     "detail": "low"}}]},
    {"role": "assistant", "content": None, "tool_calls": [{"id": "c1", "type": "function",
     "function": {"name": "look", "arguments": "{\"at\": \"cat.png\"}"}}]},
    {"role": "tool", "tool_call_id": "c1", "content": "a cat on a mat"},
    {"role": "user", "content": [{"type": "input_audio", "input_audio": {
        "data": "UklGRiQAAABXQVZFZm10IBAAAAABAAEAQB8AAIA+AAACABAAZGF0YQAAAAA=",
        "format": "wav"}}, {"type": "text", "text": "So?"}]}]
ANTHROPIC_CHAT = [
    {"role": "user", "content": [{"type": "image", "source": {
        "type": "base64", "media_type": "image/png", "data": PIXEL_PNG}},
        {"type": "text", "text": "Fix what this screenshot shows in a.py"}]},
    {"role": "assistant", "content": [
        {"type": "thinking", "thinking": "Read a.py first.", "signature": "EqQBCkYIBxgCKkD=="},
        {"type": "redacted_thinking", "data": "EmwKAhgBEgy3va3pzix/LafPsn4a"},
        {"type": "tool_use", "id": "toolu_1", "name": "read", "input": {"path": "a.py"}}]},
    {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_1",
                                  "content": "def f():\n    return 1\n"}]}]


async def test_provider_messages_in_a_session_come_back_whole_from_a_restarted_daemon():
    root = make_repo(WORLD / f"parts-{next(_repos)}")
    daemon = await RawDaemon.start()
    await _raw_initialize(daemon, root, {"model": "claude-sonnet-4"}, summarize=False)
    for n, (sid, fmt, msgs) in enumerate([("openai-shaped", "openai", OPENAI_CHAT),
                                          ("anthropic-shaped", "anthropic", ANTHROPIC_CHAT)]):
        await daemon.request(10 * n + 1, "ctx/session/open", {"sessionId": sid})
        out = await daemon.request(10 * n + 2, "ctx/session/append", {
            "sessionId": sid, "format": fmt, "messages": msgs})
        assert "result" in out, out
    os.kill(daemon.proc.pid, signal.SIGKILL)
    await daemon.proc.wait()

    again = await RawDaemon.start()
    try:
        await _raw_initialize(again, root, {"model": "claude-sonnet-4"}, summarize=False)
        out = (await again.request(1, "ctx/assemble", {"sessionId": "openai-shaped",
                                                       "format": "openai"}))["result"]
        assert [m for m in out["messages"] if m["role"] != "system"] == OPENAI_CHAT
        assert not out["dropped"] and not out["truncated"]
        out = (await again.request(2, "ctx/assemble", {"sessionId": "anthropic-shaped",
                                                       "format": "anthropic"}))["result"]
        assert out["messages"] == ANTHROPIC_CHAT
        assert not out["dropped"] and not out["truncated"]
        # in another format the thinking cannot go along: said in the result itself
        out = (await again.request(3, "ctx/assemble", {"sessionId": "anthropic-shaped",
                                                       "format": "openai"}))["result"]
        lost = " ".join(e["reason"] for e in out["truncated"])
        assert "thinking" in lost and "redacted_thinking" in lost and "image" not in lost
        shot = next(m for m in out["messages"] if m["role"] == "user")
        assert shot["content"][0] == {"type": "image_url", "image_url": {
            "url": "data:image/png;base64," + PIXEL_PNG}}  # images go along
        audit = (await again.request(4, "ctx/session/audit",
                                     {"sessionId": "anthropic-shaped"}))["result"]
        assert not [e for e in audit["entries"] if e["action"] == "dropped"]
    finally:
        await again.close()


CITATION = {"type": "char_location", "cited_text": "Pay in 30 days.", "document_index": 0,
            "start_char_index": 0, "end_char_index": 15}
#: (source format, turns, target format, what the target's writer leaves behind)
LEFT_BEHIND = [
    ("openai", [{"role": "user", "name": "alice", "content": "I am alice"},
                {"role": "assistant", "content": "hi"},
                {"role": "user", "name": "bob", "content": "who spoke first?"}],
     ("anthropic", "responses"), "name field"),
    ("anthropic", [{"role": "user", "content": "when?"},
                   {"role": "assistant", "content": [{"type": "text", "text": "in 30 days",
                                                      "citations": [CITATION]}]}],
     ("openai",), "text citations"),
    ("anthropic", [{"role": "user", "content": "go"},
                   {"role": "assistant", "content": [{"type": "tool_use", "id": "t1",
                                                      "name": "run", "input": {}}]},
                   {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1",
                                                 "is_error": True, "content": "denied"}]}],
     ("openai",), "tool_result is_error"),
    ("anthropic", [{"role": "user", "content": [{"type": "text", "text": "the spec",
                                                 "cache_control": {"type": "ephemeral"}}]},
                   {"role": "system", "content": [{"type": "text", "text": "Be terse.",
                                                   "cache_control": {"type": "ephemeral"}}]}],
     ("openai",), "text cache_control"),
    ("responses", [{"role": "user", "content": "q"},
                   {"type": "message", "role": "assistant", "content": [
                       {"type": "output_text", "text": "see A", "annotations": [
                           {"type": "url_citation", "url": "https://cite.example",
                            "start_index": 0, "end_index": 5, "title": "A"}]}]}],
     ("openai",), "output_text annotations"),
]


async def test_what_another_format_cannot_carry_is_named_field_by_field(client):
    """A user's name, a text's citations or cache marker, a tool result's error flag, an
    output's annotations: each went nowhere when the session was assembled in another
    format, and the result said nothing was dropped or shortened."""
    for n, (src, turns, targets, name) in enumerate(LEFT_BEHIND):
        sid = f"left-behind-{n}"
        await call(client, "ctx/session/open", {"sessionId": sid})
        await call(client, "ctx/session/append", {"sessionId": sid, "format": src,
                                                  "messages": turns})
        for dst in targets:
            out = await call(client, "ctx/assemble", {"sessionId": sid, "format": dst})
            lost = [e for e in out["truncated"] if name in e["reason"]]
            assert lost, (src, dst, out["truncated"])
            assert all(f"written as {dst}, not carried" in e["reason"] for e in lost)
        same = await call(client, "ctx/assemble", {"sessionId": sid, "format": src})
        assert not same["truncated"]  # its own format gets it all


async def test_call_ids_anthropic_refuses_are_written_as_ones_it_takes(client):
    """An OpenAI session of a Kimi model ("functions.read:0") assembled as Anthropic sent
    that id in tool_use.id, which the provider refuses (400, ^[a-zA-Z0-9_-]+$)."""
    from providers.rules import anthropic_problems

    turns = [{"role": "user", "content": "read it"},
             {"role": "assistant", "content": None, "tool_calls": [
                 {"id": "functions.read:0", "type": "function",
                  "function": {"name": "read", "arguments": "{}"}}]},
             {"role": "tool", "tool_call_id": "functions.read:0", "content": "R1"},
             {"role": "user", "content": "ok?"}]
    await call(client, "ctx/session/open", {"sessionId": "kimi-ids"})
    await call(client, "ctx/session/append", {"sessionId": "kimi-ids", "format": "openai",
                                              "messages": turns})
    out = await call(client, "ctx/assemble", {"sessionId": "kimi-ids", "format": "anthropic"})
    sent = out["messages"]
    assert anthropic_problems({"model": "m", "max_tokens": 8, "messages": sent}) == []
    (use,) = [b for m in sent for b in m["content"] if isinstance(m["content"], list)
              and b["type"] == "tool_use"]
    (result,) = [b for m in sent for b in m["content"] if isinstance(m["content"], list)
                 and b["type"] == "tool_result"]
    assert use["id"] == result["tool_use_id"] != "functions.read:0"
    assert any("functions.read:0" in e["summary"] for e in out["truncated"])  # said
    again = await call(client, "ctx/assemble", {"sessionId": "kimi-ids", "format": "anthropic"})
    assert again["messages"] == sent  # the same every time: the cached prefix holds


async def test_why_explains_a_sessions_last_assembly_and_restore_brings_one_back(client):
    await call(client, "ctx/session/open", {"sessionId": "why-session", "budget": 900})
    await call(client, "ctx/session/append", {"sessionId": "why-session", "messages": chat(30)})
    assembled = await call(client, "ctx/assemble", {"sessionId": "why-session"})
    assert assembled["compacted"], "a 900-token budget compacts 30 long turns"
    why = await call(client, "ctx/why", {"sessionId": "why-session"})
    cut = why["entries"]
    assert any(e["action"] == "summarized" for e in cut)
    assert {e["messageId"] for e in assembled["dropped"]} <= {e["messageId"] for e in cut}
    one = next(e["messageId"] for e in cut if e["action"] == "summarized")
    only = await call(client, "ctx/why", {"sessionId": "why-session", "messageId": one})
    assert only["entries"] and all(e["messageId"] == one for e in only["entries"])
    back = next(e["messageId"] for e in cut if e["action"] == "summarized"
                and not e["messageId"].startswith("ctx:summary:"))  # a message, not the summary
    await call(client, "ctx/restore", {"sessionId": "why-session", "messageId": back})
    told = await call(client, "ctx/why", {"sessionId": "why-session", "messageId": back})
    assert "restored" in [e["action"] for e in told["entries"]]
    again = await call(client, "ctx/assemble", {"sessionId": "why-session"})
    assert back in [m.get("id") for m in again["messages"]]  # whole again after the summary
    assert again["tokens"]["total"] <= 900
    with pytest.raises(JsonRpcException) as err:
        await call(client, "ctx/restore", {"sessionId": "why-session", "messageId": "nope"})
    assert err.value.code == -32602 and "messageId" in err.value.message


async def test_a_problem_told_the_editor_is_in_the_daemons_log_too():
    """A bad value in ctxlayer.toml reached the editor (window/showMessage) and never the
    daemon's own log: `--log-file` held the workspace's size and nothing of it."""
    root = make_repo(WORLD / f"badconfig-{next(_repos)}")
    (root / "ctxlayer.toml").write_text('[workspace]\ndebounce_ms = "fast"\n')
    log = WORLD / f"badconfig-{next(_repos)}.log"
    daemon = await RawDaemon.start("--log-file", str(log))
    try:
        await _raw_initialize(daemon, root, {}, summarize=False)
        listed = await daemon.request(1, "ctx/session/list", {})  # the first scan is done
        assert "result" in listed
        told = [n["params"]["message"] for n in daemon.notifications
                if n.get("method") == "window/showMessage"]
        assert any("debounce_ms" in m for m in told), told
    finally:
        await daemon.close()
    logged = [line for line in log.read_text().splitlines() if "debounce_ms" in line]
    assert logged and "WARNING" in logged[0], log.read_text()
