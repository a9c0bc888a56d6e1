"""After a restart, a request goes on in the conversation a never-restarted daemon puts it in,
with the body it sends: aider's files message written anew (an /add after a /clear or a
rewind), a chat's first question edited in place (with a client session id or without). Each
case runs the same requests on a state folder closed and opened again before the change and
on one never closed: the ids, the bodies and the listings must be the same. A real State,
the real tokenizer and SQLite."""

from __future__ import annotations

import random

import pytest
from test_conversations import MODEL, words
from test_restart_ids import caller_of

from ctxlayer import protocol
from ctxlayer.state import State
from ctxlayer.state.requests import chats

AIDER_SYSTEM = {"role": "system", "content": "Act as an expert software developer. " * 20}
REMINDER = {"role": "system", "content": "# *SEARCH/REPLACE block* Rules: " * 20}
OK = {"role": "assistant", "content": "Ok, any changes I propose will be to those files."}


def files_message(paths: list[str]) -> dict:
    """aider's message of the files added to the chat, each fenced whole."""
    r = random.Random(len(paths))
    body = "".join(f"{p}\n```\n" + "".join(f"def f{i}(x):\n    return x + {r.randint(1, 99)}\n"
                                           for i in range(40)) + "```\n\n" for p in paths)
    return {"role": "user", "content": "I have *added these files to the chat* so you can go "
            "ahead and edit them.\n\n" + body}


def aider(files: list[str], turns: list[tuple[str, str]], question: str) -> dict:
    """An aider request on gpt-4o: system, files, its "Ok", ``turns`` answered, ``question``,
    the reminder."""
    said = [m for q, a in turns for m in ({"role": "user", "content": q},
                                           {"role": "assistant", "content": a})]
    return {"model": MODEL, "messages": [AIDER_SYSTEM, files_message(files), OK, *said,
                                         {"role": "user", "content": question}, REMINDER]}


def exchanges(seed: int, n: int, long: int) -> list[tuple[str, str]]:
    r = random.Random(seed)
    return [(f"Q{seed}.{t} " + words(r, 20), f"answer {seed}.{t} " + words(r, long))
            for t in range(n)]


async def replayed(path, requests: list[dict], restart_at: int | None, budget: int = 1500
                   ) -> tuple[list[protocol.PrepareResult], list[str]]:
    """The results of ``requests`` (the state folder closed and opened again before the one
    at ``restart_at``) and the ids listed after them."""
    st = State(path)
    out = []
    try:
        for k, request in enumerate(requests):
            if k == restart_at:
                await st.conversations.settled()
                st.close()
                st = State(path)
            out.append(await chats.prepare(caller_of(st), protocol.PrepareParams(
                format="openai", request=request, budget=budget)))
        await st.conversations.settled()
        listed = (await chats.conversations(caller_of(st), protocol.NoParams())).conversations
    finally:
        st.close()
    return out, [c.conversation_id for c in listed]


def same_as_never_restarted(after, never) -> None:
    (got, listed), (want, listed_never) = after, never
    assert [r.conversation_id for r in got] == [r.conversation_id for r in want]
    assert [r.request for r in got] == [r.request for r in want]
    assert listed == listed_never


async def test_aider_files_added_after_a_clear_across_a_restart_stay_in_the_chat(tmp_path):
    """aider's chat past its budget, a restart, /clear (the same files, new questions), then
    /add (the files message written anew). Before, the /add's request took the window of the
    chat before the /clear (kept as a fork when the /clear took the chat's window): a
    conversation of its own, listed beside the chat, its last turns sent only as a summary."""
    before = aider(["src/a.py"], exchanges(1, 6, 120), "Q1.last what now?")
    cleared = exchanges(2, 2, 60)
    requests = [before, aider(["src/a.py"], cleared, "Q2.2 and this?"),
                aider(["src/a.py", "src/b.py"], [*cleared, ("Q2.2 and this?", "it is so")],
                      "Q2.3 after the add?")]
    after = await replayed(tmp_path / "restarted", requests, 1)
    never = await replayed(tmp_path / "never", requests, None)
    assert len({r.conversation_id for r in never[0]}) == 1
    same_as_never_restarted(after, never)


async def test_aider_files_changed_after_a_rewind_across_a_restart_stay_in_the_chat(tmp_path):
    """aider's chat past its budget, a restart, its first question edited and the rest
    dropped, then a file changed in the files message. Before, the change took the window of
    the chat before the edit: a new conversation, and every later change made one more."""
    first = exchanges(3, 6, 120)
    edited = first[0][0] + " (edited)"
    requests = [aider(["src/a.py"], first, "Q3.last what now?"),
                aider(["src/a.py"], [], edited),
                aider(["src/a.py", "src/c.py"], [(edited, "done")], "Q3.next and now?")]
    after = await replayed(tmp_path / "restarted", requests, 1)
    never = await replayed(tmp_path / "never", requests, None)
    assert len({r.conversation_id for r in never[0]}) == 1
    same_as_never_restarted(after, never)


def edited_first(seed: int, session: bool) -> list[dict]:
    """A chat's requests: three turns, then the same with its first question edited in place
    and a new question, then one more turn; under a client session id or none."""
    r = random.Random(seed)
    said = [{"role": "system", "content": "You are a careful coding assistant."},
            {"role": "user", "content": "Where is the cache built? " + words(r, 40)}]
    requests = []
    for t in range(3):
        said = [*said, {"role": "assistant", "content": f"A{t} " + words(r, 150)},
                {"role": "user", "content": f"Q{t} " + words(r, 30)}]
        requests.append(said)
    edited = [said[0], {**said[1], "content": said[1]["content"] + " (edited)"}, *said[2:],
              {"role": "assistant", "content": "A-last " + words(r, 50)},
              {"role": "user", "content": "And now? " + words(r, 10)}]
    more = [*edited, {"role": "assistant", "content": "fine " + words(r, 40)},
            {"role": "user", "content": "Next one? " + words(r, 10)}]
    extra = {"user": "run-1234"} if session else {}
    return [{"model": MODEL, "messages": m, **extra} for m in (*requests, edited, more)]


@pytest.mark.parametrize("session", [True, False])
@pytest.mark.parametrize("budget", [1500, 20_000])
async def test_a_chat_whose_first_question_is_edited_after_a_restart_goes_on(
        tmp_path, session, budget):
    """Before, the edit after a restart was a chat of its own (a new id in its client
    session's family; without one, its first question names a new family), no cache reuse
    said, and the chat it went on stayed listed with its last figures: two rows where the
    never-restarted daemon lists one."""
    requests = edited_first(5, session)
    after = await replayed(tmp_path / "restarted", requests, 3, budget)
    never = await replayed(tmp_path / "never", requests, None, budget)
    assert len({r.conversation_id for r in never[0]}) == 1
    same_as_never_restarted(after, never)
    assert [r.cache_reuse_tokens for r in after[0]] == [r.cache_reuse_tokens for r in never[0]]


async def test_aider_files_changed_right_after_a_restart_stay_in_the_chat(tmp_path):
    """aider's files message written anew (an /add) in the first request after a restart:
    its opening names another family, and no chat is in memory to go on in. Before, a chat
    of its own (its window another chat's branch), listed beside the chat it went on."""
    first = exchanges(4, 6, 120)
    requests = [aider(["src/a.py"], first[:5], first[5][0]),
                aider(["src/a.py", "src/d.py"], first, "Q4.next after the add?"),
                aider(["src/a.py", "src/d.py"], [*first, ("Q4.next after the add?", "yes")],
                      "Q4.more and then?")]
    after = await replayed(tmp_path / "restarted", requests, 1)
    never = await replayed(tmp_path / "never", requests, None)
    assert len({r.conversation_id for r in never[0]}) == 1
    same_as_never_restarted(after, never)


@pytest.mark.parametrize("last", ["continue", "yes", "go on"])
@pytest.mark.parametrize("restart_at", [9, None])
async def test_a_short_last_question_tells_no_chat(tmp_path, last, restart_at):
    """Chat A, past its budget, ends with "continue"; then an unrelated chat C with the same
    system prompt and no session id, whose first request holds "continue" answered: C took
    A's conversation (after a restart since c848024, in memory before it), and A going on
    landed on a fork of its own. A question that short tells no chat from another."""
    rng = random.Random(2)
    system = {"role": "system", "content": "You are a careful coding assistant."}
    chat = [system, {"role": "user", "content": "Where is the cache built? " + words(rng, 30)}]
    requests = [list(chat)]
    for t in range(8):
        chat = chat + [{"role": "assistant", "content": f"answer {t} " + words(rng, 150)},
                       {"role": "user", "content": f"question {t} " + words(rng, 20)
                        if t < 7 else last}]
        requests.append(list(chat))
    other = [system, {"role": "user", "content": "Explain monads. " + words(rng, 20)},
             {"role": "assistant", "content": "monads " + words(rng, 80)},
             {"role": "user", "content": last},
             {"role": "assistant", "content": "ok " + words(rng, 40)},
             {"role": "user", "content": "and functors?"}]
    requests.append(other)
    results, listed = await replayed(tmp_path, [{"model": MODEL, "messages": m}
                                                for m in requests], restart_at)
    ids = [r.conversation_id for r in results]
    assert len(set(ids[:-1])) == 1, ids
    assert ids[-1] != ids[-2] and sorted(listed) == sorted({ids[-2], ids[-1]}), (ids, listed)


async def test_a_short_question_tells_aiders_chat_with_the_one_before_it(tmp_path):
    """aider's files written anew in the first request after a restart, its chat's last
    question short ("And f2?"): told by it with the question before it, as in memory (a
    question that short alone tells no chat: `test_a_short_last_question_tells_no_chat`)."""
    first = exchanges(4, 6, 120)
    requests = [aider(["src/a.py"], first[:5], first[5][0]),
                aider(["src/a.py", "src/d.py"], first, "And f2?"),
                aider(["src/a.py", "src/d.py"], [*first, ("And f2?", "yes")], "And f3?")]
    after = await replayed(tmp_path / "restarted", requests, 1)
    never = await replayed(tmp_path / "never", requests, None)
    assert len({r.conversation_id for r in never[0]}) == 1
    same_as_never_restarted(after, never)


async def test_a_short_last_question_with_the_one_before_it_goes_on_after_an_edit(tmp_path):
    """A chat whose last question is short ("And f2?") and whose first question is then
    edited in place, across a restart: told by its last two questions, as in memory."""
    rng = random.Random(5)
    system = {"role": "system", "content": "You are a careful coding assistant."}
    q1 = {"role": "user", "content": "Where is the cache built? " + words(rng, 30)}
    a1 = {"role": "assistant", "content": "In build.py. " + words(rng, 60)}
    q2 = {"role": "user", "content": "What does f1 do there? " + words(rng, 10)}
    a2 = {"role": "assistant", "content": "It adds one. " + words(rng, 60)}
    short = {"role": "user", "content": "And f2?"}
    edited = {"role": "user", "content": "Where is the cache made? " + words(rng, 30)}
    requests = [{"model": MODEL, "messages": m} for m in (
        [system, q1], [system, q1, a1, q2], [system, q1, a1, q2, a2, short],
        [system, edited, a1, q2, a2, short, {"role": "assistant", "content": "It adds two."},
         {"role": "user", "content": "And f3?"}])]
    after = await replayed(tmp_path / "restarted", requests, 3)
    never = await replayed(tmp_path / "never", requests, None)
    assert len({r.conversation_id for r in never[0]}) == 1, [r.conversation_id for r in never[0]]
    same_as_never_restarted(after, never)
