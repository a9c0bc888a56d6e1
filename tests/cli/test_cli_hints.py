"""What the CLI tells the user to do next, and the values its help lists, must be true: the
file a hint names exists and the command it suggests runs; help and errors list the same."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

CLI = [sys.executable, "-m", "ctxlayer"]
ROOT = Path(__file__).resolve().parents[2]


def run(*args: str, cwd: Path = ROOT, stdin: str | None = None) -> subprocess.CompletedProcess:
    env = {**os.environ, "COLUMNS": "1000"}  # argparse wraps help at the terminal's width
    return subprocess.run([*CLI, *args], capture_output=True, text=True, timeout=120, cwd=cwd,
                          env=env, input=stdin)


def test_the_demo_hint_names_a_file_that_exists_and_its_command_runs(tmp_path):
    for cwd in (ROOT, tmp_path):  # `make demo` in the checkout, and anywhere else
        p = run("demo", str(ROOT), cwd=cwd)
        assert p.returncode == 0, p.stderr
        hint = re.search(r"Next: `ctxlayer trim (.*?) < (.*?)`", p.stdout)
        assert hint, p.stdout[-300:]
        sample = cwd / hint.group(2)
        assert sample.is_file(), f"the hint names {hint.group(2)}, absent from {cwd}"
        again = run("trim", *hint.group(1).split(), stdin=sample.read_text(), cwd=cwd)
        assert again.returncode == 0, again.stderr
        assert json.loads(again.stdout)["tokens"] <= 4000


def test_prompt_include_help_and_error_list_the_same_names(tmp_path):
    help_text = run("prompt", "--help").stdout
    listed = re.search(r"comma-separated (\S+)", help_text).group(1).split(",")
    p = run("prompt", str(tmp_path), "--include", "files,bogus")
    assert p.returncode == 2
    said = re.search(r"'bogus' is not one of (.*)$", p.stderr.strip()).group(1).split(", ")
    assert listed == said and len(listed) == len(set(listed)) >= 5
    # each name the help lists is taken
    p = run("prompt", str(tmp_path), "--include", ",".join(listed), "--table-only")
    assert p.returncode == 0, p.stderr


def test_the_top_help_says_what_ctxlayer_does_and_lists_every_command():
    """`ctxlayer -h` once printed the module's note to its developers ("argument parsing and
    error reporting only") as what the program is."""
    from ctxlayer.cli import COMMANDS

    p = run("-h")
    assert p.returncode == 0, p.stderr
    intro = p.stdout.split("positional arguments")[0]
    assert "token" in intro and "gateway" in intro and "argument parsing" not in intro
    for name, (_, help_text) in COMMANDS.items():
        assert re.search(rf"^\s+{name}\s+{re.escape(help_text)}$", p.stdout, re.M), name


def test_an_unknown_option_points_at_the_help_of_the_command_it_was_given_to():
    # argparse left it to the top parser, which said `ctxlayer -h`: the command list, not
    # the options that command takes
    for command in ("chats", "trim", "count"):
        p = run(command, "--bogus", stdin="")
        assert p.returncode == 2
        assert p.stderr.strip() == (f"ctxlayer {command}: unrecognized arguments: --bogus "
                                    f"(`ctxlayer {command} -h` for the options)"), p.stderr
        assert "--" in run(command, "-h").stdout  # the help it names lists options
    p = run("--bogus")
    assert p.returncode == 2 and "(`ctxlayer -h` for the options)" in p.stderr
