"""The CLI end to end, as a user runs it: real processes, real tokenizers, real files.
Bad input must end with one line saying what to fix and exit code 2, never a traceback."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

CLI = [sys.executable, "-m", "ctxlayer"]


def run(*args: str, stdin: str | None = None, cwd=None) -> subprocess.CompletedProcess:
    return subprocess.run([*CLI, *args], input=stdin, capture_output=True, text=True,
                          timeout=120, cwd=cwd)


OPENAI_CHAT = [
    {"role": "system", "content": "You are helpful."},
    {"role": "user", "content": [{"type": "text", "text": "list files"}]},
    {"role": "assistant", "content": None, "tool_calls": [
        {"id": "c1", "type": "function", "function": {"name": "ls", "arguments": "{}"}}]},
    {"role": "tool", "tool_call_id": "c1", "content": "a.py\nb.py"},
    {"role": "assistant", "content": "Two files."},
]


def test_trim_accepts_openai_format_and_keeps_tool_pairs():
    p = run("trim", "--model", "gpt-4o", "--budget", "1000", stdin=json.dumps(OPENAI_CHAT))
    assert p.returncode == 0, p.stderr
    out = json.loads(p.stdout)
    roles = [m["role"] for m in out["messages"]]
    assert roles == ["system", "user", "assistant", "tool", "assistant"]
    # detected as openai (list content, tool_calls): it comes back as the very same messages
    assert out["messages"] == OPENAI_CHAT
    assert out["tokens"] <= 1000 and out["budget"] == 1000
    assert "5 messages in, 5 kept" in p.stderr and "openai" in p.stderr


def test_trim_drops_old_history_under_a_small_budget():
    chat = [{"role": "user", "content": f"message {k} " + "word " * 50} for k in range(20)]
    p = run("trim", "--budget", "300", "-q", stdin=json.dumps(chat))
    out = json.loads(p.stdout)
    assert out["tokens"] <= 300
    assert out["messages"][-1]["content"].startswith("message 19")
    assert {e["action"] for e in out["dropped"]} == {"dropped"}
    assert all(e["summary"].startswith("user") for e in out["dropped"])


@pytest.mark.parametrize("stdin,args,expect", [
    ("not json", ["trim"], "not valid JSON"),
    ("", ["trim"], "empty"),
    ('[{"role": "robot", "content": "x"}]', ["trim"], "messages[0].role"),
    ('[{"role": "user", "content": 5}]', ["trim"], "messages[0].content"),
    ('{"foo": 1}', ["trim"], "expected a JSON list of messages"),
    # msgspec says "Input data was truncated" of a text cut inside a surrogate pair
    ('[{"role":"user","content":"a\\ud800"}]', ["count"],
     "stdin is not valid JSON: a lone UTF-16 surrogate \\ud800 at byte 28: the text was cut"),
    # the OS refuses a NUL byte in a path with a ValueError: it was a traceback and exit 1
    ('[{"role":"user","content":"look","files":["in.txt\\u0000x"]}]', ["trim"],
     "holds a NUL byte, which no file name can hold (field messages[0].files[0])"),
    ("[]", ["trim", "--budget", "-5"], "positive"),
    ("[]", ["trim", "--budget", "lots"], "128k"),
    ('[{"role": "system", "content": "' + "x " * 500 + '", "pinned": true}]',
     ["trim", "--budget", "50"], "pinned system content alone"),
    ("", ["serve", "--log-file", "/nonexistent/folder/x.log"],
     "--log-file /nonexistent/folder/x.log: cannot be written"),
    ("", ["gateway", "--log-file", "/nonexistent/folder/x.log"],
     "--log-file /nonexistent/folder/x.log: cannot be written"),
])
def test_bad_input_is_one_line_and_exit_2(stdin, args, expect):
    p = run(*args, stdin=stdin)
    assert p.returncode == 2
    assert expect in p.stderr
    assert "Traceback" not in p.stderr
    assert p.stderr.count("\n") == 1, p.stderr  # argparse's printed its usage first


def test_count_text_and_chat():
    p = run("count", "--model", "gpt-4o", "--json", stdin="hello world")
    assert json.loads(p.stdout)["total"] == 2
    p = run("count", "--model", "claude-sonnet-4", stdin=json.dumps(OPENAI_CHAT))
    assert p.returncode == 0 and "5 messages" in p.stdout and "±10%" in p.stdout
    assert "cl100k_base x 1.2" in p.stdout  # how the estimate was made, in words
    one = json.dumps([{"role": "user", "content": "hi"}])
    assert ", 1 message, " in run("count", stdin=one).stdout  # not "1 messages"
    assert "trim: 1 message in, 1 kept" in run("trim", stdin=one).stderr


def test_schema_is_json_schema_for_every_method():
    p = run("schema")
    schema = json.loads(p.stdout)
    assert "ctx/trim" in schema["requests"]
    assert "Message" in schema["$defs"]
    assert "toolCallId" in schema["$defs"]["Message"]["properties"]


def test_prompt_for_a_git_workspace(tmp_path):
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    (tmp_path / "README.md").write_text("# Demo project\nIt does things.\n")
    (tmp_path / "AGENTS.md").write_text("Always run the tests.\n")
    p = run("prompt", str(tmp_path), "--table-only")
    assert p.returncode == 0, p.stderr
    for name in ("identity", "agentFiles", "files", "tree", "git"):
        assert name in p.stdout
    p = run("prompt", str(tmp_path), "--json")
    result = json.loads(p.stdout)
    assert result["cacheBoundary"] is None
    assert "Always run the tests." in result["messages"][-1]["content"]


def test_prompt_describes_the_tools_of_a_file_in_either_shape(tmp_path):
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    ours = tmp_path / "tools.json"
    ours.write_text(json.dumps([{"name": "shell", "instructions": "Run a command in bash."}]))
    openai = tmp_path / "openai-tools.json"
    openai.write_text(json.dumps([{"type": "function", "function": {
        "name": "read_file", "description": "Read a file of the workspace.",
        "parameters": {"type": "object", "properties": {}}}}]))
    for path, name, text in ((ours, "shell", "Run a command in bash."),
                             (openai, "read_file", "Read a file of the workspace.")):
        p = run("prompt", str(tmp_path), "--tools", str(path), "--tool-format", "xml", "--json")
        assert p.returncode == 0, p.stderr
        content = "\n".join(m["content"] for m in json.loads(p.stdout)["messages"])
        assert name in content and text in content
    bad = tmp_path / "bad.json"
    bad.write_text('[{"name": 3}]')
    p = run("prompt", str(tmp_path), "--tools", str(bad))
    assert p.returncode == 2 and "--tools" in p.stderr and "tool [0]" in p.stderr
    assert len(p.stderr.strip().splitlines()) == 1


def test_prompt_reads_the_users_settings_as_the_daemon_does(tmp_path):
    """`ctxlayer prompt` read only the workspace's ctxlayer.toml: the files the user selected
    in their own settings were missing from the prompt it showed, not from the daemon's."""
    ws, config = tmp_path / "ws", tmp_path / "config"
    ws.mkdir()
    (config / "ctxlayer").mkdir(parents=True)
    subprocess.run(["git", "init", "-q", str(ws)], check=True)
    (ws / "NOTES.md").write_text("The deploy script lives in ops/.\n")
    (config / "ctxlayer" / "ctxlayer.toml").write_text('[workspace]\nfiles = ["NOTES.md"]\n')
    env = {**os.environ, "XDG_CONFIG_HOME": str(config), "HOME": str(tmp_path)}
    p = subprocess.run([*CLI, "prompt", str(ws), "--json"], capture_output=True, text=True,
                       timeout=120, env=env)
    assert p.returncode == 0, p.stderr
    content = "\n".join(m["content"] for m in json.loads(p.stdout)["messages"])
    assert "The deploy script lives in ops/." in content


def _home_with_a_symlinked_work(tmp_path) -> Path:
    """~ (returned) whose ~/work is a symlink to another disk, holding AGENTS.md and a
    repository proj."""
    home, disk = tmp_path / "home", tmp_path / "otherdisk" / "work"
    (disk / "proj").mkdir(parents=True)
    home.mkdir()
    os.symlink(disk, home / "work")
    (home / "work" / "AGENTS.md").write_text("Deploy only on Fridays.\n")
    subprocess.run(["git", "init", "-q", str(disk / "proj")], check=True)
    return home


def test_prompt_reads_the_agent_files_on_the_way_through_a_symlinked_folder(tmp_path):
    """`ctxlayer prompt ~/work/proj`, ~/work a symlink to another disk: the folder was resolved
    to the other disk, not below home, and ~/work/AGENTS.md was missing from the prompt."""
    home = _home_with_a_symlinked_work(tmp_path)
    env = {**os.environ, "XDG_CONFIG_HOME": str(tmp_path / "config"), "HOME": str(home)}
    p = subprocess.run([*CLI, "prompt", "--json", "work/proj"], capture_output=True, text=True,
                       timeout=120, env=env, cwd=home)
    assert p.returncode == 0, p.stderr
    content = "\n".join(m["content"] for m in json.loads(p.stdout)["messages"])
    assert "## ~/work/AGENTS.md\n\nDeploy only on Fridays." in content


@pytest.mark.parametrize("command", ["prompt", "inspect"])
def test_run_inside_a_folder_reached_through_a_symlink_reads_the_way_there(tmp_path, command):
    """`ctxlayer prompt` with its default '.', run inside ~/work/proj (~/work a symlink to
    another disk): '.' was made absolute from getcwd(), the resolved path, and
    ~/work/AGENTS.md was missing, though `ctxlayer prompt "$PWD"` showed it. `ctxlayer
    inspect` named no folder but the resolved one: it missed it even named."""
    home = _home_with_a_symlinked_work(tmp_path)
    inside = home / "work" / "proj"
    # what a shell sets on `cd ~/work/proj`: its own path, the symlink kept
    env = {**os.environ, "XDG_CONFIG_HOME": str(tmp_path / "config"), "HOME": str(home),
           "PWD": str(inside)}
    p = subprocess.run([*CLI, command, "--json"], capture_output=True, text=True,
                       timeout=120, env=env, cwd=inside)
    assert p.returncode == 0, p.stderr
    if command == "inspect":
        assert "Deploy only on Fridays." in p.stdout
        return
    content = "\n".join(m["content"] for m in json.loads(p.stdout)["messages"])
    assert "## ~/work/AGENTS.md\n\nDeploy only on Fridays." in content


def test_trim_takes_the_trim_settings_the_daemon_takes(tmp_path):
    """`[trim]` of ctxlayer.toml (the user's, then the folder's) is what ctx/trim runs with;
    `ctxlayer trim` ran the built-in defaults whatever the user had set."""
    ws, config = tmp_path / "ws", tmp_path / "config"
    ws.mkdir()
    (config / "ctxlayer").mkdir(parents=True)
    (config / "ctxlayer" / "ctxlayer.toml").write_text('[trim]\nstrategy = "priority"\n')
    log = "\n".join(f"step {k}: ok" for k in range(400))
    chat = json.dumps([{"role": "user", "content": "run it"},
                       {"role": "assistant", "content": f"It printed:\n```\n{log}\n```\n"},
                       {"role": "user", "content": "?"}])
    env = {**os.environ, "XDG_CONFIG_HOME": str(config), "HOME": str(tmp_path)}

    def trimmed(*flags: str) -> subprocess.CompletedProcess:
        return subprocess.run([*CLI, "trim", "--budget", "800", "--workspace", str(ws), *flags],
                              input=chat, capture_output=True, text=True, timeout=120, env=env)

    p = trimmed()
    assert p.returncode == 0 and ", priority, ctxlayer)" in p.stderr, p.stderr
    assert ", pipeline, ctxlayer)" in trimmed("--strategy", "pipeline").stderr  # the flag wins
    # the folder's file over the user's
    (ws / "ctxlayer.toml").write_text('[trim]\nstrategy = "pipeline"\n')
    assert ", pipeline, ctxlayer)" in trimmed().stderr


def test_prompt_on_a_missing_folder_says_so(tmp_path):
    p = run("prompt", str(tmp_path / "nope"))
    assert p.returncode == 2 and "not a folder" in p.stderr


def test_demo_runs_offline():
    p = run("demo")
    assert p.returncode == 0, p.stderr
    assert "Trimming the bundled sample chat" in p.stdout and "kept" in p.stdout


def test_demo_on_a_missing_folder_prints_nothing_but_its_error(tmp_path):
    # its header went to stdout before the error
    p = run("demo", str(tmp_path / "nope"))
    assert p.returncode == 2 and p.stdout == "", p.stdout
    assert "not a folder" in p.stderr and p.stderr.count("\n") == 1, p.stderr


def test_a_value_too_deep_to_walk_is_one_line_and_exit_2(monkeypatch, capsys, tmp_path):
    """Read whole, then walked deeper in the stack (an audit line of a call whose arguments
    nest 985 levels), it was a traceback and exit 1."""
    from ctxlayer import cli
    from ctxlayer.commands import count

    def too_deep(args):
        raise RecursionError("maximum recursion depth exceeded")

    monkeypatch.setattr(count, "run", too_deep)
    assert cli.main(["count", str(tmp_path / "chat.json")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "nested deeper than ctxlayer follows" in err


@pytest.mark.parametrize("given,budget", [
    ("32000", 32000), ("32,000", 32000), ("1,000,000", 1_000_000), ("128_000", 128000),
    ("32k", 32000), ("32K", 32000), ("1.5k", 1500), ("1.5M", 1_500_000), ("1m", 1_000_000),
])
def test_a_budget_is_read_in_the_forms_people_type(given, budget):
    p = run("trim", "-q", "--budget", given, stdin='[{"role": "user", "content": "hi"}]')
    assert p.returncode == 0, p.stderr
    assert json.loads(p.stdout)["budget"] == budget


@pytest.mark.parametrize("given,said", [
    # "1,5k" (a European 1.5k) gave 15000, "32kk" 32000 and "2kkk" 2000: guessed, not read
    ("1,5k", "a comma only separates thousands, a fraction takes a point"),
    ("32kk", "got '32kk'"), ("2kkk", "got '2kkk'"), ("32,00", "got '32,00'"),
    ("1.5", "got '1.5'"), ("1.2345k", "'1.2345k' is not a whole number of tokens"),
    ("\u0661\u0662\u0663\u0664", "got '"),  # Arabic-Indic 1234: it was read as 1234
    # it was refused as "(field budget)", naming no flag
    ("10000000000000M", "at most 9,007,199,254,740,991 tokens"),
])
def test_a_budget_in_no_form_we_read_is_refused_naming_the_flag(given, said):
    p = run("trim", "-q", "--budget", given, stdin='[{"role": "user", "content": "hi"}]')
    assert p.returncode == 2 and p.stdout == ""
    assert "argument --budget: " in p.stderr and said in p.stderr, p.stderr
    assert "Traceback" not in p.stderr


def test_no_output_reserve_is_the_whole_window_as_in_the_daemon():
    """`--reserve-output 0` was refused ("expected a positive number") where the daemon takes
    `reserveOutput: 0`: nothing kept for the reply, the budget the window."""
    p = run("trim", "-q", "--reserve-output", "0", stdin='[{"role": "user", "content": "hi"}]')
    assert p.returncode == 0, p.stderr
    assert json.loads(p.stdout)["budget"] == 128_000  # gpt-4o's window, all of it


def test_a_flag_argparse_refuses_is_one_line_naming_it():
    """argparse printed its usage (five lines for trim) before its error; README promises one
    line naming what to fix."""
    for args, said in ((["trim", "--budget", "lots"], "ctxlayer trim: argument --budget: "),
                       (["trim", "--format", "xml"], "ctxlayer trim: argument --format: "),
                       (["serve", "--stdio", "--tcp"], "ctxlayer serve: argument --tcp: "),
                       (["nosuchcommand"], "ctxlayer: argument COMMAND: ")):
        p = run(*args, stdin="[]")
        assert p.returncode == 2 and p.stdout == ""
        assert p.stderr.startswith(said) and p.stderr.count("\n") == 1, p.stderr


def test_serve_refuses_the_tcp_flags_without_tcp():
    """`serve --port 17878` served stdio, the port ignored without a word."""
    for args, said in ((["--port", "17878"], "ctxlayer serve: --port: only with --tcp"),
                       (["--host", "127.0.0.1", "--token-file", "t"],
                        "ctxlayer serve: --host, --token-file: only with --tcp"),
                       (["--stdio", "--port", "0"], "ctxlayer serve: --port: only with --tcp")):
        p = run("serve", *args, stdin="")
        assert p.returncode == 2 and p.stdout == "", (args, p.returncode, p.stdout)
        assert p.stderr.startswith(said) and p.stderr.count("\n") == 1, p.stderr


def test_inspect_says_which_flags_belong_to_the_other_output(tmp_path):
    """`inspect --chat F` and `--budget` without --html printed the table as if they were not
    there."""
    for args, said in ((["--chat", "chat.json"], "--chat: for the budget inspector page; "
                        "add --html"),
                       (["--budget", "32k", "--out", "x.html"], "--budget, --out: for the "
                        "budget inspector page; add --html"),
                       (["--html", "--json"], "--json: not with --html, which writes the page")):
        p = run("inspect", str(tmp_path), *args)
        assert p.returncode == 2 and p.stdout == ""
        assert p.stderr == f"ctxlayer inspect: {said}\n"


def test_a_budget_the_tools_leave_too_little_of_says_the_budget_given(tmp_path):
    """--budget 420 with 414 tokens of tools was refused as "over the budget of 6": the user
    gave no 6. `inspect --html --chat` said it so too after `trim` no longer did ("over the
    budget of 1632" of a --budget 2000 whose tools took 368): both say it alike."""
    body = {"model": "claude-sonnet-4-5", "max_tokens": 1024, "system": "You are terse.",
            "messages": [{"role": "user", "content": "And Rome?"}],
            "tools": [{"name": "get_weather", "description": "Get the weather for a city",
                       "input_schema": {"type": "object", "properties": {
                           "city": {"type": "string", "description": "city name"}},
                           "required": ["city"]}}]}
    tools = json.loads(run("count", "--json", stdin=json.dumps(body)).stdout)["tools"]
    p = run("trim", "--budget", str(tools + 3), stdin=json.dumps(body))
    assert p.returncode == 2 and p.stdout == ""
    said = (f"over the 3 tokens that the budget of {tools + 3} leaves after the tool "
            f"definitions ({tools} tokens)\n")
    assert p.stderr.endswith(said), p.stderr
    assert p.stderr.count("\n") == 1
    (tmp_path / "chat.json").write_text(json.dumps(body))
    (tmp_path / "ws").mkdir()
    page = run("inspect", str(tmp_path / "ws"), "--html", "--chat", str(tmp_path / "chat.json"),
               "--budget", str(tools + 3))
    assert page.returncode == 2 and page.stdout == ""
    assert page.stderr.startswith("ctxlayer inspect: ") and page.stderr.endswith(said), \
        page.stderr
    assert page.stderr.count("\n") == 1
