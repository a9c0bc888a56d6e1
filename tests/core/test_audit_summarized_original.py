"""A message summarized after an outline of it (in the same step of a live chat, or a cheap
stage of a session's earlier assembly) is audited by what the client sent: its own tokens and
lines, what ctx/restore gives back. The audit named the outline's instead: OpenCode's 735-line
log of 19.5k tokens, outlined then summarized in one step, was listed by `ctxlayer chats --why`
as `summarized 830 -> 0 ... (37 lines)`, its true size in no entry."""

from __future__ import annotations

from ctxlayer.core.assembly import Compaction, CompactionPolicy, History
from ctxlayer.core.assembly.compaction import apply_summary
from ctxlayer.core.assembly.stages import run_cheap_stages
from ctxlayer.core.prepare import audit_of, prepare_turn
from ctxlayer.core.text import describe
from ctxlayer.core.tokens import CountCache, WordTokenizer, message_tokens
from ctxlayer.protocol import Message, ToolCall

COUNTER = CountCache(WordTokenizer())
LOG = "\n".join(f"line {i}: step {i} of the build passed, {i * 7} checks" for i in range(200))


def _agent(calls: int) -> list[Message]:
    msgs = [Message(role="system", id="sys", content="You are a helper."),
            Message(role="user", id="task", content="Check the build log, many times.")]
    for k in range(calls):
        msgs += [Message(role="assistant", id=f"a{k}", content="", tool_calls=[
                     ToolCall(id=f"c{k}", name="sh", arguments='{"cmd": "cat build.log"}')]),
                 Message(role="tool", id=f"o{k}", tool_call_id=f"c{k}", content=LOG)]
    return msgs


def test_a_log_outlined_then_summarized_in_one_step_is_audited_at_its_own_size():
    msgs = [*_agent(8), Message(role="user", id="q", content="Which step has most checks?")]
    whole = message_tokens(msgs[3], COUNTER)  # o0: 2,004 words
    turn = prepare_turn(None, msgs, 1000, COUNTER)
    summarized = {e.message_id: e for e in turn.dropped if e.action == "summarized"}
    assert "o0" in summarized  # the step outlined the outputs, then summarized the oldest
    assert {e.message_id for e in turn.truncated if e.action == "compressed"} >= {"o7"}
    entry = summarized["o0"]
    # was 159 (the outline's) and "(16 lines)"
    assert (entry.tokens_before, entry.tokens_after) == (whole, 0)
    assert entry.summary == describe(msgs[3]) and "(200 lines)" in entry.summary
    # ctx/why reads the state's audit: the same entry
    why = {e.message_id: e for e in audit_of(turn.state)}
    assert why["o0"].tokens_before == whole
    # the notice counts the summarized messages at their own size too (was 865 tokens)
    olds = [m for m in msgs if m.id in summarized]
    assert f"({sum(message_tokens(m, COUNTER) for m in olds) / 1000:.1f}k tokens" \
        in (turn.notice or "")


def test_a_session_summarizing_an_output_a_cheap_stage_compressed_audits_the_original():
    history = History()
    msgs = [*_agent(4), Message(role="user", id="q", content="Which step has most checks?")]
    for k, m in enumerate(msgs):
        history.append(m, k, message_tokens(m, COUNTER))
    state, policy = Compaction(), CompactionPolicy(keep_recent=2)
    shortened = run_cheap_stages(history, state, len(msgs) - 2, 0, COUNTER, policy, "")
    assert "o0" in {e.message_id for e in shortened}  # compressed: kept as a rewrite
    _, audit = apply_summary(history, state, 6, None, 2000, policy, COUNTER)
    entry = next(e for e in audit if e.message_id == "o0")
    assert entry.action == "summarized"
    # was the compressed text's tokens and lines
    assert entry.tokens_before == history.tokens[3] == message_tokens(msgs[3], COUNTER)
    assert entry.summary == describe(msgs[3])
