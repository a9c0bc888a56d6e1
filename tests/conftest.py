"""Puts tests/ on sys.path so every suite can import the shared helpers (gitrepo.py), and
points the state folder at a temporary one for the whole run, so that nothing a test starts
(the tokenizer's rank cache, a CLI subprocess) writes into the real user's state folder.

The property tests draw their examples afresh on every run here; CI (`.ci/run` sets
HYPOTHESIS_PROFILE=ci) draws them from each test's own code, so the run on a fresh machine is
the one `HYPOTHESIS_PROFILE=ci make test` repeats, and what it reports reproduces as it is.
Stop 69's CI drew a restart case no local run had: a fresh draw finds what a fixed one misses,
a fixed one keeps CI's verdict the developer's."""

from __future__ import annotations

import os

import pytest
from hypothesis import settings

settings.register_profile("ci", derandomize=True, print_blob=True)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "default"))


@pytest.fixture(autouse=True, scope="session")
def _temporary_state_folder(tmp_path_factory: pytest.TempPathFactory):
    mp = pytest.MonkeyPatch()
    mp.setenv("CTXLAYER_STATE_DIR", str(tmp_path_factory.mktemp("state")))
    yield
    mp.undo()
