"""ctx/session/configure: an editor whose model, budget or mode setting changed brings it to its
workspace's session, which ctx/session/open answers unchanged (PROTOCOL.md). The change is
kept in the state folder, seen by another daemon on it, and a new model counts every stored
message with its own tokenizer. The real daemon over stdio.

Before it, the editors reopened their fixed session id with the new settings and kept the old
ones: settings claude-sonnet-4 / 60000 / short, session gpt-4o / 20000 / deep."""

from __future__ import annotations

import itertools

import pytest
from conftest import WORLD, RawDaemon, ask, hermetic_env, make_repo, result

pytestmark = pytest.mark.e2e
_worlds = itertools.count()

OLD = {"model": "gpt-4o", "budget": 20000, "mode": "deep"}
NEW = {"model": "claude-sonnet-4", "budget": 60000, "mode": "short"}
CHAT = [
    {"role": "user", "content": "Où est la fonction main ? Ünïcödé, naïve façade, 12345 tokens."},
    {"role": "assistant", "content": "In src/app.py: `def main(): print('hello')` at line 1."},
    {"role": "user", "content": "Rename it to run_forever() and keep the old name as an alias."},
]


def world():
    base = WORLD / f"configure-{next(_worlds)}"
    return hermetic_env(base), make_repo(base / "repo")




async def opened_with(daemon: RawDaemon, sid: str, settings: dict) -> dict:
    opened = await result(daemon, "ctx/session/open", {"sessionId": sid, **settings})
    await result(daemon, "ctx/session/append", {"sessionId": sid, "messages": CHAT})
    return opened


async def test_configure_changes_model_budget_and_mode_and_a_restart_keeps_them():
    env, root = world()
    daemon = await RawDaemon.start(env=env)
    try:
        await daemon.initialize(root)
        await opened_with(daemon, "ws", OLD)
        before = await result(daemon, "ctx/session/budget", {"sessionId": "ws"})
        # what the same messages cost in a session opened with the new model from the start
        await opened_with(daemon, "ref", NEW)
        ref = await result(daemon, "ctx/session/budget", {"sessionId": "ref"})
        assert ref["byLayer"]["history"] != before["byLayer"]["history"]

        # the contract stays: reopening answers the session unchanged
        again = await result(daemon, "ctx/session/open", {"sessionId": "ws", **NEW})
        assert {k: again[k] for k in OLD} == OLD

        daemon.notifications.clear()
        configured = await result(daemon, "ctx/session/configure", {"sessionId": "ws", **NEW})
        assert configured["model"] == "claude-sonnet-4"
        assert configured["limit"] == 60000
        # every stored message counted again with the new model's tokenizer
        assert configured["byLayer"]["history"] == ref["byLayer"]["history"]
        pushed = [n["params"] for n in daemon.notifications
                  if n["method"] == "ctx/budgetChanged"]
        assert pushed and pushed[-1] == configured
        listed = await result(daemon, "ctx/session/list", {})
        (info,) = [s for s in listed["sessions"] if s["sessionId"] == "ws"]
        assert (info["model"], info["mode"]) == ("claude-sonnet-4", "short")

        # a field left out keeps the session's own
        only = await result(daemon, "ctx/session/configure", {"sessionId": "ws",
                                                              "budget": 50000})
        assert (only["limit"], only["model"]) == (50000, "claude-sonnet-4")
        reopened = await result(daemon, "ctx/session/open", {"sessionId": "ws"})
        assert {k: reopened[k] for k in NEW} == {**NEW, "budget": 50000}
    finally:
        assert await daemon.close() == 0

    daemon = await RawDaemon.start(env=env)
    try:
        await daemon.initialize(root)
        reopened = await result(daemon, "ctx/session/open", {"sessionId": "ws", **OLD})
        assert {k: reopened[k] for k in NEW} == {**NEW, "budget": 50000}
        after = await result(daemon, "ctx/session/budget", {"sessionId": "ws"})
        assert after["byLayer"]["history"] == ref["byLayer"]["history"]
        assert (after["model"], after["limit"]) == ("claude-sonnet-4", 50000)
    finally:
        assert await daemon.close() == 0


@pytest.mark.parametrize(("params", "field"), [
    ({"mode": "turbo"}, "mode"),
    ({"budget": 0}, "budget"),
    ({"budget": -5}, "budget"),
    ({"budget": 2**53}, "budget"),  # past what a JSON number keeps exactly
    ({"budget": "big"}, "budget"),
    ({"model": ""}, "model"),
    ({"model": 4}, "model"),
    ({"budget": 200_000}, "budget"),  # over gpt-4o's window of 128,000
    ({"model": "gpt-3.5-turbo"}, "model"),  # its window of 16,385 is under the session's 20,000
])
async def test_bad_params_are_errors_naming_the_field_and_change_nothing(params, field):
    env, root = world()
    daemon = await RawDaemon.start(env=env)
    try:
        await daemon.initialize(root)
        await opened_with(daemon, "ws", OLD)
        out = await ask(daemon, "ctx/session/configure", {"sessionId": "ws", **params})
        assert out.get("error", {}).get("code") == -32602, out
        assert field in out["error"]["message"], out
        unchanged = await result(daemon, "ctx/session/open", {"sessionId": "ws"})
        assert {k: unchanged[k] for k in OLD} == OLD
        out = await ask(daemon, "ctx/session/configure", {"sessionId": "nope", "mode": "short"})
        assert out.get("error", {}).get("code") == -32002, out
        out = await ask(daemon, "ctx/session/configure", {"mode": "short"})
        assert out.get("error", {}).get("code") == -32602, out
        assert "sessionId" in out["error"]["message"], out
    finally:
        assert await daemon.close() == 0


async def test_another_daemon_on_the_state_folder_sees_the_change():
    env, root = world()
    a, b = await RawDaemon.start(env=env), await RawDaemon.start(env=env)
    try:
        for daemon in (a, b):
            await daemon.initialize(root)
        await opened_with(a, "shared", OLD)
        await result(b, "ctx/session/open", {"sessionId": "shared"})
        seen = await result(b, "ctx/session/budget", {"sessionId": "shared"})
        assert seen["model"] == "gpt-4o"
        configured = await result(a, "ctx/session/configure", {"sessionId": "shared", **NEW})
        seen = await result(b, "ctx/session/budget", {"sessionId": "shared"})
        assert (seen["model"], seen["limit"]) == ("claude-sonnet-4", 60000)
        assert seen["byLayer"] == configured["byLayer"]
        listed = await result(b, "ctx/session/list", {})
        assert [s["mode"] for s in listed["sessions"] if s["sessionId"] == "shared"] == ["short"]
    finally:
        await a.close()
        await b.close()


async def test_a_new_model_counts_the_summary_again_too():
    """The summary a compaction left (its tokens kept beside it) is counted with the new
    model's tokenizer as the messages are: the history layer is what a session of that model
    from the start holds."""
    env, root = world()
    daemon = await RawDaemon.start(env=env)
    same = {"budget": 60000, "mode": "deep"}
    long_chat = [{"role": "user" if k % 2 == 0 else "assistant",
                  "content": f"Étape {k}: we must never touch gen/ ; the build at step {k} "
                             f"failed in src/app.py:{k + 1} with ValueError ünïcödé."}
                 for k in range(12)]
    try:
        await daemon.initialize(root)
        for sid, model in (("ws", "gpt-4o"), ("ref", "claude-sonnet-4")):
            await result(daemon, "ctx/session/open", {"sessionId": sid, "model": model, **same})
            await result(daemon, "ctx/session/append", {"sessionId": sid,
                                                        "messages": long_chat})
            out = await result(daemon, "ctx/session/compact", {"sessionId": sid,
                                                               "keepRecent": 2})
            assert out["replaced"] == 10
        ref = await result(daemon, "ctx/session/budget", {"sessionId": "ref"})
        before = await result(daemon, "ctx/session/budget", {"sessionId": "ws"})
        assert before["byLayer"]["history"] != ref["byLayer"]["history"]
        configured = await result(daemon, "ctx/session/configure",
                                  {"sessionId": "ws", "model": "claude-sonnet-4"})
        assert configured["byLayer"]["history"] == ref["byLayer"]["history"]
    finally:
        assert await daemon.close() == 0


async def test_reset_budget_gives_the_session_its_models_default_again():
    """An editor's budget setting cleared ('the model's window minus the output reserve'):
    before resetBudget, ctx/session/configure could only keep the session's own budget (a
    budget left out keeps it), and the session stayed at 20000 for good."""
    env, root = world()
    daemon = await RawDaemon.start(env=env)
    try:
        await daemon.initialize(root)
        # what a session opened without a budget gets: the model's default
        fresh = await result(daemon, "ctx/session/open", {"sessionId": "ref", "model": "gpt-4o"})
        await opened_with(daemon, "ws", OLD)
        daemon.notifications.clear()
        reset = await result(daemon, "ctx/session/configure",
                             {"sessionId": "ws", "resetBudget": True})
        assert fresh["budget"] != OLD["budget"]
        assert reset["limit"] == fresh["budget"]
        pushed = [n["params"] for n in daemon.notifications
                  if n["method"] == "ctx/budgetChanged"]
        assert pushed and pushed[-1] == reset
        reopened = await result(daemon, "ctx/session/open", {"sessionId": "ws"})
        assert reopened["budget"] == fresh["budget"]
        # with a new model in the same request: that model's default
        other = await result(daemon, "ctx/session/open",
                             {"sessionId": "ref2", "model": "claude-sonnet-4"})
        both = await result(daemon, "ctx/session/configure",
                            {"sessionId": "ws", "model": "claude-sonnet-4", "resetBudget": True})
        assert (both["model"], both["limit"]) == ("claude-sonnet-4", other["budget"])
        # a budget and resetBudget together: an error naming the field, nothing changed
        out = await ask(daemon, "ctx/session/configure",
                        {"sessionId": "ws", "budget": 5000, "resetBudget": True})
        assert out.get("error", {}).get("code") == -32602, out
        assert "resetBudget" in out["error"]["message"], out
        out = await ask(daemon, "ctx/session/configure",
                        {"sessionId": "ws", "resetBudget": "yes"})
        assert out.get("error", {}).get("code") == -32602, out
        assert "resetBudget" in out["error"]["message"], out
        unchanged = await result(daemon, "ctx/session/open", {"sessionId": "ws"})
        assert unchanged["budget"] == other["budget"]
    finally:
        assert await daemon.close() == 0


async def test_a_budget_over_the_models_window_is_refused_naming_the_field():
    """A session opened with 60,000 tokens for gpt-3.5-turbo (a window of 16,385) assembled
    31,920 tokens with no notice; 500,000 kept when configure brought gpt-4o (128,000)."""
    env, root = world()
    daemon = await RawDaemon.start(env=env)
    try:
        await daemon.initialize(root)
        out = await ask(daemon, "ctx/session/open", {
            "sessionId": "small", "model": "gpt-3.5-turbo", "budget": 60000})
        assert out.get("error", {}).get("code") == -32602, out
        assert out["error"]["data"]["field"] == "budget"
        assert "16,385-token context window of gpt-3.5-turbo" in out["error"]["message"], out
        # what to do, for any client: Neovim's option is context_window, VS Code has none
        assert out["error"]["message"].endswith(
            "leave the budget out for the model's default (12,289), or tell ctxlayer the "
            "model's window when it is larger (initializationOptions.contextWindow; Neovim: "
            "context_window)"), out
        listed = await result(daemon, "ctx/session/list", {})
        assert listed["sessions"] == [], "a refused open opens nothing"

        # a model whose window a beta opens to 1M takes a budget over its own 200,000
        await opened_with(daemon, "s", {"model": "claude-sonnet-4", "budget": 500_000})
        out = await ask(daemon, "ctx/session/configure", {"sessionId": "s", "model": "gpt-4o"})
        assert out.get("error", {}).get("code") == -32602, out
        assert out["error"]["data"]["field"] == "model"
        assert "budget of 500,000 tokens is over the 128,000-token" in out["error"]["message"]
        kept = await result(daemon, "ctx/session/open", {"sessionId": "s"})
        assert (kept["model"], kept["budget"]) == ("claude-sonnet-4", 500_000)

        # with a budget that fits, or the model's default, the model changes
        moved = await result(daemon, "ctx/session/configure", {
            "sessionId": "s", "model": "gpt-4o", "resetBudget": True})
        assert (moved["model"], moved["limit"], moved["window"]) == ("gpt-4o", 111_616, 128_000)
        moved = await result(daemon, "ctx/session/configure", {
            "sessionId": "s", "model": "gpt-3.5-turbo", "budget": 16_000})
        assert (moved["model"], moved["limit"]) == ("gpt-3.5-turbo", 16_000)
    finally:
        assert await daemon.close() == 0


async def test_a_session_opened_again_without_a_model_keeps_its_own_for_the_budget():
    """nvim with no `model` set, VS Code with an empty model setting, reopen their session with
    its budget and no model: a claude-sonnet-4-5 session of 190,000 was refused against the
    connection's gpt-4o (128,000). Checked against the session's own model now; an empty model
    is refused naming `model`, not `budget` against gpt-4o."""
    env, root = world()
    daemon = await RawDaemon.start(env=env)
    try:
        await daemon.initialize(root)
        own = {"sessionId": "s1", "budget": 190000}
        opened = await result(daemon, "ctx/session/open", {**own, "model": "claude-sonnet-4-5"})
        again = await result(daemon, "ctx/session/open", own)
        assert again == opened
        # over its own widest window (1M with the context-1m beta): refused, naming it
        out = await ask(daemon, "ctx/session/open", {**own, "budget": 2_000_000})
        assert out["error"]["data"]["field"] == "budget", out
        assert "claude-sonnet-4-5" in out["error"]["message"], out
        new = await ask(daemon, "ctx/session/open", {"sessionId": "s2", "budget": 190000})
        assert "128,000-token context window of gpt-4o" in new["error"]["message"], new
        empty = await ask(daemon, "ctx/session/open", {"sessionId": "s3", "model": "",
                                                       "budget": 200000})
        assert empty["error"]["data"]["field"] == "model", empty
        listed = await result(daemon, "ctx/session/list", {})
        assert [s["sessionId"] for s in listed["sessions"]] == ["s1"]
    finally:
        assert await daemon.close() == 0
