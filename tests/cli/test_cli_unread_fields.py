"""The CLI refuses what it would otherwise read past in silence (real processes): a body's
`model` that is no model name, an output room that is no positive whole number, a workspace
folder that does not exist, `--text` beside `--format`; and says deep JSON is deep, not
invalid."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

CLI = [sys.executable, "-m", "ctxlayer"]
HI = [{"role": "user", "content": "hi"}]


def run(*args: str, stdin: str) -> subprocess.CompletedProcess:
    return subprocess.run([*CLI, *args], input=stdin, capture_output=True, text=True,
                          timeout=120)


@pytest.mark.parametrize(("field", "value", "said"), [
    ("model", 5, "`model` must be a non-empty string, got 5"),
    ("model", " ", "`model` must be a non-empty string"),
    ("max_tokens", "100", '`max_tokens` must be a positive whole number, got "100"'),
    ("max_tokens", -5, "`max_tokens` must be a positive whole number, got -5"),
    ("max_completion_tokens", 0, "`max_completion_tokens` must be a positive whole number"),
    ("max_tokens", 64000.0, "`max_tokens` must be a positive whole number, got 64000.0"),
])
def test_trim_refuses_a_body_field_it_cannot_read(field, value, said):
    # each was read past: fitted for gpt-4o's usual budget, exit 0, and written back
    # "ready to send" with the value the provider refuses
    body = {"model": "gpt-4o", "messages": HI, field: value}
    p = run("trim", "-q", stdin=json.dumps(body))
    assert p.returncode == 2, (p.returncode, p.stdout, p.stderr)
    assert said in p.stderr and p.stderr.count("\n") == 1 and not p.stdout, p.stderr


def test_trim_reads_an_output_room_given_as_null_as_none_given():
    body = {"model": "gpt-4o", "messages": HI, "max_tokens": None}
    p = run("trim", "-q", stdin=json.dumps(body))
    assert p.returncode == 0, p.stderr
    assert json.loads(p.stdout)["max_tokens"] is None


def test_trim_refuses_a_workspace_folder_that_does_not_exist(tmp_path):
    # the files a message attaches were each said "not shown: no such file", exit 0
    chat = [{"role": "user", "content": "see", "files": ["a.py"]}]
    p = run("trim", "-q", "--workspace", str(tmp_path / "nowhere"), stdin=json.dumps(chat))
    assert p.returncode == 2, (p.stdout, p.stderr)
    assert "--workspace" in p.stderr and "not a folder" in p.stderr


def test_count_refuses_text_beside_format():
    p = run("count", "--text", "--format", "openai", stdin=json.dumps(HI))
    assert p.returncode == 2 and "pass one of them" in p.stderr, p.stderr


def test_count_says_deep_json_is_deep_not_invalid():
    p = run("count", stdin="[" * 100_000 + "]" * 100_000)
    assert p.returncode == 0, p.stderr
    assert "nested too deeply" in p.stderr and "not valid JSON" not in p.stderr, p.stderr


def test_a_format_is_named_with_its_article():
    p = run("trim", "--format", "openai", stdin=json.dumps({"model": "gpt-4o", "input": "hi"}))
    assert p.returncode == 2 and "not an openai request" in p.stderr, p.stderr


def test_a_model_named_on_the_command_line_reads_the_bodys_past():
    # the review probe: `--model` no longer rescued a body whose model was bad
    body = {"model": 5, "messages": HI, "max_tokens": 1024}
    p = run("count", "--model", "gpt-4o", stdin=json.dumps(body))
    assert p.returncode == 0, p.stderr
    p = run("trim", "-q", "--model", "gpt-4o", stdin=json.dumps(body))
    assert p.returncode == 0, p.stderr


@pytest.mark.parametrize("command", ["count", "trim"])
@pytest.mark.parametrize("fmt", ["ctxlayer", "openai", "anthropic"])
def test_tools_that_are_no_list_are_refused(command, fmt):
    """`"tools": "nope"` was read past: counted as no tools (ctxlayer, openai) or as 346
    tokens of tool definitions (anthropic), exit 0."""
    body = {"model": "gpt-4o", "messages": HI, "tools": "nope"}
    p = run(command, "--format", fmt, stdin=json.dumps(body))
    assert p.returncode == 2, (p.returncode, p.stdout, p.stderr)
    assert "tools: expected a list of tool definitions, got str" in p.stderr
    assert p.stderr.count("\n") == 1 and not p.stdout, p.stderr
