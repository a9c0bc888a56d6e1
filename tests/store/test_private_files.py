"""The state folder's small files (the gateway's announcement, the clean-close note) are written
whole: a reader sees one writer's text or another's, never a mix, also while two processes
write the same file (two daemons closing together write the note). Each write had the same
temporary name, so a second writer truncated and wrote into the file the first had just put in
place."""

from __future__ import annotations

import os
import stat
import threading

from ctxlayer.statefiles import write_private


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
