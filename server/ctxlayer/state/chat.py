"""One live chat of `ctx/prepare` and the gateway (`Conversation`): its last turn, what the
listing and the status bar show of it, and what its next turn and a restart need.

Owns the data only: `Conversations` (conversations.py) decides which conversation a request
goes on in and runs its turns; the upkeep (upkeep.py) keeps it.
Must not: decide anything, or import a face.
"""

from __future__ import annotations

import weakref
from typing import TYPE_CHECKING

from ctxlayer import protocol
from ctxlayer.core.prepare import ConversationState, persist
from ctxlayer.state import identity
from ctxlayer.state.session_service import chat_session, table_band

if TYPE_CHECKING:
    from ctxlayer.core.formats import Decoded
    from ctxlayer.state.upkeep import Fork, Kept


class Conversation:
    """One live chat: its last turn and what the listing and the status bar show."""

    #: whether the state folder lists its kept window (`Upkeep.keep_listing`), as this
    #: process last wrote it; None before it wrote any (one kept before a restart)
    kept_listed: bool | None = None
    #: its first turn after a restart took up a kept window it agreed with short of its
    #: messages, that window kept under a fork's id (`Conversations._taken_up`): until its
    #: next turn, a request that extends it may be that window's chat coming back
    displaced: bool = False

    def __init__(self, workspace: str, conversation_id: str, model: str,
                 source: protocol.Source) -> None:
        self.workspace = workspace
        self.conversation_id = conversation_id
        self.session_id = chat_session(conversation_id)
        self.model = model
        self.source: protocol.Source = source
        self.state: ConversationState | None = None
        self.restored: set[str] = set()
        self.budget = 0
        self.tokens = 0
        self.system_tokens = 0
        self.cache_reuse = 0
        self.dropped = 0  # messages its last request left out (`Conversations._took`)
        self.shortened = 0  # and sent shortened
        self.updated_at = ""
        self.cached_tokens: int | None = None
        self.window: int | None = None  # the model's whole context window (Budget.window)
        self.bias = 1.0  # billed / counted, from the session's calibration
        self.reports = 0  # usage reports taken: a bias read before the last one is older
        self.band: float | None = None  # the calibration's error band (None: the table's)
        #: its last turn's history the provider's (`previous_response_id`): no calibration
        self.provider_history = False
        self.extra_audit: list[protocol.AuditEntry] = []  # the codec's repairs of the last turn
        self.session_open = False
        self.native_count = 0  # messages of the last request, as the client sent them
        self.tools_tokens = 0
        self.chain: list = []  # the last request's messages, as sent (which chat it is)
        self.family: str | None = None  # set when the chain decides this conversation
        #: the client's run it came under (a Claude Code session: its families on every model)
        self.client: str | None = None
        #: (id, turn, window) of the windows kept before a restart its first turn may start
        #: from (its own, its family's): the one its messages agree with the furthest
        self.kept: list[Kept] = []
        #: a window is kept under its id (`upkeep.Found.id_kept`), and the family keeps older
        #: windows than those read (`upkeep.Found.beyond`)
        self.id_kept = self.kept_beyond = False
        self.forks_of: list[Fork] = []  # other chats' kept windows it may fork (a new chat)
        self.counted_with = ""  # the name of the counter of the last turn (kept with it)
        self.turn = 0  # windows written to the state folder (newer writes win)
        #: the state whose window was written last: a conversation forgotten from memory
        #: with a newer one is written as it goes (its chat finds it when it comes back)
        self.written: ConversationState | None = None
        #: a retry answered since that write (`Turn.again`): its figures are newer than the
        #: listing written with the window, written again at the close (`unwritten`)
        self.again_since_written = False
        #: its messages' hashes as the keeping thread last took them (`Upkeep.keep_sent`):
        #: read and set there only, so a turn hashes only the messages it added
        self.hashed: persist.Hashed | None = None
        #: the conversation whose window this one's first turn starts from (a branch), until
        #: that turn is done: it tells the client, and keeps, the window it took over
        self.branched_from: str | None = None
        #: the last request as the codec read it: the next turn takes over what they share
        #: (reading a 5 MB Claude Code history again was most of a turn)
        self.decoded: Decoded | None = None
        #: the chain an edit left behind (`fork`), or a client's request beside its chat
        #: (state/asides.py: a title, a summary), until a request goes on in it: not listed,
        #: so a client that replaces its history (Codex's compaction, an edited message)
        #: shows one chat, and a chat that opens like another shows as soon as it takes its
        #: own turn
        self.left_behind = False
        #: what its last request asked, when it may have asked once beside a chat
        #: (`identity.asks_once`: a title, a commit message), else None
        self.asked_once: str | None = None
        self.aside = False  # set aside as asked beside a chat (`asides.set_aside`)
        #: the chat this one helps (`asides.helps`): its requests carry that chat's history or
        #: last answer under a system prompt of their own (Qwen Code's memory agent, aider's
        #: editor), else None
        self.beside: str | None = None
        #: its last answer's first words (gateway/answers.py), and when it was reported
        self.answer = ""
        self.answered_at = 0.0
        #: the result of its last turn, once prepared (None while a turn is under way): a
        #: usage report of another result is of an older request, still in flight when this
        #: turn was prepared, and must not set what this turn's own answer will
        self.sent: weakref.ref[protocol.PrepareResult] | None = None
        self.turned_at = 0.0  # monotonic seconds of its last turn (`asides`)
        #: (the read it is of, its system prompt): a new chat is compared with every chat of
        #: its workspace's (`system`), each read once a request
        self._system: tuple[Decoded | None, list | None] = (None, None)

    def system(self) -> list | None:
        """Its last request's system prompt (`identity.system_of`), None before a request."""
        if self.decoded is None:
            return None
        if self._system[0] is not self.decoded:
            self._system = (self.decoded, identity.system_of(self.decoded.payload))
        return self._system[1]

    def fork(self, conversation_id: str) -> Conversation:
        """A copy under another id, for the chain this one is about to leave behind."""
        other = Conversation(self.workspace, conversation_id, self.model, self.source)
        for name in ("state", "budget", "tokens", "system_tokens", "cache_reuse", "dropped",
                     "shortened", "updated_at", "cached_tokens", "window", "bias", "native_count",
                     "tools_tokens", "chain", "family", "client", "turn", "decoded",
                     "counted_with", "turned_at"):
            setattr(other, name, getattr(self, name))
        other.restored = set(self.restored)
        other.extra_audit = list(self.extra_audit)
        other.left_behind = True
        return other

    def branch(self, conversation_id: str, source: protocol.Source, model: str
               ) -> Conversation:
        """A new conversation on ``model`` (one counted alike: Claude Code's `/model` from one
        Claude to another) that starts from this one's window (a state is a value: neither
        changes it). Not the codec's read of the last request: the branch's turns run beside
        this one's, in a lane of their own, and each turn adds to what that read keeps of the
        messages it wrote."""
        other = Conversation(self.workspace, conversation_id, model, source)
        for name in ("state", "window", "bias", "native_count", "tools_tokens", "chain",
                     "counted_with"):
            setattr(other, name, getattr(self, name))
        other.restored = set(self.restored)
        other.branched_from = self.conversation_id
        return other

    def held(self) -> int:
        """The tokens of the history its last turn holds in memory (0 before any turn)."""
        return self.state.cum[-1] if self.state is not None else 0

    def unwritten(self) -> bool:
        """Whether its last turn is not what the state folder keeps of it: its window, or
        the figures it is listed with."""
        return self.state is not None and (self.written is not self.state
                                           or self.again_since_written)

    def info(self) -> protocol.ConversationInfo:
        return protocol.ConversationInfo(
            conversation_id=self.conversation_id, session_id=self.session_id, model=self.model,
            source=self.source, tokens=self.tokens, budget=self.budget,
            cache_reuse_tokens=self.cache_reuse, dropped=self.dropped,
            updated_at=self.updated_at,
            # the provider's read of a history it keeps, against our count of the new input
            # only, read as more than all of it (940 of 470) and a bill of 10%: not said
            cached_tokens=None if self.provider_history else self.cached_tokens,
            percent=round(100 * self.tokens / max(1, self.budget), 1))

    def budget_report(self) -> protocol.Budget:
        """The chat's figures by our count (byLayer adds up to ``used``); the provider's count
        of its prompt feeds the calibration only."""
        used = self.tokens
        limit = max(1, self.budget)
        return protocol.Budget(
            used=used, limit=limit, percent=round(100 * used / limit, 1),
            by_layer=protocol.ByLayer(system=self.system_tokens, workspace=0, rules=0,
                                      working=0,
                                      history=max(0, self.tokens - self.system_tokens)),
            model=self.model, session_id=self.session_id, next_compaction_at=self.budget,
            conversation_id=self.conversation_id, source=self.source,
            cached_tokens=self.cached_tokens, window=self.window,
            error_band=self.band or round(table_band(self.model), 4) or None)
