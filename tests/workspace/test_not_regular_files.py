"""Files the workspace scan and the config read that are not regular files. A named pipe where a
skill's SKILL.md, a folder's .gitignore or ctxlayer.toml would be is left out and said, never
waited on: before, opening one for reading waited for a writer, and the scan (and every request
waiting for the segment) with it, forever. Each pipe here gets a writer that comes and goes
after a moment, so that code which waits on it reads nothing and fails the assertions instead
of holding the test."""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from ws_helpers import make_ws, write

from ctxlayer import userfiles
from ctxlayer.config import load_config

pytestmark = pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no named pipes here")


@pytest.fixture
def pipes() -> Iterator[list[Path]]:
    """Paths to make named pipes at; each is released by a writer that opens and closes it
    once a reader waits on it (or the test ends)."""
    made: list[Path] = []
    done = threading.Event()

    def release() -> None:
        while not done.is_set():
            for path in list(made):
                try:  # succeeds only while something has it open for reading
                    os.close(os.open(path, os.O_WRONLY | os.O_NONBLOCK))
                except OSError:
                    pass
            time.sleep(0.2)

    writer = threading.Thread(target=release, daemon=True)
    writer.start()
    yield made
    done.set()
    writer.join()


def pipe(made: list[Path], path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    os.mkfifo(path)
    made.append(path)
    return path


def test_only_a_regular_file_is_read(tmp_path, pipes):
    fifo = pipe(pipes, tmp_path / "fifo")
    with pytest.raises(OSError) as err:
        userfiles.read(fifo)
    assert err.value.strerror == userfiles.NOT_A_FILE and err.value.filename == str(fifo)
    with pytest.raises(OSError) as err:
        userfiles.read(tmp_path)  # a folder opens for reading on Linux: refused as well
    assert err.value.strerror == userfiles.NOT_A_FILE
    with pytest.raises(FileNotFoundError):
        userfiles.read(tmp_path / "missing")
    data = os.urandom(3 << 20)  # more than one read's worth
    (tmp_path / "big").write_bytes(data)
    os.symlink(tmp_path / "big", tmp_path / "link")
    assert userfiles.read(tmp_path / "link") == data
    assert userfiles.read(tmp_path / "big", 5) == data[:5]
    assert userfiles.read(tmp_path / "big", (1 << 20) + 3) == data[:(1 << 20) + 3]
    (tmp_path / "latin1").write_bytes(b"caf\xe9\n")
    assert userfiles.text(tmp_path / "latin1") == "caf\ufffd\n"


def test_pipes_for_a_skill_an_ignore_file_and_the_config_are_left_out_and_said(
        tmp_path, pipes):
    root, home = tmp_path / "ws", tmp_path / "home"
    write(root, "src/app.py", "print('hi')\n")
    write(root, "skills/ok/SKILL.md", "---\ndescription: a skill that is a file\n---\n")
    pipe(pipes, root / "skills" / "piped" / "SKILL.md")
    pipe(pipes, root / "src" / ".gitignore")
    pipe(pipes, root / "ctxlayer.toml")
    pipe(pipes, root / "README.md")  # a selected file by default
    config, problems = load_config(root, None, None)
    assert problems == [f"{root / 'ctxlayer.toml'}: cannot be read (not a regular file); ignored"]
    seg = make_ws(root, home).scan()
    reasons = {lo.path: lo.reason for lo in seg.left_out if lo.part == "skills"}
    assert reasons == {"skills/piped/SKILL.md": "cannot be read (not a regular file)"}
    skills = next(p for p in seg.parts if p.name == "skills").text
    assert "a skill that is a file" in skills
    tree = next(p for p in seg.parts if p.name == "tree").text
    assert "app.py" in tree  # the folder whose ignore file is a pipe is listed, unfiltered
    # and said, as the selected file that is a pipe (both were skipped without a word)
    said = {(lo.part, lo.path): lo.reason for lo in seg.left_out}
    assert "its ignore rules were not read" in said[("tree", "src/.gitignore")]
    assert "never read" in said[("files", "README.md")]


def test_an_agent_file_that_is_a_pipe_is_left_out_and_said(tmp_path, pipes):
    """AGENTS.md and CLAUDE.md as named pipes were passed over without a word (the part was
    empty, leftOut said nothing of them), where a selected file that is one was said."""
    root, home = tmp_path / "ws", tmp_path / "home"
    write(root, "src/app.py", "print('hi')\n")
    write(home, "AGENTS.md", "Use tabs.\n")  # a file of the chain that is one still counts
    pipe(pipes, root / "AGENTS.md")
    pipe(pipes, root / "CLAUDE.md")
    (root / "GEMINI.md").mkdir()
    seg = make_ws(root, home).scan()
    said = {lo.path: lo.reason for lo in seg.left_out if lo.part == "agentFiles"}
    assert said == {
        "AGENTS.md": "not a regular file (a named pipe, a device or a socket): never read",
        "CLAUDE.md": "not a regular file (a named pipe, a device or a socket): never read",
        "GEMINI.md": "not a regular file (a folder)"}
    assert "Use tabs." in next(p for p in seg.parts if p.name == "agentFiles").text


@pytest.mark.parametrize("where", [".gitignore", "src/deep/.gitignore", "fresh/.gitignore",
                                   ".git/info/exclude", "excludes"])
def test_an_ignore_file_that_is_a_pipe_in_a_repository_is_never_waited_on(tmp_path, monkeypatch,
                                                                          where):
    """git's status opened it and waited for a writer until GIT_TIMEOUT_S (60 s), then the
    workspace had no git state at all ("git timed out"). No writer ever comes here."""
    from ws_helpers import git

    from ctxlayer.workspace import gitstate

    root, home = tmp_path / "ws", tmp_path / "home"
    write(root, "src/app.py", "print('hi')\n")
    write(root, "src/deep/x.py", "x = 1\n")
    git(root, "init", "-q", "-b", "main")
    git(root, "add", ".")
    git(root, "commit", "-q", "-m", "start")
    write(root, "fresh/new.py", "y = 2\n")  # untracked, in a folder git finds by the status
    monkeypatch.setattr(gitstate, "GIT_TIMEOUT_S", 8.0)
    fifo = tmp_path / "ignore" if where == "excludes" else root / where
    if where == "excludes":
        git(root, "config", "core.excludesFile", str(fifo))
    fifo.unlink(missing_ok=True)  # git init writes an info/exclude
    os.mkfifo(fifo)
    seg = make_ws(root, home).scan()  # waited on, it timed out: "timed out" below
    said = {lo.path: lo.reason for lo in seg.left_out if lo.part == "git"}
    git_part = next(p for p in seg.parts if p.name == "git").text
    if where == ".git/info/exclude":  # read for every status: none runs, and that is said
        (reason,) = said.values()
        assert reason.startswith(str(fifo)) and "git reads it for every status" in reason
        tree = next(p for p in seg.parts if p.name == "tree").text
        assert "app.py" in tree and "new.py" in tree  # listed from the disk instead
        return
    (path,) = said
    assert path == (str(fifo) if where == "excludes" else where), said
    assert "git would wait on it" in said[path] and "untracked files were not listed" in said[path]
    assert "main" in git_part and "timed out" not in git_part
    # the model is told: it read "Working tree clean." beside an untracked file
    assert "Untracked files: not listed" in git_part and "clean" not in git_part, git_part
