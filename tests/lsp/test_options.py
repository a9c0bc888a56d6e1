"""A bad initialization option is reported and left out; the other options still apply."""

from __future__ import annotations

import pytest
from conftest import WORLD, RawDaemon, hermetic_env, make_repo

pytestmark = pytest.mark.e2e


async def test_one_bad_option_does_not_drop_the_others(tmp_path):
    root = make_repo(WORLD / f"options-{tmp_path.name}")
    daemon = await RawDaemon.start(env=hermetic_env(tmp_path / "world"))
    try:
        init = await daemon.request(0, "initialize", {
            "processId": None, "capabilities": {}, "rootUri": root.as_uri(),
            "initializationOptions": {"mode": "fast", "model": "claude-sonnet-4",
                                      "contextWindow": "big",
                                      "config": {"session": {"default_mode": "short"}}}})
        await daemon.send({"jsonrpc": "2.0", "method": "initialized", "params": {}})
        ours = init["result"]["capabilities"]["experimental"]["ctxlayer"]
        assert ours["model"] == "claude-sonnet-4"  # kept beside the two bad ones
        assert ours["defaultMode"] == "short"  # and so was the config

        text = await daemon.shown("initializationOptions")
        assert "initializationOptions.mode" in text and "initializationOptions.contextWindow" in text
    finally:
        assert await daemon.close() == 0


async def test_the_mode_given_at_initialize_is_the_connections_default(tmp_path):
    """`initializationOptions.mode` was read and never used: sessions opened without a mode,
    and the announced defaultMode, had the workspace's default (deep) whatever it said."""
    root = make_repo(WORLD / f"mode-{tmp_path.name}")
    env = hermetic_env(tmp_path / "world")
    for mode in ("short", "debug"):
        daemon = await RawDaemon.start(env=env)
        try:
            init = await daemon.request(0, "initialize", {
                "processId": None, "capabilities": {}, "rootUri": root.as_uri(),
                "initializationOptions": {"mode": mode}})
            await daemon.send({"jsonrpc": "2.0", "method": "initialized", "params": {}})
            ours = init["result"]["capabilities"]["experimental"]["ctxlayer"]
            assert ours["defaultMode"] == mode
            opened = await daemon.request(1, "ctx/session/open", {})
            assert opened["result"]["mode"] == mode
            named = await daemon.request(2, "ctx/session/open", {"mode": "deep"})
            assert named["result"]["mode"] == "deep"  # a session's own mode still wins
            budget = await daemon.request(3, "ctx/session/budget", {
                "sessionId": opened["result"]["sessionId"]})
            assert "result" in budget, budget
        finally:
            assert await daemon.close() == 0
    # a mode that is none of the modes is said once and left out: the workspace's default
    daemon = await RawDaemon.start(env=env)
    try:
        init = await daemon.request(0, "initialize", {
            "processId": None, "capabilities": {}, "rootUri": root.as_uri(),
            "initializationOptions": {"mode": "turbo"}})
        await daemon.send({"jsonrpc": "2.0", "method": "initialized", "params": {}})
        assert init["result"]["capabilities"]["experimental"]["ctxlayer"]["defaultMode"] == "deep"
        assert "initializationOptions.mode" in await daemon.shown("initializationOptions")
        opened = await daemon.request(1, "ctx/session/open", {})
        assert opened["result"]["mode"] == "deep"
    finally:
        assert await daemon.close() == 0
    said = [m for m in daemon.notifications if m.get("method") == "window/showMessage"
            and "initializationOptions.mode" in m["params"]["message"]]
    assert len(said) == 1, said


async def test_an_output_reserve_leaving_no_room_is_said_and_never_becomes_a_sessions_budget(
        tmp_path):
    """`reserveOutput` as large as the window was taken silently: every session opened under
    it was stored with a budget of one token, and stayed unable to assemble once the setting
    was fixed. A 4k `contextWindow` beside a model whose usual output is 8k did the same."""
    root = make_repo(WORLD / f"reserve-{tmp_path.name}")
    env = hermetic_env(tmp_path / "world")
    for n, options in enumerate(({"model": "claude-sonnet-4", "reserveOutput": 200_000},
                                 {"model": "claude-sonnet-4", "contextWindow": 4096},
                                 {"contextWindow": -1, "reserveOutput": -5})):
        daemon = await RawDaemon.start(env=env)
        try:
            await daemon.request(0, "initialize", {
                "processId": None, "capabilities": {}, "rootUri": root.as_uri(),
                "initializationOptions": options})
            await daemon.send({"jsonrpc": "2.0", "method": "initialized", "params": {}})
            opened = await daemon.request(1, "ctx/session/open", {"sessionId": f"s{n}"})
            budget = opened["result"]["budget"]
            assert budget >= 2048, options
            await daemon.request(2, "ctx/session/append", {"sessionId": f"s{n}", "messages": [
                {"role": "user", "content": "hello"}]})
            assembled = await daemon.request(3, "ctx/assemble", {"sessionId": f"s{n}"})
            assert "result" in assembled, assembled
            trimmed = await daemon.request(4, "ctx/trim", {
                "messages": [{"role": "user", "content": "hi"}], "reserveOutput": 10**6})
            assert trimmed["error"]["code"] == -32602
            assert "reserveOutput" in trimmed["error"]["message"]
        finally:
            assert await daemon.close() == 0
        said = [(m.get("params") or {}).get("message", "") for m in daemon.notifications
                if m.get("method") == "window/showMessage"]
        if "reserveOutput" in options:
            assert any("initializationOptions.reserveOutput" in text for text in said), said


async def test_the_folder_followed_leaving_the_workspace_is_said(tmp_path):
    """The daemon announced folder change notifications and ignored them: a client that
    removed the folder it follows saw its segment go on as if nothing had changed."""
    root = make_repo(WORLD / f"folders-{tmp_path.name}")
    other = make_repo(WORLD / f"folders-other-{tmp_path.name}")
    daemon = await RawDaemon.start(env=hermetic_env(tmp_path / "world"))
    try:
        await daemon.initialize(root)
        await daemon.send({"jsonrpc": "2.0", "method": "workspace/didChangeWorkspaceFolders",
                           "params": {"event": {
                               "added": [{"uri": other.as_uri(), "name": "other"}],
                               "removed": [{"uri": root.as_uri(), "name": "root"}]}}})
        text = await daemon.shown("left the")
        assert str(root.resolve()) in text and "restarted" in text
        segment = await daemon.request(1, "ctx/segment", {})
        assert "result" in segment, segment
    finally:
        assert await daemon.close() == 0


async def test_an_unknown_model_is_said_at_initialize_as_the_gateway_says_it(tmp_path):
    # "no-such-model-xyz" was taken without a word: counted with the default tokenizer and
    # window while the status line showed ctx 153/120k as for a model it knew
    root = make_repo(WORLD / f"unknown-model-{tmp_path.name}")
    daemon = await RawDaemon.start(env=hermetic_env(tmp_path / "world"))
    try:
        init = await daemon.request(0, "initialize", {
            "processId": None, "capabilities": {}, "rootUri": root.as_uri(),
            "initializationOptions": {"model": "no-such-model-xyz"}})
        await daemon.send({"jsonrpc": "2.0", "method": "initialized", "params": {}})
        assert init["result"]["capabilities"]["experimental"]["ctxlayer"]["model"] == \
            "no-such-model-xyz"  # kept: the user's model, said to be counted as another's
        text = await daemon.shown("initializationOptions")
        assert "initializationOptions.model: unknown model 'no-such-model-xyz': counted with" \
            in text and "contextWindow sets its own" in text
    finally:
        assert await daemon.close() == 0


@pytest.mark.parametrize("key, said", [
    ("context_window", "(did you mean `contextWindow`?)"),  # a Neovim setting's spelling
    ("contextWindw", "(did you mean `contextWindow`?)"),
    ("budgetTokens", "unknown option; ignored (known: model, contextWindow"),
])
async def test_an_unknown_option_is_named_and_the_others_still_apply(tmp_path, key, said):
    """An option initialize does not read was dropped without a word: `context_window: 5000`
    left the default window (a budget of 111,616) and nothing said so."""
    root = make_repo(WORLD / f"unknown-{tmp_path.name}")
    daemon = await RawDaemon.start(env=hermetic_env(tmp_path / "world"))
    try:
        init = await daemon.request(0, "initialize", {
            "processId": None, "capabilities": {}, "rootUri": root.as_uri(),
            "initializationOptions": {key: 5000, "model": "gpt-4o", "reserveOutput": 1000,
                                      "config": {"session": {"default_mode": "short"}}}})
        await daemon.send({"jsonrpc": "2.0", "method": "initialized", "params": {}})
        ours = init["result"]["capabilities"]["experimental"]["ctxlayer"]
        assert ours["model"] == "gpt-4o" and ours["defaultMode"] == "short"
        assert ours["defaultBudget"] == 128_000 - 1000  # its window, the reserve given
        text = await daemon.shown(f"initializationOptions.{key}")
        assert f"initializationOptions.{key}: unknown option" in text and said in text
    finally:
        assert await daemon.close() == 0
