"""ctxlayer_client against a real daemon: typed results, errors, timeouts, subscriptions,
the blocking twin."""

from __future__ import annotations

import asyncio
import gc
import os
import signal
import sys
import threading
import time
import warnings
from pathlib import Path

import pytest
from gitrepo import GIT_ENV, git

from ctxlayer import protocol
from ctxlayer.core.tokens import OPENAI_FORMAT
from ctxlayer.tokenizers import counter_for
from ctxlayer_client import AsyncClient, Client, ConnectionClosed, RpcError


@pytest.fixture
def world(tmp_path: Path) -> dict[str, str]:
    for d in ("home", "state", "config"):
        (tmp_path / d).mkdir()
    return {**GIT_ENV, "HOME": str(tmp_path / "home"), "CTXLAYER_STATE_DIR": str(tmp_path / "state"),
            "XDG_CONFIG_HOME": str(tmp_path / "config")}


@pytest.fixture
def repo(tmp_path: Path, world: dict[str, str]) -> Path:
    root = tmp_path / "repo"
    (root / "src").mkdir(parents=True)
    (root / "README.md").write_text("# Client demo\n")
    (root / "src" / "main.py").write_text("print('hi')\n")
    for args in (["init", "-q", "-b", "main"], ["add", "-A"], ["commit", "-qm", "init"]):
        git(root, *args)
    return root


async def test_async_client_typed_results(repo: Path, world: dict[str, str]):
    async with await AsyncClient.spawn(root=repo, env=world, timeout=30,
                                       options={"model": "gpt-4o"}) as client:
        assert client.server_info["name"] == "ctxlayer"
        counted = await client.count(texts=["hello world"], messages=[
            protocol.Message(role="user", content="hello world")])
        assert isinstance(counted, protocol.CountResult)
        n = counter_for("gpt-4o").count("hello world")
        framed = n + OPENAI_FORMAT.per_message  # the message with its framing and role
        assert counted.tokens == [n, framed] and counted.total == n + framed + 3

        seg = await client.segment()
        assert isinstance(seg, protocol.WorkspaceSegment) and "main.py" in seg.text

        trimmed = await client.trim([protocol.Message(role="user", content="w " * 500, id="a"),
                                     protocol.Message(role="user", content="short", id="b")],
                                    budget=50)
        assert isinstance(trimmed, protocol.TrimResult)
        assert [m.id for m in trimmed.messages] == ["b"] and trimmed.dropped[0].message_id == "a"

        prompt = await client.system_prompt(identity="You are a test.")
        assert prompt.messages[0].role == "system" and prompt.tokens > 0


async def test_errors_carry_code_and_field(world: dict[str, str]):
    async with await AsyncClient.spawn(env=world, timeout=30) as client:
        with pytest.raises(RpcError) as err:
            await client.request("ctx/count", {"texts": [1]})
        assert err.value.code == -32602 and err.value.data == {"field": "texts[0]"}


async def test_segment_changed_subscription(repo: Path, world: dict[str, str]):
    async with await AsyncClient.spawn(root=repo, env=world, timeout=30) as client:
        seen: list[protocol.SegmentChanged] = []
        off = client.on("ctx/segmentChanged", seen.append)
        await client.segment()
        (repo / "src" / "extra.py").write_text("Z = 3\n")
        note = await client.wait_for("ctx/segmentChanged", lambda n: "tree" in n.changed)
        assert isinstance(note, protocol.SegmentChanged) and note in seen
        off()


async def test_every_request_times_out(tmp_path: Path):
    silent = [sys.executable, "-c", "import sys; sys.stdin.buffer.read()"]
    with pytest.raises(TimeoutError, match="initialize"):
        await AsyncClient.spawn(silent, timeout=0.5)


async def test_a_daemon_that_dies_fails_pending_requests():
    dying = [sys.executable, "-c", "import sys; sys.stdin.buffer.readline()"]
    with pytest.raises(ConnectionClosed):
        await AsyncClient.spawn(dying, timeout=30)


def test_blocking_client(repo: Path, world: dict[str, str]):
    with Client.spawn(root=repo, env=world, timeout=30) as client:
        assert client.count(texts=["a b c"]).total == counter_for(None).count("a b c")
        assert "README" in client.segment().text
        with pytest.raises(RpcError):
            client.call("ctx/trim", {"messages": "nope"})


async def test_async_subscribers_run(world: dict[str, str]):
    async with await AsyncClient.spawn(env=world, timeout=30) as client:
        plain: list[protocol.Budget] = []
        awaited: list[protocol.Budget] = []
        answered: list[int] = []

        async def on_budget(budget: protocol.Budget) -> None:
            awaited.append(budget)
            # runs beside the reading, so it may itself ask the daemon
            answered.append((await client.count(texts=["a"])).total)

        client.on("ctx/budgetChanged", plain.append)
        client.on("ctx/budgetChanged", on_budget)
        await client.request("ctx/session/open", {"sessionId": "s"})
        await client.request("ctx/session/append", {
            "sessionId": "s", "messages": [{"role": "user", "content": "hi"}]})
        for _ in range(100):
            if len(answered) >= len(plain) >= 1:
                break
            await asyncio.sleep(0.05)
        assert plain and awaited == plain
        assert len(answered) == len(plain) and all(n > 0 for n in answered)


def test_blocking_client_called_from_its_subscriber_fails_at_once(world: dict[str, str]):
    with Client.spawn(env=world, timeout=3) as client:
        failures: list[BaseException] = []

        def on_budget(_budget: protocol.Budget) -> None:
            try:
                client.count(texts=["a"])
            except BaseException as exc:  # the test reports whichever it is
                failures.append(exc)

        client.on("ctx/budgetChanged", on_budget)
        client.call("ctx/session/open", {"sessionId": "s"})
        client.call("ctx/session/append", {
            "sessionId": "s", "messages": [{"role": "user", "content": "hi"}]})
        started = time.monotonic()
        while not failures and time.monotonic() - started < 2:
            time.sleep(0.05)
        # said at once (it waited timeout + 5 s, then an empty TimeoutError), and why
        assert failures and isinstance(failures[0], RuntimeError), failures
        assert "subscriber" in str(failures[0]) and "thread" in str(failures[0])
        assert client.count(texts=["a"]).total > 0  # nobody else was held meanwhile


async def test_typed_methods_take_a_timeout(repo: Path, world: dict[str, str]):
    hi = [protocol.Message(role="user", content="hi")]
    async with await AsyncClient.spawn(root=repo, env=world, timeout=30) as client:
        assert "main.py" in (await client.segment(timeout=60)).text
        assert (await client.count(texts=["hi"], timeout=60)).total > 0
        assert (await client.trim(hi, budget=1000, timeout=60)).messages == hi
        assert (await client.system_prompt(identity="Test.", timeout=60)).tokens > 0
    with Client.spawn(root=repo, env=world, timeout=30) as blocking:
        assert "main.py" in blocking.segment(timeout=60).text
        assert blocking.count(texts=["hi"], timeout=60).total > 0
        assert blocking.trim(hi, budget=1000, timeout=60).messages == hi
        assert blocking.system_prompt(identity="Test.", timeout=60).tokens > 0


async def test_a_request_its_caller_gave_up_is_not_stored(world: dict[str, str]):
    # cancelled from outside (asyncio.wait_for around the call) while it waited for its
    # session behind a large append, the small append still ran and was stored (301
    # messages): the client told the daemon only on its own timeout, so a retry stored it twice
    big = [{"role": "user", "content": f"line {i} " * 4000, "id": f"b{i}"} for i in range(300)]
    small = [{"role": "user", "content": "the small one", "id": "small"}]
    async with await AsyncClient.spawn(env=world, timeout=60) as client:
        await client.call("ctx/session/open", {"sessionId": "s", "budget": 100_000})
        slow = asyncio.ensure_future(
            client.call("ctx/session/append", {"sessionId": "s", "messages": big}))
        await asyncio.sleep(0.05)
        with pytest.raises(TimeoutError):  # given up while the large one still runs
            await asyncio.wait_for(
                client.call("ctx/session/append", {"sessionId": "s", "messages": small}), 0.3)
        assert not slow.done()
        await slow
        listed = await client.call("ctx/session/list", {})
        assert [(s.session_id, s.messages) for s in listed.sessions] == [("s", 300)]
        page = await client.call("ctx/inspect", {"sessionId": "s"})
        assert "the small one" not in page.html


def test_the_blocking_client_closes_once_and_says_so_after(world: dict[str, str]):
    # a second close() raised "Event loop is closed" (and warned of a coroutine never
    # awaited), so did a `with` block whose body closed the client; a call after close raised
    # RuntimeError, not ConnectionClosed
    with warnings.catch_warnings(record=True) as warned:
        warnings.simplefilter("always")
        client = Client.spawn(env=world, timeout=30)
        assert client.count(texts=["a"]).total > 0
        assert client.close() == 0
        assert client.close() == 0  # the same answer, nothing done again
        with pytest.raises(ConnectionClosed, match="the client is closed"):
            client.count(texts=["a"])
        with Client.spawn(env=world, timeout=30) as inner:
            assert inner.close() == 0
        gc.collect()  # a coroutine never awaited is reported when it is collected
    assert [str(w.message) for w in warned if "never awaited" in str(w.message)] == []


async def test_count_takes_a_provider_format_and_its_system(world: dict[str, str]):
    # count() had no format nor system (TypeError), though ctx/count takes them as trim does
    openai = [{"role": "system", "content": "be terse"},
              {"role": "user", "content": [{"type": "text", "text": "hi"}]}]
    hi = [{"role": "user", "content": "hi"}]
    async with await AsyncClient.spawn(env=world, timeout=30) as client:
        counted = await client.count(messages=openai, format="openai")
        assert counted == await client.call("ctx/count", {"messages": openai, "format": "openai"})
        bare = await client.count(messages=hi, format="anthropic")
        told = await client.count(messages=hi, format="anthropic", system="You are terse.")
        # one entry per message sent; the system, kept apart by the format, apart
        assert told.total > bare.total and told.tokens == bare.tokens
        assert told.system_tokens and told.total == bare.total + told.system_tokens
        with pytest.raises(RpcError) as err:  # a format without a separate system
            await client.count(messages=openai, format="openai", system="x")
        assert err.value.data.get("field") == "system"
    with Client.spawn(env=world, timeout=30) as blocking:
        assert blocking.count(messages=hi, format="anthropic", system=[
            {"type": "text", "text": "You are terse."}]).total == told.total


async def test_small_misuses_say_what_they_are(world: dict[str, str]):
    # an unsubscriber called twice raised ValueError; call() of a method outside the protocol
    # a bare KeyError; wait_for timing out a TimeoutError with an empty message
    async with await AsyncClient.spawn(env=world, timeout=30) as client:
        off = client.on("ctx/budgetChanged", lambda _budget: None)
        off()
        off()  # nothing left to do, nothing raised
        assert client._subscribers["ctx/budgetChanged"] == []
        with pytest.raises(ValueError, match="shutdownx: not a request of the ctxlayer"):
            await client.call("shutdownx")
        with pytest.raises(TimeoutError,
                           match=r"ctx/budgetChanged: no such notification within 0\.3s"):
            await client.wait_for("ctx/budgetChanged", timeout=0.3)
        assert (await client.count(texts=["still here"])).total > 0


def test_a_blocking_call_interrupted_is_cancelled_at_the_daemon(world: dict[str, str]):
    # Ctrl-C during a blocking call left its request running: a small append waiting for its
    # session behind a large one was stored all the same
    big = [{"role": "user", "content": f"line {i} " * 4000, "id": f"b{i}"} for i in range(300)]
    small = [{"role": "user", "content": "the small one", "id": "small"}]
    with Client.spawn(env=world, timeout=60) as client:
        client.call("ctx/session/open", {"sessionId": "s", "budget": 100_000})
        slow = threading.Thread(target=client.call, args=(
            "ctx/session/append", {"sessionId": "s", "messages": big}))
        slow.start()
        time.sleep(0.05)
        # a real SIGINT, as Ctrl-C sends: it interrupts the wait for the answer
        threading.Timer(0.3, os.kill, (os.getpid(), signal.SIGINT)).start()
        with pytest.raises(KeyboardInterrupt):
            client.call("ctx/session/append", {"sessionId": "s", "messages": small})
        assert slow.is_alive()  # interrupted while the large one still ran
        slow.join(60)
        listed = client.call("ctx/session/list", {})
        assert [(s.session_id, s.messages) for s in listed.sessions] == [("s", 300)]


async def test_the_folder_goes_as_named_so_the_agent_files_on_its_way_are_read(
        tmp_path: Path, world: dict[str, str], monkeypatch: pytest.MonkeyPatch):
    """~/work a symlink to another disk, the client opened on ~/work/proj: it resolved the
    folder before sending it, so the daemon never saw ~/work and left ~/work/AGENTS.md out.
    A relative folder is taken from the shell's $PWD (getcwd() is the resolved one)."""
    disk = tmp_path / "otherdisk" / "work"
    (disk / "proj").mkdir(parents=True)
    (disk / "AGENTS.md").write_text("WORK RULE: use tabs\n")
    (disk / "proj" / "README.md").write_text("# Proj\n")
    git(disk / "proj", "init", "-q", "-b", "main")
    named = tmp_path / "home" / "work" / "proj"
    os.symlink(disk, tmp_path / "home" / "work")
    async with await AsyncClient.spawn(root=named, env=world, timeout=30) as client:
        assert "WORK RULE" in (await client.segment()).text
    monkeypatch.chdir(named)
    monkeypatch.setenv("PWD", str(named))
    async with await AsyncClient.spawn(root=".", env=world, timeout=30) as client:
        assert "WORK RULE" in (await client.segment()).text
