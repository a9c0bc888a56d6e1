"""Provider messages in a session keep every part: appended in a format, assembled in the same
format they come back as they came, also after the process restarts on the same database;
assembled in another format, what that format does not get is named in the result.

Through the request functions (no face): a real State on a temporary state folder, the real
tokenizer, the real session service and its SQLite database."""

from __future__ import annotations

import base64

import pytest
from images import png as png_head

from ctxlayer import protocol
from ctxlayer.state import Caller, State
from ctxlayer.state.requests import call, sessions

MODEL = "claude-sonnet-4"


def png(width: int, height: int) -> str:
    """A PNG's header, 64 bytes after it."""
    return png_head(width, height, 64)


SIGNED = {"type": "thinking", "thinking": "The user wants a.py read first; then the fix.",
          "signature": "EqQBCkYIBxgCKkDsignature+/=="}
REDACTED = {"type": "redacted_thinking", "data": "EmwKAhgBEgy3va3pzix/LafPsn4a" * 8}
READ = {"type": "tool_use", "id": "toolu_1", "name": "read", "input": {"path": "a.py"}}
IMAGE = {"type": "image", "source": {"type": "base64", "media_type": "image/png",
                                     "data": png(1024, 768)}}
DOCUMENT = {"type": "document", "source": {"type": "text", "media_type": "text/plain",
                                           "data": "The contract: pay within 30 days."},
            "title": "contract.txt", "citations": {"enabled": True}}
UNKNOWN_AN = {"type": "future_block", "payload": {"x": [1, 2, 3]}}

ANTHROPIC_TURNS = {
    "thinking+signature": [
        {"role": "user", "content": "Fix the bug in a.py"},
        {"role": "assistant", "content": [SIGNED, READ]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_1",
                                      "content": "def f():\n    return 1\n"}]}],
    "redacted_thinking": [
        {"role": "user", "content": "Fix the bug in a.py"},
        {"role": "assistant", "content": [REDACTED, {**SIGNED}, READ]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_1",
                                      "content": "ok"}, {"type": "text", "text": "go on"}]}],
    "image": [{"role": "user", "content": [IMAGE, {"type": "text",
                                                   "text": "look at this screenshot"}]}],
    "document": [{"role": "user", "content": [DOCUMENT, {"type": "text",
                                                         "text": "When must we pay?"}]}],
    "unknown part": [{"role": "user", "content": [{"type": "text", "text": "hi"}, UNKNOWN_AN]}],
    # the provider's compaction: a session keeps what came before it too
    "compaction": [{"role": "user", "content": "Fix the bug in a.py"},
                   {"role": "assistant", "content": [
                       {"type": "compaction", "content": "a.py read; f returns 1",
                        "signature": "c2VhbGVk"}, {"type": "text", "text": "On it."}]},
                   {"role": "user", "content": "go on"}],
}

OPENAI_IMAGE = {"type": "image_url", "image_url": {
    "url": "data:image/png;base64," + png(1024, 768), "detail": "high"}}
OPENAI_AUDIO = {"type": "input_audio", "input_audio": {
    "data": base64.b64encode(b"RIFF" + b"\x00" * 64000).decode(), "format": "wav"}}
OPENAI_FILE = {"type": "file", "file": {"filename": "c.pdf", "file_data":
                                        "data:application/pdf;base64,JVBERi0xLjQK"}}
OPENAI_TURNS = {
    "image": [{"role": "user", "content": [{"type": "text", "text": "look at this screenshot"},
                                           OPENAI_IMAGE]}],
    "audio": [{"role": "user", "content": [{"type": "text", "text": "transcribe this"},
                                           OPENAI_AUDIO]}],
    "document": [{"role": "user", "content": [OPENAI_FILE, {"type": "text",
                                                            "text": "summarize"}]}],
    "unknown part": [{"role": "user", "content": [{"type": "text", "text": "hi"},
                                                  {"type": "future_part", "v": 1}]}],
    "unknown field": [{"role": "user", "content": "hi"},
                      {"role": "assistant", "content": "Thinking done.", "reasoning_content":
                       "first a.py, then the fix", "tool_calls": [
                           {"id": "c1", "type": "function", "function": {
                               "name": "read", "arguments": "{\"path\": \"a.py\"}"}}]},
                      {"role": "tool", "tool_call_id": "c1", "content": "def f(): ..."}],
}


SEALED = base64.b64encode(b"sealed reasoning " * 40).decode()
RESPONSES_TURNS = {
    "reasoning+call": [
        {"role": "user", "content": "Fix the bug in a.py"},
        {"type": "reasoning", "id": "rs_1", "summary": [
            {"type": "summary_text", "text": "read a.py first"}], "encrypted_content": SEALED},
        {"type": "function_call", "id": "fc_1", "call_id": "c1", "name": "read",
         "arguments": "{\"path\": \"a.py\"}"},
        {"type": "function_call_output", "call_id": "c1", "output": "def f(): ..."}],
    "image": [{"role": "user", "content": [
        {"type": "input_text", "text": "look at this screenshot"},
        {"type": "input_image", "image_url": "data:image/png;base64," + png(1024, 768),
         "detail": "high"}]}],
    "document": [{"role": "user", "content": [
        {"type": "input_file", "filename": "c.pdf",
         "file_data": "data:application/pdf;base64,JVBERi0xLjQK"},
        {"type": "input_text", "text": "summarize"}]}],
    "unknown item": [{"role": "user", "content": "search it"},
                     {"type": "web_search_call", "id": "ws_1", "status": "completed",
                      "action": {"type": "search", "query": "ctxlayer"}},
                     {"type": "message", "role": "assistant", "id": "msg_1", "content": [
                         {"type": "output_text", "text": "found it", "annotations": []}]}],
    # Codex's remote compaction: the user's messages, then the provider's sealed summary
    "compaction": [{"role": "user", "content": "Fix the bug in a.py"},
                   {"type": "compaction", "id": "cmp_1", "encrypted_content": SEALED},
                   {"role": "user", "content": "go on"}],
}


def make_caller(folder) -> tuple[State, Caller]:
    state = State(folder)
    return state, Caller(state, source="session",
                         options=protocol.InitializationOptions(model=MODEL))


async def append(caller: Caller, sid: str, fmt: str, messages: list[dict]) -> protocol.Budget:
    await call(caller, "ctx/session/open", protocol.SessionOpenParams(session_id=sid))
    return await call(caller, "ctx/session/append", protocol.SessionAppendParams(
        session_id=sid, messages=messages, format=fmt))


async def assemble(caller: Caller, sid: str, fmt: str) -> protocol.AssembleResult:
    return await call(caller, "ctx/assemble", protocol.AssembleParams(session_id=sid, format=fmt))


def conversation(out: protocol.AssembleResult) -> list[dict]:
    """The assembled messages without the session's own system layers."""
    return [m for m in out.messages if m.get("role") != "system"]


CASES = [("anthropic", name, turns) for name, turns in ANTHROPIC_TURNS.items()] + \
    [("openai", name, turns) for name, turns in OPENAI_TURNS.items()] + \
    [("responses", name, turns) for name, turns in RESPONSES_TURNS.items()]


@pytest.mark.parametrize(("fmt", "name", "turns"), CASES, ids=[f"{f}-{n}" for f, n, _ in CASES])
async def test_every_part_comes_back_as_it_came_also_after_a_restart(tmp_path, fmt, name,
                                                                     turns):
    state, caller = make_caller(tmp_path / "state")
    try:
        await append(caller, "s", fmt, turns)
        first = await assemble(caller, "s", fmt)
        assert conversation(first) == turns
        assert not first.dropped and not first.truncated
    finally:
        state.close()
    state, caller = make_caller(tmp_path / "state")  # a new process on the same database
    try:
        again = await assemble(caller, "s", fmt)
        assert conversation(again) == turns
        assert again.tokens == first.tokens
    finally:
        state.close()


async def test_a_thinking_turn_keeps_its_thinking_among_later_turns(tmp_path):
    state, caller = make_caller(tmp_path / "state")
    try:
        turns = ANTHROPIC_TURNS["thinking+signature"]
        await append(caller, "loop", "anthropic", turns)
        later = [{"role": "assistant", "content": [
                     {**SIGNED, "signature": "second"},
                     {"type": "tool_use", "id": "toolu_2", "name": "edit",
                      "input": {"path": "a.py"}}]},
                 {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_2",
                                               "content": "edited"}]}]
        await call(caller, "ctx/session/append", protocol.SessionAppendParams(
            session_id="loop", messages=later, format="anthropic"))
        out = await assemble(caller, "loop", "anthropic")
        assert conversation(out) == turns + later
    finally:
        state.close()


async def test_another_format_names_what_it_cannot_carry(tmp_path):
    state, caller = make_caller(tmp_path / "state")
    try:
        await append(caller, "x", "anthropic", ANTHROPIC_TURNS["thinking+signature"])
        out = await assemble(caller, "x", "openai")
        sent = conversation(out)
        assert sent[1]["tool_calls"][0]["function"]["name"] == "read"
        (lost,) = [e for e in out.truncated if "not carried" in e.reason]
        assert "thinking" in lost.reason and "openai" in lost.reason
        assert lost.tokens_before > lost.tokens_after
        await append(caller, "z", "anthropic", ANTHROPIC_TURNS["image"])
        (shot,) = conversation(await assemble(caller, "z", "openai"))
        assert shot["content"] == [
            {"type": "image_url", "image_url": {"url": "data:image/png;base64," + png(1024, 768)}},
            {"type": "text", "text": "look at this screenshot"}]
        plain = await assemble(caller, "x", "ctxlayer")
        assert any("thinking" in e.reason for e in plain.truncated)
        # the same format still gets it all
        back = await assemble(caller, "x", "anthropic")
        assert conversation(back) == ANTHROPIC_TURNS["thinking+signature"]
        assert not back.truncated

        await append(caller, "y", "openai", OPENAI_TURNS["image"] + OPENAI_TURNS["audio"])
        out = await assemble(caller, "y", "anthropic")
        reasons = " ".join(e.reason for e in out.truncated if "not carried" in e.reason)
        assert "input_audio" in reasons and "image" not in reasons
        # both formats carry images: the screenshot goes along in Anthropic's shape
        blocks = [b for m in conversation(out) for b in m["content"]]
        assert {"type": "image", "source": {"type": "base64", "media_type": "image/png",
                                            "data": png(1024, 768)}} in blocks
        assert {"type": "text", "text": "look at this screenshot"} in blocks
        assert {e.message_id for e in out.truncated} <= {
            m.id for m in (await assemble(caller, "y", "ctxlayer")).messages}
    finally:
        state.close()


async def test_responses_items_across_formats_go_along_or_are_named(tmp_path):
    """A Responses session assembled as Chat Completions or Anthropic: the calls and outputs
    go as tool calls and results, the screenshot as the target's image, and the reasoning and
    the hosted search, which neither format carries, are named in `truncated`; the other way,
    an OpenAI screenshot goes out as an `input_image`."""
    state, caller = make_caller(tmp_path / "state")
    try:
        turns = RESPONSES_TURNS["reasoning+call"] + RESPONSES_TURNS["unknown item"][1:]
        await append(caller, "r", "responses", turns + RESPONSES_TURNS["image"])
        for fmt in ("openai", "anthropic"):
            out = await assemble(caller, "r", fmt)
            reasons = " ".join(e.reason for e in out.truncated if "not carried" in e.reason)
            assert "reasoning" in reasons and "web_search_call" in reasons, fmt
            assert "image" not in reasons, fmt
            text = str(conversation(out))
            assert "read" in text and "def f(): ..." in text and png(1024, 768) in text, fmt
        back = await assemble(caller, "r", "responses")
        assert conversation(back) == turns + RESPONSES_TURNS["image"]
        assert not back.truncated

        await append(caller, "o", "openai", OPENAI_TURNS["image"])
        (shot,) = conversation(await assemble(caller, "o", "responses"))
        assert shot["content"] == [
            {"type": "input_text", "text": "look at this screenshot"},
            {"type": "input_image", "image_url": "data:image/png;base64," + png(1024, 768),
             "detail": "high"}]
    finally:
        state.close()


async def test_an_openai_refusal_written_as_anthropic_leaves_no_empty_message(tmp_path):
    """An OpenAI assistant turn that is only a refusal has no text Anthropic can carry: it was
    written as an empty message, which Anthropic refuses (found by appending generated OpenAI
    chats and assembling them as Anthropic). It is left out, audited, the user turns around
    it merged, and the refusal named as not carried."""
    from providers.rules import anthropic_problems

    state, caller = make_caller(tmp_path / "state")
    try:
        turns = [{"role": "user", "content": "write the exploit"},
                 {"role": "assistant", "content": None, "refusal": "I can't help with that."},
                 {"role": "user", "content": "then explain the bug in a.py"}]
        await append(caller, "r", "openai", turns)
        out = await assemble(caller, "r", "anthropic")
        sent = conversation(out)
        assert anthropic_problems({"model": "m", "max_tokens": 8, "messages": sent}) == []
        assert [m["role"] for m in sent] == ["user"]
        assert "write the exploit" in str(sent) and "explain the bug" in str(sent)
        assert any("empty message" in e.reason for e in out.dropped)
        assert any("refusal" in e.reason and "not carried" in e.reason for e in out.truncated)
    finally:
        state.close()


async def test_a_session_audit_says_nothing_was_left_out(tmp_path):
    state, caller = make_caller(tmp_path / "state")
    try:
        await append(caller, "a", "openai", OPENAI_TURNS["image"])
        log = sessions.audit(caller, protocol.AuditParams(session_id="a"))
        assert not [e for e in log.entries if e.action == "dropped"]
    finally:
        state.close()


def loop_turn(k: int) -> list[dict]:
    long = f"Step {k}: I looked at module m{k} and its callers at length. " * 30
    return [{"role": "assistant", "content": [
                {"type": "thinking", "thinking": f"Plan for step {k}.", "signature": f"sig{k}"},
                {"type": "text", "text": long},
                {"type": "tool_use", "id": f"toolu_{k}", "name": "read",
                 "input": {"path": f"m{k}.py"}}]},
            {"role": "user", "content": [
                {"type": "tool_result", "tool_use_id": f"toolu_{k}",
                 "content": f"def step_{k}():\n" + "    pass\n" * 200},
                {"type": "text", "text": f"continue after step {k}"}]}]


async def test_a_tight_budget_shortens_text_and_keeps_every_thinking_block_whole(tmp_path):
    state, caller = make_caller(tmp_path / "state")
    try:
        turns = [{"role": "user", "content": "Refactor the steps."}]
        for k in range(12):
            turns += loop_turn(k)
        await call(caller, "ctx/session/open", protocol.SessionOpenParams(session_id="t",
                                                                       budget=6000))
        await call(caller, "ctx/session/append", protocol.SessionAppendParams(
            session_id="t", messages=turns, format="anthropic"))
        out = await assemble(caller, "t", "anthropic")
        assert out.tokens.total <= 6000 and (out.dropped or out.truncated or out.compacted)
        sent = conversation(out)
        assert sent[0]["role"] == "user"
        assert all(a["role"] != b["role"] for a, b in zip(sent, sent[1:], strict=False))
        originals = {b["signature"]: b for t in turns if t["role"] == "assistant"
                     for b in t["content"] if b["type"] == "thinking"}
        thinking = [b for m in sent if isinstance(m["content"], list) for b in m["content"]
                    if b.get("type") == "thinking"]
        assert thinking and all(b == originals[b["signature"]] for b in thinking)
        # the last tool loop's turn goes out with its thinking first, as the provider wants
        last = next(m for m in reversed(sent) if m["role"] == "assistant")
        assert last["content"][0] == originals["sig11"]
        assert any(b.get("type") == "tool_use" and b["id"] == "toolu_11"
                   for b in last["content"])
    finally:
        state.close()


async def test_the_audit_line_of_a_cut_message_names_its_parts(tmp_path):
    state, caller = make_caller(tmp_path / "state")
    try:
        turns = ANTHROPIC_TURNS["image"] + [
            {"role": "assistant", "content": [{**SIGNED, "thinking": " ".join(["why"] * 50)},
                                              READ]},
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_1",
                                          "content": "ok"}]}]
        for k in range(14):
            turns += [{"role": "assistant", "content": f"Turn {k}: " + "words " * 200},
                      {"role": "user", "content": f"next {k}"}]
        await call(caller, "ctx/session/open", protocol.SessionOpenParams(session_id="cut",
                                                                       budget=2500))
        await call(caller, "ctx/session/append", protocol.SessionAppendParams(
            session_id="cut", messages=turns, format="anthropic"))
        out = await assemble(caller, "cut", "anthropic")
        lines = {e.summary for e in [*out.dropped, *out.truncated]}
        log = sessions.audit(caller, protocol.AuditParams(session_id="cut"))
        lines |= {e.summary for e in log.entries}
        assert "user: image 1024x768 (1049 tokens) + 'look at this screenshot'" in lines
        assert any(line.startswith("assistant: thinking (") and line.endswith(" + read(a.py)")
                   for line in lines), lines
    finally:
        state.close()


async def test_parts_a_session_cannot_store_are_audited_at_append(tmp_path):
    state, caller = make_caller(tmp_path / "state")
    try:  # the ctxlayer format has no parts to store: what a client counted for them goes
        await append(caller, "c", "ctxlayer", [{"role": "user", "content": "see", "id": "u",
                                                "partsTokens": 85, "parts": ["image (85 tokens)"]}])
        (entry,) = sessions.audit(caller, protocol.AuditParams(session_id="c")).entries
        assert entry.action == "dropped" and entry.tokens_before == 85
        assert entry.summary == "user: image (85 tokens) + 'see'"
    finally:
        state.close()
