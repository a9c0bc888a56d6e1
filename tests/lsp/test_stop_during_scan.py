"""A daemon stopped by SIGTERM or SIGINT while its first workspace scan runs ends quietly: a
stop is no error. Before, about one run in two logged an `asyncio.CancelledError` traceback
from the `initialized` handler (lifecycle.with_progress awaiting the cancelled scan).

The scan is made slow on purpose: `git` on the daemon's PATH is a wrapper that sleeps before
running the real one, so the stop always lands while the handler awaits the scan."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import time
from pathlib import Path

import pytest
from conftest import SERVE, hermetic_env, make_repo

#: how long each git command of the scan takes: far longer than the wait before the stop
GIT_DELAY_S = 3


def _frame(message: dict) -> bytes:
    body = json.dumps(message).encode()
    return b"Content-Length: %d\r\n\r\n%s" % (len(body), body)


def _read_until_answered(stdout, request_id: int) -> dict:
    """Messages from the daemon's stdout until the answer to `request_id`, which is returned."""
    while True:
        length = 0
        while (line := stdout.readline()) not in (b"\r\n", b""):
            if line.lower().startswith(b"content-length:"):
                length = int(line.split(b":")[1])
        assert length, "the daemon closed its output"
        message = json.loads(stdout.read(length))
        if message.get("id") == request_id and "method" not in message:
            return message


def _slow_git(bin_dir: Path) -> None:
    real = shutil.which("git")
    assert real, "git is needed"
    bin_dir.mkdir()
    wrapper = bin_dir / "git"
    wrapper.write_text(f'#!/bin/sh\nsleep {GIT_DELAY_S}\nexec "{real}" "$@"\n')
    wrapper.chmod(0o755)


@pytest.mark.parametrize("stop", [signal.SIGTERM, signal.SIGINT], ids=["sigterm", "sigint"])
def test_a_stop_during_the_first_scan_logs_no_traceback(tmp_path: Path, stop: signal.Signals):
    root = make_repo(tmp_path / "ws")
    _slow_git(tmp_path / "bin")
    env = hermetic_env(tmp_path / "world")
    env["PATH"] = f"{tmp_path / 'bin'}{os.pathsep}{env['PATH']}"
    stderr = tmp_path / "stderr.txt"
    with stderr.open("wb") as err:
        proc = subprocess.Popen(SERVE, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                stderr=err, env=env)
    assert proc.stdin is not None and proc.stdout is not None
    proc.stdin.write(_frame({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "processId": None, "rootUri": root.as_uri(),
        "capabilities": {"window": {"workDoneProgress": True}}}}))
    proc.stdin.flush()
    # answered: the daemon serves, its signal handlers are in place (a stop before them is
    # Python's own, not the daemon's)
    assert "result" in _read_until_answered(proc.stdout, 1)
    proc.stdin.write(_frame({"jsonrpc": "2.0", "method": "initialized", "params": {}}))
    proc.stdin.flush()
    time.sleep(1.0)  # the scan runs: its first git command sleeps GIT_DELAY_S
    assert proc.poll() is None, stderr.read_text()
    proc.send_signal(stop)
    code = proc.wait(30)
    log = stderr.read_text()
    assert code == 0, log
    assert "Traceback" not in log, log
    assert "CancelledError" not in log, log
