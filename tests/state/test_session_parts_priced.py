"""A session's non-text parts cost what the provider reads of them when it is assembled: by the
session's model (Claude's image rule, which thinking it reads again), at the turn the session
is at (an earlier turn's thinking is read by its text alone), and as the format it is sent in
carries them (another format gets no thinking, documents or audio). An assembly's tokens are
what ctx/count says of what it sent, and it fits what it sends, not what it does not.

Through the request functions (no face): a real State, the real tokenizer and session service.
"""

from __future__ import annotations

import json

import msgspec
from images import png as png_head

from ctxlayer import protocol
from ctxlayer.state import Caller, State
from ctxlayer.state.requests import call

MODEL = "claude-sonnet-4"


def png(width: int, height: int) -> str:
    """A PNG's header, 64 bytes after it."""
    return png_head(width, height, 64)


def make_caller(folder) -> tuple[State, Caller]:
    state = State(folder)
    return state, Caller(state, source="session",
                         options=protocol.InitializationOptions(model=MODEL))

SHOT = "data:image/png;base64," + png(1024, 768)
SEALED = "E" * 8000  # thinking shown as omitted: all of it sealed in the signature


def screenshots(n: int) -> list[dict]:
    """OpenAI-format turns, each with a screenshot at detail low (85 tokens to OpenAI, over a
    thousand to Claude, which has no detail setting)."""
    out: list[dict] = []
    for k in range(n):
        out += [{"role": "user", "content": [
                    {"type": "text", "text": f"screenshot {k}: what changed?"},
                    {"type": "image_url", "image_url": {"url": SHOT, "detail": "low"}}]},
                {"role": "assistant", "content": f"In screenshot {k} the button moved left."}]
    return out + [{"role": "user", "content": "summarize all changes"}]


def task(k: int) -> list[dict]:
    """One finished agent task of Claude's: its thinking sealed, a call, its result, an answer."""
    return [{"role": "user", "content": f"task {k}: fix bug B{k} in module_{k}.py"},
            {"role": "assistant", "content": [
                {"type": "thinking", "thinking": "", "signature": SEALED + str(k)},
                {"type": "tool_use", "id": f"t{k}", "name": "read",
                 "input": {"path": f"module_{k}.py"}}]},
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": f"t{k}",
                                          "content": f"def f{k}():\n    return {k}\n"}]},
            {"role": "assistant", "content": f"Fixed B{k}: module_{k}.py now returns {k + 1}."}]


async def open_with(caller, sid: str, fmt: str, messages: list[dict], budget: int | None = None
                    ) -> protocol.Budget:
    await call(caller, "ctx/session/open", protocol.SessionOpenParams(session_id=sid,
                                                                     budget=budget))
    return await call(caller, "ctx/session/append", protocol.SessionAppendParams(
        session_id=sid, messages=messages, format=fmt))


async def assembled(caller, sid: str, fmt: str, model: str = MODEL
                    ) -> tuple[protocol.AssembleResult, int]:
    """(the assembly, ctx/count of what it sent, its system included, for `model`)."""
    out = await call(caller, "ctx/assemble", protocol.AssembleParams(session_id=sid, format=fmt))
    counted = await call(caller, "ctx/count", protocol.CountParams(
        messages=msgspec.to_builtins(out.messages), system=out.system, format=fmt,
        model=model))
    return out, counted.total


async def test_a_claude_session_prices_openai_images_by_claudes_rule(tmp_path):
    """20 screenshots at detail low were 85 tokens each to the session (OpenAI's rate, read
    without the model): it sent all 20, 21,724 tokens to Claude for a budget of 8,000, and
    said 2,444."""
    state, caller = make_caller(tmp_path / "state")
    try:
        turns = screenshots(20)
        budget = await open_with(caller, "s", "openai", turns, budget=8000)
        whole = await call(caller, "ctx/count", protocol.CountParams(
            messages=turns, format="openai", model=MODEL))
        assert budget.used > budget.limit  # the session as it stands is over: said so
        assert budget.used >= whole.total
        for fmt in ("anthropic", "openai"):
            out, sent = await assembled(caller, "s", fmt)
            assert out.tokens.total == sent <= 8000
            assert json.dumps(out.messages).count(SHOT[:60]) < 20
        audit = await call(caller, "ctx/session/audit", protocol.AuditParams(session_id="s"))
        assert not any("(85 tokens)" in e.summary for e in audit.entries)
    finally:
        state.close()


async def test_earlier_turns_thinking_costs_only_what_the_provider_reads(tmp_path):
    """12 finished tasks with sealed thinking, read by the provider as 2,661 tokens on
    claude-sonnet-4 (only the turn under way keeps its thinking): the session charged every
    turn's in full (24,411 used), compacted 29 messages and sent 21 of 49."""
    state, caller = make_caller(tmp_path / "state")
    try:
        msgs = [m for k in range(12) for m in task(k)]
        msgs.append({"role": "user", "content": "now what did you change in module_3.py?"})
        budget = await open_with(caller, "s", "anthropic", msgs, budget=12000)
        out, sent = await assembled(caller, "s", "anthropic")
        assert not out.compacted and not out.dropped
        assert len([m for m in out.messages]) == len(msgs)
        assert out.tokens.total == sent == budget.used
        assert sent < 4000
    finally:
        state.close()


async def test_the_thinking_of_the_turn_under_way_costs_less_once_the_user_writes_again(
        tmp_path):
    state, caller = make_caller(tmp_path / "state")
    try:
        first = task(0)[:3]  # the loop under way: its thinking is read again
        await open_with(caller, "s", "anthropic", first)
        during, sent = await assembled(caller, "s", "anthropic")
        assert during.tokens.total == sent > 1500
        await call(caller, "ctx/session/append", protocol.SessionAppendParams(
            session_id="s", format="anthropic", messages=[
                {"role": "assistant", "content": "Fixed it."},
                {"role": "user", "content": "now the next one"}]))
        after, sent = await assembled(caller, "s", "anthropic")
        assert after.tokens.total == sent < 200
    finally:
        state.close()


async def test_a_new_model_prices_the_parts_by_its_rules(tmp_path):
    state, caller = make_caller(tmp_path / "state")
    try:
        await open_with(caller, "s", "openai", screenshots(2))
        claude, sent = await assembled(caller, "s", "openai")
        assert claude.tokens.total == sent
        await call(caller, "ctx/session/configure", protocol.SessionConfigureParams(
            session_id="s", model="gpt-4o", budget=20_000))
        gpt, sent = await assembled(caller, "s", "openai", model="gpt-4o")
        assert gpt.tokens.total == sent < claude.tokens.total - 1500
    finally:
        state.close()


def agent_session() -> list[dict]:
    """An Anthropic agent loop: thinking, parallel calls, results with images, a PDF."""
    shot = {"type": "image", "source": {"type": "base64", "media_type": "image/png",
                                        "data": png(800, 600)}}
    pdf = {"type": "document", "source": {"type": "base64", "media_type": "application/pdf",
                                          "data": "JVBERi0xLjQK" * 200}}
    turns: list[dict] = [{"role": "user", "content": [
        {"type": "text", "text": "Fix the flaky tests in tests/test_net.py"}, pdf]}]
    for k in range(8):
        turns.append({"role": "assistant", "content": [
            {"type": "thinking", "thinking": f"step {k} " + "consider the retry logic " * 20,
             "signature": f"sig{k}"},
            {"type": "text", "text": f"Step {k}: checking two files. " + "Some notes. " * 30},
            {"type": "tool_use", "id": f"a{k}", "name": "read", "input": {"path": f"n{k}.py"}},
            {"type": "tool_use", "id": f"b{k}", "name": "bash", "input": {"cmd": f"pytest {k}"}}]})
        turns.append({"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": f"a{k}",
             "content": f"def n{k}():\n" + "    retry()\n" * 80},
            {"type": "tool_result", "tool_use_id": f"b{k}", "is_error": True,
             "content": [{"type": "text", "text": f"FAILED test_{k}"}, shot]}]})
    return turns


async def test_another_format_fits_and_reports_what_it_sends(tmp_path):
    """Assembled as openai or responses, the Anthropic session's thinking, PDF and result
    images do not go: at 9,000 it reported 7,961 for 2,624 sent, and summarized down to 24
    messages what fitted whole."""
    state, caller = make_caller(tmp_path / "state")
    try:
        turns = agent_session()
        for fmt in ("openai", "responses"):
            await open_with(caller, f"big-{fmt}", "anthropic", turns, budget=100_000)
            whole, whole_sent = await assembled(caller, f"big-{fmt}", fmt)
            assert whole.tokens.total == whole_sent
            budget = whole_sent + 500
            await open_with(caller, f"fit-{fmt}", "anthropic", turns, budget=budget)
            out, sent = await assembled(caller, f"fit-{fmt}", fmt)
            assert out.tokens.total == sent <= budget
            assert not out.compacted and len(out.messages) == len(whole.messages)
        await open_with(caller, "shots", "openai", screenshots(3))
        out, sent = await assembled(caller, "shots", "ctxlayer")
        assert out.tokens.total == sent
    finally:
        state.close()


async def test_the_ctxlayer_format_counts_only_what_it_holds(tmp_path):
    """Assembled as ctxlayer, the Anthropic session's images, PDF and thinking are "not carried
    across formats" (its audit says so), yet the total counted them all: 6,883 as the
    Anthropic assembly, where the OpenAI one, which carries the images, said 2,756. Its
    messages hold their text and calls, no parts, and the total is what they come to."""
    state, caller = make_caller(tmp_path / "state")
    try:
        await open_with(caller, "s", "anthropic", agent_session(), budget=100_000)
        native, _ = await assembled(caller, "s", "anthropic")
        openai, _ = await assembled(caller, "s", "openai")
        out, sent = await assembled(caller, "s", "ctxlayer")
        assert any("not carried across formats" in e.reason for e in out.truncated)
        assert not any(m.parts_tokens or m.parts for m in out.messages)
        assert out.tokens.total == sent <= openai.tokens.total < native.tokens.total
    finally:
        state.close()


async def test_what_another_format_loses_is_said_beside_what_it_keeps(tmp_path):
    """A user message with a PDF and an image by URL, written as openai, keeps its image and
    loses its PDF: the audit said it went from 4,6xx tokens to its 3 words, as though the
    image went too. What it keeps is its words and its image, as the assembly priced it."""
    state, caller = make_caller(tmp_path / "state")
    try:
        pdf = {"type": "document", "source": {"type": "base64", "media_type": "application/pdf",
                                              "data": "JVBERi0xLjQK"}}
        url = {"type": "image", "source": {"type": "url", "url": "https://example.com/x.png"}}
        await open_with(caller, "u", "anthropic", [{"role": "user", "content": [
            pdf, url, {"type": "text", "text": "and these?"}]}])
        out, sent = await assembled(caller, "u", "openai")
        lost = next(e for e in out.truncated if "not carried across formats" in e.reason)
        assert "document" in lost.reason and "image" not in lost.reason
        assert lost.tokens_before - lost.tokens_after == 3000  # the PDF's one page, alone
        assert lost.tokens_after > 1000 and sent == out.tokens.total  # its image still counted
    finally:
        state.close()
