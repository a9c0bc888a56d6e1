"""The state folder's own files, private to the user whatever the umask.

Owns: making the state folder (0700) and its files (0600: the sessions database and its
-wal/-shm, gateway.json, the token), and the token of TCP mode and of the gateway's
`/ctxlayer/*` routes (one file, `STATE_DIR/token`, read and checked in one place). The folder
holds conversations and the token that opens them, so other users of the machine must not
read it. Modes are set explicitly after creation because the umask can only take bits away
(0o000 would leave a 0666 file) and a folder made by an older ctxlayer may be 0755.
On Windows (no POSIX modes) the folder is made and nothing is checked.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import stat
import tempfile
from pathlib import Path

#: days the state folder keeps a workspace's audit entries and conversation windows (the
#: default of `[session] keep_days`; state/expiry.py removes what is older)
KEEP_DAYS = 30

#: the token's file name in the state folder
TOKEN_NAME = "token"

_POSIX = os.name == "posix"


class TokenFileError(OSError):
    """The token file is unsafe or unreadable; the message says how to fix it."""


def make_private_dir(path: Path) -> Path:
    """`path` made (the parents it lacks too, each 0700) and set to 0700 when it is ours; an
    existing folder that group or others could open is tightened (an older ctxlayer made it
    0755). `mkdir(parents=True)` gave the parents the umask's mode: 0777 under umask 000, and
    another user could then rename the state folder away and plant one of theirs."""
    missing = [p for p in (path, *path.parents) if not p.exists()]
    for folder in reversed(missing):
        try:
            folder.mkdir(mode=0o700)
        except FileExistsError:
            if not folder.is_dir():  # a file where the folder goes: the caller says so
                raise
    path.mkdir(exist_ok=True)  # there, or a file there (FileExistsError), as before
    if _POSIX:
        info = path.stat()
        if info.st_uid == os.getuid() and stat.S_IMODE(info.st_mode) != 0o700:
            os.chmod(path, 0o700)
    return path


class StateFolderError(OSError):
    """The state folder (or a file ctxlayer keeps in it) cannot be made or written; the
    message names it and says what to do, in one line."""


def unusable_folder(folder: Path, err: OSError, what: str = "") -> StateFolderError:
    """The error for a state folder ``folder`` that ``err`` says cannot be used (``what``:
    the file in it that could not be written, if it was one). The raw OSError named a path,
    never the state folder nor how to choose another ("[Errno 17] File exists")."""
    why = "a file is there" if folder.is_file() else err.strerror or str(err)
    return StateFolderError(f"the state folder {folder} cannot be used ({what}{why}); set "
                            "CTXLAYER_STATE_DIR to a folder ctxlayer may write")


def make_private_file(path: Path) -> Path:
    """`path` created empty when absent, and set to 0600 either way. SQLite gives its -wal
    and -shm the database file's mode, so creating the database this way covers them too."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT, 0o600)
    try:
        if _POSIX:
            os.fchmod(fd, 0o600)
    finally:
        os.close(fd)
    return path


def write_private(path: Path, text: str) -> None:
    """Write `text` to `path` atomically (readers see the old file or the new one), 0600. The
    temporary file's name is this write's own: two processes writing one file (two daemons
    closing together write the clean-close note) shared one, and the second wrote into the
    file the first had just put in place."""
    fd, name = tempfile.mkstemp(prefix=path.name + ".", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            if _POSIX:
                os.fchmod(f.fileno(), 0o600)
            f.write(text)
        os.replace(name, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(name)
        raise


def token_file(state_dir: Path) -> Path:
    """Where the token lives by default (`ctxlayer serve --token-file` may name another)."""
    return state_dir / TOKEN_NAME


def read_token(path: Path) -> str:
    """The token in `path`; TokenFileError when it is missing, unsafe or too short."""
    try:
        info = path.stat()
    except FileNotFoundError:
        raise TokenFileError(f"{path} does not exist: no gateway or TCP daemon made it") from None
    if not stat.S_ISREG(info.st_mode):  # `chmod 600` would not help, and reading it fails raw
        raise TokenFileError(f"{path} is not a file (a folder or a device): the token file is "
                             "a file a gateway or TCP daemon writes; name that one")
    if _POSIX:
        if info.st_mode & (stat.S_IRWXG | stat.S_IRWXO):
            raise TokenFileError(
                f"{path} can be read by other users (mode {stat.filemode(info.st_mode)}); "
                f"run `chmod 600 {path}`")
        if info.st_uid != os.getuid():
            raise TokenFileError(f"{path} belongs to another user")
    token = path.read_text(encoding="utf-8").strip()
    if len(token) < 16:
        raise TokenFileError(f"{path} holds no token of at least 16 characters")
    return token


def read_or_create_token(path: Path) -> str:
    """The token in `path`, creating the file (0600, a random token) when it does not exist."""
    # made when absent, never tightened: `--token-file` may name a folder of the user's
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    if not os.path.lexists(path):
        # written whole beside it, then linked into place: a process starting at the same
        # instant finds no file or the whole token, never the empty file between a create and
        # its write (two gateways started together on a new state folder: one failed); a link
        # neither replaces nor writes through what is there, a planted symlink included
        fd, written = tempfile.mkstemp(dir=path.parent, prefix=".token-")  # 0600
        try:
            with os.fdopen(fd, "w") as f:
                f.write(secrets.token_urlsafe(32) + "\n")
            with contextlib.suppress(FileExistsError):  # the other process's link won
                os.link(written, path)
        finally:
            os.unlink(written)
    return read_token(path)


def another_runs(pid: object) -> bool:
    """Whether the process ``pid``, another than this one, still runs (a gateway that
    announced itself in the state folder; of this process's own, nothing is said)."""
    if not isinstance(pid, int) or isinstance(pid, bool) or pid <= 0 or pid == os.getpid():
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:  # another user's: it runs
        return True
    return True
