"""Files attached to messages are read inside the workspace only; anything else is error -32003."""

from __future__ import annotations

import os

import pytest

from ctxlayer.core.errors import ContextError
from ctxlayer.protocol import Message
from ctxlayer.workspace.attachments import attached_paths, read_attachments


def test_reads_text_describes_binary_and_says_missing(tmp_path):
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "app.py").write_text("print(1)\n")
    (tmp_path / "blob.bin").write_bytes(b"\0\1\2" * 10)
    got = read_attachments(tmp_path, [("f0", "src/app.py"), ("f1", "blob.bin"),
                                      ("f2", "gone.py"), ("f3", str(tmp_path / "src/app.py"))])
    assert got["src/app.py"] == "print(1)\n"
    assert got["blob.bin"].startswith("(binary file, 30 bytes")
    assert got["gone.py"] == "(not shown: no such file in the workspace)"
    assert got[str(tmp_path / "src/app.py")] == "print(1)\n"


@pytest.mark.parametrize("given", [".env", "id_ed25519", ".git/config", "notes.txt",
                                   "config/prod.pem"])
def test_a_file_that_may_hold_secrets_is_never_read(tmp_path, given):
    """`files: [".env"]` on a message sent the user's keys verbatim, as did a private key,
    `.git/config` (a remote's token) and a link to one: the workspace segment's rule ("never
    sent, whatever selects them") holds for attachments too, said in the file's place."""
    (tmp_path / ".git").mkdir()
    (tmp_path / "config").mkdir()
    for name in (".env", "id_ed25519", ".git/config", "config/prod.pem"):
        (tmp_path / name).write_text("SECRET=hunter2\n")
    (tmp_path / "notes.txt").symlink_to(tmp_path / ".env")  # a link a cloned repo ships
    got = read_attachments(tmp_path, [("messages[0].files[0]", given)])
    assert "hunter2" not in got[given]
    assert got[given].startswith("(not shown: ") and "may hold secrets" in got[given]


def test_cuts_huge_files(tmp_path):
    (tmp_path / "big.txt").write_text("x" * 5000)
    got = read_attachments(tmp_path, [("f", "big.txt")], max_bytes=1000)
    assert got["big.txt"].startswith("x" * 1000) and "cut at 1,000 bytes" in got["big.txt"]


@pytest.mark.parametrize("make", ["dotdot", "absolute", "symlink", "missing_outside"])
def test_paths_outside_the_workspace_are_refused_naming_the_field(tmp_path, make):
    ws = tmp_path / "ws"
    ws.mkdir()
    (tmp_path / "secret.txt").write_text("no")
    path = {"dotdot": "../secret.txt", "absolute": str(tmp_path / "secret.txt"),
            "symlink": "link.txt", "missing_outside": "../nothing-here.txt"}[make]
    if make == "symlink":
        os.symlink(tmp_path / "secret.txt", ws / "link.txt")
    with pytest.raises(ContextError) as err:
        read_attachments(ws, [("messages[3].files[1]", path)])
    assert err.value.kind == "outside_workspace" and err.value.field == "messages[3].files[1]"


def test_attached_paths_names_each_field():
    msgs = [Message(role="user", content="a"),
            Message(role="user", content="b", files=["x.py", "y.py"])]
    assert attached_paths(msgs) == [("messages[1].files[0]", "x.py"),
                                    ("messages[1].files[1]", "y.py")]
