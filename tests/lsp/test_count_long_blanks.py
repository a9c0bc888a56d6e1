"""A text holding a run of a million blanks (an output padded with spaces, a file of tabs) is
counted by the daemon: tiktoken's regex failed on it, and ctx/count and ctx/trim answered
-32603 with its ValueError."""

from __future__ import annotations

import asyncio
import itertools

import pytest
import pytest_lsp
from conftest import ENV, SERVE, WORLD, make_repo
from lsprotocol import types
from pytest_lsp import ClientServerConfig, LanguageClient

from ctxlayer.tokenizers import counter_for

pytestmark = [pytest.mark.e2e, pytest.mark.asyncio(loop_scope="module")]
_repos = itertools.count()
TIMEOUT = 60
BLANKS = " " * 1_000_000 + "word"


@pytest_lsp.fixture(scope="module",
                    config=ClientServerConfig(server_command=SERVE, server_env=ENV))
async def client(lsp_client: LanguageClient):
    root = make_repo(WORLD / f"long-blanks-{next(_repos)}")
    await lsp_client.initialize_session(types.InitializeParams(
        capabilities=types.ClientCapabilities(),
        workspace_folders=[types.WorkspaceFolder(uri=root.as_uri(), name="demo")],
        initialization_options={"model": "gpt-4o"},
    ))
    yield
    await lsp_client.shutdown_session()


async def call(client: LanguageClient, method: str, params: dict):
    return await asyncio.wait_for(client.protocol.send_request_async(method, params), TIMEOUT)


async def test_a_million_blanks_are_counted_and_trimmed(client: LanguageClient):
    counted = await call(client, "ctx/count", {"texts": [BLANKS]})
    assert counted.total == counter_for("gpt-4o").count(BLANKS) > 7_000
    trimmed = await call(client, "ctx/trim", {
        "messages": [{"role": "user", "content": "x" + "\t" * 1_000_000 + "y"}],
        "budget": 8000})
    assert trimmed.tokens <= 8000
