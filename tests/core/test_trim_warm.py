"""The warm path (TrimCache): a re-trim that takes over the previous trim's per-message work
returns exactly what a cold trim of the same input returns, message for message and audit entry
for audit entry, whatever the previous turns were and whatever was appended, edited or cut."""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_trim_properties import contents, conversations

from ctxlayer.core.errors import ContextError
from ctxlayer.core.memo import Memo
from ctxlayer.core.tokens import CountCache, WordTokenizer
from ctxlayer.core.trim import TrimCache, TrimOptions, trim, work
from ctxlayer.protocol import Message, ToolCall

COUNTER = CountCache(WordTokenizer())


def _outcome(msgs, budget, options, **caches):
    try:
        r = trim(msgs, budget, COUNTER, options=options, **caches)
    except ContextError as e:
        return ("error", str(e))
    return (r.messages, r.tokens, r.dropped, r.truncated)


@st.composite
def turns(draw) -> list[list[Message]]:
    """A chat and the inputs of its next turns: appended messages mostly, sometimes an edit in
    the middle, the oldest messages gone (a client that trims itself) or the last message
    another (a regenerated answer, an edited question)."""
    chat = draw(conversations())
    out = [chat]
    for t in range(draw(st.integers(1, 4))):
        how = draw(st.sampled_from(["append", "append", "append", "doc", "edit", "cut", "tool",
                                    "another"]))
        if how == "tool":  # a call and its result, a tool group the next turns may cut
            out_id = f"x{t}"
            chat = [*chat, Message(role="assistant", id=f"call{t}", content="calling",
                                   tool_calls=[ToolCall(id=out_id, name="sh", arguments=f"ls {t}")]),
                    Message(role="tool", id=f"res{t}", tool_call_id=out_id,
                            content=draw(contents()))]
        elif how == "another" and chat:
            last = chat[-1]
            chat = [*chat[:-1], Message(**{**{f: getattr(last, f) for f in last.__struct_fields__},
                                           "content": draw(contents())})]
        elif how == "doc":  # a retrieved document (capped in number and size, deduplicated)
            chat = [*chat, Message(role="user", kind="doc", id=f"d{t}", content=draw(contents()),
                                   pinned=draw(st.integers(0, 4)) == 0)]
        elif how == "append" or not chat:
            role = draw(st.sampled_from(["user", "assistant"]))
            chat = [*chat, Message(role=role, id=f"n{t}", content=draw(contents()))]
        elif how == "edit":
            k = draw(st.integers(0, len(chat) - 1))
            chat = [*chat[:k], Message(**{**{f: getattr(chat[k], f) for f in chat[k].__struct_fields__},
                                          "content": draw(contents())}), *chat[k + 1:]]
        else:
            chat = chat[draw(st.integers(1, len(chat))):]
        out.append(chat)
    return out


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(chats=turns(), budget=st.one_of(st.integers(1, 300), st.integers(1, 1500)),
       strategy=st.sampled_from(["pipeline", "priority"]), rewrite=st.booleans())
def test_warm_trim_equals_cold(chats, budget, strategy, rewrite):
    options = TrimOptions(strategy=strategy, recent=4, rewrite_when_fits=rewrite)
    memo, cache = Memo(), TrimCache()
    for chat in chats:
        warm = _outcome(chat, budget, options, memo=memo, cache=cache)
        cold = _outcome(chat, budget, options)
        assert warm == cold


def test_the_same_chat_with_another_last_message_takes_its_tool_groups_over():
    """A re-trim of the chat with another last message (as the trim bench's turns are) starts
    from the tool groups of the messages it shares, not from nothing."""
    chat = []
    for k in range(10):
        chat += [Message(role="assistant", id=f"a{k}", content="calling",
                         tool_calls=[ToolCall(id=f"c{k}", name="sh", arguments="ls")]),
                 Message(role="tool", id=f"t{k}", tool_call_id=f"c{k}", content=f"out {k} " * 20)]
    cache = TrimCache()
    trim(chat, 150, COUNTER, cache=cache)
    first = cache.groups
    for k in range(3):
        trim([*chat, Message(role="user", id="q", content=f"question {k}")], 150, COUNTER,
             cache=cache)
        assert cache.reused == len(chat)
        # the prefix's groups are the very lists the first trim made (a list is never changed
        # once made), so they were taken over
        assert all(cache.groups.members[g] is first.members[g] for g in first.members)


def test_warm_trim_takes_over_the_shared_prefix():
    chat = [Message(role="user", id=f"u{k}", content=f"question {k} " * 30) for k in range(20)]
    cache = TrimCache()
    trim(chat, 200, COUNTER, cache=cache)
    assert cache.reused == 0
    grown = [*chat, Message(role="user", id="new", content="one more")]
    trim(grown, 200, COUNTER, cache=cache)
    assert cache.reused == 20
    edited = [*grown[:5], Message(role="user", id="u5", content="changed"), *grown[6:]]
    trim(edited, 200, COUNTER, cache=cache)
    assert cache.reused == 5
    trim(edited, 200, CountCache(WordTokenizer()), cache=cache)  # another counter: nothing
    assert cache.reused == 0


def test_a_warm_trim_names_the_dropped_tool_steps_of_the_shared_prefix_as_last_turn(
        monkeypatch):
    """A reason names a dropped tool step by its call (`the output of sh(ls 3)`), read from its
    arguments; the re-trim after one more message takes the names of the steps it shares with
    the last trim over instead of parsing the arguments again, and says the same."""
    chat = []
    for k in range(10):
        chat += [Message(role="assistant", id=f"a{k}", content="calling",
                         tool_calls=[ToolCall(id=f"c{k}", name="sh", arguments=f'"ls {k}"')]),
                 Message(role="tool", id=f"t{k}", tool_call_id=f"c{k}", content=f"out {k} " * 20)]
    named = []
    real = work.mention
    monkeypatch.setattr(work, "mention", lambda msgs, i: named.append(i) or real(msgs, i))
    cache = TrimCache()
    trim(chat, 150, COUNTER, cache=cache)
    assert named  # the steps dropped were named
    named.clear()
    grown = [*chat, Message(role="user", id="q", content="and now?")]
    warm = trim(grown, 150, COUNTER, cache=cache)
    assert named == []
    assert warm == trim(grown, 150, COUNTER)
    assert any("(kept with the output of sh(ls " in e.reason for e in warm.dropped)


def test_a_re_trim_cuts_the_warm_facts_in_place():
    """The facts of the shared prefix are kept where they are and only the end of each column
    changes: a copy of every column, each as long as the chat, was most of what keeping them
    cost a re-trim. What an edit in the middle made stale goes all the same."""
    chat = [Message(role="user" if k % 2 else "assistant", id=f"m{k}", content=f"m{k} " * 40)
            for k in range(12)]
    cache = TrimCache()
    trim(chat, 200, COUNTER, cache=cache)
    columns = {kind: facts for kind, facts in cache.facts.items()}
    lists = {name: where for name, (where, _) in cache.lists.items()}
    assert columns and lists
    grown = [*chat, Message(role="user", id="q", content="and now?")]
    warm = trim(grown, 200, COUNTER, cache=cache)
    assert warm == trim(grown, 200, COUNTER)
    assert all(cache.facts[kind] is facts for kind, facts in columns.items())
    assert all(cache.lists[name][0] is where for name, where in lists.items()
               if cache.lists[name][1] == len(chat))  # no new message was found for it
    assert all(len(facts) == len(grown) for facts in cache.facts.values())
    edited = [*grown[:3], Message(role="user", id="m3", content="changed"), *grown[4:]]
    assert trim(edited, 200, COUNTER, cache=cache) == trim(edited, 200, COUNTER)
    assert cache.reused == 3


#: how the reasons of `reduce`'s shortenings start
_SHORTENED = ("over budget: middle of long code", "tool output over",
              "tool call's arguments over")


def _fields(m: Message) -> dict:
    return {f: getattr(m, f) for f in m.__struct_fields__}


class _Counting:
    """The word counter, saying what it was asked to count."""

    def __init__(self) -> None:
        self.counted: list[str] = []

    def count(self, text: str) -> int:
        self.counted.append(text)
        return COUNTER.count(text)


def test_a_re_trim_shortens_the_shared_prefix_as_the_last_turn_did():
    """Shortening a message reads only that message as it is then (its text, cost, extra
    tokens, liveness, outlined calls): a re-trim after one more message that finds it so
    makes the last turn's change again, its entry the very same, without outlining, cutting
    or counting anything (a re-trim of 1M tokens shortened the same 95 messages each turn:
    most of `reduce`). A message changed since is shortened anew."""
    block = "```\n" + "\n".join(f"line {j} of the code" for j in range(60)) + "\n```"
    chat = []
    for k in range(8):
        chat += [Message(role="user", id=f"u{k}", content=f"question {k} " + block),
                 Message(role="assistant", id=f"a{k}", content=f"<think>why {k}</think> answer"),
                 Message(role="assistant", id=f"c{k}", content="calling", tool_calls=[
                     ToolCall(id=f"x{k}", name="write", arguments='{"text": "%s"}' % (
                         "w " * 300))]),
                 Message(role="tool", id=f"t{k}", tool_call_id=f"x{k}",
                         content="\n".join(f"log {j} of {k} ok" for j in range(200)))]
    memo, cache, counter = Memo(), TrimCache(), _Counting()
    first = trim([*chat, Message(role="user", id="q", content="so?")], 8000, counter,
                 memo=memo, cache=cache)
    assert {e.action for e in first.truncated} >= {"truncated", "compressed"}
    counter.counted.clear()
    grown = [*chat, Message(role="user", id="q", content="and now?")]
    warm = trim(grown, 8000, counter, memo=memo, cache=cache)
    assert warm == trim(grown, 8000, COUNTER)
    before = {id(e) for e in first.truncated}
    again_made = [e for e in warm.truncated if e.reason.startswith(_SHORTENED)]
    assert len(again_made) >= 6
    assert all(id(e) in before for e in again_made)
    # no text cut or outlined was counted again (the room the fit left is given out anew:
    # what it brings back is counted)
    assert counter.counted[0] == "and now?"
    made_by = {e.message_id for e in again_made}
    assert not set(counter.counted) & {m.content for m in warm.messages if m.id in made_by}
    k = max(e.index for e in again_made if grown[e.index].role == "tool")
    other = "\n".join(f"other {j} ok" for j in range(200))
    edited = [*grown[:k], Message(**{**_fields(grown[k]), "content": other}), *grown[k + 1:]]
    again = trim(edited, 8000, counter, memo=memo, cache=cache)
    assert again == trim(edited, 8000, COUNTER)
    (outlined,) = [e for e in again.truncated if e.index == k]
    assert id(outlined) not in before and outlined.summary.endswith("other 0 ok")


class _Reads(list):
    """A list saying how many times an item or a slice of it was read."""

    reads = 0

    def __getitem__(self, key):
        type(self).reads += 1
        return super().__getitem__(key)


def test_the_shared_prefix_of_a_chat_with_another_last_message_is_found_by_halving():
    """A turn whose last message is another (a question edited and sent again, the trim bench's
    turns) shares all but its end with the last one: found by comparing slices, a few reads,
    where a loop in Python read every message of a 1M-token chat's 454. The prefix is exact
    wherever the first difference is."""
    chat = [Message(role="user", id=f"m{k}", content=f"m{k}") for k in range(454)]
    other = Message(role="user", id="x", content="x")
    cache, fmt = TrimCache(), TrimOptions().fmt
    cache.counter, cache.fmt = COUNTER, fmt  # as the last trim, of `chat`, left them
    for at in (453, 0, 1, 200, 452):
        cache.msgs = _Reads(chat)
        changed = _Reads([*chat[:at], other, *chat[at + 1:]])
        _Reads.reads = 0
        assert cache.shared(changed, COUNTER, fmt) == at
        assert _Reads.reads <= 2 * (len(chat).bit_length() + 1)
    assert cache.shared(_Reads([*chat, other]), COUNTER, fmt) == len(chat)


def test_a_re_trim_strips_the_shared_prefix_s_reasoning_as_the_last_turn_did():
    """Stripping an earlier turn's reasoning reads only that message (its text, cost, extra
    tokens): a re-trim after one more message makes the last turn's strip again, its entry the
    very same, without counting the stripped text again (a warm turn of a 1M-token chat
    stripped and counted the same 49 messages). A message changed since is stripped anew."""
    chat = []
    for k in range(6):
        chat += [Message(role="user", id=f"u{k}", content=f"question {k}"),
                 Message(role="assistant", id=f"a{k}",
                         content=f"<think>{'why ' * 30}{k}</think> answer {k}")]
    memo, cache, counter = Memo(), TrimCache(), _Counting()
    first = trim([*chat, Message(role="user", id="q", content="so?")], 10_000, counter,
                 memo=memo, cache=cache)
    stripped = [e for e in first.truncated if e.reason.startswith("reasoning block")]
    assert len(stripped) == 5  # all but the latest turn's
    counter.counted.clear()
    grown = [*chat, Message(role="user", id="q", content="and now?")]
    warm = trim(grown, 10_000, counter, memo=memo, cache=cache)
    assert counter.counted == ["and now?"]
    assert [id(e) for e in warm.truncated] == [id(e) for e in stripped]
    assert warm == trim(grown, 10_000, COUNTER)
    edited = [*grown[:3], Message(role="assistant", id="a1", content="<think>no</think> other"),
              *grown[4:]]
    again = trim(edited, 10_000, counter, memo=memo, cache=cache)
    assert again == trim(edited, 10_000, COUNTER)
    (anew,) = [e for e in again.truncated if e.index == 3]
    assert id(anew) not in {id(e) for e in stripped}
