"""Properties of the live-conversation engine over random conversations and random turn
sequences (append, regenerate the last reply, edit an early message, restore): every result
fits or the pinned content alone is over; the newest question is there; tool pairs are
whole; summaries sit right after the system prompt; a message not sent as it came was named
in an audit; a turn that only appended repeats the
previous result when nothing stepped."""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ctxlayer.core.errors import ContextError
from ctxlayer.core.prepare import prepare_turn
from ctxlayer.core.tokens import WordTokenizer
from ctxlayer.protocol import Message, ToolCall

SYSTEM = Message(role="system", id="sys", content="Be precise. " * 10)


@st.composite
def exchanges(draw, t: int, budget: int) -> list[Message]:
    """One user turn and what follows it: replies, tool calls with their results. A question
    alone over the budget is the trim engine's to shorten (tests/core/test_trim_question.py);
    here questions fit."""
    size = st.integers(min_value=1, max_value=400)
    ask = st.integers(min_value=1, max_value=min(400, budget // 3))
    out = [Message(role="user", id=f"u{t}", content="ask " * draw(ask),
                   pinned=draw(st.booleans()) and draw(st.booleans()))]
    for k in range(draw(st.integers(min_value=0, max_value=3))):
        n = draw(st.integers(min_value=1, max_value=2))
        calls = [ToolCall(id=f"c{t}.{k}.{j}", name="run", arguments="{}") for j in range(n)]
        out.append(Message(role="assistant", id=f"a{t}.{k}", content="", tool_calls=calls))
        out += [Message(role="tool", id=f"r{t}.{k}.{j}", tool_call_id=c.id,
                        content="out " * draw(size)) for j, c in enumerate(calls)]
    out.append(Message(role="assistant", id=f"a{t}", content="reply " * draw(size)))
    return out


@st.composite
def scripts(draw):
    budget = draw(st.integers(min_value=150, max_value=3000))
    actions = draw(st.lists(st.sampled_from(["append", "append", "append", "regenerate",
                                             "edit", "restore", "rewind"]),
                            min_size=5, max_size=40))
    return budget, actions, draw(st.randoms(use_true_random=False))


def check(turn, sent, budget):
    kept = turn.messages
    assert turn.tokens <= budget
    newest = next(m for m in reversed(sent) if m.role == "user")
    assert newest.id in {m.id for m in kept}
    for k, m in enumerate(kept):
        if m.role == "tool":
            j = k
            while kept[j].role == "tool":
                j -= 1
            assert m.tool_call_id in {c.id for c in kept[j].tool_calls or ()}
        if m.tool_calls:
            got = {x.tool_call_id for x in kept[k + 1:k + 1 + len(m.tool_calls)]}
            assert got == {c.id for c in m.tool_calls}
    # summaries after the system prompt and what is shown whole from before them; between
    # them only messages shown whole that no summary stands for (a question, before the
    # chunks of the work done on it)
    summaries = [k for k, m in enumerate(kept) if m.kind == "summary"]
    if summaries:
        assert all(m.role in ("system", "user") for m in kept[:summaries[0]])
        assert all(m.role == "user" for m in kept[summaries[0]:summaries[-1]]
                   if m.kind != "summary")
    # what a summary shown before a question stands for is older than it (a restored one
    # comes after the summaries): the model never reads the work on a question before it
    at = {m.id: i for i, m in enumerate(sent)}
    stands = {c.message.id: max(e.index for e in c.audit) for c in turn.state.chunks}
    newest_summarized = -1
    for m in kept:
        if m.kind == "summary":
            newest_summarized = max(newest_summarized, stands[m.id])
        elif m.role == "user" and m.id not in turn.state.restored:
            assert at[m.id] > newest_summarized, (m.id, newest_summarized)
    pinned = [m.id for m in sent if m.pinned]
    shown = {m.id: m for m in kept}
    assert all(p in shown for p in pinned) or turn.dropped or turn.truncated


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(scripts(), st.data())
def test_random_turns_keep_the_invariants(script, data):
    budget, actions, rnd = script
    sent = [SYSTEM]
    state = None
    before = None
    restored: set[str] = set()
    told: set[str | None] = set()  # ids some turn's audit named
    t = 0
    for action in actions:
        appended = False
        if action == "append" or len(sent) < 3:
            sent = [*sent, *data.draw(exchanges(t, budget))[:-1]]
            t += 1
            appended = True
        elif action == "regenerate":
            last = max(i for i, m in enumerate(sent) if m.role == "user")
            sent = [*sent[:last + 1], Message(role="assistant", id=f"regen{t}",
                                              content="again " * rnd.randint(1, 50))]
            sent.append(Message(role="user", id=f"u{t}", content="next"))
            t += 1
        elif action == "edit":
            k = rnd.randrange(1, len(sent))
            if sent[k].role == "user":
                sent = [*sent[:k], Message(role="user", id=sent[k].id, content="edited"),
                        *sent[k + 1:]]
        elif action == "rewind":  # the history resent up to an earlier question (an edit
            # of it, a regenerate from there): one a summary may stand for
            asked = [i for i, m in enumerate(sent) if m.role == "user" and i < len(sent) - 1]
            if asked:
                sent = sent[:rnd.choice(asked) + 1]
        elif action == "restore" and state is not None and state.chunks:
            entry = rnd.choice([e for c in state.chunks for e in c.audit])
            restored.add(entry.message_id)
        try:
            turn = prepare_turn(state, sent, budget, WordTokenizer(), restored=restored)
        except ContextError as err:
            assert err.kind == "pinned_over_budget"
            return
        check(turn, sent, budget)
        # nothing lost silently: a message not sent as it came was named by this turn's audit
        # or an earlier one's
        told.update(e.message_id for e in (*turn.dropped, *turn.truncated, *turn.restored))
        whole = {(m.id, m.content) for m in turn.messages}
        assert all((m.id, m.content) in whole or m.id in told for m in sent), (
            [m.id for m in sent if (m.id, m.content) not in whole and m.id not in told])
        if appended and before is not None and not turn.stepped and not turn.dropped \
                and not turn.truncated and not turn.restored:
            assert turn.messages[:len(before.messages)] == before.messages
        before = turn if not (turn.dropped or turn.truncated) else None
        state = turn.state
        # the reply the client got is part of the next turn
        if sent[-1].role == "user":
            sent = [*sent, Message(role="assistant", id=f"ans{t}", content="fine " * 20)]
