"""The state's tests work on a real State over a temporary state folder (the real tokenizer,
session service and SQLite), asked by a Caller with gpt-4o as its model."""

from __future__ import annotations

import pytest

from ctxlayer import protocol
from ctxlayer.state import Caller, State

MODEL = "gpt-4o"


@pytest.fixture
def state(tmp_path):
    st = State(tmp_path / "state")
    yield st
    st.close()


@pytest.fixture
def caller(state):
    return Caller(state, source="session", options=protocol.InitializationOptions(model=MODEL))
