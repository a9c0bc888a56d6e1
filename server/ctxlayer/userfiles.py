"""Reading a file of the user's (in the workspace, or the user's config) without waiting on one
that is not a file.

Opening a named pipe (FIFO) for reading waits until something opens it for writing, and a read
of a device may never end: a FIFO named `.gitignore`, SKILL.md, `.git/info/exclude` or
`ctxlayer.toml` held the workspace scan, and every request waiting for the segment, forever.
Here the file is opened without waiting (`O_NONBLOCK`, which changes nothing for a regular
file) and read only when it is a regular file (symlinks followed); anything else is an
OSError, which every caller already handles as a file it cannot read.
Not for the command line's own input: `ctxlayer trim <(...)` reads a pipe on purpose.
"""

from __future__ import annotations

import errno
import os
import stat

NOT_A_FILE = "not a regular file"
#: how a file left out for it is said: what it may be instead
NOT_A_FILE_SAID = f"{NOT_A_FILE} (a named pipe, a device or a socket)"


def read(path: str | os.PathLike[str], limit: int | None = None) -> bytes:
    """The bytes of the regular file at ``path``, at most ``limit`` of them; OSError when it
    cannot be read, with the strerror NOT_A_FILE when it is a pipe, a device, a socket or a
    folder."""
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_BINARY", 0)
    fd = os.open(path, flags)
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise OSError(errno.EINVAL, NOT_A_FILE, os.fspath(path))
        chunks, left = [], limit
        while left is None or left > 0:
            chunk = os.read(fd, 1 << 20 if left is None else min(left, 1 << 20))
            if not chunk:
                break
            chunks.append(chunk)
            if left is not None:
                left -= len(chunk)
        return b"".join(chunks)
    finally:
        os.close(fd)


def text(path: str | os.PathLike[str]) -> str:
    """The text of the regular file at ``path``, bytes that are not UTF-8 replaced (ignore
    rules: a pattern with a bad byte should not cost the file's other rules)."""
    return read(path).decode("utf-8", errors="replace")
