"""A session's newest tool loop, thinking only on its first step (Claude without interleaved
thinking), assembled for Anthropic under a budget that summarizes most of it: the request went
out as [summary, tool_use tu5, tool_result], the loop opened without the thinking it had, and
Anthropic refuses that with thinking on. Now its first step, with its thinking and its result
(outlined), follows the summary, and the stand-in's rule for it is met. The real State and
tokenizer, messages as a client appends them."""

from __future__ import annotations

from providers import standin_thinking as thinking

from ctxlayer import protocol
from ctxlayer.state import Caller, State
from ctxlayer.state.requests import call

MODEL = "claude-sonnet-4-5"
ON = {"thinking": {"type": "enabled", "budget_tokens": 50}}


def session() -> list[dict]:
    msgs: list[dict] = []
    for r in range(3):
        msgs += [{"role": "user", "content": f"earlier task {r} " + "please " * 30},
                 {"role": "assistant", "content": [{"type": "text", "text": f"ok {r}"}]}]
    msgs.append({"role": "user", "content": "Fix the crash in the parser: KeyError 'x'."})
    block = thinking.block(ON, 60, 1)
    for s in range(6):
        use = {"type": "tool_use", "id": f"tu{s}", "name": "read", "input": {"f": f"p{s}.py"}}
        msgs += [{"role": "assistant", "content": [block, use] if s == 0 else [use]},
                 {"role": "user", "content": [{"type": "tool_result", "tool_use_id": f"tu{s}",
                                               "content": "\n".join(
                     f"line {k}: value = compute({k}, {s})" for k in range(250))}]}]
    return msgs


async def test_the_loops_first_step_keeps_its_thinking_beside_the_summary(tmp_path):
    state = State(tmp_path / "state")
    caller = Caller(state, source="session", options=protocol.InitializationOptions(model=MODEL))
    try:
        await call(caller, "ctx/session/open", protocol.SessionOpenParams(session_id="L",
                                                                       model=MODEL))
        await call(caller, "ctx/session/append", protocol.SessionAppendParams(
            session_id="L", messages=session(), format="anthropic"))
        for budget in (1500, 1000):  # at 4,000 and 2,500 the results are outlined, not summarized
            out = await call(caller, "ctx/assemble", protocol.AssembleParams(
                session_id="L", format="anthropic", budget=budget))
            sent = [m for m in out.messages if m.get("role") != "system"]
            assert out.tokens.total <= budget and sent[0]["content"].startswith("[Summary")
            # the summary's acknowledgement (text) comes first when the question heads the
            # tail: at 1,500 it does, the loop's steps outlined beside it
            uses = [b["id"] for m in sent if m["role"] == "assistant"
                    and isinstance(m["content"], list)
                    for b in m["content"] if b.get("type") == "tool_use"]
            assert uses[0] == "tu0" and uses[-1] == "tu5", uses
            body = {"model": MODEL, "max_tokens": 100, **ON, "messages": sent}
            assert thinking.problems(body, set()) == [], (budget, sent[:2])
    finally:
        state.close()
