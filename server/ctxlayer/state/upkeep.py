"""What a live chat's turn sets going, off the request path: the session told the turn's size
(calibration), the facts of the next step read ahead of need, the window written to the state
folder (the turn waits for that write before its answer), and a conversation's kept window
taken up after a restart.

Owns `Upkeep`: the background tasks of the conversations and how each ends (a failure is
logged, never raised into a turn; a result that came too late is dropped).
Must not: decide anything about a turn (core/prepare does) or be waited on by a request, but for
the write of the window a turn made (its answer waits for it).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Collection, Iterable
from typing import TYPE_CHECKING, Any, NamedTuple

import msgspec

from ctxlayer.core.prepare import (
    SummaryAsk,
    near_budget,
    persist,
    summary_ahead,
    take_summary,
    warm,
)
from ctxlayer.state import asked
from ctxlayer.store.conversations import FAMILY_MOST

log = logging.getLogger(__name__)

#: a window kept in the state folder: (its conversation's id, the turn it was written at, it)
Kept = tuple[str, int, persist.Snapshot]
#: another chat's window a new chat may fork (`Upkeep.forks_of`): as `Kept`, the window read
#: only as far as judging agreement needs (decoded whole once `resuming.resume_best` takes it)
Fork = tuple[str, int, persist.KeptWindow]


class Found(NamedTuple):
    """What `Upkeep.kept` read of the state folder for a conversation's first turn here."""

    windows: list[Kept]  # its own and its family's, those a turn may start from
    #: a window is kept under the conversation's id (on any model): one a turn does not
    #: start from is another chat's, and the turn goes on under a new id, not over it
    id_kept: bool
    #: the family keeps older windows than those read: a chat whose window is among them
    #: starts afresh (said in the log)
    beyond: bool

if TYPE_CHECKING:  # protocols: the State and conversations.py import this module
    from ctxlayer.core.prepare import ConversationState
    from ctxlayer.protocol import Budget, ConversationInfo
    from ctxlayer.state.seams import Chat as Conversation
    from ctxlayer.state.seams import Host as State


class Upkeep:
    def __init__(self, state: State) -> None:
        self.state = state
        self._tasks: set[asyncio.Future] = set()
        #: summaries a model is writing ahead of need, by conversation and messages covered
        self._asking: set[tuple] = set()
        #: the last answer of each conversation's model, with what it was asked
        self._answers: dict[tuple[str, str], tuple[SummaryAsk, tuple]] = {}

    def _after(self, conv: Conversation | str, task: asyncio.Future, what: str,
               took: Callable[[Any], None] | None = None) -> None:
        """Keep ``task`` until it ends; log its failure as ``conv``'s (a conversation, or the
        words that name what it is for), hand its result to ``took``."""
        who = conv if isinstance(conv, str) else f"live chat {conv.conversation_id}"

        def done(t: asyncio.Future) -> None:
            self._tasks.discard(t)
            if t.cancelled():
                return
            if t.exception() is not None:
                log.warning("%s: %s failed: %s", who, what, t.exception())
            elif took is not None:
                took(t.result())

        self._tasks.add(task)
        task.add_done_callback(done)

    def note_prompt(self, conv: Conversation) -> None:
        """Tell the session what this turn sends, so that ctx/session/reportUsage without an
        estimate calibrates against it, and take its bias for the next turn. On the session
        threads: the service's lock may be held by a long assembly."""
        task = asyncio.ensure_future(self.state.work(
            self.state.sessions.note_prompt, conv.workspace, conv.session_id, conv.tokens))
        reports = conv.reports

        def took(bias: float) -> None:
            # a usage report taken since this note read the session's bias set a newer one
            # (the gateway reports a refused prompt at once, on the other session thread)
            if conv.reports == reports:
                conv.bias = bias

        self._after(conv, task, "telling the session the turn's size", took)

    def read_ahead(self, conv: Conversation) -> None:
        """Once the next step is near (`near_budget`), read the facts it will summarize on a
        worker: that step then reads none on the request path. A turn
        that came meanwhile keeps its own state (the read is dropped)."""
        st = conv.state
        budget = conv.budget - conv.tools_tokens
        policy = self.state.policy(conv.workspace).live  # `[gateway] precompact_at`
        if st is None or not near_budget(st, budget, policy):
            return

        def took(ahead: Any) -> None:
            if ahead is not None and conv.state is st:
                conv.state = ahead

        self._after(conv, asyncio.ensure_future(asyncio.to_thread(warm, st, budget, policy)),
                    "reading ahead", took)

    def summarize_ahead(self, conv: Conversation,
                        ask: Callable[[SummaryAsk], Awaitable[str]], writer: str,
                        window: int | None = None) -> None:
        """Once the next step is near (`near_budget`), have ``ask`` (a model: the
        gateway's call to the chat's own upstream, which alone holds its key) write the
        decided / open part of the next step's chunk, once per range of messages; its answer
        (or its failure: ``ask`` raises) is kept in the state for the step that takes exactly
        those messages. It lands on the state the conversation has when it comes.
        ``window``: the model's, what it is shown is fitted to (`summary_ahead`)."""
        st = conv.state
        want = (summary_ahead(st, conv.budget - conv.tools_tokens,
                              self.state.policy(conv.workspace).live, window=window)
                if st is not None else None)
        key = (conv.workspace, conv.conversation_id, want.covered if want else None)
        if want is None or key in self._asking:
            return
        last = self._answers.get(key[:2])
        if last is not None and last[0] == want:  # a turn that ran meanwhile did not have it
            self._take(conv, want, last[1])
            return
        self._asking.add(key)

        async def run() -> tuple[str | None, str | None]:
            try:
                return await ask(want), None
            except Exception as exc:  # said in the audit; the offline summary stands in
                log.warning("live chat %s: the summary %s failed (%s); the offline summary "
                            "stands in", conv.conversation_id, writer, exc)
                return None, str(exc)
            finally:
                self._asking.discard(key)

        def took(answer: tuple[str | None, str | None]) -> None:
            text, failed = answer
            if text is not None and not isinstance(text, str):  # an asker that let it by
                text, failed = None, f"its answer is a {type(text).__name__}, not text"
            self._answers.pop(key[:2], None)
            self._answers[key[:2]] = (want, (text, writer, failed))
            while len(self._answers) > 64:  # as many as the live conversations, about
                self._answers.pop(next(iter(self._answers)))
            self._take(conv, want, (text, writer, failed))

        self._after(conv, asyncio.ensure_future(run()), "writing a summary ahead", took)

    def _take(self, conv: Conversation, want: SummaryAsk, answer: tuple) -> None:
        """Keep a model's ``answer`` (text, writer, failed) to ``want`` in ``conv``'s state.
        Never raises: it runs after the turn's answer went to the client (a failure here made
        the answered request a 500, every turn after while the answer was kept); what fails
        is logged and the offline summary stands in."""
        if conv.state is None:
            return
        try:
            kept = take_summary(conv.state, want, *answer)
        except Exception:
            log.exception("live chat %s: keeping the summary %s failed; the offline summary "
                          "stands in", conv.conversation_id, answer[1])
            return
        conv.state = kept if kept is not None else conv.state

    def keep(self, conv: Conversation, now: str) -> asyncio.Future | None:
        """Write the window this turn made (a step, an outline, a restore: what the next
        request after a restart must find again), on the keeping thread; the write, for a
        turn to wait for before its answer (None when there is no window)."""
        st, state = conv.state, self.state
        if st is None:
            return None
        conv.turn += 1
        conv.written, conv.again_since_written = st, False
        conv.kept_listed = not conv.left_behind
        row = (conv.workspace, conv.conversation_id, conv.model, conv.turn, st,
               conv.counted_with, now, conv.info(), conv.budget_report(), _request(conv),
               conv.kept_listed)
        # the store is reached on the keeping thread: the first use opens the database (a
        # chat's first turn writes its window, and a folder of a newer ctxlayer's failed it)
        task = asyncio.ensure_future(state.keep(lambda: _put(state.sessions.store, *row)))
        self._after(conv, task, "keeping its window")
        return task

    def keep_sent(self, conv: Conversation, now: str) -> asyncio.Future | None:
        """Keep, on the keeping thread, what this turn sent as the change from the window last
        written (its window `carries` that one's): after a restart the next request's cache
        reuse is said against this turn's request, not the older one whose window was kept.
        The write, for a turn to wait for (None when there is nothing to write)."""
        written, st = conv.written, conv.state
        if written is None or st is None or st is written:
            return None
        state, turn, counted_with = self.state, conv.turn, conv.counted_with
        workspace, cid, request = conv.workspace, conv.conversation_id, _request(conv)

        def write() -> None:
            # hashed here, off the loop; only what the turn added (`persist.hashed`)
            conv.hashed = persist.hashed(conv.hashed, st.messages)
            last = persist.sent(written, st, conv.hashed, turn, counted_with,
                                tools=persist.tools_key(request))
            state.sessions.store.put_sent(workspace, cid, turn, persist.encode_sent(last), now)

        task = asyncio.ensure_future(self.state.keep(write))
        self._after(conv, task, "keeping what its turn sent")
        return task

    def keep_listing(self, convs: Iterable[Conversation]) -> None:
        """Keep, on the keeping thread (after the windows queued before), whether each of
        ``convs`` is listed, where its kept window says otherwise: set aside after its window
        was written (OpenCode's title, asked before its chat's first request), or a request
        went on in one set aside by a turn that wrote no window. One a process never wrote a
        window of but has a kept one (``turn``: taken up after a restart) is written once.
        Before, a title was listed after every restart as a chat of its own."""
        for c in convs:
            listed = not c.left_behind
            if c.turn == 0 or c.kept_listed is listed:
                continue
            c.kept_listed = listed
            self._after(c, asyncio.ensure_future(self.state.keep(
                _set_listed, self.state, c.workspace, c.conversation_id, listed)),
                "keeping whether it is listed")

    def keep_moved(self, workspace: str, family: str, target: str, now: str) -> None:
        """Keep, on the keeping thread, that requests of ``family`` go on in ``target``'s (a
        history a client's compaction wrote, aider's new repo map: after a restart its chat
        is found)."""
        state = self.state  # its sessions opened on the keeping thread, not here
        self._after(f"family {family}", asyncio.ensure_future(state.keep(
            lambda: state.sessions.store.put_moved(workspace, family, target, now))),
            "keeping where it went on")

    def keep_forked(self, workspace: str, cid: str, fork: str, now: str) -> None:
        """Keep, on the keeping thread, the window kept under ``cid`` (and what its last turn
        sent) under ``fork`` too, not listed (a chain an edit left behind, until its chat
        comes back to it): a turn that edits that chat's window writes its own over it next."""
        state = self.state

        def copy() -> None:
            store = state.sessions.store
            row = store.conversation(workspace, cid)
            if row is None:
                return
            model, turn, body = row
            store.put_conversation(workspace, fork, model, turn, body, now, listed=False)
            sent = store.sent_of(workspace, [cid]).get(cid)
            if sent is not None:
                store.put_sent(workspace, fork, sent[0], sent[1], now)

        self._after(f"live chat {cid}", asyncio.ensure_future(state.keep(copy)),
                    f"keeping its window under {fork} too (the chat it was is left without)")

    def keep_answer(self, workspace: str, answer_id: str, conversation_id: str,
                    now: str) -> None:
        """Keep, on the keeping thread, that the provider's answer ``answer_id`` was of
        ``conversation_id`` (a chain named by `previous_response_id` goes on there after a
        restart)."""
        state = self.state
        self._after(f"answer {answer_id}", asyncio.ensure_future(state.keep(
            lambda: state.sessions.store.put_answer(workspace, answer_id, conversation_id,
                                                    now))),
            "keeping which conversation an answer was of")

    def release(self, conv: Conversation) -> None:
        """Let the chat's session go from memory, after what was queued for it is written."""
        state = self.state
        if conv.session_open and state.sessions_started:
            self._after(conv, asyncio.ensure_future(state.keep(
                state.sessions.release, conv.workspace, conv.session_id)),
                "letting its session go from memory")

    def keep_unwritten(self, convs: Iterable[Conversation], now: str) -> Callable[[], None]:
        """The write, for the keeping thread, of the windows of ``convs`` not written as of
        their chat's last turn (`Conversation.unwritten`: a retry's listing is newer than its
        window's; a chat under its budget has never been written: after a restart it was
        counted again, a 0.4 MB Claude Code chat's first request 35-51 ms through the
        gateway against 9-12 ms from its window, bench/bigbody_bench.py). For the state's
        close. Each is kept as of its chat's last turn, not of the close: a family's most
        recent windows are the ones read after a restart (`FAMILY_MOST`), and ten chats
        written at one time were read in the order of their ids."""
        todo = [(c.workspace, c.conversation_id, c.model, c.turn + 1, c.state, c.counted_with,
                 c.updated_at or now, c.info(), c.budget_report(), _request(c),
                 not c.left_behind) for c in convs if c.unwritten()]
        state = self.state

        def write() -> None:
            if not todo:
                return
            store = state.sessions.store
            for row in todo:
                _put(store, *row)

        return write

    async def take_up(self, conv: Conversation, family: str | None = None,
                      live: Collection[str] = (), older: str | None = None) -> None:
        """A conversation not in memory: its window as the state folder kept it, if any, for
        its first turn to start from (core/prepare/persist.py). With its ``family``, the
        windows of the family's conversations not in memory (not in ``live``) too: the turn
        starts from the one its messages agree with the furthest, and the conversation takes
        that window's id (after a restart the ids go out in the order the chats come back:
        a chat that went on under a fork's id, `<family>-<run><n>`, may arrive under the family's,
        and writing its window there lost the window of the chat kept under that id).
        ``older``: the family's id in an earlier version (`kept`)."""
        found = await self.kept(conv.workspace, conv.conversation_id, conv.model, family,
                                live, older)
        conv.kept, conv.id_kept, conv.kept_beyond = found
        conv.turn = next((turn for rid, turn, _ in conv.kept
                          if rid == conv.conversation_id), 0)

    async def kept(self, workspace: str, cid: str, model: str, family: str | None,
                   live: Collection[str] = (), older: str | None = None) -> Found:
        """(id, turn, window) of the windows kept under ``cid`` and, with ``family``, its
        family's most recent `FAMILY_MOST`, but those of the conversations in ``live`` (in
        memory: their own turns are newer); read on the keeping thread, after the windows
        queued there before (a chat forgotten from memory comes back before the write of its
        window landed, else), and off the event loop (the first request after a start may be
        the one that opens the database, its whole file checked unless it was closed
        cleanly). When the family has no window, those kept under ``older`` (its id in an
        earlier version) are read, and the one a turn starts from goes on under its old id."""
        state = self.state

        def read() -> Found:
            store = state.sessions.store  # the first use opens the database: here
            own = store.conversation(workspace, cid)
            # on a model counted alike the chat goes on in its window, as in memory
            # (`Conversations._by_chain`): Claude Code's `/model` from one Claude to another
            def alike(other: str) -> bool:
                return asked.counted_alike(other, model)

            rows = [(cid, own[1], own[2])] if own is not None and alike(own[0]) else []
            but, most = {cid, *live}, FAMILY_MOST + 1  # one more: are there older ones?
            family_rows = [] if family is None else \
                store.family_conversations(workspace, family, alike, but=but, most=most)
            if not rows and not family_rows and older is not None:
                family_rows = store.family_conversations(workspace, older, alike, but=but,
                                                         most=most)
            chosen = [r for r in rows + family_rows[:FAMILY_MOST] if r[0] not in live]
            sent = store.sent_of(workspace, [r[0] for r in chosen])
            out = []
            for rid, turn, body in chosen:
                snap = persist.decode_kept(body, turn, sent.get(rid))
                if snap is not None:
                    out.append((rid, turn, snap))
            return Found(out, own is not None, len(family_rows) > FAMILY_MOST)

        return await self.state.keep(read)

    async def forks_of(self, workspace: str, model: str, live: Collection[str]) -> list[Fork]:
        """(id, turn, window) of the workspace's most recently kept windows (`FAMILY_MOST`) of
        chats not in memory (not in ``live``) on a model counted alike with ``model``: after
        a restart, a new chat that opens as one of them did (a fork: another conversation id,
        another client session) starts from its window, as it starts from that chat's in
        memory without the restart. Read on the keeping thread, as `kept`; each window only
        as far as judging agreement needs (`persist.KeptWindow`): most new chats take up
        none, and decoding the 8 whole cost each new chat 1.7 to 3.4 ms for 72 KB windows."""
        state = self.state

        def read() -> list[Fork]:
            store = state.sessions.store
            rows = [r for r in store.recent_windows(workspace, live)
                    if asked.counted_alike(r[1], model)]
            sent = store.sent_of(workspace, [r[0] for r in rows])
            out = []
            for rid, _, turn, body, listed in rows:
                window = persist.KeptWindow.read(body, turn, sent.get(rid), listed)
                if window is not None:
                    out.append((rid, turn, window))
            return out

        return await self.state.keep(read)

    async def settled(self) -> None:
        """Wait for what the turns so far left running."""
        if self._tasks:
            await asyncio.gather(*self._tasks, return_exceptions=True)


def _set_listed(state: State, workspace: str, cid: str, listed: bool) -> None:
    """On the keeping thread: the store's first use opens the database."""
    state.sessions.store.set_listed(workspace, cid, listed)


def _request(conv: Conversation) -> dict | None:
    """The request of ``conv``'s last turn, as its client sent it (None before its first)."""
    return conv.decoded.payload if conv.decoded is not None else None


def _put(store: Any, workspace: str, cid: str, model: str, turn: int, st: ConversationState,
         counted_with: str, now: str, info: ConversationInfo | None = None,
         budget: Budget | None = None, request: dict | None = None,
         listed: bool = True) -> None:
    """Write one conversation's window (its snapshot, counts and all, its listing, its
    figures and what its ``request``'s tools were) under its id and turn, ``listed`` or not
    (`Conversations.list`: not an aside, nor a chain an edit left behind), on the keeping
    thread."""
    snap = msgspec.structs.replace(persist.snapshot(st, counted_with), info=info,
                                   budget=budget, tools=persist.tools_key(request))
    store.put_conversation(workspace, cid, model, turn, persist.encode(snap), now, listed)
