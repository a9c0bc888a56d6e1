"""A client's terminal UI driven through a pseudo-terminal, as a person runs it: what it draws
is read on a thread, keys are typed one at a time, and `text` is what it drew without the
escape sequences between its words (cursor moves, colours, titles)."""

from __future__ import annotations

import fcntl
import os
import pty
import re
import signal
import struct
import termios
import threading
import time
from collections.abc import Callable
from pathlib import Path

from real_clients import HANG_LIMIT_S

#: a control sequence (CSI: cursor moves, colours, modes) or an OS command (a window title)
ESCAPES = re.compile(r"\x1b\[[0-9;?<>=]*[ -/]*[@-~]"  # CSI
                     r"|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)"  # OSC, to BEL or ST
                     r"|\x1b[()][A-Z0-9]")  # a character set


class Terminal:
    """``argv`` running in a 40x120 terminal in ``cwd`` until `close`."""

    def __init__(self, argv: list[str], env: dict[str, str], cwd: Path) -> None:
        pid, fd = pty.fork()
        if pid == 0:  # the child: never returns
            os.chdir(cwd)
            os.execve(argv[0], argv, env)
        self.pid, self.fd = pid, fd
        fcntl.ioctl(fd, termios.TIOCSWINSZ, struct.pack("HHHH", 40, 120, 0, 0))
        self.screen = bytearray()
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        while True:
            try:
                chunk = os.read(self.fd, 65536)
            except OSError:  # the client is gone
                return
            if not chunk:
                return
            self.screen.extend(chunk)

    def shown(self) -> str:
        return self.screen.decode(errors="replace")

    def text(self) -> str:
        """What it drew, each escape sequence a space, runs of spaces one."""
        return re.sub(r"[ \t]+", " ", ESCAPES.sub(" ", self.shown()))

    def type(self, text: str) -> None:
        for ch in text:  # as typed: a burst is taken for a paste
            os.write(self.fd, ch.encode())
            time.sleep(0.01)

    def wait(self, ready: Callable[[], object], what: str) -> None:
        """Until ``ready()`` is true; a failure naming ``what`` and the screen's end if the
        client never gets there (a safety net against a hung client, not a speed assertion)."""
        end = time.monotonic() + HANG_LIMIT_S
        while not ready():
            if time.monotonic() > end:
                raise AssertionError(f"never {what}; the screen ended with "
                                     f"{self.shown()[-1500:]!r}")
            time.sleep(0.2)

    def close(self) -> None:
        try:  # the client and what it started: the terminal made it a session of its own
            os.killpg(self.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        os.waitpid(self.pid, 0)
        # the reader ends once the terminal's other end is gone (its read fails); only then is
        # the descriptor closed: closed under a read, its number goes to the next file this
        # process opens, and the reader takes that file's bytes (the CA bundle once, which
        # TLS then read cut short). Left open if the reader is still there.
        self._reader.join(30)
        if not self._reader.is_alive():
            os.close(self.fd)
