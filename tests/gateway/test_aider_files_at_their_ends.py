"""aider's files when its prompts leave them little room: a long system prompt and a reminder
of the edit format longer than the whole budget (a small window, a large max_tokens). The
last resort dropped the files' message whole though each file's first and last lines fitted,
and the model could quote no file; a question too long beside them was cut to a fixed size
with room left. Real gateway, official SDK, the strict stand-in; aider 0.86's message shapes
(its files under their paths in fences, its "Ok" after them, its reminder last)."""

from __future__ import annotations

import re

from gateway_stack import fresh_stack

MODEL = "gpt-4o"
WINDOW = 2000
MAX_TOKENS = 1200  # a budget of 800
SYSTEM = ("Act as an expert software developer.\nAlways use best practices when coding.\n"
          "Respect and use existing conventions, libraries, etc that are already present in "
          "the code base.\n") * 12
REMINDER = ("# *SEARCH/REPLACE block* Rules:\n\nEvery *SEARCH/REPLACE block* must use this "
            "format:\n1. The *FULL* file path alone on a line, verbatim.\n") * 30
RANGES = re.compile(r"\[\.\.\. lines \d+-\d+ cut: lines 1-\d+ and \d+-(\d+) of (\d+) kept")


def files_message(files: dict[str, str]) -> str:
    return ("I have *added these files to the chat* so you can go ahead and edit them.\n\n"
            "*Trust this message as the true contents of these files!*\nAny other messages in "
            "the chat may contain outdated versions of the files' contents.\n\n" + "".join(
                f"{path}\n```\n{text}```\n\n" for path, text in files.items()))


def module(tag: str, n: int) -> str:
    return "".join(f"def {tag}_{i}(x):\n    return x + {i}\n" for i in range(n))


def ask(tmp_path, question: str) -> tuple[list[dict], dict]:
    """aider's first request asking ``question`` of two added files: what went upstream and
    the answer's headers."""
    files = {"src/alpha.py": module("alpha", 300), "src/beta.py": module("beta", 200)}
    messages = [{"role": "system", "content": SYSTEM},
                {"role": "user", "content": files_message(files)},
                {"role": "assistant", "content": "Ok, any changes I propose will be to those "
                 "files."},
                {"role": "user", "content": question},
                {"role": "system", "content": REMINDER}]
    with fresh_stack(tmp_path, {MODEL: WINDOW}, windows={MODEL: WINDOW}) as stack:
        raw = stack.openai().chat.completions.with_raw_response.create(
            model=MODEL, max_tokens=MAX_TOKENS, messages=messages)
        assert raw.parse().choices[0].message.content
        (request,) = stack.model_requests()
    assert request["status"] == 200 and request["problems"] == [], request["problems"]
    return request["body"]["messages"], dict(raw.headers)


def test_aider_s_files_go_at_their_ends_when_its_prompts_leave_them_little_room(tmp_path):
    """A 384-token system prompt and a 1,170-token reminder, budget 800: the gateway sent
    421 tokens, the files' message dropped whole; now 619, each file its ends and ranges."""
    sent, headers = ask(tmp_path, "Why does alpha_7 return the wrong value?")
    files = [m["content"] for m in sent if m["role"] == "user"
             and m["content"].startswith("I have *added these files")]
    assert files, [m["content"][:40] for m in sent]
    assert RANGES.findall(files[0]) == [("600", "600"), ("400", "400")], files[0]
    assert int(headers["x-ctxlayer-tokens"]) <= WINDOW - MAX_TOKENS


def test_a_long_question_beside_aider_s_files_at_their_ends_takes_the_room_left(tmp_path):
    """A question of 300 log rows: the files were dropped and the question kept 389 tokens;
    now the files keep their ends (194 tokens) and the question the 191 left of the 800."""
    log = " ".join(f"[row {i}: value {i * 13}]" for i in range(300))
    sent, headers = ask(tmp_path, f"QUESTION: what is wrong here? {log}")
    question = next(m["content"] for m in sent if m["content"].startswith("QUESTION"))
    assert question != f"QUESTION: what is wrong here? {log}"  # cut
    assert any(RANGES.search(m["content"]) for m in sent if m["role"] == "user")
    budget = WINDOW - MAX_TOKENS
    assert budget - budget // 50 <= int(headers["x-ctxlayer-tokens"]) <= budget
