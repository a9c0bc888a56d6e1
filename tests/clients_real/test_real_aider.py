"""aider (aider-chat from PyPI, pinned in versions.env, in its own venv: it pins openai==2.20.0,
the project pins 3.63.0) through the gateway's Chat Completions. aider edits with
SEARCH/REPLACE blocks in its answer text, not tool calls: the stand-in answers with one, and
aider must apply it to the file in the temporary git repository; in its chat loop, with files
added and dropped, it is one chat, and the commit message it asks for each edit is not one."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest
from real_clients import (
    README,
    assert_all_valid,
    client,
    client_env,
    conversations,
    model_requests,
    open_stack,
    run,
)

pytestmark = [pytest.mark.client, pytest.mark.e2e]

EDIT = """I will say that it multiplies too.

README.md
```
<<<<<<< SEARCH
It adds numbers: `add(2, 3)` is 5.
=======
It adds and multiplies numbers: `add(2, 3)` is 5.
>>>>>>> REPLACE
```
"""


#: aider's flags for a run with no question of its own, nothing asked of the network
QUIET = ["--model", "openai/gpt-4o", "--yes-always", "--no-check-update",
         "--no-show-release-notes", "--analytics-disable", "--no-show-model-warnings",
         "--no-pretty", "--no-fancy-input"]


def aider(stack, home: Path) -> tuple[Path, dict[str, str]]:
    """aider's executable and its environment on the gateway."""
    exe = client("aider", "AIDER", "bin/aider")
    env = client_env(home, OPENAI_API_KEY="sk-test-not-a-key", OPENAI_API_BASE=stack.openai_url)
    # aider fetches litellm's model table once a day unless its cache is fresh: seed the cache
    # from the copy litellm ships, so it never tries the network
    shipped = next(exe.parent.parent.glob(
        "lib/python*/site-packages/litellm/model_prices_and_context_window_backup.json"))
    (home / ".aider" / "caches").mkdir(parents=True)
    shutil.copy(shipped, home / ".aider" / "caches" / "model_prices_and_context_window.json")
    return exe, env


def test_aider_applies_the_stand_ins_edit_through_the_gateway(stack, repo, tmp_path):
    exe, env = aider(stack, tmp_path / "home")
    stack.standin.reply(EDIT)
    done = run([exe, *QUIET, "--message", "Say it multiplies too.", "--no-git", "README.md"],
               env, repo)
    assert "Applied edit to README.md" in done.stdout, done.stdout
    assert (repo / "README.md").read_text() == README.replace("It adds", "It adds and multiplies")
    requests = model_requests(stack)
    assert_all_valid(requests)
    assert {r["path"] for r in requests} == {"/v1/chat/completions"}
    assert all(r["stream"] for r in requests)
    assert README.strip().splitlines()[-1] in str(requests[0]["body"]["messages"])
    (chat,) = conversations(stack)
    assert chat["model"] == "gpt-4o" and chat["tokens"] > 0
    # aider streams without asking for the usage: the gateway asked it upstream and read it
    assert requests[0]["body"]["stream_options"] == {"include_usage": True}
    assert chat.get("cachedTokens") is not None, chat


def test_aiders_commit_message_is_not_a_chat_beside_its_chat(stack, repo, tmp_path):
    """In a git repository aider commits each edit it applies, with a message its weak model
    writes from the chat's turns (a system prompt of its own, no tools): asked beside the
    chat, it is neither listed as a chat nor the live one the status bars follow (before:
    one more chat per edit, and the status bar on its 0.3% until the next question)."""
    exe, env = aider(stack, tmp_path / "home")
    stack.standin.reply(EDIT)
    done = subprocess.run([str(exe), *QUIET, "README.md"], env=env, cwd=repo,
                          input="Say it multiplies too.\n/exit\n", capture_output=True,
                          text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    assert "Commit " in done.stdout, done.stdout[-2000:]
    requests = model_requests(stack)
    assert_all_valid(requests)
    assert [r["body"]["model"] for r in requests] == ["gpt-4o", "gpt-4o-mini"]
    assert "Say it multiplies too." in str(requests[1]["body"]["messages"])
    (chat,) = conversations(stack)
    assert chat["model"] == "gpt-4o"
    live = stack.state.events.live_chat(stack.gateway.caller.workspace)
    assert live is not None and live[0] == chat["conversationId"]


def test_aiders_chat_is_one_chat_as_files_come_and_go(stack, repo, tmp_path):
    """aider in its chat loop (questions on its standard input), in a git repository: it opens
    each request with its repo map and the chat's files, written anew as `/add` and `/drop`
    change them, then the chat's turns. Each request carries the last one's question,
    answered: one chat listed, with the last request's figures (3 before, one per turn)."""
    for k in range(5):
        (repo / f"mod{k}.py").write_text(f"def f{k}(x):\n    return x + {k}\n")
    git = ["git", "-c", "user.name=t", "-c", "user.email=t@example.invalid"]
    subprocess.run([*git, "add", "."], cwd=repo, check=True)
    subprocess.run([*git, "commit", "-q", "-m", "modules"], cwd=repo, check=True)
    exe, env = aider(stack, tmp_path / "home")
    asked = "What does f1 do?\n/add mod2.py\nAnd f2?\n/drop README.md\nAnd f3?\n/exit\n"
    done = subprocess.run([str(exe), *QUIET, "README.md"], env=env, cwd=repo, input=asked,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    requests = model_requests(stack)
    assert_all_valid(requests)
    assert len(requests) == 3
    openings = {r["body"]["messages"][3]["content"] for r in requests}
    assert len(openings) >= 2, openings  # the chat's files, written anew
    (chat,) = conversations(stack)
    last = requests[-1]["prompt_tokens"]
    assert abs(chat["tokens"] - last) < 0.15 * last, (chat, last)


def edits_summarized(stack) -> None:
    """The stand-in's answers to aider's two questions (g1 in new1.py, g2 in new2.py), each:
    the edit after a long explanation, its commit message, the summary of the turns so far."""
    prose = " ".join(f"Step {i}: the helper keeps its arguments and returns their sum."
                     for i in range(25))
    for k in range(1, 3):
        stack.standin.reply(f"{prose}\n\nnew{k}.py\n```\n<<<<<<< SEARCH\n=======\n"
                            f"def g{k}(x):\n    return x * {k}\n>>>>>>> REPLACE\n```\n")
        stack.standin.reply(f"Add g{k}")
        stack.standin.reply(f"The user asked for g1 to g{k}, each added in its own file.")


def test_aiders_summary_of_its_history_leaves_one_chat(stack, repo, tmp_path):
    """Once its chat's turns pass `--max-chat-history-tokens`, aider has its weak model
    summarize them after each edit ("*Briefly* summarize this partial conversation", the turns
    quoted as `# USER` / `# ASSISTANT`), and when it restores a chat's history, it sends the
    summary in place of the turns (a summary after an edit it throws away): the summaries are
    not chats, and the restored chat is still the one chat, the live one."""
    exe, env = aider(stack, tmp_path / "home")
    edits_summarized(stack)
    stack.standin.reply("The user asked for g1 and g2, each added in its own file.")
    flags = [*QUIET, "--max-chat-history-tokens", "100", "README.md"]
    for asked in ("Add g1 in new1.py please.\nNow g2 in new2.py.\n/exit\n",
                  "Which files did you add?\n/exit\n"):
        done = subprocess.run([str(exe), *flags, "--restore-chat-history"], env=env, cwd=repo,
                              input=asked, capture_output=True, text=True, timeout=300)
        assert done.returncode == 0, done.stderr[-2000:]
    requests = model_requests(stack)
    assert_all_valid(requests)
    summaries = [r for r in requests if "summarize" in r["body"]["messages"][0]["content"]]
    assert len(summaries) == 3, [r["body"]["messages"][0]["content"][:40] for r in requests]
    # the second run's question goes with the summary in place of the first run's turns
    last = str(requests[-1]["body"]["messages"])
    assert "Which files did you add?" in last and "I spoke to you previously" in last
    assert "Add g1 in new1.py" not in last
    (chat,) = conversations(stack)  # before: the first run's chat and the second's
    assert chat["model"] == "gpt-4o"
    live = stack.state.events.live_chat(stack.gateway.caller.workspace)
    assert live is not None and live[0] == chat["conversationId"]


def test_aiders_restored_history_after_a_gateway_restart_leaves_one_chat(repo, tmp_path):
    """As `test_aiders_summary_of_its_history_leaves_one_chat`, the gateway restarted on the
    same state folder between aider's two runs. Before, the summary aider asks as it starts
    found no chat in memory to quote and was listed and live (983 tokens on gpt-4o-mini), the
    restored chat's request, carrying its answer, was set aside as its helper, and the first
    run's chat stayed listed with its old figures. Now one chat, the first run's, live, with
    the restored request's figures."""
    flags = [*QUIET, "--max-chat-history-tokens", "100", "README.md", "--restore-chat-history"]
    summary = "The user asked for g1 and g2, each added in its own file."
    with open_stack(tmp_path / "stack") as stack:
        exe, env = aider(stack, tmp_path / "home")
        edits_summarized(stack)
        done = subprocess.run([str(exe), *flags], env=env, cwd=repo, capture_output=True,
                              input="Add g1 in new1.py please.\nNow g2 in new2.py.\n/exit\n",
                              text=True, timeout=300)
        assert done.returncode == 0, done.stderr[-2000:]
        (chat,) = conversations(stack)
    with open_stack(tmp_path / "stack") as stack:
        stack.standin.reply(summary)
        env["OPENAI_API_BASE"] = stack.openai_url
        done = subprocess.run([str(exe), *flags], env=env, cwd=repo, text=True, timeout=300,
                              input="Which files did you add?\n/exit\n", capture_output=True)
        assert done.returncode == 0, done.stderr[-2000:]
        requests = model_requests(stack)
        assert_all_valid(requests)
        assert [r["body"]["model"] for r in requests] == ["gpt-4o-mini", "gpt-4o"]
        assert summary in str(requests[-1]["body"]["messages"])
        (listed,) = conversations(stack)
        assert listed["conversationId"] == chat["conversationId"], (listed, chat)
        assert listed["tokens"] == requests[-1]["prompt_tokens"] != chat["tokens"]
        live = stack.state.events.live_chat(stack.gateway.caller.workspace)
        assert live is not None and live[0] == chat["conversationId"]


def test_aiders_architect_and_its_editor_are_one_chat(stack, repo, tmp_path):
    """`--architect`: the architect (the main model) answers each question with a plan, and
    aider asks its editor model that plan, under the editor's system prompt, with the files
    but not the architect's chat; then the commit message. One chat is listed, the
    architect's, and it is the live one (before: one chat more per editor request, the live
    one the status bars showed until the next question)."""
    exe, env = aider(stack, tmp_path / "home")
    plan = "Change README.md to say that it multiplies too; nothing else in it changes."
    subtracts = EDIT.replace("It adds numbers", "It adds and multiplies numbers").replace(
        "It adds and multiplies numbers: `add(2, 3)` is 5.\n>>>",
        "It adds, subtracts and multiplies numbers: `add(2, 3)` is 5.\n>>>")
    for answer in (plan, EDIT, "Say it multiplies", plan.replace("multiplies", "subtracts"),
                   subtracts, "Say it subtracts"):  # architect, editor, commit message
        stack.standin.reply(answer)
    done = subprocess.run([str(exe), *QUIET, "--architect", "README.md"], env=env, cwd=repo,
                          input="Say it multiplies too.\nAnd say it subtracts.\n/exit\n",
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.count("Applied edit to README.md") == 2, done.stdout[-2000:]
    requests = model_requests(stack)
    assert_all_valid(requests)
    editors = [r for r in requests if "who edits source code" in
               r["body"]["messages"][0]["content"]]
    assert len(editors) == 2 and plan in str(editors[0]["body"]["messages"])
    (chat,) = conversations(stack)
    assert chat["model"] == "gpt-4o"
    live = stack.state.events.live_chat(stack.gateway.caller.workspace)
    assert live is not None and live[0] == chat["conversationId"]


def test_aiders_files_stay_in_every_request_and_go_as_edited(tmp_path, repo):
    """aider with `--read CONVENTIONS.md` and a file added, in a small window, asked question
    after question (each pasting a log), the file edited outside it half-way: every request
    carries the conventions and the file, from the edit on its new contents only. Before, from
    the first compaction (the fourth request) neither went, the summary naming only their
    paths, nor the new contents aider sent."""
    (repo / "CONVENTIONS.md").write_text("# Conventions\n- CONV-ZEBRA: public functions need "
                                         "type hints.\n")
    (repo / "adder.py").write_text("def add(a, b):\n    return a + b\n")
    git = ["git", "-c", "user.name=t", "-c", "user.email=t@example.invalid"]
    subprocess.run([*git, "add", "."], cwd=repo, check=True)
    subprocess.run([*git, "commit", "-q", "-m", "files"], cwd=repo, check=True)
    with open_stack(tmp_path / "stack", {"gpt-4o": 16000}) as stack:
        exe, env = aider(stack, tmp_path / "home")
        p = subprocess.Popen([str(exe), *QUIET, "--no-auto-commits", "--read",
                              "CONVENTIONS.md", "adder.py"], env=env, cwd=repo,
                             stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True)
        assert p.stdin is not None
        for k in range(7):
            if k == 5:
                (repo / "adder.py").write_text("def add(a, b):\n    return a - b  # EDITED\n")
            log = " ".join(f"[q{k} row {i}: value {i * 13}]" for i in range(150))
            p.stdin.write(f"QUESTION_{k} why does this fail? {log}\n")
            p.stdin.flush()
            stack.wait_for(lambda rs, k=k: any(f"QUESTION_{k} " in str(r.get("body"))
                                               for r in rs), f"question {k}", timeout=120)
        _, err = p.communicate("/exit\n", timeout=120)
        assert p.returncode == 0, err[-2000:]
        requests = model_requests(stack)
    assert_all_valid(requests)
    assert len(requests) == 7
    assert any("[Summary of" in str(r["body"]["messages"]) for r in requests[3:])
    for k, r in enumerate(requests):
        sent = str(r["body"]["messages"])
        assert "CONV-ZEBRA" in sent, k
        assert ("return a - b  # EDITED" in sent) == (k >= 5), k
        assert ("return a + b" in sent) == (k < 5), k
