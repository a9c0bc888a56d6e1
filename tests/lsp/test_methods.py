"""End to end over real stdio with pytest-lsp: every ctxlayer method on a real git repository,
and the segment following an edit, a `git add`, a branch switch and a save."""

from __future__ import annotations

import asyncio
import itertools
from pathlib import Path

import pytest
import pytest_lsp
from conftest import ENV, SERVE, WORLD, git, make_repo, write
from lsprotocol import types
from pygls.exceptions import JsonRpcException
from pytest_lsp import ClientServerConfig, LanguageClient

from ctxlayer import protocol
from ctxlayer.tokenizers import counter_for

pytestmark = [pytest.mark.e2e, pytest.mark.asyncio(loop_scope="module")]
_repos = itertools.count()
TIMEOUT = 30


@pytest_lsp.fixture(scope="module",
                    config=ClientServerConfig(server_command=SERVE, server_env=ENV))
async def client(lsp_client: LanguageClient):
    root = make_repo(WORLD / f"methods-{next(_repos)}")
    result = await lsp_client.initialize_session(types.InitializeParams(
        capabilities=types.ClientCapabilities(),
        workspace_folders=[types.WorkspaceFolder(uri=root.as_uri(), name="demo")],
        initialization_options={"model": "gpt-4o"},
    ))
    lsp_client.init_result = result  # type: ignore[attr-defined]
    lsp_client.root = root  # type: ignore[attr-defined]
    yield
    await lsp_client.shutdown_session()


def plain(value):
    """pygls' client hands back namedtuples for custom results: make them dicts again."""
    if hasattr(value, "_asdict"):
        return {k: plain(v) for k, v in value._asdict().items()}
    if isinstance(value, list | tuple):
        return [plain(v) for v in value]
    return value


async def call(client: LanguageClient, method: str, params: dict | None = None):
    return plain(await asyncio.wait_for(
        client.protocol.send_request_async(method, params if params is not None else {}),
        TIMEOUT))


async def notification(client: LanguageClient, method: str) -> dict:
    return plain(await client.wait_for_notification(method))


async def test_initialize_announces_ctxlayer(client: LanguageClient):
    result = client.init_result  # type: ignore[attr-defined]
    assert result.server_info.name == "ctxlayer"
    ctx = result.capabilities.experimental["ctxlayer"]
    assert ctx["protocolVersion"] == "0.1"
    assert set(ctx["methods"]) == set(protocol.REQUESTS)
    assert result.capabilities.text_document_sync.save is not None
    # the workspace's defaults, so editors read them instead of guessing
    assert ctx["defaultMode"] == "deep" and set(ctx["modes"]) == {"short", "deep", "debug"}
    assert ctx["modes"]["short"]["cap"] > 0 and ctx["defaultBudget"] > 0


async def test_segment_has_every_part_of_the_repo(client: LanguageClient):
    seg = await call(client, "ctx/segment")
    assert [p["name"] for p in seg["parts"]] == ["agentFiles", "skills", "files", "tree", "git"]
    parts = {p["name"]: p for p in seg["parts"]}
    assert "make test" in parts["agentFiles"]["text"]
    assert "# Demo" in parts["files"]["text"]
    assert "app.py" in parts["tree"]["text"]
    assert "main" in parts["git"]["text"]
    assert seg["version"] >= 1 and len(seg["hash"]) == 16
    assert seg["tokens"] == sum(p["tokens"] for p in seg["parts"]) or seg["tokens"] > 0


async def test_count_texts_and_messages(client: LanguageClient):
    counter = counter_for("gpt-4o")
    text = "The quick brown fox jumps over the lazy dog."
    result = await call(client, "ctx/count", {"texts": [text, ""]})
    assert result == {"tokens": [counter.count(text), 0], "total": counter.count(text)}
    result = await call(client, "ctx/count", {
        "messages": [{"role": "user", "content": text}], "texts": ["hi"]})
    assert result["tokens"] == [counter.count("hi"), counter.count(text) + 4]  # framing, role
    assert result["total"] == sum(result["tokens"]) + 3


async def test_count_with_a_model_of_another_encoding(client: LanguageClient):
    text = "def main():\n    return 42\n" * 20
    result = await call(client, "ctx/count", {"texts": [text], "model": "gpt-4"})
    assert result["tokens"] == [counter_for("gpt-4").count(text)]


@pytest.mark.parametrize(("params", "field"), [
    ({"texts": "hello"}, "texts"),
    ({"texts": ["ok", 5]}, "texts[1]"),
    ({"messages": [{"role": "user", "content": "a"}, {"role": "robot", "content": "b"}]},
     "messages[1].role"),
    ({"messages": [{"content": "no role"}]}, "messages[0].role"),
    ({"model": 4}, "model"),
])
async def test_count_names_the_bad_field(client: LanguageClient, params: dict, field: str):
    with pytest.raises(JsonRpcException) as err:
        await call(client, "ctx/count", params)
    assert err.value.code == -32602
    assert field in err.value.message


async def test_trim_fits_the_budget_and_reports_drops(client: LanguageClient):
    messages = [{"role": "system", "content": "You are terse.", "id": "s"}]
    messages += [{"role": "user" if i % 2 == 0 else "assistant", "id": f"m{i}",
                  "content": f"message {i} " + "words " * 200} for i in range(12)]
    result = await call(client, "ctx/trim", {"messages": messages, "budget": 800})
    assert result["budget"] == 800
    assert result["tokens"] <= 800
    kept = [m["id"] for m in result["messages"]]
    assert kept[0] == "s" and kept[-1] == "m11"
    assert result["dropped"], "something had to go"
    assert all(e["reason"] for e in result["dropped"])


async def test_trim_default_budget_is_window_minus_reserve(client: LanguageClient):
    result = await call(client, "ctx/trim", {
        "messages": [{"role": "user", "content": "hi"}], "reserveOutput": 1000})
    assert result["budget"] == 128_000 - 1000
    result = await call(client, "ctx/trim", {"messages": [{"role": "user", "content": "hi"}]})
    assert result["budget"] == 128_000 - 16_384


async def test_trim_errors(client: LanguageClient):
    with pytest.raises(JsonRpcException) as err:
        await call(client, "ctx/trim", {"messages": [{"role": "user", "content": "x"}],
                                        "budget": "big"})
    assert err.value.code == -32602 and "budget" in err.value.message
    with pytest.raises(JsonRpcException) as err:
        await call(client, "ctx/trim", {"messages": [{"role": "user", "content": "x"}],
                                        "budget": 0})
    assert err.value.code == -32602 and "budget" in err.value.message
    with pytest.raises(JsonRpcException) as err:
        await call(client, "ctx/trim", {})
    assert err.value.code == -32602 and "messages" in err.value.message
    pinned = [{"role": "system", "content": "rule " * 500, "pinned": True}]
    with pytest.raises(JsonRpcException) as err:
        await call(client, "ctx/trim", {"messages": pinned, "budget": 50})
    assert err.value.code == -32001


async def test_trim_embeds_attached_files_and_refuses_paths_outside(client: LanguageClient):
    root: Path = client.root  # type: ignore[attr-defined]
    write(root, "notes.txt", "remember the 42 widgets\n")
    msgs = [{"role": "user", "content": "read this", "id": "u1", "files": ["notes.txt"]}]
    result = await call(client, "ctx/trim", {"messages": msgs, "budget": 1000})
    assert "```notes.txt\nremember the 42 widgets\n```" in result["messages"][0]["content"]
    for outside in ("../outside.txt", "/etc/hostname"):
        bad = [{"role": "user", "content": "x", "files": ["notes.txt", outside]}]
        with pytest.raises(JsonRpcException) as err:
            await call(client, "ctx/trim", {"messages": bad, "budget": 1000})
        assert err.value.code == -32003 and "messages[0].files[1]" in err.value.message


async def test_system_prompt_caches_the_workspace(client: LanguageClient):
    seg = await call(client, "ctx/segment")
    result = await call(client, "ctx/systemPrompt", {"tools": [
        {"name": "shell", "instructions": "Run a command."}],
        "dynamic": {"contextCmd": "date: today"}})
    sections = {s["name"]: s for s in result["sections"]}
    for part in ("tree", "git", "agentFiles", "files"):
        assert sections[part]["cacheable"] is True
    boundary = result["cacheBoundary"]
    assert boundary is not None
    cached = "\n".join(m["content"] for m in result["messages"][:boundary])
    assert "app.py" in cached and "make test" in cached
    assert "today" not in cached
    assert any(p["text"] and p["text"].splitlines()[0] in cached for p in seg["parts"])
    assert result["tokens"] > seg["tokens"]


async def test_an_include_without_a_context_mode_selects_those_parts(client: LanguageClient):
    """`include` was ignored unless contextMode was 'selective' (every part sent, nothing
    said), while the CLI's --include implies it; with contextMode 'full' a warning says so."""
    result = await call(client, "ctx/systemPrompt", {"include": ["git"]})
    assert [s["name"] for s in result["sections"]] == ["identity", "git"]
    assert not result.get("warnings")
    full = await call(client, "ctx/systemPrompt", {"include": ["git"], "contextMode": "full"})
    assert {"tree", "git", "files"} <= {s["name"] for s in full["sections"]}
    assert any("include is ignored" in w and "'full'" in w for w in full["warnings"])


async def test_unknown_method_is_refused(client: LanguageClient):
    with pytest.raises(JsonRpcException) as err:
        await call(client, "ctx/nope")
    assert err.value.code == -32601


async def changed_until(client: LanguageClient, predicate) -> dict:
    """Wait for segmentChanged notifications until ctx/segment satisfies `predicate`."""
    async def wait() -> dict:
        while True:
            seg = await call(client, "ctx/segment")
            if predicate(seg):
                return seg
            # a notification that came between the answer and this wait is not waited for
            # again: look at the segment once a second in any case
            try:
                await asyncio.wait_for(notification(client, "ctx/segmentChanged"), 1.0)
            except TimeoutError:
                pass

    return await asyncio.wait_for(wait(), TIMEOUT)


def part(seg: dict, name: str) -> str:
    return next(p["text"] for p in seg["parts"] if p["name"] == name)


async def test_segment_follows_edit_add_and_branch_switch(client: LanguageClient):
    root: Path = client.root  # type: ignore[attr-defined]
    before = await call(client, "ctx/segment")

    write(root, "src/new_module.py", "X = 1\n")
    seg = await changed_until(client, lambda s: "new_module.py" in part(s, "tree"))
    assert seg["hash"] != before["hash"] and seg["version"] > before["version"]

    git(root, "add", "src/new_module.py")
    staged = await changed_until(client, lambda s: part(s, "git") != part(seg, "git"))
    assert "new_module.py" in part(staged, "git")

    git(root, "commit", "-qm", "add module")
    git(root, "checkout", "-q", "-b", "feature-x")
    switched = await changed_until(client, lambda s: "feature-x" in part(s, "git"))
    assert switched["version"] > staged["version"]


async def test_segment_changed_notification_carries_the_change(client: LanguageClient):
    root: Path = client.root  # type: ignore[attr-defined]
    write(root, "NOTES.txt", "a new top-level file\n")

    async def wait() -> object:
        while True:
            note = await notification(client, "ctx/segmentChanged")
            if "tree" in note["changed"]:
                return note

    note = await asyncio.wait_for(wait(), TIMEOUT)
    seg = await call(client, "ctx/segment")
    assert set(note) == {"hash", "version", "tokens", "changed"}
    assert note["version"] <= seg["version"]
    assert "NOTES.txt" in part(seg, "tree")


async def test_did_save_refreshes(client: LanguageClient):
    root: Path = client.root  # type: ignore[attr-defined]
    readme = write(root, "README.md", "# Demo\n\nSaved with new words: zebra.\n")
    client.text_document_did_save(types.DidSaveTextDocumentParams(
        text_document=types.TextDocumentIdentifier(uri=readme.as_uri())))
    seg = await changed_until(client, lambda s: "zebra" in part(s, "files"))
    assert "zebra" in seg["text"]
