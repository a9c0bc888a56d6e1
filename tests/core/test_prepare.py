"""The live-conversation engine (core/prepare) driven turn by turn with the word-count fake
tokenizer: budgets, the newest question, tool pairs, the stable prefix, counting only new text,
summaries that never change, restore, the last resort."""

from __future__ import annotations

import random
import re

import pytest

from ctxlayer.core.errors import ContextError
from ctxlayer.core.groups import ToolGroups, is_result
from ctxlayer.core.prepare import PreparePolicy, Turn, audit_of, prepare_turn
from ctxlayer.core.prepare.model import DEFAULT_POLICY
from ctxlayer.core.tokens import OPENAI_FORMAT, WordTokenizer, conversation_tokens
from ctxlayer.protocol import Message, ToolCall

PRIMING = OPENAI_FORMAT.reply_priming


class CountingWords(WordTokenizer):
    """Word counts that remember which texts were counted."""

    def __init__(self) -> None:
        self.seen: list[str] = []

    def count(self, text: str) -> int:
        self.seen.append(text)
        return super().count(text)


def words(r: random.Random, lo: int, hi: int) -> str:
    vocab = ("cache", "token", "budget", "parser", "router", "queue", "store", "index")
    return " ".join(r.choice(vocab) for _ in range(r.randint(lo, hi)))


def chat_turn(r: random.Random, t: int) -> list[Message]:
    """One exchange after the user's question: a reply, sometimes a tool call with results."""
    out: list[Message] = []
    if t % 3 == 1:
        calls = [ToolCall(id=f"call{t}.{k}", name="read_file", arguments=f'{{"path": "f{t}.py"}}')
                 for k in range(1 + t % 2)]
        out.append(Message(role="assistant", content="", id=f"a{t}.call", tool_calls=calls))
        out += [Message(role="tool", content=words(r, 20, 150), id=f"t{t}.{k}",
                        tool_call_id=c.id) for k, c in enumerate(calls)]
    out.append(Message(role="assistant", id=f"a{t}",
                       content=f"We decided to use module_{t} for this. " + words(r, 10, 200)))
    return out


def question(r: random.Random, t: int) -> Message:
    return Message(role="user", id=f"u{t}", content=f"Question {t}: how does step {t} work? "
                   + words(r, 5, 120))


SYSTEM = Message(role="system", id="sys", content="You are a careful coding assistant. " * 8)


def _agent_call(t: int, out: str, say: str = "") -> list[Message]:
    call = ToolCall(id=f"c{t}", name="bash", arguments=f'{{"cmd": "pytest -k t{t}"}}')
    return [Message(role="assistant", id=f"a{t}", content=say, tool_calls=[call]),
            Message(role="tool", id=f"r{t}", tool_call_id=f"c{t}", content=out)]


def check_turn(turn: Turn, sent: list[Message], budget: int) -> None:
    """What every result must satisfy."""
    kept = turn.messages
    assert turn.tokens <= budget
    assert turn.tokens == PRIMING + sum(
        WordTokenizer().count(m.content) + OPENAI_FORMAT.per_message
        + sum(OPENAI_FORMAT.per_tool_call + len(c.name.split()) + len(c.arguments.split())
              for c in m.tool_calls or ()) for m in kept)
    newest = next(m for m in reversed(sent) if m.role == "user")
    assert newest.id in {m.id for m in kept}, "the newest user message was dropped"
    # tool pairs whole: every result right after its call's group, every call answered
    ids = [m.id for m in kept]
    for k, m in enumerate(kept):
        if m.role == "tool":
            j = k
            while kept[j].role == "tool":
                j -= 1
            assert m.tool_call_id in {c.id for c in kept[j].tool_calls or ()}, ids
        if m.tool_calls:
            results = {x.tool_call_id for x in kept[k + 1:k + 1 + len(m.tool_calls)]}
            assert results == {c.id for c in m.tool_calls}, ids
    check_summaries(turn, sent)


def check_summaries(turn: Turn, sent: list[Message]) -> None:
    """Where the summaries stand (prepare/__init__.py, points 2 and 3). A summary
    `ctx:summary:a-b` stands for the messages of sent[a:b] the result neither shows (whole or
    outlined) nor dropped. Each is a user turn after the system prompt, their ranges in order
    and apart; each stands for messages on one side of the newest question only, and is read
    on that side of it; and with each put where the newest message it stands for was, the
    result keeps the conversation's order (a restored message, with its group, comes after the
    summaries). None stands between a call and its results: `check_turn` keeps them together."""
    kept, keys = turn.messages, turn.state.out_keys
    assert len(keys) == len(kept)
    shown: dict[int, int] = {}  # conversation index -> position in the result
    ranges: dict[int, tuple[int, int]] = {}  # position of a summary -> its range
    for k, (m, key) in enumerate(zip(kept, keys, strict=True)):
        if m.kind == "summary":
            got = re.fullmatch(r"ctx:summary:(\d+)-(\d+)", m.id or "")
            assert m.role == "user" and got, (k, m.id)
            ranges[k] = (int(got[1]), int(got[2]))
        else:
            i = key if isinstance(key, int) else key[0]
            assert sent[i].id == m.id and sent[i].role == m.role, (k, i, m.id)
            shown[i] = k
    if not ranges:
        return
    head = next(k for k, m in enumerate(sent) if m.role != "system")
    assert all(m.role == "system" for m in kept[:head]) and min(ranges) >= head
    spans = [ranges[k] for k in sorted(ranges)]
    assert spans[0][0] >= head and all(a < b for a, b in spans) and all(
        b <= c for (_, b), (c, _) in zip(spans, spans[1:], strict=False)), spans
    q = max(i for i, m in enumerate(sent) if m.role == "user" and not is_result(m))
    groups = ToolGroups(sent)  # a restored message comes back with its group
    restored = {j for i in turn.state.restored.values() for j in groups.of(i)}
    gone = {e.index for e in turn.state.dropped} | {i for i in shown if i not in restored}
    for k, (a, b) in ranges.items():
        stands = [i for i in range(a, b) if i not in gone]
        assert stands and q not in stands, (kept[k].id, stands)
        assert stands[-1] < q or stands[0] > q, (
            f"{kept[k].id} stands for messages on both sides of the newest question {q}")
        assert (k < shown[q]) == (stands[-1] < q), (kept[k].id, "read on the wrong side")
        for i, at in shown.items():
            if i not in restored:
                assert (at < k) == (i < stands[-1]), (kept[k].id, "out of order", i)
            else:
                assert at > k, (sent[i].id, "restored before a summary")


def drive(turns: int, budget: int, seed: int = 7, policy: PreparePolicy | None = None):
    r = random.Random(seed)
    sent = [SYSTEM]
    state = None
    results = []
    for t in range(turns):
        sent = [*sent, question(r, t)]
        turn = prepare_turn(state, sent, budget, WordTokenizer(),
                            **({"policy": policy} if policy else {}))
        check_turn(turn, sent, budget)
        results.append((sent, turn))
        state = turn.state
        sent = [*sent, *chat_turn(r, t)]
    return results


# seeds 8 and 9: a step whose guess said merging the chunks alone was enough took nothing, and
# the last resort dropped whole messages of a turn that did not step
@pytest.mark.parametrize("seed", [7, 8, 9])
def test_200_turns_stay_in_budget_keep_the_question_and_the_prefix(seed):
    budget = 6000
    results = drive(200, budget, seed)
    steps = [k for k, (_, t) in enumerate(results) if t.stepped]
    assert len(steps) >= 5, "the conversation should pass its budget several times"
    assert len(steps) < 60, "compaction happens in steps, not on every turn"
    for k in range(1, len(results)):
        before, now = results[k - 1][1], results[k][1]
        if now.stepped:
            assert now.notice and now.notice.startswith("ctxlayer: summarized ")
            assert now.notice.endswith("to fit 6k")
            assert now.cache_reuse_tokens < before.tokens - PRIMING
            continue
        # between steps: the previous result is a prefix of this one, message for message
        assert now.messages[:len(before.messages)] == before.messages
        assert now.cache_reuse_tokens == before.tokens - PRIMING
        assert now.notice is None
    # once it passed its budget, the request uses most of it
    over = [t.tokens / budget for _, t in results[steps[0]:]]
    assert sum(over) / len(over) > 0.8


def test_a_step_keeps_older_summaries_word_for_word():
    results = drive(200, 6000)
    texts: dict[str, str] = {}
    for _, turn in results:
        for m in turn.messages:
            if m.kind == "summary":
                if m.id in texts:
                    assert texts[m.id] == m.content, "a summary changed after it was made"
                texts[m.id] = m.content
    assert len(texts) >= 3
    # a step that only adds a chunk leaves the system prompt and the older chunks cached
    adds = [t for _, t in results if t.stepped and
            sum(m.kind == "summary" for m in t.messages) > 1]
    assert adds and all(t.cache_reuse_tokens > SYSTEM_TOKENS for t in adds)


SYSTEM_TOKENS = OPENAI_FORMAT.per_message + len(SYSTEM.content.split())


def test_only_the_new_text_is_counted():
    r = random.Random(3)
    sent = [SYSTEM, question(r, 0)]
    counter = CountingWords()
    turn = prepare_turn(None, sent, 100_000, counter)
    for t in range(1, 30):
        new = [*chat_turn(r, t), question(r, t)]
        sent = [*sent, *new]
        counter.seen.clear()
        turn = prepare_turn(turn.state, sent, 100_000, counter)
        expected = [m.content for m in new]
        expected += [x for m in new for c in m.tool_calls or () for x in (c.name, c.arguments)]
        assert sorted(counter.seen) == sorted(expected)
    assert turn.cache_reuse_tokens > 0


def test_a_regenerated_reply_keeps_the_summaries():
    results = drive(60, 3000)
    sent, turn = results[-1]
    assert turn.compacted
    summary = [m for m in turn.messages if m.kind == "summary"]
    reply = Message(role="assistant", id="regen", content="A different answer entirely.")
    first = prepare_turn(turn.state, [*sent, Message(role="assistant", id="x", content="one")],
                         3000, WordTokenizer())
    again = prepare_turn(first.state, [*sent, reply], 3000, WordTokenizer())
    assert [m for m in again.messages if m.kind == "summary"] == summary
    assert again.cache_reuse_tokens == turn.tokens - PRIMING
    assert again.messages[-1] == reply


def test_a_history_resent_up_to_a_summarized_question_sends_that_question():
    """A chat's older question Q5 went into a summary when Q7 came; then the client resent
    the history up to Q5 (a regenerate from there, an edit of the last turn). The history
    ends where the summary ends: carried over, the request was the system prompt and the
    summary alone (174 of 1,600 tokens), Q5 gone (found by the stateful fuzz probe through
    the gateway, OpenAI and Responses). Started over, Q5 goes whole, as to a fresh chat."""
    def said(who: str, n: int) -> Message:
        role = "user" if who.startswith("q") else "assistant"
        return Message(role=role, id=who, content=f"{who}: " + " ".join(
            f"w{k % 97}" for k in range(n)))

    history = [SYSTEM, said("q1", 60), said("a2", 600), said("q3", 60), said("a4", 600),
               said("q5", 800)]
    first = prepare_turn(None, history, 1600, WordTokenizer())
    later = [*history, said("a6", 5), said("q7", 800)]
    step = prepare_turn(first.state, later, 1600, WordTokenizer())
    assert "q5" not in {m.id for m in step.messages}  # summarized: the case at hand
    again = prepare_turn(step.state, history, 1600, WordTokenizer())
    check_turn(again, history, 1600)
    assert again.messages[-1].id == "q5" and again.messages[-1].content == history[-1].content


def test_a_history_resent_up_to_an_earlier_question_is_fitted_as_a_fresh_chats():
    """A 14-question chat at 3,000 tokens holds two summaries; the client resends the history
    up to question 8 (a regenerate from there), which no summary stands for. The window
    carried over sent the system prompt, the summaries and a few messages: 630 tokens, where
    a fresh chat sends 1,878 (the review probe: 427 where 2,718 fit whole). A shorter history
    is made again as at a bigger budget, when it goes whole or the carried result is thin."""
    r = random.Random(5)
    sent, state = [SYSTEM], None
    for t in range(14):
        sent.append(Message(role="user", id=f"u{t}", content=f"Question {t}: "
                            + words(r, 120 + 40 * (t % 3), 120 + 40 * (t % 3))))
        state = prepare_turn(state, sent, 3000, WordTokenizer()).state
        sent.append(Message(role="assistant", id=f"a{t}", content=words(r, 200, 200)))
    back = sent[:sent.index(next(m for m in sent if m.id == "u8")) + 1]
    assert state.upto < len(back) and len(state.chunks) >= 2  # the case at hand
    again = prepare_turn(state, back, 3000, WordTokenizer())
    check_turn(again, back, 3000)
    fresh = prepare_turn(None, back, 3000, WordTokenizer())
    assert [m.content for m in again.messages] == [m.content for m in fresh.messages]
    assert again.tokens == fresh.tokens > 3000 // 2


def test_an_edit_inside_the_summarized_part_starts_over():
    results = drive(60, 3000)
    sent, turn = results[-1]
    edited = [sent[0], Message(role="user", id="u0", content="an edited first question"),
              *sent[2:]]
    again = prepare_turn(turn.state, edited, 3000, WordTokenizer())
    check_turn(again, edited, 3000)
    assert again.cache_reuse_tokens == SYSTEM_TOKENS
    assert again.state.chunks[0].start == 1  # summarized again from the first message
    assert "u0" in {e.message_id for e in again.state.chunks[0].audit}


def test_a_restored_message_too_big_to_go_whole_goes_shortened_not_dropped():
    """A message far over the budget, sent as its outline, then restored: shown whole it was
    dropped by the fit (the next request held none of it) and the notice said "restored 1
    message whole". It goes shortened, at least as long as its outline was, pinned."""
    log = "\n".join(f"line {k} of the log: worker {k % 7} wrote value {k * 13}"
                    for k in range(900))
    sent = [SYSTEM, Message(role="user", id="u0", content="first question\n" + log),
            Message(role="assistant", id="a0", content="ok"),
            Message(role="user", id="u1", content="second question")]
    first = prepare_turn(None, sent, 2000, WordTokenizer())
    check_turn(first, sent, 2000)
    outlined = next(m for m in first.messages if m.id == "u0")
    again = prepare_turn(first.state, sent, 2000, WordTokenizer(), restored={"u0"})
    check_turn(again, sent, 2000)
    shown = [m for m in again.messages if m.id == "u0"]
    assert shown and len(shown[0].content) >= 0.8 * len(outlined.content)
    assert "u0" not in {e.message_id for e in again.dropped}
    (entry,) = [e for e in again.restored if e.message_id == "u0"]
    assert entry.reason.startswith("restored on request, shortened")
    assert again.notice is not None and "too big to go whole: shortened" in again.notice
    # the budget shrinks later (a smaller model, a lower budget): shortened again, not dropped
    # whole with the rest of the history summarized first (a request at 70 of 600 tokens)
    later = [*sent, Message(role="assistant", id="a1", content="answer two"),
             Message(role="user", id="u2", content="third question")]
    smaller = prepare_turn(again.state, later, 600, WordTokenizer(), restored={"u0"})
    check_turn(smaller, later, 600)
    assert any(m.id == "u0" for m in smaller.messages)
    assert "u0" not in {e.message_id for e in smaller.dropped}


def test_restore_brings_a_summarized_message_back_whole_and_keeps_it():
    results = drive(80, 3000)
    sent, turn = results[-1]
    gone = next(e for e in turn.state.chunks[0].audit if e.message_id.startswith("u"))
    original = next(m for m in sent if m.id == gone.message_id)
    again = prepare_turn(turn.state, sent, 3000, WordTokenizer(), restored={gone.message_id})
    check_turn(again, sent, 3000)
    assert original in again.messages
    k = again.messages.index(original)
    assert all(m.kind == "summary" or m.role in ("system", "user") for m in again.messages[:k])
    # making room for it may take a step (the window runs fuller since outlines came first)
    assert again.notice is not None and again.notice.endswith("restored 1 message whole")
    entries = [e for e in audit_of(again.state) if e.message_id == gone.message_id]
    assert [e.action for e in entries] == ["restored"]
    # it stays through later turns and steps, and is audited once
    r = random.Random(99)
    state = again.state
    for t in range(100, 160):
        sent = [*sent, *chat_turn(r, t), question(r, t)]
        later = prepare_turn(state, sent, 3000, WordTokenizer(), restored={gone.message_id})
        check_turn(later, sent, 3000)
        assert original in later.messages
        state = later.state
    assert sum(e.action == "restored" for e in audit_of(state)) == 1


def test_a_restored_tool_result_comes_back_with_its_call():
    results = drive(80, 3000)
    sent, turn = results[-1]
    gone = next(e for c in turn.state.chunks for e in c.audit if e.message_id.startswith("t"))
    again = prepare_turn(turn.state, sent, 3000, WordTokenizer(), restored={gone.message_id})
    check_turn(again, sent, 3000)
    assert gone.message_id in {m.id for m in again.messages}


def test_pinned_messages_are_never_summarized():
    r = random.Random(5)
    rule = Message(role="user", id="rule", pinned=True, content="Never touch the vendor folder.")
    sent = [SYSTEM, rule]
    state = None
    for t in range(80):
        sent = [*sent, question(r, t)]
        turn = prepare_turn(state, sent, 2500, WordTokenizer())
        check_turn(turn, sent, 2500)
        assert rule in turn.messages
        state = turn.state
        sent = [*sent, *chat_turn(r, t)]
    assert state.chunks


def test_a_long_agent_run_after_one_question_keeps_the_question():
    r = random.Random(11)
    ask = Message(role="user", id="ask", content="Fix the failing test in tests/test_api.py.")
    sent = [SYSTEM, ask]
    state = None
    for t in range(120):
        sent = [*sent, *_agent_call(t, words(r, 50, 200))]
        turn = prepare_turn(state, sent, 3000, WordTokenizer())
        check_turn(turn, sent, 3000)
        assert turn.messages[-1].id == f"r{t}"
        state = turn.state
    assert state.chunks, "the run passed its budget"


def test_the_summary_stays_when_the_newest_output_alone_is_over_the_budget():
    r = random.Random(5)
    # the system prompt and the task take most of the budget, as an agent's often do
    system = Message(role="system", id="sys", content="Follow the rules. " + words(r, 400, 400))
    ask = Message(role="user", id="ask", content="Fix the failing test in tests/test_api.py. "
                  + words(r, 600, 600))
    sent = [system, ask]
    state = None
    for t in range(12):
        size = (50, 200) if t < 11 else (2500, 2600)  # the last output alone passes the budget
        sent = [*sent, *_agent_call(t, words(r, *size))]
        turn = prepare_turn(state, sent, 1500, WordTokenizer())
        check_turn(turn, sent, 1500)
        state = turn.state
    assert turn.truncated and turn.messages[-1].id == "r11"  # shortened by the last resort...
    # ...and what the summaries know of the runs before it is still sent, the oldest included
    summaries = "\n".join(m.content for m in turn.messages if m.kind == "summary")
    assert "pytest -k t0" in summaries


def test_a_question_alone_over_the_budget_is_shortened_never_dropped():
    big = "```\n" + "\n".join(f"line {k} of a very long paste" for k in range(400)) + "\n```"
    sent = [SYSTEM, Message(role="user", id="q", content="Why does this fail?\n" + big)]
    turn = prepare_turn(None, sent, 800, WordTokenizer())
    assert turn.tokens <= 800
    assert [m.id for m in turn.messages] == ["sys", "q"]
    assert [e.message_id for e in turn.truncated] == ["q"]
    assert turn.notice == "ctxlayer: shortened 1 message to fit 800"
    # the same shortened text on the next turn: the prefix holds
    reply = Message(role="assistant", id="a", content="Because of line 3.")
    nxt = prepare_turn(turn.state, [*sent, reply, Message(role="user", id="q2", content="ok")],
                       800, WordTokenizer())
    assert nxt.messages[:2] == turn.messages
    assert nxt.cache_reuse_tokens == turn.tokens - PRIMING


def test_breakpoints_mark_system_stable_part_and_end():
    sent, turn = drive(60, 3000)[-1]
    n_chunks = sum(m.kind == "summary" for m in turn.messages)
    shown = len(turn.state.verbatim)
    assert turn.breakpoints == [0, n_chunks + shown, len(turn.messages) - 1]
    theirs = prepare_turn(turn.state, sent, 3000, WordTokenizer(), client_breakpoints=2)
    assert theirs.breakpoints == []
    first = prepare_turn(None, [SYSTEM, Message(role="user", content="hi")], 3000,
                         WordTokenizer())
    assert first.breakpoints == [0, 1] and first.cache_reuse_tokens == 0


def test_bad_input_names_the_field():
    with pytest.raises(ContextError) as err:
        prepare_turn(None, [SYSTEM], 0, WordTokenizer())
    assert err.value.field == "budget"
    with pytest.raises(ContextError) as err:
        prepare_turn(None, [], 100, WordTokenizer())
    assert err.value.field == "messages"
    with pytest.raises(ContextError) as err:
        prepare_turn(None, [SYSTEM, Message(role="user", content="hi")], 20, WordTokenizer())
    assert err.value.kind == "pinned_over_budget"


def test_facts_read_ahead_of_need_change_nothing_but_the_work():
    """warm() between requests reads the facts the next step needs: the results are the same
    message for message, and the step that follows reads none of them again."""
    from ctxlayer.core.prepare import warm

    r1, r2 = random.Random(3), random.Random(3)
    sent1, sent2 = [SYSTEM], [SYSTEM]
    cold = hot = None
    warmed = 0
    for t in range(60):
        sent1 = [*sent1, question(r1, t)]
        sent2 = [*sent2, question(r2, t)]
        a = prepare_turn(cold, sent1, 3000, WordTokenizer())
        b = prepare_turn(hot, sent2, 3000, WordTokenizer())
        assert a.messages == b.messages and a.tokens == b.tokens
        cold = a.state
        ahead = warm(b.state, 3000)
        warmed += ahead is not None
        hot = ahead or b.state
        sent1 = [*sent1, *chat_turn(r1, t)]
        sent2 = [*sent2, *chat_turn(r2, t)]
    assert warmed > 5, "a chat over 70% of its budget is read ahead"
    assert hot.facts, "facts of what the next step summarizes are kept in the state"


def test_a_chat_whose_turns_jump_is_read_ahead_before_it_passes_the_share():
    """A request under precompact_at whose last turn added a long log: one more like it passes
    the budget, so its facts are read ahead now (they were read on the request path of the
    step that followed); a chat growing slowly at the same size is not read yet."""
    from ctxlayer.core.prepare import near_budget, warm

    r = random.Random(8)
    ask = Message(role="user", id="ask", content="Why do the tests fail?")

    def run(sizes: list[int]):
        sent, state = [SYSTEM, ask], None
        for t, size in enumerate(sizes):
            sent = [*sent, *_agent_call(t, words(r, size, size))]
            state = prepare_turn(state, sent, 3000, WordTokenizer()).state
        return state

    jumpy = run([100] * 5 + [1200])  # ~1,800 words of 3,000: under 70%, the last turn 1,200
    slow = run([100] * 15)  # about the same size, 100 words a turn
    assert jumpy.total < 0.7 * 3000 and slow.total < 0.7 * 3000
    assert abs(jumpy.total - slow.total) < 400
    assert near_budget(jumpy, 3000) and not near_budget(slow, 3000)
    assert warm(slow, 3000) is None
    read = warm(jumpy, 3000)
    assert read is not None and len(read.facts) > len(jumpy.facts)


def test_the_newest_output_is_read_ahead_for_the_step_after_the_next_request(monkeypatch):
    """The newest exchange is never summarized by the step of its own request, but the next
    request makes it older and its step may take it: read ahead with the rest, its facts are
    not read on the next request's path (they were, for most of the slowest requests of the
    replay: an agent's output, then a long one that summarizes everything before it)."""
    from ctxlayer.core.prepare import summaries, warm

    r = random.Random(9)
    ask = Message(role="user", id="ask", content="Why do the tests fail?")
    sent, state = [SYSTEM, ask], None
    for t in range(10):  # past 70% of the budget: the next step is near
        sent = [*sent, *_agent_call(t, words(r, 200, 200))]
        state = prepare_turn(state, sent, 3000, WordTokenizer()).state
    assert 0.7 * 3000 < state.total < 3000
    state = warm(state, 3000) or state
    read: list[str] = []
    facts_of = summaries.read_facts
    monkeypatch.setattr(summaries, "read_facts",
                        lambda m, named=None: read.append(m.id) or facts_of(m, named))
    sent = [*sent, *_agent_call(10, words(r, 2500, 2500))]
    turn = prepare_turn(state, sent, 3000, WordTokenizer())
    check_turn(turn, sent, 3000)
    assert "r9" in {e.message_id for e in turn.dropped}, "the step took the last output"
    assert read == []


def test_the_newest_exchange_outlives_a_summary_in_a_tiny_budget():
    """When the newest tool call (its arguments cannot be cut) and result leave no room for
    the summary beside them, the summary gives way: the model answers the newest result, and a
    summary is never taken for the question."""
    system = Message(role="system", id="s", content="agent")
    ask = Message(role="user", id="u", content="fix it " * 20)
    old = []
    for k in range(6):
        old += [Message(role="assistant", id=f"a{k}", content="look",
                        tool_calls=[ToolCall(id=f"c{k}", name="run", arguments="{}")]),
                Message(role="tool", id=f"t{k}", tool_call_id=f"c{k}", content="out " * 120)]
    state = prepare_turn(None, [system, ask, *old], 400, WordTokenizer()).state
    assert state.chunks
    big = [Message(role="assistant", id="a9", content="",
                   tool_calls=[ToolCall(id="c9", name="write",
                                        arguments='{"text": "' + "x " * 300 + '"}')]),
           Message(role="tool", id="t9", tool_call_id="c9", content="ok " * 40)]
    turn = prepare_turn(state, [system, ask, *old, *big], 400, WordTokenizer())
    ids = [m.id for m in turn.messages]
    assert ids[-2:] == ["a9", "t9"], ids
    assert "u" in ids and turn.tokens <= 400


def test_a_tiny_budget_keeps_the_newest_call_and_its_outlined_result_beside_the_question():
    """A task far over the budget, a summary, and a newest result too big for the room the
    question leaves: the result is outlined to that room and sent with its call, never
    dropped with it (the question shortened is not all the model gets)."""
    system = Message(role="system", id="s", content="agent " * 20)
    ask = Message(role="user", id="u", content="Fix the failing retry test. " + "detail " * 800)
    sent = [system, ask]
    state = None
    for k in range(4):
        call = ToolCall(id=f"c{k}", name="bash", arguments=f'{{"cmd": "pytest -k t{k}"}}')
        sent = [*sent, Message(role="assistant", id=f"a{k}", content="", tool_calls=[call]),
                Message(role="tool", id=f"t{k}", tool_call_id=f"c{k}",
                        content="\n".join(f"line {j} of the run {k}" for j in range(40)))]
        turn = prepare_turn(state, sent, 180, WordTokenizer())
        check_turn(turn, sent, 180)
        state = turn.state
    ids = [m.id for m in turn.messages]
    assert ids[-2:] == ["a3", "t3"], ids
    assert "u" in ids



def test_an_agents_long_task_is_shortened_only_as_far_as_the_step_needs():
    """A task over a quarter of the budget, its run just past the budget: the step cuts the
    task by what the request is over (it used to cut it to the quarter and leave half the
    budget empty), and later steps cut it further, never under the quarter."""
    r = random.Random(3)
    ask = Message(role="user", id="ask", content="Fix the failing test. " + words(r, 900, 900))
    sent, state, budget = [SYSTEM, ask], None, 1300
    policy = PreparePolicy()
    shown: list[int] = []
    for t in range(30):
        sent = [*sent, *_agent_call(t, words(r, 30, 40))]
        turn = prepare_turn(state, sent, budget, WordTokenizer(), policy=policy)
        check_turn(turn, sent, budget)
        state = turn.state
        task = next(m for m in turn.messages if m.id == "ask")
        shown.append(WordTokenizer().count(task.content))
        if len(shown) > 1 and shown[-1] < shown[-2] and not state.chunks:
            # the first step: only the task was cut, by what the request was over
            assert turn.tokens >= int(budget * policy.summary_target) - 40, turn.tokens
    cuts = [k for k in range(1, len(shown)) if shown[k] < shown[k - 1]]
    assert len(cuts) >= 2, shown  # cut in steps, not at once
    assert shown[cuts[0]] > budget * policy.question_share * 1.5, shown
    assert min(shown) >= budget * policy.question_share * 0.8, shown


def test_a_task_a_step_shortens_is_named_in_that_turns_audit():
    """Each time a step cuts an agent's task further, the turn's `truncated` says so: the cut
    was kept in the conversation's state, but the client was never told (found by replaying
    the dev transcripts with every message not sent whole looked up in the audits so far)."""
    r = random.Random(3)
    ask = Message(role="user", id="ask", content="Fix the failing test. " + words(r, 900, 900))
    sent, state, budget = [SYSTEM, ask], None, 1300
    before, cuts = None, 0
    for t in range(30):
        sent = [*sent, *_agent_call(t, words(r, 30, 40))]
        turn = prepare_turn(state, sent, budget, WordTokenizer())
        state = turn.state
        task = next(m for m in turn.messages if m.id == "ask").content
        if before is not None and task != before:
            cuts += 1
            named = [e for e in turn.truncated if e.message_id == "ask"]
            assert len(named) == 1 and named[0].index == 1, (t, turn.truncated)
            assert named[0].tokens_after == WordTokenizer().count(task) + OPENAI_FORMAT.per_message
        before = task
    assert cuts >= 2


def test_a_step_a_few_tokens_over_a_small_budget_does_not_summarize_everything():
    """The new chunk's size is guessed before the walk; in a small budget the guess (the
    parts' least sizes) was most of the room, so the walk took everything and the chunk came
    out at a fifth of the guess: 628 words over a 600 budget went out as 107. A chunk is
    guessed at no more than a third of what it stands for and a little."""
    r = random.Random(1)
    sent = [Message(role="system", id="s", content=words(r, 10, 10)),
            Message(role="user", id="task", content="Task: " + words(r, 20, 20)),
            *_agent_call(0, words(r, 68, 68), words(r, 16, 16)),
            Message(role="assistant", id="a1", content=words(r, 166, 166)),
            Message(role="user", id="u1", content=words(r, 98, 98)),
            *_agent_call(2, words(r, 56, 56), words(r, 28, 28))]
    turn = prepare_turn(None, sent, 600, WordTokenizer())
    assert not turn.state.chunks  # it fits
    sent = [*sent, Message(role="assistant", id="a3", content=words(r, 84, 84)),
            Message(role="user", id="u3", content=words(r, 23, 23))]
    assert conversation_tokens(sent, WordTokenizer()) + PRIMING > 600
    nxt = prepare_turn(turn.state, sent, 600, WordTokenizer())
    check_turn(nxt, sent, 600)
    assert nxt.tokens >= 240, nxt.tokens  # it was 107
    assert {"a2", "r2", "a3", "u3"} <= {m.id for m in nxt.messages}


def test_a_long_result_fitted_by_the_last_resort_is_outlined_again_not_summarized_whole():
    """A result the last resort cut to fit beside the summaries (3,400 of 3,918 words in a
    4,000 budget) is still long when the next small exchange comes: the step outlines it again
    from its original, so the request stays near its target; it was summarized whole, and the
    request fell to a sixth of the budget."""
    r = random.Random(6)
    sent = [Message(role="system", id="s", content=words(r, 10, 10)),
            Message(role="user", id="task", content="Task: " + words(r, 40, 40))]
    state = None
    for t in range(12):
        sent = [*sent, *_agent_call(t, words(r, 150, 300), words(r, 5, 20))]
        state = prepare_turn(state, sent, 4000, WordTokenizer()).state
    sent = [*sent, *_agent_call(12, words(r, 3918, 3918))]
    big = prepare_turn(state, sent, 4000, WordTokenizer())
    check_turn(big, sent, 4000)
    assert "r12" in {e.message_id for e in big.truncated}  # the last resort cut it
    sent = [*sent, *_agent_call(13, words(r, 54, 54))]
    nxt = prepare_turn(big.state, sent, 4000, WordTokenizer())
    check_turn(nxt, sent, 4000)
    assert "r12" in {m.id for m in nxt.messages}  # outlined, not summarized
    assert nxt.tokens >= 0.6 * 4000, nxt.tokens


def test_in_a_small_room_the_merged_summary_stays_within_its_share():
    """A system prompt of 60% of the budget leaves a small room: a merge of every chunk
    doubled the parts' least sizes (ledger, action log, decided / open) past the chunks'
    share of the room, so the one chunk grew at each merge and every step rewrote all of it.
    It stays within the share now; and a new chunk is sized to the room, not to the last
    chunk (a merge of all). Counted with a real tokenizer: a ledger's paths are many tokens."""
    from ctxlayer.core.tokens import message_tokens
    from ctxlayer.tokenizers import counter_for

    counter = counter_for("gpt-4o")
    r = random.Random(4)
    system = Message(role="system", id="s", content=words(r, 1450, 1450))
    ask = Message(role="user", id="task", content="Task: " + words(r, 300, 300))
    sent, state, budget = [system, ask], None, 2450
    policy = PreparePolicy()
    sizes = []
    for t in range(24):
        out = "\n".join(f"tests/test_mod_{t}.py::test_case_{t}_{j} FAILED src/mod_{t}/part_{j}.py "
                        f"line {10 * j + t}: KeyError('key_{t}_{j}')" for j in range(6))
        sent = [*sent, *_agent_call(t, out, f"Checking module {t} with pytest -k case_{t}.")]
        turn = prepare_turn(state, sent, budget, counter, policy=policy)
        assert turn.tokens <= budget and turn.messages[-1].id == f"r{t}"
        state = turn.state
        if len(state.chunks) == 1 and turn.stepped:
            q = next(m for m in turn.messages if m.id == "task")
            room = max(budget - PRIMING - message_tokens(system, counter)
                       - message_tokens(q, counter), budget // 4)
            sizes.append((state.chunks[0].tokens, room))
    assert sizes, "the chunks were merged"
    assert all(tokens <= policy.summaries_share * room * 1.1 for tokens, room in sizes), sizes


def _counting_path_reads(monkeypatch) -> list[str]:
    """The texts whose named facts are read (paths are read first of them), in order."""
    import ctxlayer.core.compress.facts as facts

    read: list[str] = []
    paths = facts._paths
    monkeypatch.setattr(facts, "_paths",
                        lambda text, words=None: read.append(text) or paths(text, words))
    return read


def _failing_log() -> str:
    log = "\n".join(f"INFO step {k} ok in src/pkg/mod_{k % 7}.py line {k}" for k in range(400))
    log += "\nTraceback (most recent call last):\n  File \"src/pkg/mod_3.py\", line 88, in run\n"
    return log + "KeyError: 'bad item 4999'\nFAILED tests/test_mod.py::test_run_4999"


def test_what_an_outline_named_of_a_message_is_read_once(monkeypatch):
    """A step that outlines a long output and summarizes it reads the output's named facts
    (paths, errors, lines, tests: most of a facts read) once, not for the outline's note and
    again for the summary's ledger; a later step summarizing an output an earlier one outlined
    does not read them again either."""
    read, log = _counting_path_reads(monkeypatch), _failing_log()
    sent = [SYSTEM, Message(role="user", id="u0", content="Fix the failing run in src/pkg."),
            *_agent_call(1, log, "Running the tests."),
            Message(role="assistant", id="a1b", content="The run fails on item 4999."),
            Message(role="user", id="u1", content="Why does item 4999 fail?")]
    counter = WordTokenizer()
    turn = prepare_turn(None, sent, 200, counter)
    check_turn(turn, sent, 200)
    assert "r1" in {e.message_id for e in turn.dropped}, "the step summarized the log"
    assert read.count(log) == 1
    # outlined by the first turn, summarized by a later one
    read.clear()
    state = prepare_turn(None, sent, 300, counter).state
    assert read.count(log) == 1 and state.rewrites, "the first turn outlined the log"
    for t in range(2, 5):
        sent = [*sent, Message(role="assistant", id=f"a{t}", content="No key for 4999. " * 5),
                Message(role="user", id=f"u{t}", content=f"Then add it {t}.")]
        turn = prepare_turn(state, sent, 300, counter)
        check_turn(turn, sent, 300)
        state = turn.state
    assert "r1" in {e.message_id for e in audit_of(state)} or state.upto > 3
    assert read.count(log) == 1, "read again by the step that summarized it"


@pytest.mark.parametrize("budget", [150, 250, 300])
def test_what_the_last_resort_named_of_an_output_the_next_step_does_not_read(monkeypatch,
                                                                               budget):
    """A first request whose newest output alone is over the budget is fitted by the last
    resort, which names the facts of the cut part; the next turn's step takes those, not a
    second read of the output (a first request of 46 KB of outputs took 60-70 ms, reading
    them again and again)."""
    read, log = _counting_path_reads(monkeypatch), _failing_log()
    sent = [SYSTEM, Message(role="user", id="u0", content="Fix the failing run in src/pkg."),
            *_agent_call(1, log, "Running the tests.")]
    counter = WordTokenizer()
    turn = prepare_turn(None, sent, budget, counter)
    check_turn(turn, sent, budget)
    assert read.count(log) == 1 and "r1" in {e.message_id for e in turn.truncated}
    # an answer long enough that the next turn must step whatever the cut part's note took
    more = [*sent, *_agent_call(2, " ".join(["ok"] * 120), "Again."),
            Message(role="user", id="u2", content="And now?")]
    turn = prepare_turn(turn.state, more, budget, counter)
    check_turn(turn, more, budget)
    assert turn.compacted, "the next turn's step summarized the log"
    assert read.count(log) == 1, "the step read the log's named facts again"


def test_beside_a_summary_the_question_keeps_more_than_its_first_words():
    """A tiny budget and a long task (a SWE-agent demonstration: 940 tokens of task in 178 of
    budget): the last resort cut the task to MIN_QUESTION tokens ("We're currently solving
    th") and kept a summary of the steps taken on it beside it. While a summary is held the
    question keeps more than that; the summary shrinks or gives way first."""
    from ctxlayer.core.trim.fit import MIN_QUESTION

    r = random.Random(7)
    system = Message(role="system", id="s", content=words(r, 20, 20))
    ask = Message(role="user", id="task", content="Task: " + words(r, 900, 900))
    sent, state, budget, summarized = [system, ask], None, 180, 0
    for t in range(12):
        sent = [*sent, *_agent_call(t, words(r, 40, 60), f"Step {t}: run the tests.")]
        turn = prepare_turn(state, sent, budget, WordTokenizer())
        check_turn(turn, sent, budget)
        state = turn.state
        shown = {m.id: t for m, t in zip(turn.messages, state.out_tokens, strict=True)}
        if any(m.kind == "summary" for m in turn.messages):
            summarized += 1
            assert shown["task"] > MIN_QUESTION, (t, shown)
    assert summarized  # a summary was there beside the question


@pytest.mark.parametrize("seed", range(4))
def test_a_big_early_output_is_outlined_again_at_once_not_a_little_at_each_step(seed):
    """An agent's first look at a 5,000-word log, then small exchanges in a 6,000 budget. Each
    step outlined the log only as far as it needed, so it was outlined again at the next steps,
    each time rewriting everything after it (4-5 versions of it in 40 turns; an OpenHands run
    outlined its first 8k-token observation three times in four steps). Outlined again, it now
    goes down to ``again_target`` at once: three versions at most."""
    r = random.Random(seed)
    log = "\n".join(f"step {k}: " + words(r, 8, 12) for k in range(500))
    sent = [Message(role="system", id="s", content=words(r, 10, 10)),
            Message(role="user", id="task", content="Task: " + words(r, 40, 40)),
            *_agent_call(0, log, "Reading the log.")]
    state, versions = None, []
    for t in range(1, 40):
        sent = [*sent, *_agent_call(t, words(r, 100, 300), words(r, 5, 20))]
        turn = prepare_turn(state, sent, 6000, WordTokenizer())
        check_turn(turn, sent, 6000)
        state = turn.state
        shown = next((m.content for m in turn.messages if m.id == "r0"), None)
        if shown is not None and (not versions or versions[-1] != shown):
            versions.append(shown)
    assert 2 <= len(versions) <= 3, [len(v.split()) for v in versions]


def test_a_summary_step_of_a_prose_chat_ends_near_its_target():
    # a chat of prose names few facts, so its summaries come out far smaller than a chunk's
    # parts may take: the step took as much as a full-size chunk would have needed and left
    # the request at two thirds of its budget; now it gives back its newest groups
    budget = 6000
    results = drive(60, budget)
    summarized = [t for _, t in results if t.stepped and t.notice.startswith("ctxlayer: summ")]
    assert summarized
    target = DEFAULT_POLICY.summary_target * budget
    for t in summarized:
        assert target - budget * 0.05 <= t.tokens <= budget, t.tokens


def test_one_long_user_message_whose_summary_would_leave_the_budget_empty_is_shortened():
    """SWE-agent opens with a demonstration bigger than a small budget: summarized, the first
    request went out at 41% of its budget; shortened (head and tail), it uses the budget."""
    demo = Message(role="user", id="demo", content="\n".join(
        f"Example step {k}: run `pytest tests/test_case_{k}.py` and read the failure in "
        f"src/module_{k}.py before editing it." for k in range(250)))
    task = Message(role="user", id="task", content="Fix the failing parser test. " * 40)
    budget = 3000
    sent = [SYSTEM, demo, task]
    assert conversation_tokens(sent, WordTokenizer()) > budget
    turn = prepare_turn(None, sent, budget, WordTokenizer())
    check_turn(turn, sent, budget)
    assert [m.id for m in turn.messages] == ["sys", "demo", "task"]  # no summary took it
    shown = turn.messages[1].content
    assert shown.startswith("Example step 0:") and "Example step 249:" in shown
    assert turn.tokens >= DEFAULT_POLICY.summary_target * budget * 0.9
    assert [e.message_id for e in turn.truncated] == ["demo"]
    assert "rather than summarized" in turn.truncated[0].reason
    # shortened once: each time moves the prefix from it, so once newer messages can fill the
    # room, the next step summarizes it rather than cutting it a little more
    r = random.Random(5)
    state = turn.state
    for t in range(12):
        sent = [*sent, *chat_turn(r, t), question(r, t)]
        turn = prepare_turn(state, sent, budget, WordTokenizer())
        check_turn(turn, sent, budget)
        assert "demo" not in [e.message_id for e in turn.truncated]
        state = turn.state
    assert "demo" not in [m.id for m in turn.messages] and turn.compacted
