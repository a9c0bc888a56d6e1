"""`ctxlayer chats` refuses what it cannot use: a malformed URL or gateway.json and a flag
that would do nothing are one line and exit 2."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest


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
