"""The state folder's small files (the gateway's announcement, the clean-close note) are written
whole: a reader sees one writer's text or another's, never a mix, also while two processes
write the same file (two daemons closing together write the note). Each write had the same
temporary name, so a second writer truncated and wrote into the file the first had just put in
place."""

from __future__ import annotations

import multiprocessing
import os
import stat
import threading
from pathlib import Path

import pytest

from ctxlayer.statefiles import (
    TokenFileError,
    read_or_create_token,
    read_token,
    token_file,
    write_private,
)


def test_two_writers_of_one_file_never_leave_a_mix(tmp_path):
    path = tmp_path / "note"
    texts = {"a": "A" * 200_000, "b": "B" * 100_000}
    write_private(path, texts["a"])
    seen: list[str] = []
    done = threading.Event()

    def write(key: str) -> None:
        for _ in range(150):
            write_private(path, texts[key])

    def read() -> None:
        while not done.is_set():
            seen.append(path.read_text())

    reader = threading.Thread(target=read)
    writers = [threading.Thread(target=write, args=(k,)) for k in texts]
    reader.start()
    for w in writers:
        w.start()
    for w in writers:
        w.join()
    done.set()
    reader.join()
    assert seen and all(text in texts.values() for text in seen)
    assert path.read_text() in texts.values()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["note"]  # no temporary file left
    if os.name == "posix":
        assert stat.S_IMODE(path.stat().st_mode) == 0o600


def _race(context, folder) -> list[str]:
    """read_or_create_token called by three processes at one instant on a new folder."""
    start, answers = context.Barrier(3), context.Queue()
    procs = [context.Process(target=_token_after, args=(str(token_file(folder)), start, answers))
             for _ in range(3)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(60)
    return [answers.get(timeout=5) for _ in procs]


def _token_after(path: str, start, answers) -> None:
    start.wait()
    try:
        answers.put(read_or_create_token(Path(path)))
    except TokenFileError as exc:
        answers.put(f"refused: {exc}")


def test_processes_starting_together_on_a_new_folder_share_one_token(tmp_path):
    """The file was created empty, then written: a process starting at the same instant read
    it empty ("holds no token of at least 16 characters"; 170 races in 200 with two)."""
    for k in range(20):
        tokens = _race(multiprocessing.get_context("fork"), tmp_path / f"s{k}")
        assert len(set(tokens)) == 1 and not tokens[0].startswith("refused"), tokens
        assert [p.name for p in (tmp_path / f"s{k}").iterdir()] == ["token"]  # nothing left


def test_folders_made_for_the_state_are_private_whatever_the_umask(tmp_path):
    """Under umask 000 the parents `mkdir(parents=True)` made (the state folder's, the
    tokenizers folder) were 0777: another user could rename the state folder away."""
    from ctxlayer.statefiles import make_private_dir
    from ctxlayer.tokenizers import rankcache

    old = os.umask(0)
    try:
        made = make_private_dir(tmp_path / "state" / "home" / "ctxlayer")
        assert rankcache.write(made / "tokenizers" / "x.ranks", {b"a": 0})
    finally:
        os.umask(old)
    for folder in (tmp_path / "state", tmp_path / "state" / "home", made, made / "tokenizers"):
        assert stat.S_IMODE(folder.stat().st_mode) == 0o700, folder


def test_a_token_file_that_is_a_folder_is_named_as_not_a_file(tmp_path):
    # it was "can be read by other users; run `chmod 600`", then a raw "[Errno 21]"
    folder = tmp_path / "token"
    folder.mkdir(mode=0o700)
    with pytest.raises(TokenFileError, match="is not a file"):
        read_token(folder)
