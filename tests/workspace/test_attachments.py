"""Files attached to messages are read inside the workspace only; anything else is error -32003."""

from __future__ import annotations

import os

import pytest

from ctxlayer.core.errors import ContextError
from ctxlayer.protocol import Message
from ctxlayer.workspace.attachments import attached_paths, read_attachments


def test_reads_text_describes_binary_and_skips_missing(tmp_path):
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "app.py").write_text("print(1)\n")
    (tmp_path / "blob.bin").write_bytes(b"\0\1\2" * 10)
    got = read_attachments(tmp_path, [("f0", "src/app.py"), ("f1", "blob.bin"),
                                      ("f2", "gone.py"), ("f3", str(tmp_path / "src/app.py"))])
    assert got["src/app.py"] == "print(1)\n"
    assert got["blob.bin"].startswith("(binary file, 30 bytes")
    assert "gone.py" not in got
    assert got[str(tmp_path / "src/app.py")] == "print(1)\n"


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
