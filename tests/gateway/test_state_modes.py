"""The state folder is the user's alone whatever the umask: `ctxlayer gateway` run as a user
runs it (a subprocess with that umask), one chat through it, then every mode looked at while
it runs (the database's -wal and -shm exist only while it is open)."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
from pathlib import Path

import openai
import pytest
from providers.standin import StandinThread

from ctxlayer.statefiles import make_private_dir, make_private_file, read_or_create_token
from ctxlayer.store import DB_NAME


def mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


@pytest.mark.parametrize("umask", [0o022, 0o000])
def test_the_state_folder_is_0700_and_its_files_0600(tmp_path: Path, umask: int):
    state = tmp_path / "nested" / "state"  # made by the gateway itself
    root = tmp_path / "project"
    root.mkdir()
    (tmp_path / "config").mkdir()
    env = {**os.environ, "HOME": str(tmp_path), "XDG_CONFIG_HOME": str(tmp_path / "config"),
           "CTXLAYER_STATE_DIR": str(state), "PYTHONUNBUFFERED": "1"}
    with StandinThread() as standin:
        proc = subprocess.Popen([sys.executable, "-m", "ctxlayer", "gateway", "--port", "0",
                                 "--upstream-openai", standin.openai], cwd=root, env=env,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                umask=umask)
        try:
            line = json.loads(proc.stdout.readline())
            client = openai.OpenAI(base_url=line["openai"], api_key="sk-test", max_retries=0)
            client.chat.completions.create(model="gpt-4o",
                                           messages=[{"role": "user", "content": "hi"}])
            chats = subprocess.run([sys.executable, "-m", "ctxlayer", "chats", "--json"],
                                   env=env, capture_output=True, text=True, timeout=60)
            assert chats.returncode == 0, chats.stderr
            files = {p.name: mode(p) for p in state.iterdir() if p.is_file()}
        finally:
            proc.terminate()
            _, stderr = proc.communicate(timeout=30)
    assert proc.returncode == 0, stderr
    assert mode(state) == 0o700
    expected = {"gateway.json", "token", DB_NAME, DB_NAME + "-wal", DB_NAME + "-shm"}
    assert expected <= set(files), files
    assert {name: m for name, m in files.items() if m != 0o600} == {}


def test_an_older_open_state_folder_and_database_are_tightened(tmp_path: Path):
    state = tmp_path / "state"
    state.mkdir(mode=0o755)
    os.chmod(state, 0o755)
    db = state / DB_NAME
    db.write_bytes(b"")
    os.chmod(db, 0o644)
    make_private_dir(state)
    make_private_file(db)
    assert (mode(state), mode(db)) == (0o700, 0o600)


def test_an_unsafe_token_file_is_refused(tmp_path: Path):
    path = tmp_path / "token"
    read_or_create_token(path)
    os.chmod(path, 0o644)
    with pytest.raises(OSError, match="chmod 600"):
        read_or_create_token(path)
