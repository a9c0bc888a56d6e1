"""The parsed rank tables of the tiktoken encodings, cached on disk between runs.

Parsing a packaged rank file (gunzip, checksum, then 200k base64 lines) costs about 120 ms for
o200k; loading the parsed table back with `marshal` about 48 ms, its checksum included. So the
first process that parses a file writes the table into the state folder and later processes
read it back.

Owns: the cache file's name (the encoding, the sha256 of the rank file it came from, the
tiktoken version, the Python version, whose marshal format it is), its layout (a magic line,
the sha256 of the payload, the marshalled dict), writing it atomically (a temporary file in the
same folder, then a rename), and refusing it when stale or corrupt (wrong magic, wrong
checksum, not a dict of bytes to int): then the caller parses the packaged file again and the
entry is rewritten. `marshal` rather than pickle, so a tampered file cannot run code. Never
raises for a missing, unreadable or unwritable cache; never fetches anything.
"""

from __future__ import annotations

import hashlib
import logging
import marshal
import os
import sys
import tempfile
from pathlib import Path

import tiktoken

from ctxlayer.statefiles import make_private_dir

log = logging.getLogger(__name__)

MAGIC = b"ctxlayer-ranks 1\n"
SUBDIR = "tokenizers"


def cache_path(folder: Path, encoding: str, rank_sha256: str) -> Path:
    """Where the parsed table of `encoding` (from the rank file hashing to `rank_sha256`) lives;
    any change of the inputs or of the readers gives another name, so nothing stale is read."""
    version = getattr(tiktoken, "__version__", "unknown")
    py = f"py{sys.version_info.major}{sys.version_info.minor}m{marshal.version}"
    return folder / f"{encoding}-{rank_sha256[:16]}-tiktoken{version}-{py}.ranks"


def read(path: Path) -> dict[bytes, int] | None:
    """The cached table, or None when absent, unreadable, corrupt or of the wrong shape."""
    try:
        data = path.read_bytes()
    except OSError:
        return None
    head = len(MAGIC) + 65  # the magic line, then a 64-digit checksum and a newline
    if not data.startswith(MAGIC) or len(data) < head:
        return None
    digest, payload = data[len(MAGIC):head - 1], data[head:]
    if hashlib.sha256(payload).hexdigest().encode() != digest:
        return None
    try:
        ranks = marshal.loads(payload)
    except (EOFError, ValueError, TypeError):
        return None
    if not isinstance(ranks, dict) or not ranks:
        return None
    key, value = next(iter(ranks.items()))
    if not isinstance(key, bytes) or not isinstance(value, int):
        return None
    return ranks


def write(path: Path, ranks: dict[bytes, int]) -> bool:
    """Write the table atomically; False (and a debug line) when the folder is not writable."""
    payload = marshal.dumps(ranks)
    digest = hashlib.sha256(payload).hexdigest().encode()
    tmp = None
    try:
        make_private_dir(path.parent)  # in the state folder: 0700 whatever the umask
        fd, tmp = tempfile.mkstemp(prefix=path.name + ".", suffix=".tmp", dir=path.parent)
        with os.fdopen(fd, "wb") as f:
            f.write(MAGIC + digest + b"\n" + payload)
        os.replace(tmp, path)  # readers see the old file or the whole new one, never half
        return True
    except OSError as e:
        log.debug("rank cache %s not written: %s", path, e)
        if tmp is not None:
            try:
                os.unlink(tmp)
            except OSError:
                pass
        return False
