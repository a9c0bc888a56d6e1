"""The LSP lifecycle: initialize (options, root), initialized (config, first scan with
`$/progress`, the watcher), textDocument/didSave (refresh the affected parts).

Problems with the options or the config are told once (showMessage + logMessage) and the
defaults are used: a bad setting never stops the daemon or fails `initialize`.
"""

from __future__ import annotations

import asyncio
import itertools
import logging
from pathlib import Path

import msgspec
from lsprotocol import types
from pygls.uris import to_fs_path

from ctxlayer import protocol
from ctxlayer.lsp.convert import field_error
from ctxlayer.lsp.server import CtxServer

log = logging.getLogger(__name__)

#: the first scan shows a progress bar only when it takes longer than this (seconds)
PROGRESS_AFTER = 0.25
_tokens = itertools.count(1)


def initialize(ls: CtxServer, params: types.InitializeParams) -> None:
    raw = params.initialization_options
    if isinstance(raw, dict):
        raw = {k: v for k, v in raw.items() if k != "token"}
    try:
        ls.options = msgspec.convert(raw or {}, protocol.InitializationOptions)
    except msgspec.ValidationError as exc:
        field, message = field_error(exc)
        ls.option_problems.append(
            f"initializationOptions.{field or ''}: {message}; the defaults are used".replace(
                "initializationOptions.:", "initializationOptions:"))
    ls.root = workspace_root(params)
    if ls.root is None:
        log.info("no workspace folder: the segment stays empty")


def workspace_root(params: types.InitializeParams) -> Path | None:
    """The first workspace folder, else rootUri, else rootPath; None if it is not a folder."""
    uri = params.workspace_folders[0].uri if params.workspace_folders else params.root_uri
    path = to_fs_path(uri) if uri else params.root_path
    if not path:
        return None
    root = Path(path)
    return root.resolve() if root.is_dir() else None


async def initialized(ls: CtxServer, params: types.InitializedParams) -> None:
    try:
        await _open_workspace(ls)
    finally:
        ls.live_decided.set()
    if ls.live is None:
        return
    try:
        await with_progress(ls, asyncio.shield(ls.live.start()))
    except Exception as exc:
        ls.tell(f"ctxlayer: scanning {ls.root} failed: {exc}", "error", show=True)
        return
    for listener in list(ls.ready_listeners):
        ls.spawn(listener(ls))


async def _open_workspace(ls: CtxServer) -> None:
    """Config (problems told once), then the shared live workspace for this root."""
    problems = list(ls.option_problems)
    if ls.root is not None:
        from ctxlayer.config import default_user_config_dir, load_config

        config, config_problems = await asyncio.to_thread(
            load_config, ls.root, default_user_config_dir(), ls.options.config)
        ls.config, ls.config_problems = config, config_problems
        problems += config_problems
    if problems:
        ls.tell("ctxlayer: " + "; ".join(problems), "warning", show=True)
    if ls.root is None:
        return
    ls.live = ls.daemon.workspaces.acquire(ls.root, ls.config, ls.model())
    ls.live.subscribers.append(ls.segment_changed)
    ls.live.start()


async def with_progress(ls: CtxServer, scan: asyncio.Future) -> None:
    """Await the first scan, with a `$/progress` bar if it is slow and the client can show one."""
    done, _ = await asyncio.wait([scan], timeout=PROGRESS_AFTER)
    window = ls.client_capabilities.window
    if done or not (window and window.work_done_progress):
        return await scan
    token = f"ctxlayer/scan/{next(_tokens)}"
    progress = ls.work_done_progress
    try:
        await asyncio.wait_for(progress.create_async(token), 5)
    except Exception:
        return await scan
    progress.begin(token, types.WorkDoneProgressBegin(
        title="ctxlayer", message=f"scanning {ls.root}", cancellable=False))
    message = "workspace scanned"
    try:
        await scan
        if ls.live is not None and ls.live.segment is not None:
            message = f"workspace scanned: {ls.live.segment.tokens} tokens"
    except Exception:
        message = "workspace scan failed"
        raise
    finally:
        progress.end(token, types.WorkDoneProgressEnd(message=message))


async def did_save(ls: CtxServer, params: types.DidSaveTextDocumentParams) -> None:
    if ls.live is None or ls.root is None:
        return
    path = Path(to_fs_path(params.text_document.uri) or "")
    if path.is_absolute() and path.is_relative_to(ls.root):
        await ls.live.refresh([path])


def register(server: CtxServer) -> None:
    server.feature(types.INITIALIZE)(initialize)
    server.feature(types.INITIALIZED)(initialized)
    server.feature(types.TEXT_DOCUMENT_DID_SAVE, types.SaveOptions(include_text=False))(did_save)
