"""Fixtures for the inspector tests: a sample conversation, an agent chat with big tool
results, and a headless Debian Chromium.

The browser tests skip when Chromium or Playwright is missing, except when
CTXLAYER_REQUIRE_EDITORS=1 (CI), where a missing tool is a failure.
"""

from __future__ import annotations

import os
import shutil

import pytest

from ctxlayer.inspector import build_inspector_data
from ctxlayer.protocol import AuditEntry, Message, ToolCall

CHROMIUM_ARGS = [
    "--no-sandbox", "--disable-gpu", "--disable-background-networking",
    "--disable-component-update", "--disable-sync", "--no-first-run", "--disable-quic",
]


def sample_conversation():
    msgs = [Message(role="system", content="You are a careful assistant.", id="sys", pinned=True)]
    toks = [100]
    for i in range(10):
        role = "user" if i % 2 == 0 else "assistant"
        msgs.append(Message(role=role, content=f"turn {i} <b>bold?</b>", id=f"m{i}"))
        toks.append(50 + 10 * i)
    msgs.append(Message(role="assistant", content="", id="call",
                        tool_calls=[ToolCall(id="t1", name="grep", arguments="{}")]))
    toks.append(20)
    msgs.append(Message(role="tool", content="grep output", id="result", tool_call_id="t1"))
    toks.append(30)
    msgs.append(Message(role="user", content="retrieved doc", id="doc", kind="doc"))
    toks.append(80)
    return msgs, toks


@pytest.fixture
def big_chat() -> list[Message]:
    """An agent's chat whose tool results are each far over the trim's per-output cap."""
    msgs = [Message(role="system", content="You are a coding agent.", id="sys")]
    for i in range(12):
        msgs.append(Message(role="user", content=f"step {i}: look at module {i}", id=f"u{i}"))
        msgs.append(Message(role="assistant", content="", id=f"call{i}",
                            tool_calls=[ToolCall(id=f"t{i}", name="read", arguments="{}")]))
        body = "\n".join(f"def f{i}_{k}(x):  # helper {k} of module {i}\n    return x + {k}"
                         for k in range(700))
        msgs.append(Message(role="tool", content=body, id=f"res{i}", tool_call_id=f"t{i}"))
        msgs.append(Message(role="assistant", content=f"module {i} is fine", id=f"a{i}"))
    msgs.append(Message(role="user", content="what next?", id="question"))
    return msgs


@pytest.fixture
def sample_data():
    msgs, toks = sample_conversation()
    return build_inspector_data(
        msgs, toks, model="gpt-4o", window=2000, budget=700,
        dropped=[AuditEntry(action="dropped", reason="over budget: oldest history first",
                            summary="user: turn 0", tokens_before=50, tokens_after=0,
                            message_id="m0")],
        cache_boundary=1, compaction_at=1400,
    )


def _require(what: str):
    if os.environ.get("CTXLAYER_REQUIRE_EDITORS") == "1":
        pytest.fail(f"{what} is required when CTXLAYER_REQUIRE_EDITORS=1 "
                    "(run `make test-editors-vscode`, which installs it)")
    pytest.skip(f"{what} not installed")


@pytest.fixture(scope="module")
def chromium():
    """One browser per module: playwright's sync API keeps an event loop running while it is
    open, which would stop pytest-asyncio's loops in later modules."""
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        _require("the playwright Python package")
    exe = shutil.which("chromium") or ("/usr/bin/chromium" if os.path.exists("/usr/bin/chromium")
                                      else None)
    if exe is None:
        _require("Debian's chromium (apt-get install chromium)")
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=exe, args=CHROMIUM_ARGS)
        yield browser
        browser.close()
