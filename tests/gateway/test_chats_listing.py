"""`ctxlayer chats` says only what belongs together and refuses what it cannot use: the `read`
and `bill` of a row are of the request its `tokens` are (after a failed request, and for a
chain whose history the provider keeps: `-`), a malformed URL or gateway.json and a flag that
would do nothing are one line and exit 2, and conversations beyond the listed ones are
counted."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from gateway_stack import prose, small_stack

from ctxlayer.commands.chats import bill


def chats(stack, *flags: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "ctxlayer", "chats", "--url", stack.anthropic_url,
                           "--state-dir", str(stack.state.state_dir), *flags],
                          capture_output=True, text=True, timeout=60)


def rows(stack) -> dict[str, dict]:
    done = chats(stack, "--json")
    assert done.returncode == 0, done.stderr
    return {c["conversationId"]: c for c in json.loads(done.stdout)["conversations"]}


def ask(stack, cid: str, history: list[dict], text: str) -> int:
    history.append({"role": "user", "content": text})
    answer = stack.anthropic().messages.with_raw_response.create(
        model="standin-small", max_tokens=256, messages=history,
        extra_headers={"x-ctxlayer-conversation": cid})
    history.append({"role": "assistant", "content": answer.parse().content[0].text})
    return answer.status_code


def test_after_a_failed_request_the_row_shows_no_read_of_the_request_before(tmp_path: Path):
    """The failed request's own count beside the previous request's cache read made a bill of
    neither ("2.8k / 3.8k ... 1.4k 66%"): its usage was never reported, so `-`."""
    with small_stack(tmp_path) as stack:
        history: list[dict] = []
        for i in range(4):
            assert ask(stack, "c", history, prose(f"q{i}", 150)) == 200
        stack.reported()
        assert rows(stack)["c"]["cachedTokens"] > 0  # the provider read from its cache
        stack.standin.fail(500)
        history.append({"role": "user", "content": prose("big", 600)})
        failed = stack.anthropic().messages.with_raw_response
        with pytest.raises(Exception):  # noqa: B017 - the SDK's error for the 500
            failed.create(model="standin-small", max_tokens=256, messages=history,
                          extra_headers={"x-ctxlayer-conversation": "c"})
        stack.reported()
        row = rows(stack)["c"]
        assert "cachedTokens" not in row and bill(row) is None
        (line,) = [t for t in chats(stack).stdout.splitlines() if t.startswith("c ")]
        read, cost = line.split()[-4:-2]
        assert (read, cost) == ("-", "-"), line


def test_a_chain_whose_history_the_provider_keeps_shows_no_read_nor_bill(small):
    """`previous_response_id`: the provider counts its stored history, the gateway only the
    new input, so its read was twice `tokens` (940 of 470) and the bill 10%."""
    client = small.openai().responses.with_raw_response
    previous = client.create(model="standin-small", input="hello " + prose("a", 100),
                             store=True).parse().id
    for i in range(3):
        answer = client.create(model="standin-small", input=prose(f"n{i}", 200),
                               previous_response_id=previous, store=True)
        previous = answer.parse().id
    small.reported()
    row = rows(small)[answer.headers["x-ctxlayer-conversation"]]
    assert row["tokens"] == int(answer.headers["x-ctxlayer-tokens"])  # the new input only
    assert "cachedTokens" not in row and bill(row) is None, row
    cid = row["conversationId"]
    (line,) = [t for t in chats(small).stdout.splitlines() if t.startswith(cid)]
    assert line.split()[-4:-2] == ["-", "-"], line
    assert "previous_response_id" in " ".join(chats(small, "--help").stdout.split())


def test_conversations_beyond_those_listed_are_counted(tmp_path: Path):
    """70 chats listed as 64 without a word: a last line says how many more are kept."""
    with small_stack(tmp_path) as stack:
        stack.state.conversations.max_live = 3
        for n in range(5):
            assert ask(stack, f"chat{n}", [], f"chat {n} " + prose(f"c{n}", 60)) == 200
        stack.reported()
        stack.thread.call(stack.state.conversations.settled())
        done = chats(stack, "--json")
        answer = json.loads(done.stdout)
        assert len(answer["conversations"]) == 3 and answer["notListed"] == 2, answer
        lines = chats(stack).stdout.splitlines()
        assert lines[-1] == ("and 2 more conversations the state folder keeps, not listed: "
                             "the 3 most recent are"), lines


def command(tmp_path: Path, *flags: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "ctxlayer", "chats", "--state-dir",
                           str(tmp_path), *flags], capture_output=True, text=True, timeout=60)


@pytest.mark.parametrize("url, needle", [
    ("http://[::1", "--url: http://[::1 is not a URL"),
    ("http://localhost:abc", "--url: http://localhost:abc is not a URL"),
    ("http://127.0.0.1:1/\x1b[2J", "--url: http://127.0.0.1:1/\\x1b[2J is not an http:// URL"),
    ("ftp://127.0.0.1:1", "is not an http:// URL"),
])
def test_a_malformed_url_is_one_line_naming_it(tmp_path: Path, url: str, needle: str):
    done = command(tmp_path, "--url", url)
    assert done.returncode == 2 and needle in done.stderr, done.stderr
    assert "Traceback" not in done.stderr and len(done.stderr.strip().splitlines()) == 1


@pytest.mark.parametrize("announced, needle", [
    ('{"anthropic": 5}', 'no gateway URL under "anthropic"'),
    ("[1]", 'no gateway URL under "anthropic"'),
    ('{"anthropic": "http://[::1"}', 'its "anthropic": http://[::1 is not a URL'),
])
def test_a_malformed_gateway_json_is_one_line_naming_it(tmp_path: Path, announced: str,
                                                        needle: str):
    (tmp_path / "gateway.json").write_text(announced)
    done = command(tmp_path)
    assert done.returncode == 2 and needle in done.stderr, done.stderr
    assert str(tmp_path / "gateway.json") in done.stderr
    assert "Traceback" not in done.stderr and len(done.stderr.strip().splitlines()) == 1


@pytest.mark.parametrize("flags, needle", [
    (["--message", "x"], "--message: only with --why"),
    (["--why", ""], "--why: give a conversation's id"),
    (["--why", "c1", "--message", ""], "--message: give a message's id"),
])
def test_a_flag_that_would_do_nothing_is_refused(tmp_path: Path, flags, needle):
    done = command(tmp_path, "--url", "http://127.0.0.1:1", *flags)
    assert done.returncode == 2 and needle in done.stderr, done.stderr
    assert len(done.stderr.strip().splitlines()) == 1
