"""Three gateways on one state folder (three editor windows with `[gateway] enabled`, or
`ctxlayer gateway` run thrice): each stop hands `gateway.json` back to the newest earlier one
still running, whatever the order they stop in. Before, an announcement remembered only the
one it replaced: start A, B, C, stop B then C, and `ctxlayer chats` said "no gateway is running
(gateway.json is absent)" while A served. The command as a user runs it."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from test_command import gateway_process, hermetic


def announced_port(path: Path) -> int | None:
    return json.loads(path.read_text())["port"] if path.exists() else None


def stop(proc: subprocess.Popen) -> None:
    proc.terminate()
    proc.communicate(timeout=30)
    assert proc.returncode == 0


@pytest.mark.parametrize("order", ["BCA", "CBA"])
def test_each_stop_hands_the_announcement_to_a_gateway_still_running(tmp_path: Path, order):
    env = hermetic(tmp_path)
    root = tmp_path / "project"
    root.mkdir()
    announced = tmp_path / "state" / "gateway.json"
    procs: dict[str, subprocess.Popen] = {}
    ports: dict[str, int] = {}
    try:
        for name in "ABC":
            procs[name] = gateway_process(root, env, "--port", "0")
            ports[name] = json.loads(procs[name].stdout.readline())["port"]
        assert announced_port(announced) == ports["C"]
        for k, name in enumerate(order):
            stop(procs.pop(name))
            running = [n for n in "CBA" if n in procs]  # the newest first
            assert announced_port(announced) == (ports[running[0]] if running else None), \
                (order[:k + 1], running)
            if running:
                chats = subprocess.run([sys.executable, "-m", "ctxlayer", "chats", "--json"],
                                       env=env, capture_output=True, text=True, timeout=60)
                assert chats.returncode == 0, chats.stderr
    finally:
        for proc in procs.values():
            proc.terminate()
            proc.communicate(timeout=30)


def test_chats_finds_an_earlier_gateway_when_the_announced_one_was_killed(tmp_path: Path):
    # B killed -9 cannot hand gateway.json back: `ctxlayer chats` said B "does not answer
    # (Connection refused); is it running?" while A, listed under `replaced`, served
    env = hermetic(tmp_path)
    root = tmp_path / "project"
    root.mkdir()
    a = gateway_process(root, env, "--port", "0")
    port_a = json.loads(a.stdout.readline())["port"]  # announced before B starts
    b = gateway_process(root, env, "--port", "0")
    try:
        json.loads(b.stdout.readline())
        b.kill()
        b.communicate(timeout=30)
        chats = subprocess.run([sys.executable, "-m", "ctxlayer", "chats", "--json"],
                               env=env, capture_output=True, text=True, timeout=60)
        assert chats.returncode == 0, chats.stderr
        assert announced_port(tmp_path / "state" / "gateway.json") != port_a  # B's, stale
    finally:
        for proc in (a, b):
            if proc.poll() is None:
                proc.terminate()
                proc.communicate(timeout=30)
