"""aider (aider-chat from PyPI, pinned in versions.env, in its own venv: it pins openai==2.20.0,
the project pins 3.63.0) through the gateway's Chat Completions. aider edits with
SEARCH/REPLACE blocks in its answer text, not tool calls: the stand-in answers with one, and
aider must apply it to the file in the temporary git repository."""

from __future__ import annotations

import shutil

import pytest
from real_clients import (
    README,
    assert_all_valid,
    client,
    client_env,
    conversations,
    model_requests,
    run,
)

pytestmark = [pytest.mark.client, pytest.mark.e2e]

EDIT = """I will say that it multiplies too.

README.md
```
<<<<<<< SEARCH
It adds numbers: `add(2, 3)` is 5.
=======
It adds and multiplies numbers: `add(2, 3)` is 5.
>>>>>>> REPLACE
```
"""


def test_aider_applies_the_stand_ins_edit_through_the_gateway(stack, repo, tmp_path):
    exe = client("aider", "AIDER", "bin/aider")
    home = tmp_path / "home"
    env = client_env(home, OPENAI_API_KEY="sk-test-not-a-key", OPENAI_API_BASE=stack.openai_url)
    # aider fetches litellm's model table once a day unless its cache is fresh: seed the cache
    # from the copy litellm ships, so it never tries the network
    shipped = next(exe.parent.parent.glob(
        "lib/python*/site-packages/litellm/model_prices_and_context_window_backup.json"))
    (home / ".aider" / "caches").mkdir(parents=True)
    shutil.copy(shipped, home / ".aider" / "caches" / "model_prices_and_context_window.json")
    stack.standin.reply(EDIT)
    done = run([exe, "--model", "openai/gpt-4o", "--message", "Say it multiplies too.",
                "--yes-always", "--no-git", "--no-check-update", "--no-show-release-notes",
                "--analytics-disable", "--no-show-model-warnings", "--no-pretty",
                "--no-fancy-input", "README.md"], env, repo)
    assert "Applied edit to README.md" in done.stdout, done.stdout
    assert (repo / "README.md").read_text() == README.replace("It adds", "It adds and multiplies")
    requests = model_requests(stack)
    assert_all_valid(requests)
    assert {r["path"] for r in requests} == {"/v1/chat/completions"}
    assert all(r["stream"] for r in requests)
    assert README.strip().splitlines()[-1] in str(requests[0]["body"]["messages"])
    (chat,) = conversations(stack)
    assert chat["model"] == "gpt-4o" and chat["tokens"] > 0
    # aider streams without asking for the usage: the gateway asked it upstream and read it
    assert requests[0]["body"]["stream_options"] == {"include_usage": True}
    assert chat.get("cachedTokens") is not None, chat
