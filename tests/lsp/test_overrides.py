"""The pygls parts ctxlayer overrides or reads (lsp/overrides.py PRIVATE) still exist in the
installed pygls, with the parameters we rely on: a pygls upgrade that moves one fails here,
naming it, rather than somewhere deep in a connection."""

from __future__ import annotations

import inspect

import pytest
from pygls.protocol import JsonRPCRequestMessage

from ctxlayer.lsp.overrides import PRIVATE, CtxProtocol, shut_down
from ctxlayer.lsp.server import CtxServer
from ctxlayer.state import State


@pytest.fixture
def protocol(tmp_path):
    state = State(tmp_path)
    yield CtxServer(state).protocol
    state.close()


@pytest.mark.parametrize(("cls", "name", "params"), PRIVATE,
                         ids=[f"{c.__name__}.{n}" for c, n, _ in PRIVATE])
def test_each_private_part_is_where_we_expect_it(protocol, cls, name, params):
    assert isinstance(protocol, cls)
    if params is None:  # an attribute pygls sets on the instance
        assert hasattr(protocol, name), f"pygls no longer has {cls.__name__}.{name}"
        return
    member = cls.__dict__.get(name)
    assert member is not None, f"pygls no longer defines {cls.__name__}.{name}"
    signature = inspect.signature(member)
    got = tuple(signature.parameters)
    assert got[:len(params)] == params, f"{cls.__name__}.{name} takes {got} now"
    extra = [p for p in got[len(params):]
             if signature.parameters[p].default is inspect.Parameter.empty
             and signature.parameters[p].kind not in (inspect.Parameter.VAR_POSITIONAL,
                                                      inspect.Parameter.VAR_KEYWORD)]
    assert extra == [], f"{cls.__name__}.{name} needs {extra} now"


def test_our_overrides_are_used(protocol):
    assert isinstance(protocol, CtxProtocol)
    for _, name, params in PRIVATE:
        if name in CtxProtocol.__dict__:  # an override keeps pygls' parameters
            got = tuple(inspect.signature(CtxProtocol.__dict__[name]).parameters)
            assert got[:len(params)] == params, name
    assert shut_down(protocol) is False


def test_connections_share_one_converter(protocol, tmp_path):
    """cattrs writes and compiles a function per type the first time a converter meets it: a
    converter per connection made each new connection's first requests take 15 ms more."""
    state = State(tmp_path / "other")
    try:
        other = CtxServer(state).protocol
        assert other._converter is protocol._converter
        # still ctxlayer's: a request's params stay a plain dict
        msg = other._converter.structure(
            {"id": 1, "jsonrpc": "2.0", "method": "ctx/count", "params": {"text": "hi"}},
            JsonRPCRequestMessage)
        assert msg.params == {"text": "hi"}
    finally:
        state.close()
