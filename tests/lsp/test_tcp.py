"""TCP mode: many clients at once on one daemon, each authenticated with the token file."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import stat
from pathlib import Path

import pytest
import pytest_asyncio
from conftest import ENV, SERVE, WORLD, hermetic_env, make_repo, write

from ctxlayer_client import AsyncClient, RpcError
from ctxlayer_client.framing import encode, read_message

pytestmark = [pytest.mark.e2e, pytest.mark.asyncio(loop_scope="module")]


class TcpDaemon:
    def __init__(self, proc: asyncio.subprocess.Process, info: dict) -> None:
        self.proc, self.info = proc, info
        self.port: int = info["port"]
        self.token = Path(info["tokenFile"]).read_text().strip()


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def tcp_daemon():
    state = WORLD / "tcp-state"
    proc = await asyncio.create_subprocess_exec(
        *SERVE, "--tcp", "--port", "0", "--state-dir", str(state),
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.DEVNULL, env=ENV)
    assert proc.stdout is not None
    line = await asyncio.wait_for(proc.stdout.readline(), 30)
    daemon = TcpDaemon(proc, json.loads(line))
    yield daemon
    proc.terminate()
    assert await asyncio.wait_for(proc.wait(), 10) == 0


async def test_token_file_is_private(tcp_daemon: TcpDaemon):
    path = Path(tcp_daemon.info["tokenFile"])
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert len(tcp_daemon.token) >= 32
    assert tcp_daemon.info["host"] == "127.0.0.1"


async def test_two_clients_at_once_share_the_workspace(tcp_daemon: TcpDaemon):
    root = make_repo(WORLD / "tcp-repo")
    first, second = await asyncio.gather(
        AsyncClient.connect("127.0.0.1", tcp_daemon.port, tcp_daemon.token, root, timeout=30),
        AsyncClient.connect("127.0.0.1", tcp_daemon.port, tcp_daemon.token, root, timeout=30))
    try:
        a, b = await asyncio.gather(first.count(texts=["one two"]),
                                    second.count(texts=["one two three four"]))
        assert a.tokens[0] < b.tokens[0]
        seg_a, seg_b = await asyncio.gather(first.segment(), second.segment())
        assert seg_a.hash == seg_b.hash and "app.py" in seg_a.text

        waits = [asyncio.ensure_future(c.wait_for(
            "ctx/segmentChanged", lambda n: "tree" in n.changed)) for c in (first, second)]
        write(root, "added_by_test.py", "Y = 2\n")
        note_a, note_b = await asyncio.gather(*waits)
        assert note_a.hash == note_b.hash != seg_a.hash

        await first.close()
        again = await second.count(texts=["one two"])  # one client leaving ends nothing else
        assert again.tokens == a.tokens
    finally:
        await second.close()
    assert tcp_daemon.proc.returncode is None


async def test_one_folder_by_two_names_is_one_workspace_and_one_segment(tmp_path: Path):
    """Client A opens the folder by its real path, client B as ~/work/proj (~/work a symlink
    to it): the daemon kept two live workspaces, one segment with ~/work/AGENTS.md and one
    without, and the session both opened took its workspace layer from either: A's
    ctx/session/budget said 291 workspace tokens where its ctx/assemble sent 120, B's the
    other way round. One folder is one segment now; each budget is what its assemble sends."""
    env = hermetic_env(tmp_path)
    disk = tmp_path / "otherdisk" / "work"
    real = make_repo(disk / "proj")
    write(disk, "AGENTS.md", "WORK RULE: " + "use tabs everywhere. " * 40 + "\n")
    os.symlink(disk, tmp_path / "home" / "work")
    proc = await asyncio.create_subprocess_exec(
        *SERVE, "--tcp", "--port", "0", stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.DEVNULL, env=env)
    assert proc.stdout is not None
    info = json.loads(await asyncio.wait_for(proc.stdout.readline(), 30))
    token = Path(info["tokenFile"]).read_text().strip()
    clients = []
    try:
        for root in (real, tmp_path / "home" / "work" / "proj"):
            clients.append(await AsyncClient.connect("127.0.0.1", info["port"], token, root,
                                                     timeout=30))
        segments = [await c.segment() for c in clients]
        assert segments[0].hash == segments[1].hash
        for c in clients:
            await c.request("ctx/session/open", {"sessionId": "shared", "budget": 20000})
        for c in (*clients, clients[0]):
            budget = await c.request("ctx/session/budget", {"sessionId": "shared"})
            sent = await c.request("ctx/assemble", {"sessionId": "shared"})
            assert budget["byLayer"]["workspace"] == sent["tokens"]["workspace"] > 0
    finally:
        for c in clients:
            await c.close()
        proc.terminate()
        await asyncio.wait_for(proc.wait(), 10)


async def test_wrong_token_is_refused_and_disconnected(tcp_daemon: TcpDaemon):
    with pytest.raises(RpcError) as err:
        await AsyncClient.connect("127.0.0.1", tcp_daemon.port, "not-the-token", timeout=30)
    assert err.value.code == -32004 and "wrong token" in err.value.message


async def test_first_message_must_be_initialize(tcp_daemon: TcpDaemon):
    reader, writer = await asyncio.open_connection("127.0.0.1", tcp_daemon.port)
    writer.write(encode({"jsonrpc": "2.0", "id": 1, "method": "ctx/count",
                         "params": {"texts": ["sneaky"]}}))
    reply = await asyncio.wait_for(read_message(reader), 30)
    assert reply["id"] == 1 and reply["error"]["code"] == -32004
    assert await asyncio.wait_for(read_message(reader), 30) is None  # closed
    writer.close()


async def test_a_port_probe_does_not_kill_the_daemon(tcp_daemon: TcpDaemon):
    _, writer = await asyncio.open_connection("127.0.0.1", tcp_daemon.port)
    writer.close()
    client = await AsyncClient.connect("127.0.0.1", tcp_daemon.port, tcp_daemon.token,
                                       timeout=30)
    try:
        assert (await client.count(texts=["ok"])).total == 1
    finally:
        await client.close()


async def test_a_token_file_others_can_read_is_refused(tmp_path: Path):
    token = tmp_path / "token"
    token.write_text("a" * 40)
    os.chmod(token, 0o644)
    proc = await asyncio.create_subprocess_exec(
        *SERVE, "--tcp", "--port", "0", "--token-file", str(token),
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE, env=ENV)
    out, err = await asyncio.wait_for(proc.communicate(), 30)
    assert proc.returncode == 2 and out == b""
    assert b"chmod 600" in err


@pytest.mark.parametrize("port,said", [
    ("99999", "ctxlayer serve: --port 99999: expected 0 to 65535"),
    ("-1", "ctxlayer serve: --port -1: expected 0 to 65535"),
    (None, "ctxlayer serve: cannot start the daemon: "),  # the running daemon's port
])
async def test_a_port_out_of_range_or_in_use_is_one_line_and_exit_2(
        tcp_daemon: TcpDaemon, tmp_path: Path, port: str | None, said: str):
    """bind() raised OverflowError, and a port in use OSError, each a traceback with exit 1;
    `ctxlayer gateway` says both in one line with exit 2."""
    proc = await asyncio.create_subprocess_exec(
        *SERVE, "--tcp", "--port", port or str(tcp_daemon.port),
        "--state-dir", str(tmp_path / "state"),
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE, env=ENV)
    out, err = await asyncio.wait_for(proc.communicate(), 30)
    assert proc.returncode == 2 and out == b""
    lines = err.decode().strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(said), lines
    if port is None:
        assert str(tcp_daemon.port) in lines[0]


async def test_the_state_folder_is_made_private_before_the_token_goes_in(tmp_path: Path):
    """An existing 0755 state folder (an older ctxlayer made it so) stayed 0755 in TCP mode,
    the token written into it, until a session opened the store; README says 0700."""
    state = tmp_path / "state"
    state.mkdir()
    os.chmod(state, 0o755)
    proc = await asyncio.create_subprocess_exec(
        *SERVE, "--tcp", "--port", "0", "--state-dir", str(state),
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.DEVNULL, env=ENV)
    assert proc.stdout is not None
    info = json.loads(await asyncio.wait_for(proc.stdout.readline(), 30))
    try:
        assert Path(info["tokenFile"]).parent == state
        assert stat.S_IMODE(state.stat().st_mode) == 0o700
    finally:
        proc.terminate()
        await asyncio.wait_for(proc.wait(), 10)


async def test_a_warning_for_one_client_is_told_to_it_once_and_to_no_other(
        tcp_daemon: TcpDaemon):
    """The daemon logs what it tells a client (for its own log), and every warning logged
    went to every client's log window: the client an unknown option concerns read it twice,
    every other client once."""
    root = make_repo(WORLD / "tcp-told-repo")
    bystander = await AsyncClient.connect("127.0.0.1", tcp_daemon.port, tcp_daemon.token,
                                          root, timeout=30)
    reader, writer = await asyncio.open_connection("127.0.0.1", tcp_daemon.port,
                                                  limit=1 << 20)
    concerned = AsyncClient(reader, writer, timeout=30)
    heard: dict[str, list[str]] = {"concerned": [], "bystander": []}
    concerned.on("window/logMessage", lambda p: heard["concerned"].append(p["message"]))
    bystander.on("window/logMessage", lambda p: heard["bystander"].append(p["message"]))
    try:
        await concerned.initialize(root, options={"bogusOption": 1}, token=tcp_daemon.token)
        # a request of each after: what was told meanwhile came before its answer
        await asyncio.gather(concerned.count(texts=["x"]), bystander.count(texts=["x"]))
    finally:
        await concerned.close()
        await bystander.close()
    about = [m for m in heard["concerned"] if "bogusOption" in m]
    assert len(about) == 1, heard["concerned"]
    assert not [m for m in heard["bystander"] if "bogusOption" in m], heard["bystander"]


async def test_a_stop_repeated_while_the_daemon_ends_still_exits_cleanly(tmp_path: Path):
    """A supervisor repeating its SIGTERM until the daemon is gone: once the event loop closed
    its stop handlers were gone, and a SIGTERM then killed the daemon while its threads were
    joined (exit -15 after a clean stop). A SIGTERM every millisecond: it ends by itself, 0."""
    proc = await asyncio.create_subprocess_exec(
        *SERVE, "--tcp", "--port", "0", "--state-dir", str(tmp_path / "state"),
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE, env=ENV)
    assert proc.stdout is not None
    json.loads(await asyncio.wait_for(proc.stdout.readline(), 30))
    loop = asyncio.get_running_loop()
    deadline = loop.time() + 60
    while proc.returncode is None and loop.time() < deadline:
        try:
            # os.kill, not proc.send_signal: Popen.send_signal polls first, which reaps the
            # ended daemon itself; asyncio's watcher then finds no child and says exit 255
            os.kill(proc.pid, signal.SIGTERM)
        except ProcessLookupError:
            break
        await asyncio.sleep(0.001)
    if proc.returncode is None and loop.time() >= deadline:
        proc.kill()
    _, stderr = await asyncio.wait_for(proc.communicate(), 60)
    assert proc.returncode == 0, stderr.decode()
