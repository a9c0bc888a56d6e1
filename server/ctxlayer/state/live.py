"""Live workspaces: a watched `ctxlayer.workspace.Workspace` per root, shared by connections.

Owns: the first scan (off the event loop), starting and stopping the watcher, hopping its
callbacks from the watcher thread onto the event loop, and handing a changed segment to its
subscribers (the state's one, state/opening.py). Once the watcher runs, what was edited before
it did is caught up: the configuration files compared with what its read found, the segment
refreshed (an edit between those reads and the watcher's start was seen by nobody).
Subscribers are called on the loop, only when the segment's hash changed (the hash changes if
and only if the text does), so a refresh that the watcher also reports is announced once.

Must not: know about JSON-RPC, HTTP or connections (subscribers are plain callbacks); be
acquired but through `state/opening.py`.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ctxlayer.protocol import WorkspaceSegment
from ctxlayer.state.tokens import keep_out_of_collections

if TYPE_CHECKING:
    from ctxlayer.config import Config, ConfigRead
    from ctxlayer.state.tokens import Tokenizers
    from ctxlayer.workspace import Workspace

log = logging.getLogger(__name__)

#: seconds a read of the segment waits for the refreshes asked before it (a git that hangs on
#: a broken repository must not hold every request)
REFRESH_WAIT = 5.0

#: subscriber(segment, changed part names), called on the event loop
SegmentSubscriber = Callable[[WorkspaceSegment, list[str]], None]


class LiveWorkspace:
    """One workspace root being watched; `segment` is always the latest scan."""

    def __init__(self, tokenizers: Tokenizers, root: Path, config: Config | None,
                 model: str | None, *,
                 overrides: dict | None = None,
                 on_config: Callable[[LiveWorkspace], Any] | None = None,
                 opened_as: Path | None = None,
                 config_read: ConfigRead | None = None) -> None:
        self.tokenizers, self.root, self.config, self.model = tokenizers, root, config, model
        #: what the files held when `config` was read from them (config.load_config's
        #: `seen`), kept by each reload; None when the opener did not say
        self.config_read = config_read
        #: the root as the client named it (Workspace's `opened_as`)
        self.opened_as = opened_as
        #: the configuration given by the client that opened it, applied again on a reload
        self.overrides = overrides
        self.on_config = on_config
        self.workspace: Workspace | None = None
        self.segment: WorkspaceSegment | None = None
        self.subscribers: list[SegmentSubscriber] = []
        self.refs = 0
        self.error: BaseException | None = None
        #: set by `stop`: a start still under way sees it and ends without watching
        self._stopped = False
        self._ready: asyncio.Future[None] | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        #: refreshes under way (`refresh`), which a read of the segment waits for
        self._refreshing: set[asyncio.Future[list[str]]] = set()
        #: one reload at a time: two at once (the watcher's, the start's check) could apply
        #: the older reading last
        self._reloading: asyncio.Lock | None = None

    # -- lifecycle -----------------------------------------------------------------------------

    def start(self) -> asyncio.Future[None]:
        """Begin the first scan and the watcher (idempotent); the future ends with the scan."""
        if self._ready is None:
            self._loop = asyncio.get_running_loop()
            self._ready = asyncio.ensure_future(self._start())
        return self._ready

    async def _start(self) -> None:
        try:
            # the client may end while a step runs on its thread (stop sets `_stopped`): each
            # step is the start's own `ws`, and none starts once stopped
            ws = await asyncio.to_thread(self._create)
            if not self._stopped:
                self.workspace = ws
                self.segment = await asyncio.to_thread(ws.scan)
            if not self._stopped:
                await asyncio.to_thread(ws.start_watching, self._from_watcher,
                                        self._config_from_watcher)
            if self._stopped:  # also the watcher it may have started as stop ran
                await asyncio.to_thread(ws.stop)
                log.info("workspace %s: stopped during its first scan", self.root)
                return
            await self._catch_up()
            keep_out_of_collections()  # the scan's long-lived caches
            log.info("workspace %s: %d tokens, hash %s", self.root, self.segment.tokens,
                     self.segment.hash)
        except Exception as exc:
            self.error = exc
            log.exception("scanning workspace %s failed", self.root)
            raise

    async def _catch_up(self) -> None:
        """Once the watcher runs: what was edited since the configuration was read (at the
        client's initialize) and since the scan read the files, which no watcher saw. The
        configuration files are read again, and reloaded only when they hold something else
        than what the first read found (`State.reload_config`): the same files say nothing.
        The segment is refreshed, as a request would ask it: a read of the segment waits for
        it (`current`), and only a changed text is announced. A reload refreshes the segment
        itself, with the new settings."""
        if self.config_read is not None and await self._reload():
            return
        self._refresh_tracked(None).add_done_callback(self._caught_up)

    def _caught_up(self, job: asyncio.Future[list[str]]) -> None:
        """The catch-up's refresh ended: nobody awaits it, so a failure is logged here."""
        if not job.cancelled() and job.exception() is not None:
            log.error("refreshing %s after the watcher started failed", self.root,
                      exc_info=job.exception())

    def _create(self) -> Workspace:
        from ctxlayer.workspace import Workspace

        counter = self.tokenizers.guarded(self.model)
        return Workspace(self.root, self.config, counter.count, opened_as=self.opened_as)

    def stop(self) -> None:
        self._stopped = True
        if self.workspace is not None:
            try:
                self.workspace.stop()
            except Exception:
                log.exception("stopping the watcher of %s failed", self.root)
            self.workspace = None

    @property
    def ready(self) -> bool:
        return self._ready is not None and self._ready.done() and self.segment is not None

    async def current(self) -> WorkspaceSegment:
        """The latest segment, waiting for the first scan if it is still running, and for
        the refreshes asked before (an editor's save, then its chat turn: the turn read the
        AGENTS.md it had just saved over, 20 times in 20), at most REFRESH_WAIT seconds."""
        await self.start()
        if self._refreshing:
            await asyncio.wait(list(self._refreshing), timeout=REFRESH_WAIT)
        assert self.segment is not None
        return self.segment

    # -- changes -------------------------------------------------------------------------------

    def _from_watcher(self, segment: WorkspaceSegment, changed: list[str]) -> None:
        """Runs on the watcher thread: hop onto the loop, nothing else."""
        loop = self._loop
        if loop is not None and not loop.is_closed():
            loop.call_soon_threadsafe(self._publish, segment, list(changed))

    def _config_from_watcher(self, paths: list[Path]) -> None:
        """Runs on the watcher thread: a ctxlayer.toml changed; the state reloads it."""
        loop = self._loop
        if loop is not None and not loop.is_closed() and self.on_config is not None:
            loop.call_soon_threadsafe(lambda: asyncio.ensure_future(self._reload()))

    async def _reload(self) -> bool:
        """Reload the configuration (`on_config`); whether it was (the files had changed)."""
        if self.on_config is None:
            return False
        if self._reloading is None:
            self._reloading = asyncio.Lock()
        async with self._reloading:
            try:
                return bool(await self.on_config(self))
            except Exception:
                log.exception("reloading the configuration of %s failed", self.root)
                return False

    async def refresh(self, paths: list[Path] | None) -> list[str]:
        """Recompute the parts these paths affect (all when None); announce a change. A
        request that reads the segment meanwhile waits for it (`current`)."""
        return await self._refresh_tracked(paths)

    def _refresh_tracked(self, paths: list[Path] | None) -> asyncio.Future[list[str]]:
        """`refresh` started, not awaited: the reads of the segment wait for it all the same."""
        job = asyncio.ensure_future(self._refresh(paths))
        self._refreshing.add(job)
        job.add_done_callback(self._refreshing.discard)
        return job

    async def _refresh(self, paths: list[Path] | None) -> list[str]:
        await self.start()
        ws = self.workspace
        if ws is None:
            return []
        changed = await asyncio.to_thread(ws.refresh, paths)
        segment, previous = ws.segment, self.segment
        if changed or previous is None or segment.left_out != previous.left_out:
            self._publish(segment, list(changed))
        return list(changed)

    def _publish(self, segment: WorkspaceSegment, changed: list[str]) -> None:
        previous = self.segment
        if previous is not None and segment.version < previous.version:
            return  # an older snapshot arriving late
        self.segment = segment
        if previous is not None and previous.hash == segment.hash:
            return  # only what was left out changed: kept for readers, nothing to announce
        log.info("segment changed: %s (hash %s, %d tokens)", ",".join(changed), segment.hash,
                 segment.tokens)
        for subscriber in list(self.subscribers):
            try:
                subscriber(segment, changed)
            except Exception:
                log.exception("a segment subscriber failed")


class WorkspaceRegistry:
    """Live workspaces keyed by (resolved root, model, config): connections on the same root
    share one, whatever name reached it. The first connection's name decides which folders'
    agent files its segment reads (~/work/AGENTS.md for ~/work/proj, not for the folder's
    resolved path on another disk); a later name shares that segment. With the name in the
    key, one folder had two live workspaces and two segments, and a session both connections
    opened took its workspace layer from one or the other: its budget described a segment
    that connection's ctx/assemble did not send."""

    def __init__(self, tokenizers: Tokenizers,
                 on_config: Callable[[LiveWorkspace], Any] | None = None) -> None:
        self.tokenizers = tokenizers
        self.on_config = on_config
        self._live: dict[tuple[str, str, str], LiveWorkspace] = {}

    @staticmethod
    def _key(root: Path, config: Any, model: str | None) -> tuple[str, str, str]:
        import msgspec

        try:
            cfg = msgspec.json.encode(config).decode()
        except (TypeError, msgspec.EncodeError):
            cfg = repr(config)
        return (str(root), model or "", cfg)

    def acquire(self, root: Path, config: Config | None, model: str | None,
                overrides: dict | None = None, *,
                opened_as: Path | None = None,
                config_read: ConfigRead | None = None) -> LiveWorkspace:
        """The live workspace of `root` with this `config` and `model`, made if none is yet
        (`config_read`: what the files held as `config` was read, load_config's `seen`)."""
        key = self._key(root, config, model)
        live = self._live.get(key)
        if live is None:
            live = self._live[key] = LiveWorkspace(self.tokenizers, root, config, model,
                                                   overrides=overrides,
                                                   on_config=self.on_config,
                                                   opened_as=opened_as,
                                                   config_read=config_read)
        live.refs += 1
        return live

    def release(self, live: LiveWorkspace) -> None:
        live.refs -= 1
        if live.refs <= 0:
            for key, value in list(self._live.items()):
                if value is live:
                    del self._live[key]
            live.stop()

    def close_all(self) -> None:
        for live in list(self._live.values()):
            live.stop()
        self._live.clear()
