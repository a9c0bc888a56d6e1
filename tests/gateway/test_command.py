"""`ctxlayer gateway` as a user runs it, and a real chat CLI nobody here wrote (`llm`, from
PyPI) configured against the gateway, both as subprocesses."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import anthropic
import httpx2 as httpx
import openai
import pytest
from providers.standin import StandinThread

SECRET_OPENAI = "sk-proj-SECRET0penAIkey123456"
SECRET_ANTHROPIC = "sk-ant-SECRETanthropicKey987"


def hermetic(base: Path) -> dict[str, str]:
    for d in ("home", "config", "state"):
        (base / d).mkdir(exist_ok=True)
    return {**os.environ, "HOME": str(base / "home"), "XDG_CONFIG_HOME": str(base / "config"),
            "CTXLAYER_STATE_DIR": str(base / "state"), "PYTHONUNBUFFERED": "1"}


def gateway_process(cwd: Path, env: dict[str, str], *flags: str) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "ctxlayer", "gateway", *flags], cwd=cwd,
                            env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def test_the_command_announces_serves_and_never_logs_keys(tmp_path: Path):
    env = hermetic(tmp_path)
    root = tmp_path / "project"
    root.mkdir()
    with StandinThread() as standin:
        # the Anthropic upstream from the user's config, the OpenAI one from the flag
        (tmp_path / "config" / "ctxlayer").mkdir()
        (tmp_path / "config" / "ctxlayer" / "ctxlayer.toml").write_text(
            f'[gateway]\nanthropic_base_url = "{standin.anthropic}"\n')
        proc = gateway_process(root, env, "--port", "0", "--upstream-openai", standin.openai,
                               "-vv")
        try:
            line = json.loads(proc.stdout.readline())
            assert set(line) == {"host", "port", "openai", "anthropic", "pid"}
            assert line["host"] == "127.0.0.1" and line["pid"] == proc.pid
            assert line["openai"] == f"http://127.0.0.1:{line['port']}/v1"
            oa = openai.OpenAI(base_url=line["openai"], api_key=SECRET_OPENAI, max_retries=0)
            done = oa.chat.completions.create(
                model="gpt-4o", messages=[{"role": "user", "content": "hi"}])
            assert done.choices[0].message.content.startswith("stand-in answer")
            an = anthropic.Anthropic(base_url=line["anthropic"], api_key=SECRET_ANTHROPIC,
                                     max_retries=0)
            with an.messages.stream(model="claude-sonnet-4", max_tokens=20,
                                    messages=[{"role": "user", "content": "hi"}]) as s:
                assert "stand-in" in "".join(s.text_stream)
            seen = standin.requests()
            assert [r["path"] for r in seen] == ["/v1/chat/completions", "/v1/messages"]
            # `ctxlayer chats` finds the running gateway by itself and lists both chats
            chats = subprocess.run([sys.executable, "-m", "ctxlayer", "chats", "--json"],
                                   env=env, capture_output=True, text=True, timeout=60)
            assert chats.returncode == 0, chats.stderr
            listed = json.loads(chats.stdout)["conversations"]
            assert {c["model"] for c in listed} == {"gpt-4o", "claude-sonnet-4"}
            assert all(c["source"] == "gateway" and c["tokens"] > 0 for c in listed)
            # never through the environment's proxy (nothing listens on port 9): urllib sent
            # the request for 127.0.0.1, and the state folder's token, to HTTP_PROXY
            proxy = "http://127.0.0.1:9"
            proxied = subprocess.run(
                [sys.executable, "-m", "ctxlayer", "chats", "--json"], capture_output=True,
                env={**env, "HTTP_PROXY": proxy, "http_proxy": proxy, "ALL_PROXY": proxy},
                text=True, timeout=60)
            assert proxied.returncode == 0, proxied.stderr
            table = subprocess.run([sys.executable, "-m", "ctxlayer", "chats"], env=env,
                                   capture_output=True, text=True, timeout=60)
            assert "gpt-4o" in table.stdout and "claude-sonnet-4" in table.stdout
            why = subprocess.run([sys.executable, "-m", "ctxlayer", "chats", "--why",
                                  listed[0]["conversationId"]], env=env, capture_output=True,
                                 text=True, timeout=60)
            assert why.returncode == 0 and "nothing was dropped" in why.stdout
            # a message id the turn does not hold said "nothing was dropped or shortened"
            cid = listed[0]["conversationId"]
            unknown = subprocess.run([sys.executable, "-m", "ctxlayer", "chats", "--why", cid,
                                      "--message", "zzz"], env=env, capture_output=True,
                                     text=True, timeout=60)
            assert unknown.returncode == 2 and unknown.stdout == ""
            assert unknown.stderr == (f"ctxlayer chats: no message 'zzz' in the last turn of "
                                      f"conversation '{cid}'\n")
            # a model name with a line break is one line of the log, not a forged second one
            with contextlib.suppress(openai.APIStatusError):
                oa.chat.completions.create(model="gpt-4o\nERROR forged line",
                                           messages=[{"role": "user", "content": "hi"}])
        finally:
            proc.terminate()
            _, stderr = proc.communicate(timeout=30)
    assert proc.returncode == 0, stderr
    assert "gateway listening" in stderr and "openai gpt-4o -> 200" in stderr
    assert "openai gpt-4o\\nERROR forged line -> " in stderr
    assert not any(line.startswith("ERROR forged") for line in stderr.splitlines())
    for secret in (SECRET_OPENAI, SECRET_ANTHROPIC):
        assert secret not in stderr
        for path in (tmp_path / "state").rglob("*"):
            if path.is_file():
                assert secret.encode() not in path.read_bytes(), path
    assert not (tmp_path / "state" / "gateway.json").exists()  # gone with the gateway


def test_a_project_cannot_name_where_the_gateway_sends_the_users_key(tmp_path: Path):
    """`ctxlayer gateway` started in a project whose own ctxlayer.toml names an upstream sent
    every request, the user's API key with it, to that server. The project's upstream is
    refused, said in the log: the request goes where the user's settings say (here the
    default, unreachable without a network), never to the project's server."""
    env = hermetic(tmp_path)
    root = tmp_path / "cloned"
    root.mkdir()
    with StandinThread() as collector:
        (root / "ctxlayer.toml").write_text(
            f'[gateway]\nopenai_base_url = "{collector.openai}"\n'
            f'anthropic_base_url = "{collector.anthropic}"\nconnect_timeout = 2.0\n')
        proc = gateway_process(root, env, "--port", "0")
        try:
            line = json.loads(proc.stdout.readline())
            oa = openai.OpenAI(base_url=line["openai"], api_key=SECRET_OPENAI, max_retries=0,
                               timeout=60)
            with contextlib.suppress(openai.APIError):
                oa.chat.completions.create(model="gpt-4o",
                                           messages=[{"role": "user", "content": "hi"}])
            assert collector.requests() == []
        finally:
            proc.terminate()
            _, stderr = proc.communicate(timeout=30)
    assert "`gateway.openai_base_url` is read only from your own ctxlayer.toml" in stderr
    assert "`gateway.anthropic_base_url` is read only" in stderr
    assert SECRET_OPENAI not in stderr


def inotify_instances(pid: int) -> int:
    """inotify instances the process holds (Linux: its open descriptors' targets; one closed
    while they are read is not one)."""
    found = 0
    for fd in Path(f"/proc/{pid}/fd").iterdir():
        try:
            found += os.readlink(fd) == "anon_inode:inotify"
        except OSError:
            continue
    return found


@pytest.mark.skipif(not Path("/proc/self/fd").is_dir(), reason="reads /proc (Linux)")
def test_the_gateway_neither_scans_nor_watches_its_workspace(tmp_path: Path):
    """It shows no workspace segment: in a 50k-file repository its watcher cost 53 MB and
    130 ms of processor per file an agent saved. Its settings are the workspace's all the
    same."""
    env = hermetic(tmp_path)
    root = tmp_path / "project"
    (root / "src").mkdir(parents=True)
    for k in range(20):
        (root / "src" / f"m{k}.py").write_text(f"x = {k}\n")
    subprocess.run(["git", "init", "-q"], cwd=root, check=True)
    with StandinThread(windows={"standin-small": 4096}) as standin:
        (root / "ctxlayer.toml").write_text('[gateway]\nmodels = {"standin-small" = 4096}\n')
        proc = gateway_process(root, env, "--port", "0", "--upstream-openai", standin.openai,
                               "-vv")
        try:
            line = json.loads(proc.stdout.readline())
            oa = openai.OpenAI(base_url=line["openai"], api_key="sk-x", max_retries=0)
            long = [{"role": "user", "content": f"question {k} " + "word " * 400}
                    for k in range(12)]
            chat = [m for k, u in enumerate(long) for m in (
                u, {"role": "assistant", "content": f"answer {k}"})][:-1]
            oa.chat.completions.create(model="standin-small", messages=chat)
            sent = standin.requests()[-1]["body"]["messages"]
            assert len(sent) < len(chat)  # fitted to the window the workspace's config names
            (root / "src" / "new.py").write_text("y = 1\n")
            assert inotify_instances(proc.pid) == 0
        finally:
            proc.terminate()
            _, stderr = proc.communicate(timeout=30)
    assert proc.returncode == 0, stderr
    # what a live workspace logs once its first scan is done, and on each change
    assert " tokens, hash " not in stderr and "segment changed" not in stderr


@pytest.mark.parametrize("command", [
    ["chats", "--url", "http://example.com:8787"],  # it would send the token there
    ["serve", "--tcp", "--host", "0.0.0.0", "--port", "0"],  # the token would cross the net
])
def test_the_token_goes_to_loopback_only(tmp_path: Path, command):
    p = subprocess.run([sys.executable, "-m", "ctxlayer", *command], env=hermetic(tmp_path),
                       capture_output=True, text=True, timeout=60)
    assert p.returncode == 2 and "loopback only" in p.stderr, p.stderr
    assert len(p.stderr.strip().splitlines()) == 1


def test_chats_without_a_gateway_says_how_to_start_one(tmp_path: Path):
    env = hermetic(tmp_path)
    p = subprocess.run([sys.executable, "-m", "ctxlayer", "chats"], env=env,
                       capture_output=True, text=True, timeout=60)
    assert p.returncode == 2 and "no gateway is running" in p.stderr
    assert len(p.stderr.strip().splitlines()) == 1


@pytest.mark.parametrize("flags, needle", [
    (["--host", "0.0.0.0"], "loopback only"),
    (["--host", "192.168.0.10"], "loopback only"),
    (["--upstream-openai", "api.openai.com"], "http:// or https://"),
    # each taken before and misused on every request: the query went before the path added
    # (`/v1?x=1/chat/completions`), the fragment cut it off, no host was a bare 500 each time
    (["--upstream-openai", "http://127.0.0.1:9/v1?x=1"], "--upstream-openai "),
    (["--upstream-openai", "http://127.0.0.1:9/v1#frag"], "a fragment"),
    (["--upstream-anthropic", "http://"], "--upstream-anthropic http://: no host"),
    (["--upstream-anthropic", "http://127.0.0.1:99999"], "the port must be"),
    (["--port", "70000"], "0 to 65535"),
])
def test_the_command_refuses_what_it_must_not_do(tmp_path: Path, flags, needle):
    proc = gateway_process(tmp_path, hermetic(tmp_path), *flags)
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 2
    assert out == ""
    assert needle in err and err.startswith("ctxlayer gateway: ") and "Traceback" not in err


@pytest.mark.parametrize("where", ["project", "user"])
@pytest.mark.parametrize("host", ["0.0.0.0", ""])
def test_a_host_from_a_settings_file_not_loopback_is_said_and_ignored(tmp_path: Path, where,
                                                                      host):
    """`[gateway] host = "0.0.0.0"` (or "") in a project's ctxlayer.toml made `ctxlayer
    gateway` exit 2: a cloned repository kept the user's gateway from running. An invalid
    value of a settings file is said once, naming the file, and ignored (README); the flag's
    is refused (above)."""
    env = hermetic(tmp_path)
    folder = tmp_path / "project" if where == "project" else tmp_path / "config" / "ctxlayer"
    folder.mkdir(parents=True)
    (folder / "ctxlayer.toml").write_text(f'[gateway]\nhost = "{host}"\n')
    (tmp_path / "project").mkdir(exist_ok=True)
    proc = gateway_process(tmp_path / "project", env, "--port", "0")
    try:
        announced = json.loads(proc.stdout.readline() or "{}")
    finally:
        proc.terminate()
        _, err = proc.communicate(timeout=60)
    assert announced.get("host") == "127.0.0.1", err
    said = [line for line in err.splitlines() if "gateway.host" in line]
    assert len(said) == 1 and str(folder / "ctxlayer.toml") in said[0], err
    assert "loopback only" in said[0] and "using the default '127.0.0.1'" in said[0]


def test_llm_cli_chats_through_the_gateway(stack, tmp_path: Path):
    user = tmp_path / "llm"
    user.mkdir()
    (user / "extra-openai-models.yaml").write_text(
        f"- model_id: ctxlayer-gpt-4o\n  model_name: gpt-4o\n"
        f"  api_base: \"{stack.openai_url}\"\n  api_key_name: ctxlayer\n")
    llm = Path(sys.executable).parent / "llm"
    env = {**os.environ, "LLM_USER_PATH": str(user), "HOME": str(tmp_path)}

    def say(*args: str) -> str:
        done = subprocess.run([str(llm), "-m", "ctxlayer-gpt-4o", "--key", "sk-llm-key", *args],
                              env=env, capture_output=True, text=True, timeout=120)
        assert done.returncode == 0, done.stderr
        return done.stdout

    assert "stand-in answer to 1 messages." in say("What does this project do?")
    assert "stand-in answer to 3 messages." in say("-c", "--no-stream", "And then?")
    first, second = stack.model_requests()
    assert first["stream"] is True and second["stream"] is False
    assert second["headers"]["authorization"] == "Bearer sk-llm-key"
    assert [m["role"] for m in second["body"]["messages"]] == ["user", "assistant", "user"]
    assert all(r["status"] == 200 and r["problems"] == [] for r in (first, second))


def test_two_gateways_on_one_state_folder_stopping_one_leaves_the_other_announced(
        tmp_path: Path):
    """Two daemons on one state folder (two editor windows with `[gateway] enabled`): the
    second gateway's announcement replaced the first's, and stopping it removed the file while
    the first still served: `ctxlayer chats` said no gateway was running."""
    env = hermetic(tmp_path)
    root = tmp_path / "project"
    root.mkdir()
    announced = tmp_path / "state" / "gateway.json"
    first = gateway_process(root, env, "--port", "0")
    try:
        a = json.loads(first.stdout.readline())
        second = gateway_process(root, env, "--port", "0")
        try:
            b = json.loads(second.stdout.readline())
            assert json.loads(announced.read_text())["port"] == b["port"]
        finally:
            second.terminate()
            second.communicate(timeout=30)
        assert json.loads(announced.read_text())["port"] == a["port"]
        chats = subprocess.run([sys.executable, "-m", "ctxlayer", "chats", "--json"], env=env,
                               capture_output=True, text=True, timeout=60)
        assert chats.returncode == 0, chats.stderr
    finally:
        first.terminate()
        first.communicate(timeout=30)
    assert not announced.exists()  # the last one takes it with it


def _stream_lines(url: str, body: dict, headers: dict[str, str],
                  opened: threading.Event) -> list[str]:
    """The lines of a streamed answer as its client reads them (`opened` once the first
    came), ending with how the stream ended: cleanly, or cut and how."""
    lines: list[str] = []
    try:
        with httpx.Client(timeout=150) as client, client.stream(
                "POST", url, json=body, headers=headers) as response:
            lines.append(f"status {response.status_code}")
            for line in response.iter_lines():
                if line:
                    lines.append(line)
                    opened.set()
        lines.append("closed")
    except httpx.HTTPError as exc:
        lines.append(f"cut: {type(exc).__name__}: {exc}")
    opened.set()
    return lines


def _said(line: str) -> dict:
    assert line.startswith("data: "), line
    return json.loads(line.removeprefix("data: "))


def test_a_stop_ends_the_streams_at_once_and_answers_every_request_under_way(tmp_path: Path):
    """SIGTERM with a stream open kept `ctxlayer gateway` up two minutes (aiohttp waited 60 s
    for the handlers, then 60 s more), then cut the stream without a word ("incomplete
    chunked read"); a client that gave up first was what let it exit. Now each open stream
    ends at once with its provider's error event, a plain answer under way still comes back
    within the grace, one that does not come is answered 503 naming the stop, and the
    process exits with the announcement gone."""
    env = hermetic(tmp_path)
    root = tmp_path / "project"
    root.mkdir()
    hi = [{"role": "user", "content": "hello"}]
    with StandinThread() as standin, ThreadPoolExecutor(4) as clients:
        proc = gateway_process(root, env, "--port", "0", "--upstream-openai", standin.openai,
                               "--upstream-anthropic", standin.anthropic)
        try:
            line = json.loads(proc.stdout.readline())
            oa_key = {"Authorization": "Bearer sk-test"}
            an_key = {"x-api-key": "sk-ant-test", "anthropic-version": "2023-06-01"}
            # a client whose connection is kept alive from an earlier request
            kept = httpx.Client(timeout=60)
            assert kept.post(f"{line['openai']}/chat/completions", json={
                "model": "gpt-4o", "messages": hi}, headers=oa_key).status_code == 200
            standin.fail(mode="stall", count=2)  # each stream's first event, then nothing
            chat_open, messages_open = threading.Event(), threading.Event()
            chat = clients.submit(_stream_lines, f"{line['openai']}/chat/completions", {
                "model": "gpt-4o", "stream": True, "messages": hi}, oa_key, chat_open)
            assert chat_open.wait(60)
            messages = clients.submit(_stream_lines, f"{line['anthropic']}/v1/messages", {
                "model": "claude-sonnet-4", "max_tokens": 20, "stream": True,
                "messages": hi}, an_key, messages_open)
            assert messages_open.wait(60)
            # held by the provider before a word of their answers
            standin.for_model("gpt-4o-mini", hold=True)
            standin.for_model("gpt-4.1", hold=True)
            plain = clients.submit(httpx.post, f"{line['openai']}/chat/completions", json={
                "model": "gpt-4o-mini", "messages": hi}, headers=oa_key, timeout=150)
            unanswered = clients.submit(httpx.post, f"{line['openai']}/responses", json={
                "model": "gpt-4.1", "input": "hello", "stream": True}, headers=oa_key,
                timeout=150)
            _wait_until(lambda: sum(bool(r.get("held")) for r in standin.requests()) == 2)
            proc.send_signal(signal.SIGTERM)
            chat_lines = chat.result(timeout=60)
            messages_lines = messages.result(timeout=60)
            # on the kept connection while the stop waits for the plain answer: it went to
            # the provider (and was paid for) only to be cut
            late = kept.post(f"{line['openai']}/chat/completions", json={
                "model": "gpt-4o", "messages": [{"role": "user", "content": "late question"}]},
                headers=oa_key)
            seen = json.dumps(standin.requests())
            standin.release_model("gpt-4o-mini")  # within the grace the stop gives it
            answered, refused = plain.result(timeout=60), unanswered.result(timeout=60)
        finally:
            standin.release_model("gpt-4.1")
            proc.terminate()
            try:
                _, stderr = proc.communicate(timeout=60)
            except subprocess.TimeoutExpired:
                proc.kill()
                raise
    assert proc.returncode == 0, stderr
    assert "Traceback" not in stderr
    assert chat_lines[0] == "status 200" and chat_lines[-1] == "closed", chat_lines
    error = _said(chat_lines[-2])["error"]
    assert error["code"] == "gateway_stopping" and "stopping" in error["message"]
    assert messages_lines[0] == "status 200" and messages_lines[-1] == "closed"
    assert messages_lines[-3] == "event: error", messages_lines
    said = _said(messages_lines[-2])
    assert said["type"] == "error" and said["error"]["type"] == "api_error"
    assert "stopping" in said["error"]["message"]
    assert answered.status_code == 200
    assert answered.json()["choices"][0]["message"]["content"]
    assert refused.status_code == 503
    assert refused.json()["error"]["code"] == "gateway_stopping"
    assert late.status_code == 503 and late.json()["error"]["code"] == "gateway_stopping"
    assert "late question" not in seen
    assert not (tmp_path / "state" / "gateway.json").exists()


def _wait_until(done: Callable[[], bool], seconds: float = 60) -> None:
    deadline = time.monotonic() + seconds
    while not done():
        assert time.monotonic() < deadline, "timed out waiting"
        time.sleep(0.05)


@pytest.mark.parametrize("named, where", [(".state", "project/.state"),
                                          ("~/ctxstate", "home/ctxstate")])
def test_a_relative_or_tilde_state_folder_serves_at_every_start(tmp_path: Path, named, where):
    """`CTXLAYER_STATE_DIR=.state`, or a `~` the shell never expanded (a quoted value): the
    folder was used as named, so a `~` folder was made in the working folder, and the second
    start, a database there, failed ("relative path can't be expressed as a file URI", exit
    1, its gateway.json left behind). Now it is made absolute where it is read."""
    env = {**hermetic(tmp_path), "CTXLAYER_STATE_DIR": named}
    root = tmp_path / "project"
    root.mkdir()
    state = tmp_path / where
    for start in (1, 2):
        proc = gateway_process(root, env, "--port", "0")
        try:
            line = proc.stdout.readline()
            assert line, f"start {start}: {proc.communicate(timeout=30)[1][-2000:]}"
            assert json.loads(line)["pid"] == proc.pid
            assert json.loads((state / "gateway.json").read_text())["pid"] == proc.pid
        finally:
            proc.terminate()
            _, err = proc.communicate(timeout=30)
        assert proc.returncode == 0, err[-2000:]
        assert "Traceback" not in err, err[-2000:]
        assert (state / "sessions.sqlite3").exists() and not (state / "gateway.json").exists()
    assert not (root / "~").exists()


def test_a_stop_repeated_while_the_gateway_ends_still_exits_cleanly(tmp_path: Path):
    """A supervisor that repeats its SIGTERM until the process is gone (the stop test's own
    cleanup did) killed the gateway in its last moments: once the event loop closed, its
    signal handlers were gone and the threads still being joined died with the signal
    (returncode -15 where the stop had gone well). A SIGTERM every millisecond from the first
    on: the process ends by itself, exit 0."""
    env = hermetic(tmp_path)
    root = tmp_path / "project"
    root.mkdir()
    with StandinThread() as standin:
        proc = gateway_process(root, env, "--port", "0", "--upstream-openai", standin.openai,
                               "--upstream-anthropic", standin.anthropic)
        try:
            line = json.loads(proc.stdout.readline())
            assert httpx.post(f"{line['openai']}/chat/completions", json={
                "model": "gpt-4o", "messages": [{"role": "user", "content": "hello"}]},
                headers={"Authorization": "Bearer sk-test"}, timeout=60).status_code == 200
            deadline = time.monotonic() + 60
            while proc.poll() is None and time.monotonic() < deadline:
                with contextlib.suppress(ProcessLookupError):
                    proc.send_signal(signal.SIGTERM)
                time.sleep(0.001)
        finally:
            if proc.poll() is None:
                proc.kill()
            _, stderr = proc.communicate(timeout=60)
    assert proc.returncode == 0, stderr
