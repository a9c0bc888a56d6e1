"""aider's chat across a restart, in the shapes aider 0.86 sends (a probe's runs through the
gateway): its repo map and the chat's files written anew each turn, the files message moved
after the turns once an edit is applied, /drop, /clear; and a second run with
`--restore-chat-history`, whose summary it asks first, the restored chat carrying it. Each
case runs the same requests on a state folder closed and opened again and on one never
closed: the same conversations, ids, bodies and listing. A real State, the real tokenizer
and SQLite."""

from __future__ import annotations

import pytest
from test_restart_goes_on import files_message
from test_restart_ids import caller_of

from ctxlayer import protocol
from ctxlayer.state import State
from ctxlayer.state.requests import chats

SYSTEM = {"role": "system", "content": "Act as an expert software developer.\n"
          + "Always use best practices when coding. " * 120}
REMINDER = {"role": "system", "content": "# *SEARCH/REPLACE block* Rules:\n" + "Every block "
            "must use this format. " * 100}
MAP_OK = {"role": "assistant", "content": "Ok, I won't try and edit those files without "
          "asking first."}
FILES_OK = {"role": "assistant", "content": "Ok, any changes I propose will be to those files."}
EDIT = ("I will change total.\n\nsrc/a.py\n```\n<<<<<<< SEARCH\n    return sum(xs)\n=======\n"
        "    return sum(xs) + 0\n>>>>>>> REPLACE\n```")


def repo_map(paths: list[str], defs: int = 1) -> dict:
    """aider's repo map: the files of the repository not in the chat, read-only, ``defs``
    functions of each."""
    return {"role": "user", "content": "Here are summaries of some files present in my git "
            "repository.\nDo not propose changes to these files, treat them as *read-only*.\n"
            "If you need to edit any of these files, ask me to *add them to the chat* first."
            "\n\n" + "".join(f"{p}:\n" + "".join(f"│def g{i}(x):\n⋮\n" for i in range(defs))
                             + "\n" for p in paths)}


def ask(k: int, long: bool = True) -> dict:
    """The k-th question, a pasted log under it when ``long``."""
    log = " ".join(f"[q{k} row {i}: value {i * 13}]" for i in range(120)) if long else ""
    return {"role": "user", "content": f"Q{k} why does this fail? {log}".strip()}


def answer(n: int) -> dict:
    return {"role": "assistant", "content": f"stand-in answer to {n} messages."}


def request(messages: list[dict], model: str = "gpt-4o") -> dict:
    return {"model": model, "messages": messages}


def aider_chat() -> list[dict]:
    """aider's requests of one chat: two questions, an edit applied (the files message moves
    after the turns), one more, /drop (the repo map and the files written anew), one more,
    /clear, then three more."""
    mapped, dropped = repo_map(["README.md", "app.py"], 60), repo_map(["README.md"])
    files, fewer = files_message(["src/a.py", "src/b.py"]), files_message(["src/a.py"])
    head = [SYSTEM, mapped, MAP_OK, files, FILES_OK]
    q1 = {"role": "user", "content": "Q1 change total please"}
    done = [ask(0), answer(7), q1, {"role": "assistant", "content": EDIT},
            {"role": "user", "content": "I updated the files."},
            {"role": "assistant", "content": "Ok."}]
    after = [SYSTEM, dropped, MAP_OK, *done, fewer, FILES_OK, ask(2), answer(8), ask(3)]
    cleared = [SYSTEM, dropped, MAP_OK, fewer, FILES_OK]
    return [request(m) for m in (
        [*head, ask(0), REMINDER], [*head, ask(0), answer(7), q1, REMINDER],
        [SYSTEM, mapped, MAP_OK, *done, files, FILES_OK, ask(2), REMINDER],
        [*after, REMINDER],
        [*cleared, ask(4), REMINDER], [*cleared, ask(4), answer(7), ask(5), REMINDER],
        [*cleared, ask(4), answer(7), ask(5), answer(9), ask(6), REMINDER])]


async def replayed(path, requests: list[dict], restart_at: int | None,
                   answers: dict[int, str] | None = None, budget: int = 3000
                   ) -> tuple[list[protocol.PrepareResult], list[str], str | None]:
    """The results of ``requests`` (the state folder closed and opened again before the one
    at ``restart_at``; ``answers``: the answer the provider gave to a request, by its place),
    the ids listed after them, and the live chat's."""
    st = State(path)
    out = []
    try:
        for k, body in enumerate(requests):
            if k == restart_at:
                await st.conversations.settled()
                st.close()
                st = State(path)
            out.append(await chats.prepare(caller_of(st), protocol.PrepareParams(
                format="openai", request=body, budget=budget)))
            if answers and k in answers:
                st.conversations.report_usage(out[-1].conversation_id, {
                    "prompt_tokens": out[-1].tokens, "completion_tokens": 20},
                    caller_of(st).workspace, answer=answers[k])
        await st.conversations.settled()
        listed = (await chats.conversations(caller_of(st), protocol.NoParams())).conversations
        live = st.events.live_chat(caller_of(st).workspace)
    finally:
        st.close()
    return out, [c.conversation_id for c in listed], live[0] if live else None


def same_as_never_restarted(after, never) -> None:
    (got, listed, live), (want, listed_never, live_never) = after, never
    assert [r.conversation_id for r in got] == [r.conversation_id for r in want]
    assert [r.request for r in got] == [r.request for r in want]
    assert listed == listed_never and live == live_never


async def test_aiders_chat_is_one_chat_with_its_summaries_across_a_restart(tmp_path):
    """A restart before the question after the edit (the files message moved), and one
    before the question after /drop. Before, the /clear after it took the window of the
    chat's chain from before the restart (kept under a fork's id; it agreed further, its
    files message in the same place), and the chat went on under that id: two chats listed,
    the old one with its last figures; restarted after the /drop, the first request took the
    window of an older chain of its own (`Summary of 8` where never restarted has 6 and 2),
    under a fork's id too: three chats."""
    requests = aider_chat()
    never = await replayed(tmp_path / "never", requests, None)
    assert len({r.conversation_id for r in never[0]}) == 1 and len(never[1]) == 1
    assert any(r.compacted for r in never[0])
    for restart_at in (2, 3):
        after = await replayed(tmp_path / f"restarted{restart_at}", requests, restart_at)
        same_as_never_restarted(after, never)


SUMMARIZE = {"role": "system", "content": "*Briefly* summarize this partial conversation "
             "about programming.\nStart the summary with \"I asked you...\"."}
COMMIT = {"role": "system", "content": "You are an expert software engineer that generates "
          "concise, one-line Git commit messages."}
SUMMARY = "The user asked for g1 and g2, each added in its own file."


def restored_runs() -> tuple[list[dict], dict[int, str]]:
    """aider's two runs of `test_aiders_summary_of_its_history_leaves_one_chat`: two
    questions, each edit's commit message and the summary of the turns after it (on the weak
    model); then, its history restored, the summary asked again at its start, and its
    question with the summary where the turns were. And the answers that matter."""
    prose = " ".join(f"Step {i}: the helper keeps its arguments and returns their sum."
                     for i in range(25))
    files = files_message(["README.md"])
    g1, g2 = ({"role": "user", "content": f"{q} in new{k}.py please."}
              for k, q in ((1, "Add g1"), (2, "Now g2")))
    said = [g1, {"role": "assistant", "content": f"{prose}\n\nnew1.py: g1"},
            {"role": "user", "content": "I committed the changes with git hash 0d1c964 & "
             "commit msg: Add g1"}, {"role": "assistant", "content": "Ok."}]
    turns = "# USER\n" + g1["content"] + "  \n# ASSISTANT\n" + prose

    def weak(system: dict, text: str) -> dict:
        return request([system, {"role": "user", "content": text}], "gpt-4o-mini")

    requests = [
        request([SYSTEM, repo_map(["README.md"]), MAP_OK, files, FILES_OK, g1, REMINDER]),
        weak(COMMIT, "diff --git a/new1.py\n+def g1(x):\n" + g1["content"]),
        weak(SUMMARIZE, turns),
        request([SYSTEM, repo_map(["README.md", "new1.py"]), MAP_OK, *said, files, FILES_OK,
                 g2, REMINDER]),
        weak(COMMIT, "diff --git a/new2.py\n+def g2(x):\n" + g2["content"]),
        weak(SUMMARIZE, turns + "\n# USER\n" + g2["content"]),
        weak(SUMMARIZE, turns + "\n# USER\n" + g2["content"] + "  \n# USER\n/exit  \n"),
        request([SYSTEM, repo_map(["new1.py", "new2.py"]), MAP_OK,
                 {"role": "user", "content": "I spoke to you previously about a number of "
                  "things.\n" + SUMMARY}, {"role": "assistant", "content": "Ok."}, files,
                 FILES_OK, {"role": "user", "content": "Which files did you add?"}, REMINDER])]
    return requests, {1: "Add g1", 2: SUMMARY, 4: "Add g2", 5: SUMMARY, 6: SUMMARY,
                      7: "new1.py and new2.py."}


@pytest.mark.parametrize("answered", [True, False])
async def test_aiders_restored_history_after_a_restart_goes_on_in_its_chat(tmp_path, answered):
    """A restart between aider's two runs: its start-up summary request found no chat in
    memory to quote, so it was a chat, and the restored chat's request was a chat of its
    own, set aside as the summary's helper when it carried the summary's answer already
    reported (the gateway reports an answer once its end went out, the next request may come
    first): the summary listed and the live chat, and the chat before the restart listed
    with its old figures. As never restarted: one chat, the first run's, live, the summary
    not listed."""
    requests, answers = restored_runs()
    if not answered:
        answers = {k: a for k, a in answers.items() if k < 6}
    never = await replayed(tmp_path / "never", requests, None, answers, 100_000)
    chat = never[0][0].conversation_id
    assert never[0][-1].conversation_id == chat and never[1] == [chat] and never[2] == chat
    after = await replayed(tmp_path / "restarted", requests, 6, answers, 100_000)
    same_as_never_restarted(after, never)
