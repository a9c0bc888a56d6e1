"""The LSP lifecycle: initialize (options, root, the workspace's configuration and policy),
initialized (the first scan with `$/progress`, the watcher), textDocument/didSave (refresh the
affected parts). What it learns goes into the connection's `Caller`.

Problems with the options or the config are told once (showMessage + logMessage) and the
defaults are used: a bad setting never stops the daemon or fails `initialize`.
"""

from __future__ import annotations

import asyncio
import difflib
import itertools
import logging
import os
import re
import urllib.parse
from pathlib import Path

import msgspec
from lsprotocol import types
from pygls.uris import to_fs_path

from ctxlayer import protocol
from ctxlayer.lsp.convert import field_error
from ctxlayer.lsp.server import CtxServer
from ctxlayer.state.opening import open_workspace

log = logging.getLogger(__name__)

#: the first scan shows a progress bar only when it takes longer than this (seconds)
PROGRESS_AFTER = 0.25
_tokens = itertools.count(1)


async def initialize(ls: CtxServer, params: types.InitializeParams) -> None:
    caller = ls.caller
    raw = params.initialization_options
    if isinstance(raw, dict):
        raw = {k: v for k, v in raw.items() if k != "token"}
    caller.take_options(read_options(raw, ls.option_problems), ls.option_problems)
    named = workspace_folder(params)
    if named is None:
        log.info("no workspace folder: the segment stays empty")
        return
    from ctxlayer.config import ConfigRead, default_user_config_dir, load_config
    from ctxlayer.workspace.workspace import named_form

    # the root is the folder the name really leads to (`..` after a symlink included); the
    # name itself is kept only where it can stand for that folder (`named_form`)
    caller.root = named.resolve()
    caller.opened_as = named_form(named, caller.root)

    # read here, not at `initialized`: the initialize result announces this workspace's
    # defaults (budget, modes). What the files held is kept: the watcher starts after the
    # first scan, and an edit made before it must still be applied then
    seen: ConfigRead = {}
    config, problems = load_config(caller.root, default_user_config_dir(), caller.options.config,
                                   seen=seen)
    caller.config = config
    ls.option_problems += problems
    if summarizes(params):
        caller.summarize = lambda request: ask_client_summary(ls, request)
    # the first scan starts now, while the client waits for the answer and sends `initialized`
    open_workspace(caller, config, caller.options.config, config_read=seen)
    if ls.state.gateway_starter is not None:  # before the answer, which announces the URLs
        await ls.state.gateway_starter(caller)


#: the options initialize reads, as the client spells them (camelCase)
OPTIONS = tuple(f.encode_name for f in msgspec.structs.fields(protocol.InitializationOptions))


def _unknown_option(key: str) -> str:
    """What is said of an option initialize does not read: its right spelling when it is one
    of ours in snake_case (`context_window`, as a Neovim setting is written) or misspelled."""
    camel = re.sub(r"_([a-z0-9])", lambda m: m.group(1).upper(), key)
    near = [camel] if camel in OPTIONS else difflib.get_close_matches(key, OPTIONS, n=1)
    hint = f" (did you mean `{near[0]}`?)" if near else ""
    return (f"initializationOptions.{key}: unknown option{hint}; ignored (known: "
            f"{', '.join(OPTIONS)})")


def read_options(raw: object, problems: list[str]) -> protocol.InitializationOptions:
    """The client's options; a bad one is reported and left out, the others still apply (a
    misspelled mode must not also drop the config the client sent beside it). An unknown
    one is said too: `context_window`, `contextWindw` were dropped without a word, the
    default window used."""
    values = dict(raw) if isinstance(raw, dict) else {}
    if raw is not None and not isinstance(raw, dict):
        problems.append("initializationOptions: expected an object; the defaults are used")
    for key in [k for k in values if k not in OPTIONS]:
        problems.append(_unknown_option(str(key)))
        del values[key]
    while True:
        try:
            return msgspec.convert(values, protocol.InitializationOptions)
        except msgspec.ValidationError as exc:
            field, message = field_error(exc)
            top = (field or "").split(".")[0].split("[")[0]
            problems.append(f"initializationOptions.{field}: {message}; its default is used"
                            if field else f"initializationOptions: {message}")
            if top not in values:
                return protocol.InitializationOptions()
            del values[top]


def summarizes(params: types.InitializeParams) -> bool:
    """The client declared `capabilities.experimental.ctxlayer.summarize = true`."""
    experimental = getattr(params.capabilities, "experimental", None)
    ours = experimental.get("ctxlayer") if isinstance(experimental, dict) else None
    return isinstance(ours, dict) and ours.get("summarize") is True


async def ask_client_summary(ls: CtxServer, request: protocol.SummarizeParams) -> str | None:
    """ctx/summarize to this client (the state bounds the wait), given up (None: the
    offline summary) once the client said `exit`: it answers nothing more, and `shutdown`,
    which answers after the requests before it, held the exit for the whole summarizer
    timeout (30 s with a longer one: `SHUTDOWN_WAIT_S`)."""
    answer = ls.protocol.send_request_async("ctx/summarize", msgspec.to_builtins(request))
    try:
        # not cancelled when the state stops waiting (its timeout): pygls sets the result of
        # the answer that comes later on it (a cancelled one raised InvalidStateError: an
        # ERROR and a traceback in the log)
        await asyncio.wait((answer, ls.leaving()), return_when=asyncio.FIRST_COMPLETED)
    except asyncio.CancelledError:
        answer.add_done_callback(_answered_late)
        raise
    if not answer.done():
        answer.add_done_callback(_answered_late)
        log.info("ctx/summarize: the client said exit before it answered; offline summary used")
        return None
    return msgspec.convert(answer.result(), protocol.SummarizeResult).text


def _answered_late(answer: asyncio.Future) -> None:
    """The client's ctx/summarize answer after the wait for it ended: the offline summary
    stood in; one quiet line, its error read (else asyncio logs it as never retrieved)."""
    if not answer.cancelled():
        failed = answer.exception()
        log.info("ctx/summarize: the client answered after the wait ended%s; dropped",
                 f" with an error ({failed})" if failed else "")


def fs_path(uri: str) -> str | None:
    """The path a file URI names. pygls reads its escaped bytes as UTF-8, so a folder whose
    name is not (Neovim escapes such bytes as they are, `ws%FF`) was not found: then they are
    read as the file system holds them."""
    path = to_fs_path(uri)
    if os.name == "posix" and uri.startswith("file:") and not (path and os.path.exists(path)):
        raw = urllib.parse.unquote(urllib.parse.urlsplit(uri).path, errors="surrogateescape")
        if os.path.exists(raw):
            return raw
    return path


def workspace_folder(params: types.InitializeParams) -> Path | None:
    """The first workspace folder, else rootUri, else rootPath, as the client named it
    (absolute, its symlinks and `..` parts kept: the caller's `root` is it resolved); None if
    it is not a folder. Its `..` parts are not folded away by their text: after a symlink,
    `link/../proj` is the folder beside where the link leads, which the system finds."""
    uri = params.workspace_folders[0].uri if params.workspace_folders else params.root_uri
    path = fs_path(uri) if uri else params.root_path
    if not path:
        return None
    folder = Path(path).absolute()
    return folder if folder.is_dir() else None


async def initialized(ls: CtxServer, params: types.InitializedParams) -> None:
    caller = ls.caller
    try:
        if ls.option_problems:
            ls.tell("ctxlayer: " + "; ".join(ls.option_problems), "warning", show=True)
    finally:
        caller.live_decided.set()
    if caller.live is None:
        return
    try:
        await with_progress(ls, asyncio.shield(caller.live.start()))
    except asyncio.CancelledError:
        # The daemon is ending (SIGTERM, SIGINT, exit) while the first scan runs: a stop is no
        # error. Re-raised, pygls would log the cancelled handler as a traceback.
        log.info("stopped during the first scan of %s", caller.root)
    except Exception as exc:
        ls.tell(f"ctxlayer: scanning {caller.root} failed: {exc}", "error", show=True)


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
        title="ctxlayer", message=f"scanning {ls.caller.root}", cancellable=False))
    message = "workspace scanned"
    try:
        await scan
        live = ls.caller.live
        if live is not None and live.segment is not None:
            message = f"workspace scanned: {live.segment.tokens} tokens"
    except Exception:
        message = "workspace scan failed"
        raise
    finally:
        progress.end(token, types.WorkDoneProgressEnd(message=message))


async def did_save(ls: CtxServer, params: types.DidSaveTextDocumentParams) -> None:
    live, root = ls.caller.live, ls.caller.root
    if live is None or root is None:
        return
    path = Path(fs_path(params.text_document.uri) or "")
    named = ls.caller.opened_as
    if named is not None and path.is_absolute() and path.is_relative_to(named):
        # the editor names its files as it named the folder (~/work/proj through a symlink):
        # they were not below the resolved root, and a save refreshed nothing
        path = root / path.relative_to(named)
    if path.is_absolute() and path.is_relative_to(root):
        await live.refresh([path])


def folders_changed(ls: CtxServer, params: types.DidChangeWorkspaceFoldersParams) -> None:
    """The daemon follows the folder it was started in: its segment and its sessions belong to
    it (VS Code restarts its extensions when the first folder changes; Neovim starts a client a
    root). A client that removes that folder, or adds one to a daemon started without any,
    is told so, instead of the segment going on as if nothing had changed."""
    root = ls.caller.root
    # a path with a NUL byte is no folder (and resolve() raises ValueError on it)
    removed = [Path(path) for f in params.event.removed or ()
               if (path := fs_path(f.uri)) and "\0" not in path]
    added = [fs_path(f.uri) for f in params.event.added or ()]
    if root is not None and any(p.is_absolute() and p.resolve() == root for p in removed):
        ls.tell(f"ctxlayer: the folder {root} left the workspace; ctxlayer goes on following "
                "it (its sessions belong to it) until it is restarted in another folder",
                "warning", show=True)
    elif root is None and added:
        ls.tell(f"ctxlayer: started without a folder, it does not follow {added[0]}: restart "
                "it to have that folder's workspace segment", "warning", show=True)


def register(server: CtxServer) -> None:
    server.feature(types.INITIALIZE)(initialize)
    server.feature(types.INITIALIZED)(initialized)
    server.feature(types.WORKSPACE_DID_CHANGE_WORKSPACE_FOLDERS)(folders_changed)
    server.feature(types.TEXT_DOCUMENT_DID_SAVE, types.SaveOptions(include_text=False))(did_save)
