"""The daemon's gateway is a caller on its workspace (`open_workspace`: one of the live
workspace's references, told its changes): stopping the gateway releases it. It never did, so
once the editors on the workspace left, the workspace went on being watched and re-measured
for a gateway that no longer ran."""

from __future__ import annotations

import asyncio
import socket
from pathlib import Path

import msgspec
import pytest

from ctxlayer.config import Config, GatewayConfig
from ctxlayer.gateway.daemon import DaemonGateway
from ctxlayer.state import Caller, State
from ctxlayer.state.opening import following, leave_workspace, open_workspace


@pytest.fixture
def editor(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Caller:
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    root = tmp_path / "ws"
    root.mkdir()
    (root / "README.md").write_text("# a project\n")
    state = State(tmp_path / "state")
    caller = Caller(state)
    caller.root = root
    caller.config = msgspec.structs.replace(Config(), gateway=GatewayConfig(enabled=True))
    return caller


def test_stopping_the_gateway_leaves_no_caller_of_its_own_on_the_workspace(editor: Caller):
    state = editor.state

    async def run() -> None:
        live = open_workspace(editor, editor.config)  # the editor that enabled the gateway
        try:
            gateway = DaemonGateway(state)
            await gateway(editor)
            assert gateway.server is not None
            assert [c.source for c in following(live).callers] == ["session", "gateway"]
            await gateway.close()
            assert following(live).callers == [editor]
            assert live.refs == 1
            leave_workspace(editor)  # the last editor goes: nothing holds the workspace
            assert live.refs == 0
        finally:
            await state.work(state.close)

    asyncio.run(run())


def test_a_gateway_that_could_not_start_leaves_no_caller_on_the_workspace(editor: Caller):
    state = editor.state
    taken = socket.socket()
    taken.bind(("127.0.0.1", 0))
    taken.listen()
    port = taken.getsockname()[1]
    assert editor.config is not None
    editor.config = msgspec.structs.replace(
        editor.config, gateway=GatewayConfig(enabled=True, port=port))

    async def run() -> None:
        live = open_workspace(editor, editor.config)
        try:
            gateway = DaemonGateway(state)
            await gateway(editor)  # the port is taken: the daemon goes on without a gateway
            assert gateway.server is None
            assert following(live).callers == [editor]
            assert live.refs == 1
        finally:
            await state.work(state.close)

    with taken:
        asyncio.run(run())
