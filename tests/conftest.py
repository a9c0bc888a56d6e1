"""Puts tests/ on sys.path so every suite can import the shared helpers (gitrepo.py), and
points the state folder at a temporary one for the whole run, so that nothing a test starts
(the tokenizer's rank cache, a CLI subprocess) writes into the real user's state folder."""

from __future__ import annotations

import pytest


@pytest.fixture(autouse=True, scope="session")
def _temporary_state_folder(tmp_path_factory: pytest.TempPathFactory):
    mp = pytest.MonkeyPatch()
    mp.setenv("CTXLAYER_STATE_DIR", str(tmp_path_factory.mktemp("state")))
    yield
    mp.undo()
