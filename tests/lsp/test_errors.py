"""Errors are mapped once: a domain error's kind to its code; a kind without a code and a
failing database are ours to fix or the user's to act on, never "invalid params"."""

from __future__ import annotations

import sqlite3

import pytest

from ctxlayer import protocol
from ctxlayer.core.errors import ContextError
from ctxlayer.lsp.errors import INTERNAL_ERROR, INVALID_PARAMS, RpcError, mapped
from ctxlayer.store.errors import StoreError


def raised(exc: Exception) -> RpcError:
    with pytest.raises(RpcError) as info, mapped():
        raise exc
    return info.value


@pytest.mark.parametrize(("kind", "code"), [
    ("invalid", INVALID_PARAMS),
    ("pinned_over_budget", protocol.ERROR_PINNED_OVER_BUDGET),
    ("unknown_session", protocol.ERROR_UNKNOWN_SESSION),
    ("outside_workspace", protocol.ERROR_OUTSIDE_WORKSPACE),
])
def test_each_domain_kind_has_its_code_and_names_the_field(kind, code):
    error = raised(ContextError(kind, "went wrong", field="messages[2].role"))
    assert error.code == code
    assert "messages[2].role" in error.message and error.data["field"] == "messages[2].role"


def test_a_kind_without_a_code_is_an_internal_error_not_the_clients_fault():
    error = raised(ContextError("no_such_kind", "a bug"))
    assert error.code == INTERNAL_ERROR


@pytest.mark.parametrize(("exc", "says"), [
    (sqlite3.OperationalError("database is locked"), "locked"),
    (sqlite3.OperationalError("database or disk is full"), "disk is full"),
    (sqlite3.DatabaseError("database disk image is malformed"), "damaged"),
    (StoreError("schema version 9, newer than this ctxlayer understands"), "newer"),
])
def test_database_failures_say_what_failed(exc, says):
    error = raised(exc)
    assert error.code == protocol.ERROR_STORE
    assert says in error.message


def test_a_value_too_deep_to_walk_is_the_clients_params_not_an_internal_error():
    """A value read whole at the frame, then walked or written again deeper in the stack
    (a tool's input 980 levels deep), was an internal error."""
    error = raised(RecursionError("maximum recursion depth exceeded"))
    assert error.code == INVALID_PARAMS and "nested deeper than ctxlayer follows" in error.message
