"""Live chats that resend their whole conversation every turn (ctx/prepare and the gateway).

Owns `Conversations`: each conversation's last turn in memory (the engine's state, so a turn
counts and decides only what is new), its session in the session service (id
`chat-<conversationId>`: calibration from the provider's usage, and the audit log, written
only when a turn summarized, cut or restored something), the ids the user restored, and the
order of one conversation's turns (its lane, taken before the first await).
A conversation is known by `conversationId` (the gateway's `x-ctxlayer-conversation`), else by
its message chain within its family (identity.py): the requests of one client session id on
one model, else those that start with the same system text and first user message. Each
request goes to the family's conversation it extends or edits, else (a sub-agent's chat under
its session id) to one of its own; a chat that forks off keeps a conversation of its own, with
its own summary chunks. A conversation new
here (no turn in memory, no window kept) whose request starts as a live chat's last request
did, on a model counted alike (a chat forked under a new session id: Claude Code's
`--fork-session` or `/branch`; its `/model` to another Claude), starts from that chat's window,
as its next turn would, when its history passes its budget (one that fits goes whole): its
request starts with the prefix the provider cached, and nothing they share is counted or
summarized again. After a restart, so does one that starts as a chat kept in the state
folder did (`Upkeep.forks_of`: the workspace's most recent windows not in memory).
A turn that only appends a little and cannot reach its budget runs on the event loop (about a
millisecond for a 1M-token chat); any other turn runs on a worker thread.
Memory: the last MAX_LIVE conversations, MAX_LIVE_TOKENS of history together at most, keep
their turn (the engine holds its messages) and their last request as the codec read it (the
next turn takes over the messages it shares);
after a step the window is written to the state folder before the answer goes out, and the
first turn after a restart starts from it (upkeep.py): from the kept window of its family its messages agree with the
furthest, under that window's id (the ids go out anew after a restart, in the order the chats
come back; fork ids carry the run's own mark, so a new chat never writes over a kept window).
Must not: import a face, or write the whole history anywhere on a turn.
"""

from __future__ import annotations

import logging
import secrets
import sqlite3
import time
import weakref
from collections import OrderedDict
from collections.abc import Awaitable, Callable, Hashable, Iterator
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, TypeVar

import msgspec

from ctxlayer import protocol
from ctxlayer.core.calibration import most_believed
from ctxlayer.core.errors import MAX_TOKENS, ContextError
from ctxlayer.core.formats import written
from ctxlayer.core.prepare import (
    ConversationState,
    Turn,
    audit_of,
    left_out,
    may_refit,
    persist,
    prepare_turn,
    shown_shortened,
    told_anew,
)
from ctxlayer.core.tokens import tools_tokens
from ctxlayer.state import asides, asked, identity, windows
from ctxlayer.state.chat import Conversation
from ctxlayer.state.chatcodec import (
    conversation_field,
    conversation_of,
    decode,
    encode,
    nothing_to_fit,
    unfittable,
)
from ctxlayer.state.session_service import chat_of, chat_session
from ctxlayer.state.upkeep import Found, Kept, Upkeep
from ctxlayer.store.conversations import FAMILY_MOST
from ctxlayer.store.errors import StoreError, describe_store_error

if TYPE_CHECKING:  # protocols: the State imports this module, the Caller names the State
    from ctxlayer.state.seams import Asker as Caller
    from ctxlayer.state.seams import Host as State

log = logging.getLogger(__name__)
T = TypeVar("T")

#: conversations kept in memory; the least recently used one is forgotten (its session stays)
MAX_LIVE = 64
#: and the tokens of their histories together, the turn's own aside: a 5.3 MB Claude Code chat
#: (2.0M tokens as counted for Claude) holds about 9 MB, so 64 of them would hold 600 MB. 21 of
#: them in one process held 109 MB with this bound, 200 MB and growing without it. One
#: forgotten comes back from its kept window (that chat's next turn 39 ms, 24 ms in memory)
MAX_LIVE_TOKENS = 16_000_000


#: what a turn says when its window, or what it sent, could not be kept
WINDOW_FAILED = "keep this chat's window (after a restart it starts from an older one)"
SENT_FAILED = ("keep what this turn sent (after a restart the cache reuse is said against an "
               "older turn's request)")


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="milliseconds")


class Conversations:
    def __init__(self, state: State, *, max_live: int = MAX_LIVE,
                 max_tokens: int = MAX_LIVE_TOKENS, clock=_now, ticks=time.monotonic) -> None:
        self.state = state
        self.max_live, self.max_tokens = max_live, max_tokens
        self.clock = clock  # the time a conversation is listed with
        self.ticks = ticks  # the seconds between turns are measured by (`asides`)
        self._live: OrderedDict[tuple[str, str], Conversation] = OrderedDict()
        self.upkeep = Upkeep(state)  # what a turn sets going after its answer
        self._forks = 0  # ids given to forks, so each is new
        #: (workspace, family) a client wrote anew (its compaction, aider's repo map) -> the
        #: family of the chat it went on in (`_unhinted_family`), the last MAX_LIVE
        self._moved: dict[tuple[str, str], str] = {}
        self._run = secrets.token_hex(2)  # and new beside those of the runs before
        #: (workspace, the provider's id of an answer) -> the conversation it answered, the
        #: last MAX_ANSWERS: a Responses request naming it (`previous_response_id`) goes on
        #: in that conversation (each such turn, its input only the new items, was one of
        #: its own: a chat of four turns was listed as four)
        self._answered: OrderedDict[tuple[str, str], str] = OrderedDict()
        #: (workspace, conversation) -> the provider's id of its newest answer; (workspace, an
        #: answer not the newest of its conversation) -> the conversation of the chain that
        #: went on from it (`_branch`); the last MAX_ANSWERS of each
        self._last_answer: dict[tuple[str, str], str] = {}
        self._branches: dict[tuple[str, str], str] = {}
        #: id of a result of ctx/prepare -> (messages it leaves out, messages it sends
        #: shortened), while the result lives (`sent_figures`)
        self._told: dict[int, tuple[int, int]] = {}

    # --- ctx/prepare ---------------------------------------------------------------------

    async def prepare(self, caller: Caller, p: protocol.PrepareParams) -> protocol.PrepareResult:
        """The request to send instead of ``p.request``; one conversation's turns in order."""
        if not isinstance(p.request, dict):
            raise ContextError("invalid", "expected the provider request as an object",
                               field="request")
        empty = nothing_to_fit(p.format, p.request)
        if empty is not None:
            return await self._as_sent(caller, p, empty)
        # a place of its own until it has found its lane (found by awaits: the state folder's
        # chats): a list of the workspace sent after it waits for it, as for any turn. Its own
        # key, so no other request waits for it
        async with self.state.lanes.turn(("arriving", caller.workspace, object())):
            try:
                return await self._prepare_in_lane(caller, p)
            except ContextError:
                # refused: a title asked before it is set aside all the same
                hint = identity.client_hint(p.format, p.request, p.client_session_id)
                aside = asides.beside_refused(self._recent(caller.workspace), p.request,
                                              asked.run_of(p, hint), self.ticks())
                self.state.events.not_live(caller.workspace, aside)
                raise

    async def _prepare_in_lane(self, caller: Caller, p: protocol.PrepareParams
                               ) -> protocol.PrepareResult:
        """The turn in its conversation's lane: the one it names, else its family's."""
        workspace = caller.workspace
        trouble: list[str] = []  # what the state folder failed (the result says it)
        named = p.conversation_id or await self._provider_chat(workspace, p, trouble)
        if named:
            async with self.state.lanes.turn(("chat", workspace, named)):
                return await self._prepare(caller, p, workspace, named, trouble=trouble)
        # the requests of one client session on one model, else those that start alike, are a
        # family; within it, by the chain: Claude Code's sub-agents send their own chats under
        # its session id, and each took the window of the chat it interrupted. The family's
        # requests take one lane, so each sees the others' last
        hint = identity.client_hint(p.format, p.request, p.client_session_id)
        family = (identity.hinted_id(p.format, hint, asked.model_of(caller, p)) if hint
                  else await self._unhinted_family(workspace, p, asked.model_of(caller, p),
                                                   trouble))
        older = identity.older_hinted_id(p.format, hint) if hint else None
        async with self.state.lanes.turn(("chats", workspace, family)):
            cid, edits = self._by_chain(workspace, family, p.request,
                                        asked.model_of(caller, p))
            return await self._prepare(caller, p, workspace, cid, family,
                                       asked.run_of(p, hint), edits, older, trouble)

    async def _kept_bias(self, conv: Conversation, model: str) -> tuple[float, float | None]:
        """(the bias, the error band) the calibration of ``conv``'s session, or of a window it
        may take up, kept in the state folder (`SessionService.kept_bias`)."""
        ids = dict.fromkeys([conv.conversation_id, *(k[0] for k in conv.kept)])
        return await self.state.work(lambda: self.state.sessions.kept_bias(
            conv.workspace, [chat_session(cid) for cid in ids], model))

    async def _provider_chat(self, workspace: str, p: protocol.PrepareParams,
                             trouble: list[str]) -> str | None:
        """The conversation a request whose history the provider keeps goes on in: the one
        the answer it names (`previous_response_id`) was of (in memory, else as the state
        folder kept it: a chain goes on after a restart), or the one of the provider's
        `conversation` it names; None: found by its family, as any request."""
        kept = identity.provider_history(p.format, p.request)
        if kept is None:
            return None
        kind, name = kept
        if kind == "conversation":
            return identity.provider_chat_id(p.format, name)
        found = self._answered.get((workspace, name))
        if found is None:
            state = self.state  # its sessions opened on the keeping thread, not here
            found = await _or_said(state.keep(lambda: state.sessions.store.answered(
                workspace, name)), "read which conversation the answer it names was of (it "
                "may start afresh)", trouble, None)
            if found is not None:
                self._remember_answer(workspace, name, found)
        return found if found is None else self._branch(workspace, found, name)

    def _branch(self, workspace: str, conversation_id: str, answer_id: str) -> str:
        """The conversation a request naming ``answer_id`` of ``conversation_id`` goes on in:
        that one while the answer is its last, else (the chain went on from another answer
        since: two chains that opened alike, whose first requests were one, or an answer
        regenerated) a conversation of its own from there, the same for every request naming
        it. Before, both chains went on in one conversation, listed as one chat, each turn's
        figures written over the other's."""
        last = self._last_answer.get((workspace, conversation_id))
        if last is None or last == answer_id:
            return conversation_id
        branch = self._branches.get((workspace, answer_id))
        if branch is None:
            branch = self._branches[(workspace, answer_id)] = self._fork_id(conversation_id)
            while len(self._branches) > MAX_ANSWERS:
                self._branches.pop(next(iter(self._branches)))
        return branch

    def answered_as(self, workspace: str, conversation_id: str, answer_id: str) -> None:
        """The provider named its answer to a request of ``conversation_id`` so: a request
        naming it goes on in that conversation, also after a restart (kept in the state
        folder)."""
        self._remember_answer(workspace, answer_id, conversation_id, last=True)
        self.upkeep.keep_answer(workspace, answer_id, conversation_id, self.clock())

    def _remember_answer(self, workspace: str, answer_id: str, conversation_id: str,
                         last: bool = False) -> None:
        """``last``: the newest answer of its conversation (`_branch`)."""
        self._answered[(workspace, answer_id)] = conversation_id
        self._answered.move_to_end((workspace, answer_id))
        while len(self._answered) > MAX_ANSWERS:
            self._answered.popitem(last=False)
        if last:
            self._last_answer.pop((workspace, conversation_id), None)
            self._last_answer[(workspace, conversation_id)] = answer_id
            while len(self._last_answer) > MAX_ANSWERS:
                self._last_answer.pop(next(iter(self._last_answer)))

    async def _as_sent(self, caller: Caller, p: protocol.PrepareParams, why: str
                       ) -> protocol.PrepareResult:
        """A request that holds no message (a Responses one with no input, its prompt the
        provider's: a stored `prompt`, an earlier response): nothing to fit and nothing for a
        conversation to keep, so it goes as it came, in none, its tools counted, ``why`` in
        its notice (before, a 400: "a conversation needs at least one message")."""
        model = asked.model_of(caller, p)
        budget = asked.nominal_budget(caller, p, model)  # a bad output room is said all the same
        tools = await self.state.tokenizers.on_worker(
            model, lambda counter: tools_tokens(p.request, counter, p.format, model))
        return protocol.PrepareResult(
            request=p.request, conversation_id="", session_id="", tokens=tools, budget=budget,
            dropped=[], truncated=[], compacted=False, cache_reuse_tokens=0, cache_breakpoints=[],
            notice=why)

    def _by_chain(self, workspace: str, family: str, request: dict, model: str
                  ) -> tuple[str, bool]:
        """(the family's conversation on ``model`` or one counted alike that ``request``
        extends or edits, whether it edits it); a new id when it shares no message with any.
        An edit leaves the replaced chain behind as a fork of its own once the turn is done
        (`_fork`): if that chat goes on, it lands there. A history the client's own
        compaction wrote edits the most recent chat of the family with the same system
        prompt (a sub-agent's has its own), else the most recent. A request on a model
        counted otherwise (a title asked of another model with the chat's history) is a
        conversation of its own: the chat's window stays the chat's (it was started afresh,
        its summaries written again, and again once the chat came back). One that shares
        only the system prompt is a new chat (`identity.best_match`), but one that carries
        a chat's last question answered goes on in it (`identity.goes_on`)."""
        now = identity.turns(request)
        family_live = [(cid, c) for (ws, cid), c in self._live.items()
                       if ws == workspace and c.family == family]
        live = [(cid, c) for cid, c in family_live if asked.counted_alike(c.model, model)]
        members = [(cid, c.chain) for cid, c in live]
        found = identity.best_match(members, now)
        if found is None and members and identity.compacted(now):
            system = identity.system_of(request)
            alike = [cid for cid, c in live if c.system() == system]
            return (alike or [members[-1][0]])[-1], True
        if found is None:  # its opening written anew (aider's repo map), under a session id
            going = [cid for cid, chain in members if identity.goes_on(chain, now)]
            if going:
                return going[-1], True
        if found is None:
            return (self._fork_id(family) if family_live else family), False
        cid, extends = found
        return cid, not extends

    async def _unhinted_family(self, workspace: str, p: protocol.PrepareParams,
                               model: str, trouble: list[str]) -> str:
        """The family of a request no client session id names: those that start like it. But
        a chat whose opening its client writes anew goes on in its own family: a history the
        client's compaction wrote opens with its summary (Qwen Code's, OpenCode's on the
        Messages API, `cn`'s, aider's restored with its summary: the workspace's most recent
        chat on ``model`` with the same system prompt, its asides since set aside,
        `asides.before_compaction`), aider's opens with its repo map, written anew as the
        chat's files change (the chat whose last question it carries, answered). So do the
        requests that open like it after it (`_moved`, kept in the state folder for the first
        request after a restart).
        Before, each compaction, each aider turn that changed the map, made a chat more, and
        the one going on started uncalibrated."""
        family = identity.family_id(p.format, p.request)
        moved = self._moved.get((workspace, family))
        if moved is not None or self._ids(workspace, family):
            return moved or family
        live = [c for (ws, _), c in self._live.items() if ws == workspace]
        now = identity.turns(p.request)
        compacted, system = identity.compacted(now), identity.system_of(p.request)
        alike = [c for c in live if c.client is None and c.model == model and c.family
                 and not c.left_behind and c.system() == system
                 and (compacted or identity.goes_on(c.chain, now))]
        went: str | None = alike[-1].family if alike else None
        if went is not None:
            if compacted:
                asides.before_compaction(live, alike[-1])
            self.upkeep.keep_moved(workspace, family, went, _now())
        else:  # after a restart: where it went on before, if it did
            state = self.state  # its sessions opened on the keeping thread, not here
            went = await _or_said(state.keep(lambda: state.sessions.store.moved(
                workspace, family)), "read where the chat went on (it may start afresh)",
                trouble, None)
        if went is None:
            return family
        self._remember_moved(workspace, family, went)
        return went

    def _remember_moved(self, workspace: str, family: str, went: str) -> None:
        self._moved[(workspace, family)] = went
        while len(self._moved) > self.max_live:
            self._moved.pop(next(iter(self._moved)))

    def _went_on(self, conv: Conversation, took: str) -> None:
        """``conv``'s request took up the window kept under ``took``: when that is a chat of
        another family, its opening written anew (`windows.kept_start`), the request's family goes on
        in that one from now on, kept so for a restart, as `_unhinted_family` moves it with
        the chat in memory."""
        went = identity.chain_family(took)
        if conv.family is None or went is None or went == conv.family \
                or identity.chain_family(conv.family) is None:
            return
        self._remember_moved(conv.workspace, conv.family, went)
        self.upkeep.keep_moved(conv.workspace, conv.family, went, _now())
        conv.family = went

    def _fork_id(self, family: str) -> str:
        """A new id in ``family``, never one given before this start: the state folder may
        keep a window under any id a run before it gave out."""
        self._forks += 1
        return f"{family}-{self._run}{self._forks}"

    def _fork(self, conv: Conversation) -> None:
        """Keep ``conv`` as it was before this turn, the chain its request edits, under a fork's
        id (the request goes on in ``conv``), its window written there too: the request's turn
        writes its own over the window kept under ``conv``'s id, and a fork forgotten from
        memory (the least recent of MAX_LIVE) whose chat comes back finds its window only
        under its own id (two chats that open alike took turns under one id)."""
        fork = conv.fork(self._fork_id(conv.family or conv.conversation_id))
        self._live[(conv.workspace, fork.conversation_id)] = fork
        self._live.move_to_end((conv.workspace, conv.conversation_id))
        if fork.state is not None:
            self.upkeep.keep(fork, _now())

    async def _prepare(self, caller: Caller, p: protocol.PrepareParams, workspace: str,
                       cid: str, family: str | None = None, client: str | None = None,
                       edits: bool = False, older: str | None = None,
                       trouble: list[str] | None = None) -> protocol.PrepareResult:
        """``family``: the family the chain placed the request in (None: a named one); a
        conversation not in memory may start from its kept windows, and its family's (after a
        restart the order of a family's requests gives out its ids anew), and goes on under
        the id of the one it starts from. ``client``: the client's run it came under
        (`asked.run_of`). ``edits``: the request edits the live conversation ``cid``, whose chain
        as it was is kept as a fork. ``older``: the family's id before ids named the model,
        whose windows are read when the family has none (`identity.older_hinted_id`).
        ``trouble``: what the state folder failed before the turn (the result says it too)."""
        state = self.state
        model = asked.model_of(caller, p)
        nominal = asked.nominal_budget(caller, p, model)
        source: protocol.Source = "gateway" if caller.source == "gateway" else "prepare"
        trouble = [] if trouble is None else trouble  # the state folder's failures: said
        conv, edited, edits = await self._conversation(workspace, cid, model, source, family,
                                                       edits, identity.turns(p.request), older,
                                                       trouble)
        conv.source = source
        if family is not None:
            conv.family, conv.client = family, client
        conv.window = p.context_window or asked.model_window(model)
        if conv.reports == 0 and not conv.session_open:  # new here: after a restart too
            conv.bias, conv.band = await _or_said(
                self._kept_bias(conv, model), "read this chat's calibration", trouble, (1.0, None))
        budget = nominal if conv.bias <= 1.0 else max(1, int(nominal / conv.bias))
        previous, restored, kept = conv.state, frozenset(conv.restored), conv.kept
        # a request whose history the provider keeps goes as it came: only counted
        fit = UNFITTED_BUDGET if unfittable(p.format, p.request) else budget
        # the provider counts the history it keeps and we never see: no calibration
        conv.provider_history = fit != budget
        previous = None if fit != budget else previous

        last, branched, forks_of = conv.decoded, conv.branched_from is not None, conv.forks_of
        compacted = identity.compacted(identity.turns(p.request))
        forked: list[str] = []  # the chat whose kept window a fork started from

        def work(counter) -> tuple[Turn, Any, int, int, Any, str, Kept | None, bool, Any]:
            decoded = decode(p.format, p.request, counter, last, model)
            if not decoded.messages:
                raise ContextError("invalid", "a conversation needs at least one message",
                                   field=conversation_field(p.format))
            tools = tools_tokens(p.request, counter, p.format, model)  # tool_choice too
            start, took, shown = previous, None, restored
            if fit == budget:  # after a restart: a kept window, its own or a fork's
                start, took, fork, shown = windows.kept_start(  # far further when it extends
                    kept, forks_of, decoded.messages, counter, previous, family, shown,
                    identity.EDITS_PAST_EXTENDS if edited is not None and not edits else 1,
                    compacted)
                forked.extend(fork)
            if tools >= fit:
                raise ContextError("pinned_over_budget", f"the tool definitions alone need "
                                   f"{tools} tokens, over the budget of {budget}", field="budget")
            turn = prepare_turn(start, decoded.messages, fit - tools, counter, restored=shown)
            turn, branch = windows.anew(turn, start, (branched or bool(forked)) and start is not None,
                                 decoded.messages, fit - tools, counter, shown)
            encoded = encode(decoded, turn.messages, turn.breakpoints)
            # the tokens of what is sent, after the codec's repairs (a summary merged with
            # the user turn after it costs one message's overhead): `ctxlayer count` of it
            sent = written(decoded, encoded, reuse=True)[1]
            return turn, encoded, tools, sent, decoded, counter.name, took, branch, start

        done, out = (state.tokenizers.run_inline(model, work, 0)
                     if _cheap(conv, conversation_of(p.format, p.request), budget, restored)
                     else (False, None))
        if not done:
            out = await state.tokenizers.on_worker(model, work)
        turn, encoded, tools, sent, decoded, counted_with, took, branch, start = out  # type: ignore
        turn = self._with_tools(turn, tools, conv, (took, kept, last, forked), p.request)
        conv = self._settle(conv, took, edited, edits, start)
        conv.decoded, conv.counted_with, conv.forks_of = decoded, counted_with, []
        if took is not None and compacted and conv.client is None:
            asides.before_kept_compaction(self._recent(workspace), conv, self.ticks())
        turn = _told_branch(conv, turn, branch, forked)
        conv.native_count = len(conversation_of(p.format, p.request))
        self._asked(conv, p.request)
        await self._took(conv, turn, encoded, budget, nominal, tools, sent, trouble, start)
        return self._sent(conv, _result(conv, turn, encoded, budget, trouble))

    def _sent(self, conv: Conversation, result: protocol.PrepareResult
              ) -> protocol.PrepareResult:
        """``result``, now ``conv``'s last, its figures kept with it while it lives: the
        chat's may be a newer turn's by the time they are read (`sent_figures`)."""
        conv.sent = weakref.ref(result)
        self._told[id(result)] = (conv.dropped, conv.shortened)
        weakref.finalize(result, self._told.pop, id(result), None)
        return result

    def sent_figures(self, result: protocol.PrepareResult) -> tuple[int, int]:
        """(messages left out, messages sent shortened) of the request ``result`` sends, as
        `ctx/conversations` and ctx/why count them: all it leaves out or shortens, whichever
        turn cut them (its `dropped` and `truncated` list what its own turn cut anew). A result
        no turn fitted (sent as it came) cut nothing before: its own lists."""
        told = self._told.get(id(result))
        return told if told is not None else (len(result.dropped), len(result.truncated))

    def _asked(self, conv: Conversation, request: dict) -> None:
        """``conv``'s chain is now ``request``'s: what the client asked beside it since its
        last turn and it went on without is set aside, and the request may be one asked
        beside a chat (`asides`: a title, a commit message; Claude Code asks its titles
        under the chat's session id)."""
        before, since = conv.chain, conv.turned_at
        conv.chain = identity.turns(request)
        asides.went_on_without(self._recent(conv.workspace), conv, before, since)
        conv.asked_once = identity.asks_once(request)

    async def _conversation(self, workspace: str, cid: str, model: str,
                            source: protocol.Source, family: str | None, edits: bool,
                            now: list, older: str | None, trouble: list[str]
                            ) -> tuple[Conversation, Conversation | None, bool]:
        """(the conversation the turn runs on, the live chat the request edits when a kept
        window may be the better start, whether the request still edits ``cid``). A
        conversation not in memory takes up its kept windows (`Upkeep.take_up`), else starts
        as a branch of a live chat (`_branch_of`)."""
        conv = self._get(workspace, cid)
        if conv is None:
            conv = Conversation(workspace, cid, model, source)
            await _or_said(self.upkeep.take_up(conv, family, self._ids(workspace, family), older),
                           "read the kept windows (the chat starts afresh)", trouble, None)
            if conv.kept:
                return conv, None, False
            branch = self._branch_of(conv, now)
            # a fork of a chat kept before a restart (not in memory) starts from its window
            # too, when it agrees further than the chat in memory it would branch from
            branch.forks_of = await _or_said(self.upkeep.forks_of(
                workspace, model, {c for (ws, c) in self._live if ws == workspace}),
                "read the kept windows (the chat starts afresh)", trouble, [])
            return branch, None, False
        if not asked.counted_alike(conv.model, model):  # nothing counted before holds
            if edits:  # the chain it replaces, as it was
                self._fork(conv)
            conv.model, conv.state, conv.kept, conv.decoded = model, None, [], None
            return conv, None, False
        conv.model = model  # a model counted alike (aider's `/model`): its window goes on
        if not edits and not conv.displaced:
            return conv, None, False
        # since a restart, the request may be another chat of the family coming back, whose
        # window was kept and not taken up yet (two chats that open alike): the turn starts
        # from it if it agrees with the request further than this one's state; or, extending
        # a chat whose first turn set that window aside (`displaced`: a new chat that asked its
        # opening alone), far further (`identity.far_past`)
        conv.kept = (await _or_said(self.upkeep.kept(workspace, family or cid, model, family,
                                                     self._ids(workspace, family), older),
                                    "read the kept windows", trouble, Found([], False, False))
                     ).windows
        return conv, conv, edits

    def _recent(self, workspace: str) -> Iterator[Conversation]:
        """The workspace's conversations in memory, the most recent turn first."""
        return (c for (ws, _), c in reversed(self._live.items()) if ws == workspace)

    def _ids(self, workspace: str, family: str | None) -> set[str]:
        """The ids of the family's conversations in memory (their kept windows are older)."""
        return {c for (ws, c), v in self._live.items() if ws == workspace and v.family == family}

    def _settle(self, conv: Conversation, took: Kept | None, edited: Conversation | None,
                edits: bool, start: ConversationState | None = None) -> Conversation:
        """The conversation a turn goes on in, once it is known which window it started
        from: the one kept under that window's id (`_taken_up`); ``conv`` with the chain its
        request edits left as a fork; or, new here in a family with a window kept under its
        id (another chat's, or on another model: one it agreed with was taken up), ``conv``
        under a new id (not written over it). A conversation the client named keeps its
        name. ``start``: the state the turn started from."""
        conv.displaced = False  # looked at once: a request that extends it goes on in it
        if took is not None:
            self._went_on(conv, took[0])
            return self._taken_up(conv, took, edited, start)
        if edits:
            self._fork(conv)
        elif conv.family is not None and conv.state is None and conv.id_kept:
            conv.conversation_id = self._fork_id(conv.family)
            conv.session_id, conv.turn = chat_session(conv.conversation_id), 0
        if conv.kept_beyond and conv.state is None:
            log.info("live chat %s starts afresh: none of the %d most recent kept windows of "
                     "its family agrees with it, and older ones are not read (if it is the "
                     "chat of one of those, that window stays listed under its id until it "
                     "expires)", conv.conversation_id, FAMILY_MOST)
        return conv

    def _taken_up(self, conv: Conversation, took: Kept, edited: Conversation | None,
                  start: ConversationState | None = None) -> Conversation:
        """The conversation a turn that started from the window ``took`` goes on in: the
        one kept under that id (so it keeps its window there, not over another chat's), with
        that window's turn. ``edited``: the live chat the request seemed to edit, which stays
        as it was. A request that agrees with the window short of its messages (``start``,
        the state made of it, holds fewer) edits the chat kept there: a rewind, or a new chat
        that opens as it did. That window is kept as it was under a fork's id, as `_fork`
        keeps a live chat's chain an edit leaves behind: the turn's own window is written
        under ``cid`` next, and before, the chat whose window it was found it gone when it
        came back (it went on in another chat's window, or afresh)."""
        cid, turn, snap = took
        displaced = conv.family is not None and start is not None and \
            len(start.messages) < len(snap.hashes)
        if displaced:
            self.upkeep.keep_forked(conv.workspace, cid, self._fork_id(conv.family), _now())
        if edited is not None:
            conv.kept = []
            conv = Conversation(conv.workspace, cid, conv.model, conv.source)
            conv.family, conv.client, conv.window = edited.family, edited.client, edited.window
        elif cid != conv.conversation_id:
            conv.conversation_id, conv.session_id = cid, chat_session(cid)
        conv.turn, conv.restored = turn, set(snap.restored)
        conv.displaced = displaced  # that window's chat may come back extending this one
        return conv

    def _branch_of(self, conv: Conversation, now: list) -> Conversation:
        """``conv`` (new here, nothing kept) as a branch of the live conversation of its
        workspace and model whose last request shares the most leading messages with ``now``;
        ``conv`` itself when none shares one (of two alike, the more recent: the provider more
        likely still holds its prefix). The engine takes that window over only as far as the
        messages it summarized are the same: a chat that merely opens alike starts afresh,
        with the counts of the messages they share."""
        best: Conversation | None = None
        most = 0
        for c in self._recent(conv.workspace):
            if c.state is None or not asked.counted_alike(c.model, conv.model):
                continue
            n = identity.shared(c.chain, now)
            if n > most:
                best, most = c, n
        if best is None:
            return conv
        return best.branch(conv.conversation_id, conv.source, conv.model)

    async def _took(self, conv: Conversation, turn: Turn, encoded: Any, budget: int,
                    nominal: int, tools: int, sent: int, trouble: list[str],
                    before: ConversationState | None = None) -> None:
        """What a turn leaves behind: the conversation's figures, its window kept, its
        session opened, the calibration and the read-ahead set going, the audit, the budget
        pushed to the editors (this chat is now the workspace's live one). What the state
        folder fails of it goes into ``trouble``: the request is ready all the same."""
        state, workspace = self.state, conv.workspace
        state.expire(workspace)  # at most once a day
        self._remember(conv, turn, budget, tools, sent)
        # what the request leaves out and shortens: the engine's, whichever turn cut it, and
        # what its format took out or shortened (as `_result` sorts the codec's entries)
        conv.dropped = left_out(turn) + sum(e.action == "dropped" for e in encoded.audit)
        conv.shortened = shown_shortened(turn) + sum(
            e.action not in ("dropped", "notFitted") for e in encoded.audit)
        conv.kept = []
        written, failed = self._keep(conv, turn, before)
        # what this turn set aside, or brought back, is listed so after a restart too
        self.upkeep.keep_listing(self._recent(workspace))
        if conv.branched_from is not None:
            log.info("live chat %s starts from the window of %s", conv.conversation_id,
                     conv.branched_from)
            conv.branched_from = None
        if not conv.session_open:
            async def open_session() -> bool:
                await state.work(state.sessions.open, workspace, protocol.SessionOpenParams(
                    session_id=conv.session_id, model=conv.model, budget=nominal), chat=True)
                return True

            conv.session_open = await _or_said(
                open_session(), "open this chat's session (its audit and calibration are not "
                "kept)", trouble, False)
        conv.extra_audit = list(encoded.audit)
        if conv.session_open:  # else tried again next turn
            self.upkeep.note_prompt(conv)
        if conv.source != "gateway":  # the gateway's once the request went upstream
            self.upkeep.read_ahead(conv)
        fresh = [] if turn.again else [*turn.dropped, *turn.truncated, *turn.restored,
                                        *encoded.audit]
        if fresh and conv.session_open:  # the audit log grows only when a turn did something
            await _or_said(state.keep(state.sessions.record_audit, workspace, conv.session_id,
                                      fresh), "keep this turn's audit", trouble, None)
        if written is not None:
            # the window is written before the answer goes out (beside the session's opening,
            # and before the audit on the same thread): killed right after the answer, the
            # daemon made the step again from an older window and may not make the one the
            # client was sent (the write held back 0.3 s: another request, 13 tokens of its
            # prefix reused, not 1043)
            await _or_said(written, failed, trouble, None)
        gone = state.sessions.store.gone_now() if state.sessions_started else None
        if gone is not None and not any(str(gone) in t for t in trouble):
            # every turn says it, not only those that stored something on the way
            trouble.append(f"the state folder could not keep this chat: {gone}")
        state.events.budget(workspace, msgspec.structs.replace(
            conv.budget_report(), compacted=turn.compacted, notice=turn.notice,
            warning="; ".join(trouble) or None), request=self._leads(conv))

    def _keep(self, conv: Conversation, turn: Turn, before: ConversationState | None
              ) -> tuple[Awaitable[None] | None, str]:
        """Write what of ``conv``'s turn a restart needs: its window, or what it sent as the
        change from the window written (``before``: the state the turn started from, None for
        a first). Returns the write its answer waits for (None: none) and what the turn says
        if that fails."""
        if turn.again:  # a request sent again changed nothing: kept the first time
            conv.again_since_written = True  # but its listing did: written at the close
            return None, WINDOW_FAILED
        if turn.stepped or turn.restored or turn.truncated or turn.dropped:
            return self.upkeep.keep(conv, _now()), WINDOW_FAILED  # a branch's first turn too
        if conv.written is not None and persist.carries(conv.written, turn.state):
            # the window as written, the turn's messages and result as a change from it: after
            # a restart the next request's cache reuse is said against what this one sent.
            # Waited for unless the turn only went on from the one before: lost to a kill, a
            # request after the restart is then compared with that one, which it shares no
            # more with (an edit's turn lost, one that went back to the chain before the edit
            # was said to reuse what the edit changed)
            kept_sent = self.upkeep.keep_sent(conv, _now())
            if before is None or not persist.extends(before, turn.state):
                return kept_sent, SENT_FAILED
            return None, SENT_FAILED
        # a window this turn's does not carry (an edit started it again), or none written by
        # this process (its first turn, the first after a restart): written whole, waited for
        # as above but when nothing is kept under its id yet (lost to a kill, the next request
        # is compared with nothing: it says none)
        kept = self.upkeep.keep(conv, _now())
        if conv.turn > 1 and (before is None or not persist.extends(before, turn.state)):
            return kept, WINDOW_FAILED
        return None, WINDOW_FAILED

    def _leads(self, conv: Conversation) -> bool:
        """Whether this turn makes ``conv`` the workspace's live chat, the one the editors'
        status bars show: yes, but not while a bigger chat of the same client session is the
        live one (a Claude Code run's sub-agent, on its model or a small one, beside
        the chat that started it: the status bar follows that chat), nor when ``conv`` was
        asked beside a chat (`asides`)."""
        if conv.left_behind:  # asked beside a chat (`asides`): the status bars stay on it
            return False
        live = self.state.events.live_chat(conv.workspace)
        other = self._get(conv.workspace, live[0]) if live is not None and live[0] else None
        return (other is None or other is conv or conv.client is None
                or other.client != conv.client or other.tokens <= conv.tokens)

    def read_ahead(self, workspace: str, conversation_id: str) -> None:
        """The facts of the conversation's next step read on a worker, when it is near: the
        gateway asks once a turn's request went upstream, so that the read runs while the
        provider thinks, not beside the request on its way out (on the 5 MB restart bench the
        read beside it added 13-17 ms)."""
        conv = self._get(workspace, conversation_id)
        if conv is not None:
            self.upkeep.read_ahead(conv)

    def summarize_ahead(self, workspace: str, conversation_id: str, ask: Any,
                        writer: str, window: int | None = None) -> None:
        """After an answer: ``ask`` (an async model call the face made, holding the request's
        key) writes the next step's summary in the background (upkeep.py), what it is shown
        fitted to its model's ``window``."""
        conv = self._get(workspace, conversation_id)
        if conv is not None:
            self.upkeep.summarize_ahead(conv, ask, writer, window)

    async def settled(self) -> None:
        """Wait for what the turns so far left running in the background."""
        await self.upkeep.settled()

    def _remember(self, conv: Conversation, turn: Turn, budget: int, tools: int,
                  sent: int) -> None:
        """``sent``: the tokens of the request the turn sends (`formats.written`)."""
        st = turn.state
        conv.state = st
        conv.budget = budget
        conv.tools_tokens = tools
        conv.tokens = sent
        conv.system_tokens = st.cum[st.head] + tools
        # never more than the request (as the result says it): the listing and status bars
        conv.cache_reuse = min(turn.cache_reuse_tokens, sent)
        conv.updated_at = self.clock()
        conv.turned_at = self.ticks()
        conv.sent = None  # a report from now on is of an older request, until its result
        # the provider's cache read is of the request it reports: none yet for this one
        # (kept, a failed request showed the one before's read beside its own count)
        conv.cached_tokens = None
        conv.left_behind = conv.aside = False
        key = (conv.workspace, conv.conversation_id)
        self._live[key] = conv
        self._live.move_to_end(key)
        # asked beside a chat (`asides`): known before memory makes room, so it leaves first
        asides.settle(self._recent(conv.workspace), conv, conv.turned_at)
        asides.helps(self._recent(conv.workspace), conv, conv.turned_at)
        held = sum(c.held() for c in self._live.values())
        while len(self._live) > self.max_live or (held > self.max_tokens and len(self._live) > 1):
            # what a client asked beside its chats leaves first, then the least recent chat
            aside = next((k for k, c in self._live.items() if c.aside), None)
            gone = self._live.pop(aside) if aside else self._live.popitem(last=False)[1]
            held -= gone.held()
            if gone.unwritten():
                # its chat may come back: from its own window, not afresh, nor as a branch
                # of another chat that shares its first messages; kept as of its last turn
                # (the least recent chat is not the most recent window of its family)
                self.upkeep.keep(gone, gone.updated_at or _now())
            self.upkeep.release(gone)

    def closing(self) -> Callable[[], None]:
        """The write of every live conversation's window not written since its last turn,
        for the keeping thread when the state closes: after a restart each chat starts from
        its own window and counts, as the property tests of tests/state/test_restart_ids.py
        say, also a chat that never stepped."""
        return self.upkeep.keep_unwritten(list(self._live.values()), _now())

    # --- listing, why, restore -------------------------------------------------------------

    def list(self, workspace: str) -> list[protocol.ConversationInfo]:
        """This workspace's live conversations, the most recent first; not a chain an edit
        left behind that no request went on in (`Conversation.left_behind`)."""
        return [c.info() for (ws, _), c in reversed(self._live.items())
                if ws == workspace and not c.left_behind]

    async def listed(self, workspace: str
                     ) -> tuple[list[protocol.ConversationInfo], int, str | None]:
        """ctx/conversations: this workspace's live conversations (`list`) and those the state
        folder keeps that are not in memory (after a restart, until their chat comes back: as
        listed when their window was last written), the most recent first, MAX_LIVE at most;
        how many more there are (they were cut without a word: 70 chats listed as 64); and
        what the state folder failed. A kept one that is in memory under its id is listed as
        it is there. The state folder failing, the live ones are listed with a warning; with
        none live its error is raised: an empty list said "no live conversations yet" of a
        chat kept on disk while another process held the database locked."""
        live = self.list(workspace)
        known = {cid for ws, cid in self._live if ws == workspace}
        store = self.state.sessions.store  # opened on the keeping thread, not here
        most = self.max_live + len(known)
        trouble: list[str] = []
        rows = await _or_said(self.state.keep(lambda: store.recent_conversations(
            workspace, most)), "read the kept conversations", trouble, None, raise_if=not live)
        kept = [info for cid, body in rows or () if cid not in known
                and (info := persist.listed(body)) is not None]
        both = sorted([*live, *kept], key=lambda c: c.updated_at, reverse=True)
        beyond = 0
        if rows is not None and len(rows) == most:  # the state folder may keep more
            read = known | {cid for cid, _ in rows}
            beyond = await _or_said(self.state.keep(lambda: store.count_conversations(
                workspace, read)), "count the kept conversations beyond those listed",
                trouble, 0)
        return (both[:self.max_live], max(0, len(both) - self.max_live) + beyond,
                "; ".join(trouble) or None)

    async def kept_why(self, workspace: str, conversation_id: str | None = None,
                       session_id: str | None = None, message_id: str | None = None
                       ) -> list[protocol.AuditEntry] | None:
        """ctx/why of a conversation not in memory whose window the state folder keeps (after
        a restart, before its chat's next turn), named by its id or its session's
        (`chat-<id>`): what explains its last result as that window says it; None when it is
        in memory or nothing is kept under it."""
        cid = conversation_id if conversation_id is not None else \
            chat_of(session_id) if session_id is not None else None
        snap = await self._kept_window(workspace, cid)
        if snap is None:
            return None
        entries = persist.kept_audit(snap)
        if message_id is None:
            return entries
        entries = [e for e in entries if e.message_id == message_id]
        if not entries and snap.ids and message_id not in snap.ids:
            raise ContextError("invalid", f"no message {message_id!r} in the last turn of "
                               f"conversation {cid!r}", field="messageId")
        return entries

    async def kept_window(self, workspace: str, session_id: str) -> persist.Snapshot | None:
        """The window the state folder keeps of the chat that ``session_id`` backs
        (`chat-<id>`) when that chat is not in memory (after a restart, or let go for newer
        chats, until its next request), else None. Its messages are the client's and are not
        kept: only what the window made of them, the listing and what explains its result."""
        return await self._kept_window(workspace, chat_of(session_id))

    async def figures(self, workspace: str, session_id: str
                      ) -> tuple[protocol.Budget | None, int] | None:
        """(its Budget, the messages of its last request) of the chat ``session_id`` backs
        (`chat-<id>`): a live chat's from memory, one not in memory as its kept window says
        them (after a restart, until it comes back); None for a session that backs no chat, or
        a chat of which nothing is kept."""
        cid = chat_of(session_id)
        if cid is None:
            return None
        conv = self._get(workspace, cid)
        if conv is not None:
            return None if conv.state is None else (conv.budget_report(),
                                                    len(conv.state.messages))
        # read only (ctx/session/budget): the store's error is said, not read as "no chat"
        return await self.state.keep(windows.kept_figures, self.state.sessions.store, workspace,
                                     session_id)

    def live_figures(self, workspace: str) -> dict[str, tuple[protocol.Budget, int]]:
        """(its Budget, the messages of its last request) of each live chat of the workspace
        that took a turn, by its session's id."""
        return {c.session_id: (c.budget_report(), len(c.state.messages))
                for (ws, _), c in self._live.items() if ws == workspace and c.state is not None}

    async def _kept_window(self, workspace: str, cid: str | None) -> persist.Snapshot | None:
        if cid is None or self._get(workspace, cid) is not None:
            return None
        # read only: the store's error goes to the caller (ctx/why, ctx/inspect), as "none
        # kept" it said "no live conversation" of a chat kept on disk
        store = self.state.sessions.store
        row = await self.state.keep(lambda: store.conversation(workspace, cid))
        return persist.decode(row[2]) if row is not None else None

    def why(self, workspace: str, conversation_id: str | None = None,
            session_id: str | None = None,
            message_id: str | None = None) -> list[protocol.AuditEntry]:
        """What explains the last result (for one message when ``message_id`` is given)."""
        conv = self._find(workspace, conversation_id, session_id)
        entries = [*(audit_of(conv.state) if conv.state is not None else []), *conv.extra_audit]
        if message_id is None:
            return entries
        entries = [e for e in entries if e.message_id == message_id]
        st = conv.state
        if not entries and (st is None or not any(m.id == message_id for m in st.messages)):
            # no entries would read as "kept whole": say that it names no message of the turn
            raise ContextError("invalid", f"no message {message_id!r} in the last turn of "
                               f"conversation {conv.conversation_id!r}", field="messageId")
        return entries

    def restore(self, workspace: str, conversation_id: str | None = None,
                session_id: str | None = None, message_id: str = "") -> None:
        """Show ``message_id`` whole from the next turn on, for the rest of the conversation."""
        conv = self._find(workspace, conversation_id, session_id)
        st = conv.state
        if not message_id or st is None or not any(m.id == message_id for m in st.messages):
            raise ContextError("invalid", f"no message {message_id!r} in the last turn of "
                               f"conversation {conv.conversation_id!r}", field="messageId")
        # what the request's format took out (a call whose result the request lacks): no
        # fit did it, so showing the message whole brings none of it back (it answered {} and
        # its audit said "restored", the call still gone). A message the fit cut as well
        # comes back whole but for that.
        repaired = next((e for e in conv.extra_audit if e.message_id == message_id
                         and e.action == "dropped"), None)
        if repaired is not None and not any(e.message_id == message_id for e in audit_of(st)):
            raise ContextError("invalid", f"message {message_id!r} was not cut to fit: "
                               f"{repaired.reason}; restoring cannot bring that back",
                               field="messageId")
        conv.restored.add(message_id)

    def of_session(self, workspace: str, session_id: str) -> Conversation:
        """The live conversation backed by that session (ctx/inspect shows its last turn)."""
        return self._find(workspace, None, session_id)

    def lanes_of(self, workspace: str, conversation_id: str) -> set[Hashable]:
        """The lanes a chat's turns run in (`prepare`): its name's when the client names it,
        else its family's (a new chat's family is often its own id); a read of the chat holds
        these back, and no other chat's."""
        lanes: set[Hashable] = {("chat", workspace, conversation_id),
                                ("chats", workspace, conversation_id)}
        conv = self._get(workspace, conversation_id)
        if conv is not None and conv.family is not None:
            lanes.add(("chats", workspace, conv.family))
        return lanes

    def has_session(self, workspace: str, session_id: str) -> bool:
        """Whether a live conversation of this workspace is backed by that session."""
        return any(ws == workspace and c.session_id == session_id
                   for (ws, _), c in self._live.items())

    def _get(self, workspace: str, cid: str) -> Conversation | None:
        return self._live.get((workspace, cid))

    def _with_tools(self, turn: Turn, tools: int, conv: Conversation,
                    started: tuple[Kept | None, list[Kept], Any, list[str]], request: dict
                    ) -> Turn:
        """`windows.tools_reused` of ``turn``, from what it ``started`` from (the window taken up,
        the chat's kept windows, the request its last turn read, the chat it forked): a new
        chat branched from a live one (`_branch_of`) has no request of its own before, and
        compares its tools with that chat's last."""
        took, kept, last, forked = started
        if last is None and conv.branched_from is not None:
            parent = self._get(conv.workspace, conv.branched_from)
            last = parent.decoded if parent is not None else None
        return windows.tools_reused(turn, tools, last, windows.window_tools(
            took or windows.own_window(conv, kept, started[2]), conv.forks_of, forked), request)

    def _find(self, workspace: str, conversation_id: str | None,
              session_id: str | None) -> Conversation:
        if conversation_id is None and session_id is None:
            raise ContextError("invalid", "give a conversationId or a sessionId",
                               field="conversationId")
        if conversation_id is None:
            assert session_id is not None
            conv = next((c for (ws, _), c in self._live.items()
                         if ws == workspace and c.session_id == session_id), None)
            field, name = "sessionId", session_id
        else:
            conv, field, name = self._get(workspace, conversation_id), "conversationId", \
                conversation_id
        if conv is None:
            raise ContextError("unknown_session", f"no live conversation {name!r} in this "
                               "workspace", field=field)
        return conv

    # --- the provider's usage --------------------------------------------------------------

    def report_usage(self, conversation_id: str, usage: dict, workspace: str | None = None,
                     refused: bool = False, answer: str = "",
                     sent: protocol.PrepareResult | None = None) -> protocol.Budget | None:
        """Feed the provider's usage of a request to the session's calibration (``refused``:
        its count of a prompt it refused as over the window; ``answer``: the answer's first
        words, which a helper of the chat may be asked, `asides.helps`; ``sent``: the
        request's prepared result, whose own count the usage is compared with, else the last
        turn's); the Budget to publish, or None when the conversation or the usage is unknown,
        or the request is older than the chat's last turn. It takes the session service's
        lock: from the event loop, call it through ``state.work``; the calibration's row is
        written later, on the keeping thread."""
        conv = next((c for (ws, cid), c in reversed(self._live.items())
                     if cid == conversation_id and (workspace is None or ws == workspace)), None)
        read = asked.read_usage(usage)
        if conv is None or read is None:
            return None
        # two requests of a chat in flight (a client that does not wait, a retry): the older
        # one's answer may come last. Its usage is of its own prompt (compared with the last
        # turn's, a prompt of 21.6k tokens billed as counted recorded a ratio of 2.0, and the
        # chat's next budget fell by a third); the figures of the chat are the last turn's
        newest = sent is None or (conv.sent is not None and conv.sent() is sent)
        tokens = conv.tokens if sent is None else sent.tokens
        prompt, cached = read
        most = most_believed(tokens, refused=refused)
        if prompt > most:
            log.warning("live chat %s: the provider reported %d prompt tokens for a prompt of "
                        "%d by our count, taken as %d", conv.conversation_id, prompt, tokens,
                        most)
            prompt = most
        if conv.session_open and tokens > 0 and not conv.provider_history:
            # the calibration's row is written on the keeping thread: a chat's answer must not
            # wait for the database while another chat's turn writes its audit
            conv.reports += 1  # first: a note of the prompt ending meanwhile is older
            conv.bias = self.state.sessions.report_usage(conv.workspace, conv.session_id,
                                                         prompt, tokens,
                                                         later=self.state.keep_later,
                                                         refused=refused)
            conv.band = self.state.sessions.band(conv.workspace, conv.session_id, conv.model)
        if not newest:
            return None
        if not refused:
            conv.answer, conv.answered_at = answer, self.ticks()
        conv.cached_tokens = None if cached is None else min(cached, prompt)
        # the provider's count went to the calibration above; the figures stay ours, which
        # byLayer adds up to and every other face (x-ctxlayer-tokens, ctx/conversations,
        # ctx/session/budget) says: its count of an Anthropic system prompt differs from ours
        return conv.budget_report()


#: a turn that adds at most this many characters, and cannot reach its budget, runs on the
#: event loop: it costs about a millisecond for a 1M-token chat (decode, compare, count the
#: new text), less than the hop to a worker thread on a busy machine
INLINE_NEW_CHARS = 32_000


#: the answers whose conversation is remembered (`Conversations.answered_as`)
MAX_ANSWERS = 4096


#: the budget of a turn that is not fitted (`previous_response_id`, `conversation`): nothing is
#: cut (the most a budget may be)
UNFITTED_BUDGET = MAX_TOKENS


def _result(conv: Conversation, turn: Turn, encoded: Any, budget: int,
            trouble: list[str]) -> protocol.PrepareResult:
    """What ctx/prepare answers for a turn: the request, what the engine and the codec cut,
    and what the state folder failed (``trouble``). A request sent as it came (`notFitted`:
    its history is the provider's) shortened nothing: that entry is the chat's audit only
    (ctx/why), not one of the messages sent shortened (the gateway's header counted it)."""
    return protocol.PrepareResult(
        request=encoded.payload, conversation_id=conv.conversation_id,
        session_id=conv.session_id, tokens=conv.tokens, budget=budget,
        dropped=[*turn.dropped, *(e for e in encoded.audit if e.action == "dropped")],
        truncated=[*turn.truncated, *(e for e in encoded.audit
                                      if e.action not in ("dropped", "notFitted"))],
        # the engine's counts of the shared messages, never more than the request: the same
        # request sent again said 394 tokens reused of 391 (its figure counts its format's own)
        compacted=turn.compacted, cache_reuse_tokens=min(turn.cache_reuse_tokens, conv.tokens),
        cache_breakpoints=list(encoded.breakpoints), notice=turn.notice or _unfitted(encoded),
        warning="; ".join(trouble) or None)


def _told_branch(conv: Conversation, turn: Turn, branch: bool, forked: list[str]) -> Turn:
    """``turn``, and when it started from another chat's window (``branch``: the kept one of
    ``forked``, else the live one ``conv`` branched from) the client is told it."""
    if not branch:
        conv.branched_from = None
        return turn
    conv.branched_from = forked[0] if forked else conv.branched_from
    return told_anew(turn)


def _unfitted(encoded: Any) -> str | None:
    """Why a request goes as it came, for the user: its tokens may pass its budget, and a
    client reading the result alone saw that with nothing said (the entry is in ctx/why)."""
    why = next((e.reason for e in encoded.audit if e.action == "notFitted"), None)
    return f"ctxlayer: not fitted: {why}" if why else None


async def _or_said(work: Awaitable[T], what: str, trouble: list[str], instead: T,
                   raise_if: bool = False) -> T:
    """``work``, or ``instead`` when the sessions database fails it (a full disk, a lock held
    past its timeout, a damaged file): a live chat's request is ready without the state folder,
    so the chat goes on, and the result's warning and the log say what was not kept (a full
    disk answered every turn that cut something with an error). ``raise_if``: the error
    goes on up instead, where ``instead`` would be all the answer says (a listing of none)."""
    try:
        return await work
    except (StoreError, sqlite3.Error) as exc:
        if raise_if:
            raise
        said = f"the state folder could not {what}: {describe_store_error(exc)}"
        log.error("live chat: %s", said)
        trouble.append(said)
        return instead


def _cheap(conv: Conversation, messages: list, budget: int, restored: frozenset[str]) -> bool:
    """Whether this turn only appends a little to the last one and will not step (nor look
    at kept windows: an edit may be another chat of the family coming back)."""
    st = conv.state
    if st is None or conv.kept or conv.forks_of or not isinstance(messages, list) \
            or len(messages) < conv.native_count:
        return False
    if restored != frozenset(st.restored) or may_refit(st, budget - conv.tools_tokens):
        return False  # a window made again at a grown budget is a first turn's work
    new = msgspec.json.encode(messages[conv.native_count:])
    # two characters a token is a safe upper bound for the new text's tokens
    return len(new) <= INLINE_NEW_CHARS and (
        st.total + conv.tools_tokens + len(new) // 2 <= budget)


