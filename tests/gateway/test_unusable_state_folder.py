"""`ctxlayer gateway` on a state folder it cannot use says so in one line naming the state
folder and CTXLAYER_STATE_DIR, as `ctxlayer serve` and the daemon do. Before: "cannot start
the gateway: [Errno 17] File exists: '.../state'" for a file where the folder goes, and
"[Errno 30] Read-only file system: '.../.token-xxxx'" for a read-only one (the token's
temporary file), naming neither. The command as a user runs it, in a process of its own."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from test_command import hermetic

#: the command, the token's write failing as on a read-only disk (a test run as root may write
#: any folder, so the disk's refusal is put in its place)
READ_ONLY = """
import errno, sys
import ctxlayer.gateway.server as server
def refused(path):
    raise OSError(errno.EROFS, "Read-only file system", str(path.parent / ".token-x"))
server.read_or_create_token = refused
from ctxlayer.cli import main
sys.exit(main(sys.argv[1:]))
"""


def said(tmp_path: Path, env: dict[str, str], *command: str) -> str:
    p = subprocess.run([sys.executable, *command, "gateway", "--port", "0"], cwd=tmp_path,
                       env=env, capture_output=True, text=True, timeout=60)
    assert p.returncode == 2 and p.stdout == "", (p.returncode, p.stdout, p.stderr)
    assert len(p.stderr.strip().splitlines()) == 1, p.stderr
    return p.stderr


def test_a_file_where_the_state_folder_goes_is_named_as_the_state_folder(tmp_path: Path):
    env = hermetic(tmp_path)
    state = tmp_path / "state"
    state.rmdir()
    state.write_text("not a folder")
    err = said(tmp_path, env, "-m", "ctxlayer")
    assert f"the state folder {state} cannot be used (a file is there)" in err, err
    assert "CTXLAYER_STATE_DIR" in err and "Errno" not in err, err


def test_a_state_folder_the_token_cannot_be_written_in_is_named(tmp_path: Path):
    env = hermetic(tmp_path)
    err = said(tmp_path, env, "-c", READ_ONLY)
    assert f"the state folder {tmp_path / 'state'} cannot be used (its token file cannot be " \
           "written: Read-only file system)" in err, err
    assert "CTXLAYER_STATE_DIR" in err and "Errno" not in err, err
