"""`State`: what one ctxlayer process holds, whatever face (JSON-RPC, HTTP) asks.

Owns the per-process services (tokenizers, live workspaces, the session service over the
sessions database, the conversations of chats that resend their history), the policy of each
workspace (its configuration, read from its own files, reloaded when they change), the lanes
that keep one session's requests in arrival order, and the events the faces forward.
Must not: import a face (pygls, lsprotocol, aiohttp) or send anything itself.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
import sqlite3
import threading
from collections.abc import Awaitable, Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from ctxlayer.state import collecting, expiry
from ctxlayer.state.events import Events
from ctxlayer.state.lanes import Lanes
from ctxlayer.state.live import WorkspaceRegistry
from ctxlayer.state.policy import WorkspacePolicy, policy_from_config
from ctxlayer.state.tokens import Tokenizers, share_the_interpreter
from ctxlayer.store.errors import StoreError, describe_store_error

if TYPE_CHECKING:
    from ctxlayer import protocol
    from ctxlayer.config import Config
    from ctxlayer.state.conversations import Conversations
    from ctxlayer.state.live import LiveWorkspace
    from ctxlayer.state.seams import GatewayStarter
    from ctxlayer.state.session_service import SessionService, SessionSettings

log = logging.getLogger(__name__)
T = TypeVar("T")


class State:
    """The one state of a process. `close()` stops the watchers and the database."""

    def __init__(self, state_dir: Path) -> None:
        self.state_dir = state_dir
        share_the_interpreter()
        self.tokenizers = Tokenizers()
        self.workspaces = WorkspaceRegistry(self.tokenizers, on_config=self.reload_config)
        self.events = Events()
        self.lanes = Lanes()
        self.policies: dict[str, WorkspacePolicy] = {}
        self.gateway_urls: protocol.GatewayUrls | None = None  # once a gateway listens
        #: starts the HTTP face when the caller's workspace enables it (set by `ctxlayer
        #: serve`; the JSON-RPC face calls it at initialize)
        self.gateway_starter: GatewayStarter | None = None
        self._sessions: SessionService | None = None
        self._folder_gone_told = False
        # the session service opens on first use, which may be on any session thread
        self._sessions_lock = threading.Lock()
        self._closed = False  # `close` ran: an early opening (open_sessions_soon) does nothing
        self._conversations: Conversations | None = None
        self._expiry = expiry.Expiry()
        self._closers: list[Callable[[], Any]] = []
        self._tasks: set[asyncio.Future] = set()
        self._holding = False  # full collections held for quiet moments (`serving`)
        # the session service's own threads: its writes serialize on the database anyway, and
        # short counts and trims (the default executor) must not queue behind them
        self._session_threads = ThreadPoolExecutor(2, thread_name_prefix="sessions")
        self._closers.append(lambda: self._session_threads.shutdown(wait=False))
        # the bulk writes of a turn (its audit log, its window kept for a restart): one thread,
        # so they land in order, and never in the way of another chat's short session work
        # (a 10 MB chat's audit of thousands of cuts kept a small chat's answer waiting)
        self._keeping_thread = ThreadPoolExecutor(1, thread_name_prefix="keeping")

    # -- the workspaces' policies -----------------------------------------------------------

    def policy(self, workspace: str) -> WorkspacePolicy:
        """The settings of a workspace (defaults until a connection or the gateway opened it)."""
        found = self.policies.get(workspace)
        if found is None:
            found = self.policies[workspace] = policy_from_config(None)
        return found

    def configure(self, workspace: str, config: Config | None, *,
                  replace: bool = False) -> WorkspacePolicy:
        """Set a workspace's policy from its configuration: the first opener's, or a reload."""
        if workspace in self.policies and not replace:
            return self.policies[workspace]
        policy = self.policies[workspace] = policy_from_config(config)
        # the service reads its settings from the policies; an opening on a session thread
        # that has not set `_sessions` yet checks the durabilities again once it has
        if self._sessions is not None and policy.durability == "full":
            self._sessions.store.set_durability("full")
        self._expiry.reset(workspace)
        self.expire(workspace)
        return policy

    def expire(self, workspace: str) -> None:
        """Forget the workspace's rows older than its `keep_days` (state/expiry.py), on the
        keeping thread, at most once a day; nothing before the session database is open."""
        policy = self.policies.get(workspace)
        svc = self._sessions
        if svc is None or policy is None or policy.keep_days <= 0 \
                or not self._expiry.due(workspace):
            return
        store, days, before = svc.store, policy.keep_days, expiry.cutoff(policy.keep_days)

        def forget() -> None:
            audit, windows = store.forget(workspace, before)
            if audit or windows:
                log.info("%s: removed %d audit entries and %d conversation windows older than "
                         "%d days ([session] keep_days)", workspace, audit, windows, days)

        self.keep_later(forget)

    async def reload_config(self, live: LiveWorkspace) -> bool:
        """A workspace's ctxlayer.toml may have changed: read it again, apply it to the
        workspace and its policy, and tell its clients in one message what changed or was
        rejected. Nothing is applied or said when the files hold what the configuration in use
        was read from (`live.config_read`): a save that changed no byte, or the check that
        follows the watcher's start (live.py `_catch_up`) finding nothing edited. Returns
        whether it reloaded."""
        from ctxlayer.config import ConfigRead, default_user_config_dir, reload_config

        seen: ConfigRead = {}
        new, message = await asyncio.to_thread(reload_config, live.root,
                                               default_user_config_dir(), live.overrides,
                                               live.config, seen=seen)
        if seen == live.config_read:
            return False
        # kept before the awaits below: a reload queued behind this one compares with it
        live.config_read = seen
        live.config = new
        if live.workspace is not None:
            await asyncio.to_thread(live.workspace.reconfigure, new)
        self.configure(str(live.root), new, replace=True)
        self.events.message(str(live.root), "info", message)
        return True

    # -- services ----------------------------------------------------------------------------

    def folder_gone(self, exc: StoreError) -> None:
        """Tell the user once (every editor) that the state folder went away while the process
        ran: each request that stores something fails saying so, and the editor shows it."""
        if not self._folder_gone_told:
            self._folder_gone_told = True
            self.events.message("", "warning", f"ctxlayer: {exc}")

    @property
    def sessions_started(self) -> bool:
        """Whether the session service is open (a segment change has sessions to re-measure)."""
        return self._sessions is not None

    @property
    def sessions(self) -> SessionService:
        """The session service, opened on first use (by one thread)."""
        if self._sessions is None:
            with self._sessions_lock:
                return self._open_sessions()
        return self._sessions

    def _session_settings(self, workspace: str) -> SessionSettings:
        """A workspace's session settings, as its policy says (any thread: one read)."""
        from ctxlayer.state.session_service import DEFAULT_SETTINGS

        found = self.policies.get(workspace)
        return found.sessions if found is not None else DEFAULT_SETTINGS

    def models_in_use(self) -> list[str]:
        """The models of the state folder's sessions, the most recently used first: a quick
        read at a start, before the store is opened (store.models_in_use)."""
        from ctxlayer.store import models_in_use

        return models_in_use(self.state_dir)

    def open_sessions_soon(self) -> None:
        """Open the session service on a session thread now, not on the first request that
        needs it: opening may check the whole database file (unless it was closed cleanly:
        a 253 MB one took 60 ms, 0.5-2.8 s from the disk), and the gateway's first request
        after a restart opened it on the event loop. Called on the
        loop; a failure is logged, and the first request opens it again (and says why).
        Nothing once the state is closed."""
        if self._closed:
            return
        loop = asyncio.get_running_loop()

        def tell(text: str) -> None:  # the state's messages go out on the loop
            loop.call_soon_threadsafe(self.events.message, "", "warning", text)

        def open_now() -> None:
            try:
                with self._sessions_lock:
                    if not self._closed:
                        self._open_sessions(tell)
            except Exception:
                log.exception("opening the sessions database ahead of the first request")

        with contextlib.suppress(RuntimeError):  # closed meanwhile: its threads are gone
            self._session_threads.submit(open_now)

    def _open_sessions(self, tell: Callable[[str], None] | None = None) -> SessionService:
        if self._sessions is None:
            from ctxlayer.state.session_service import SessionService
            from ctxlayer.store import SessionStore
            from ctxlayer.tokenizers import DEFAULT_MODEL, model_info

            # a list: `policy` may add a default one on the loop meanwhile
            durable = any(p.durability == "full" for p in list(self.policies.values()))
            store = SessionStore(self.state_dir, durability="full" if durable else "normal")
            if store.recovered_from is not None:
                text = (f"ctxlayer: the sessions database was unreadable; moved it to "
                        f"{store.recovered_from} and started a fresh one")
                if tell is not None:
                    tell(text)
                else:
                    self.events.message("", "warning", text)
            svc = SessionService(store, self.tokenizers.guarded,
                                 default_model=lambda: DEFAULT_MODEL,
                                 default_budget=lambda m: model_info(m).default_budget,
                                 settings_of=self._session_settings)
            self._sessions = svc
            # a workspace made durable on the loop since the store was made, while `_sessions`
            # was still None (it set nothing then)
            if not durable and any(p.durability == "full" for p in list(self.policies.values())):
                store.set_durability("full")
            self._closers.append(store.close)
            for workspace in list(self.policies):
                self.expire(workspace)
        return self._sessions

    @property
    def conversations(self) -> Conversations:
        """Live chats that resend their whole history (ctx/prepare and the gateway)."""
        if self._conversations is None:
            from ctxlayer.state.conversations import Conversations

            self._conversations = Conversations(self)
        return self._conversations

    async def work(self, fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
        """Run blocking work (the session service, the database) on a session thread."""
        return await _run_on(self._session_threads, fn, *args, **kwargs)

    def keep(self, fn: Callable[..., T], *args: Any, **kwargs: Any) -> asyncio.Future[T]:
        """Run a bulk write (an audit log, a kept window) on the keeping thread, in the order
        of the calls: queued now, awaited or not (queued when a task first ran, a window
        written as a chat was forgotten from memory landed after the read of its chat coming
        back, and its next window, of the same turn number, was ignored)."""
        return asyncio.get_running_loop().run_in_executor(
            self._keeping_thread, functools.partial(fn, *args, **kwargs))

    def keep_later(self, fn: Callable[[], Any]) -> None:
        """Queue a small write on the keeping thread from any thread, not waited for (a failure
        is logged): after the bulk writes queued before it, in order."""
        self._keeping_thread.submit(_logged(fn))

    def spawn(self, work: Awaitable[Any]) -> None:
        """Run `work` on the loop in the background (the state's own reactions), kept alive
        until it ends; a failure is logged."""
        task = asyncio.ensure_future(work)
        self._tasks.add(task)

        def done(t: asyncio.Future) -> None:
            self._tasks.discard(t)
            if not t.cancelled() and t.exception() is not None:
                log.error("the state's background work failed", exc_info=t.exception())

        task.add_done_callback(done)

    def serving(self) -> None:
        """From the face's event loop, once it serves: full garbage collections wait for its
        quiet moments (collecting.py) until `close`."""
        if not self._holding:
            collecting.hold()
            self._holding = True

    async def stop_gateway(self) -> None:
        """Stop the gateway a connection started, as `ctxlayer gateway` stops (its streams
        ended, the requests under way answered, its usage reports waited for, gateway.json
        taken away): before `close`, whose database those reports write to. The daemon never
        stopped it: after shutdown and exit gateway.json named the dead process, and
        `ctxlayer chats` said the gateway did not answer instead of that none ran."""
        if self.gateway_starter is None:
            return
        try:
            await self.gateway_starter.close()
        except Exception:  # the rest of the state closes all the same
            log.exception("stopping the gateway failed")

    def close(self) -> None:
        """Stop watchers and close services; safe to call twice. The writes queued on the
        keeping thread land first: the database closes after them."""
        with self._sessions_lock:  # an early opening under way ends first (its store closes)
            self._closed = True
        if self._holding:
            collecting.let_go()
            self._holding = False
        self.workspaces.close_all()
        if self._conversations is not None:  # the live chats' windows, before the database
            try:
                self._keeping_thread.submit(_logged(self._conversations.closing()))
            except RuntimeError:  # closed before: the thread takes no more
                pass
        self._keeping_thread.shutdown(wait=True)
        while self._closers:
            try:
                self._closers.pop()()
            except Exception:
                log.exception("closing a service failed")


def _logged(fn: Callable[[], Any]) -> Callable[[], None]:
    """``fn``, its failure logged, not raised (a write nobody waits for)."""
    def run() -> None:
        try:
            fn()
        except (StoreError, sqlite3.Error) as exc:  # the folder's fault, said in one line
            log.error("a write of the state failed: sessions database: %s",
                      describe_store_error(exc))
        except Exception:
            log.exception("a write of the state failed")

    return run


async def _run_on(threads: ThreadPoolExecutor, fn: Callable[..., T], *args: Any,
                  **kwargs: Any) -> T:
    return await asyncio.get_running_loop().run_in_executor(
        threads, functools.partial(fn, *args, **kwargs))
