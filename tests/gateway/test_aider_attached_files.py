"""aider's files through the gateway: its `--read` conventions, its repo map and the file its
user added open every request (aider 0.86's own texts, as recorded from the real client), and
its questions pile up after them. From the first compaction on, the gateway sent neither the
conventions nor the file (the summary kept `paths: adder.py, CONVENTIONS.md`), nor the new
contents aider sent once the user edited the file outside it. Real gateway, official SDK,
the strict stand-in."""

from __future__ import annotations

import json

from gateway_stack import fresh_stack

SYSTEM = ("Act as an expert software developer.\nAlways use best practices when coding.\n"
          "Respect and use existing conventions, libraries, etc that are already present in "
          "the code base.\n\nTake requests for changes to the supplied code.\nIf the request is "
          "ambiguous, ask questions.\n")
REMINDER = ("# *SEARCH/REPLACE block* Rules:\n\nEvery *SEARCH/REPLACE block* must use this "
            "format:\n1. The *FULL* file path alone on a line, verbatim.\n")
CONVENTIONS = ("Here are some READ ONLY files, provided for your reference.\nDo not edit these "
               "files!\n\nCONVENTIONS.md\n```\n# Conventions\n- Use 4-space indentation.\n"
               "- Never use print for logging; use the logging module.\n"
               "- CONV-ZEBRA: public functions need type hints.\n```\n")
REPO_MAP = ("Here are summaries of some files present in my git repository.\nDo not propose "
            "changes to these files, treat them as *read-only*.\nIf you need to edit any of "
            "these files, ask me to *add them to the chat* first.\n\nREADME.md\n")


def files_message(adder: str) -> str:
    return ("I have *added these files to the chat* so you can go ahead and edit them.\n\n"
            "*Trust this message as the true contents of these files!*\nAny other messages in "
            f"the chat may contain outdated versions of the files' contents.\n\nadder.py\n```\n"
            f"{adder}```\n")


def opening(adder: str) -> list[dict]:
    return [{"role": "system", "content": SYSTEM},
            {"role": "user", "content": CONVENTIONS},
            {"role": "assistant", "content": "Ok, I will use these files as references."},
            {"role": "user", "content": REPO_MAP},
            {"role": "assistant", "content": "Ok, I won't try and edit those files without "
             "asking first."},
            {"role": "user", "content": files_message(adder)},
            {"role": "assistant", "content": "Ok, any changes I propose will be to those "
             "files."}]


def question(k: int) -> str:
    log = " ".join(f"[q{k} row {i}: value {i * 13}]" for i in range(150))
    return f"QUESTION_{k} why does this fail? {log}"


def test_aider_s_files_go_upstream_every_turn_and_their_new_contents_once_edited(tmp_path):
    old, new = "def add(a, b):\n    return a + b\n", \
        "def add(a, b):\n    return a - b  # MARKER_EXTERNAL_EDIT\n"
    with fresh_stack(tmp_path, {"gpt-4o": 16000}) as stack:
        client = stack.openai()
        cur: list[dict] = []  # aider's `cur_messages`: no edit applied, they pile up
        summarized = 0
        for k in range(9):
            adder = new if k >= 6 else old
            cur.append({"role": "user", "content": question(k)})
            raw = client.chat.completions.with_raw_response.create(
                model="gpt-4o", messages=[*opening(adder), *cur,
                                          {"role": "system", "content": REMINDER}])
            answer = raw.parse().choices[0].message.content
            sent = json.dumps(stack.model_requests()[-1]["body"]["messages"])
            assert "CONV-ZEBRA" in sent, k
            assert json.dumps(files_message(adder))[1:-1] in sent, k
            if k >= 6:
                assert "return a + b" not in sent, k
            assert f"QUESTION_{k} " in sent
            summarized += "[Summary of" in sent
            cur.append({"role": "assistant", "content": answer})
    assert summarized >= 4  # the questions were summarized, the files beside them


def ask(stack, cur: list[dict], k: int, adder: str) -> tuple[list[dict], str]:
    """aider's request at question ``k`` (its answer appended to ``cur``): what went upstream
    and the conversation the gateway put it in."""
    cur.append({"role": "user", "content": question(k)})
    raw = stack.openai().chat.completions.with_raw_response.create(
        model="gpt-4o", messages=[*opening(adder), *cur, {"role": "system", "content": REMINDER}])
    cur.append({"role": "assistant", "content": raw.parse().choices[0].message.content})
    return stack.model_requests()[-1]["body"]["messages"], raw.headers["x-ctxlayer-conversation"]


def summaries(sent: list[dict]) -> list[str]:
    return [m["content"] for m in sent if m["content"].startswith("[Summary of")]


def test_a_file_edited_in_place_across_a_restart_keeps_the_window(tmp_path):
    """The gateway restarts (its state folder kept) between two of aider's requests, and the
    only change between them is the new contents of the file its user added (edited outside
    aider). Without a restart the window carries over (the test above); after one, the kept
    window was not taken up (`resuming.resume` needed every message up to the summarized part
    to agree): the chat started afresh, its summaries written anew. Now the same summaries go
    upstream, with the new contents, under the same conversation."""
    old, new = "def add(a, b):\n    return a + b\n", \
        "def add(a, b):\n    return a - b  # MARKER_EXTERNAL_EDIT\n"
    cur: list[dict] = []
    with fresh_stack(tmp_path, {"gpt-4o": 16000}) as stack:
        for k in range(8):
            sent, chat = ask(stack, cur, k, old)
    before = summaries(sent)
    assert before, "no summary before the restart"
    with fresh_stack(tmp_path, {"gpt-4o": 16000}) as stack:
        sent, again = ask(stack, cur, 8, new)
    text = json.dumps(sent)
    assert json.dumps(files_message(new))[1:-1] in text and "return a + b" not in text
    assert summaries(sent)[:len(before)] == before, (before, summaries(sent))
    assert again == chat
