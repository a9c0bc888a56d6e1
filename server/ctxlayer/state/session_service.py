"""The session service: open sessions held in memory, every change written through to SQLite.

Owns the per-session state an assembly needs without re-reading or re-counting the session
(history with prefix sums, rules, working items, compaction state, calibration, the previous
assembly's fingerprint), what this process remembers of each open session (the system prompt
it was last assembled with, whether its system layers were measured, what its last assembly
cut, for ctx/why), and the order of effects: a change is committed to the store before the
method returns, so whatever a client was told survives a killed daemon. Closing a session
forgets all of it.
Sessions are isolated: each (workspace, session id) has its own everything; nothing outside
this service keys by (workspace, session id).
Thread safety: every public method holds the service lock (the daemon calls from threads).
Must not: import a face; talk to clients (the request functions do); run SQL (store/ does).
"""

from __future__ import annotations

import logging
import secrets
import threading
from bisect import bisect_left
from collections.abc import Callable
from datetime import UTC, datetime
from typing import NamedTuple, TypeVar

import msgspec

from ctxlayer import protocol
from ctxlayer.core.assembly import compaction as cp
from ctxlayer.core.assembly.assemble import (
    Assembly,
    AssemblyInput,
    assemble,
    assembled_budget,
    measure,
)
from ctxlayer.core.assembly.history import History
from ctxlayer.core.assembly.layers import Fingerprint
from ctxlayer.core.assembly.restore import restore as restore_message
from ctxlayer.core.assembly.why import why_of
from ctxlayer.core.calibration import Calibration
from ctxlayer.core.compress.logs import sanitize_log
from ctxlayer.core.errors import ContextError, require_tokens
from ctxlayer.core.formats.stored import Stored
from ctxlayer.core.text import one_line
from ctxlayer.core.tokens import Tokenizer, message_tokens
from ctxlayer.core.zones.compact import compress_item
from ctxlayer.core.zones.modes import DEFAULT_MODE, DEFAULT_MODES, ModeSpec
from ctxlayer.core.zones.rules import Rule, RulePolicy, imperative_warning, place_rules
from ctxlayer.core.zones.working import (
    DecayPolicy,
    ItemEvent,
    WorkingItem,
    after_message,
    new_item,
    turn_so_far,
)
from ctxlayer.protocol import AuditEntry, Message
from ctxlayer.store.db import SessionStore
from ctxlayer.store.errors import SeqTaken
from ctxlayer.store.sessions import SessionRow

#: tries of an append while another daemon appends to the same session
APPEND_TRIES = 5
#: item kinds whose logs are sanitized before they enter zone B
LOG_KINDS = frozenset({"log", "toolOutput", "error", "trace", "stackTrace", "output"})


class SessionSettings(msgspec.Struct, frozen=True, kw_only=True):
    """The policies of one workspace's sessions (from `[session]` in ctxlayer.toml)."""

    modes: dict[str, ModeSpec] = msgspec.field(default_factory=lambda: dict(DEFAULT_MODES))
    default_mode: str = DEFAULT_MODE
    rules: RulePolicy = RulePolicy()
    decay: DecayPolicy = DecayPolicy()
    compaction: cp.CompactionPolicy = cp.CompactionPolicy()
    calibration_window: int = Calibration().window


class SystemLayers(msgspec.Struct, kw_only=True):
    """The system prompt an assembly starts from (built by the caller from the segment)."""

    messages: list[Message] = msgspec.field(default_factory=list)
    cache_boundary: int | None = None
    workspace_tokens: int = 0


class Preview(NamedTuple):
    """An assembly previewed (`SessionService.preview`) and what explains its result."""

    assembly: Assembly
    why: list[AuditEntry]


class LastAssembly(NamedTuple):
    """What a session's last assembly sent, and what it was made from: while the session is
    the same (its revision, its system layers, its limit), its budget is this one."""

    revision: int
    system: SystemLayers
    budget: protocol.Budget


class LiveSession:
    """One open session's state in memory."""

    def __init__(self, row: SessionRow, counter: Tokenizer) -> None:
        self.row = row
        self.counter = counter
        self.history = History()
        # the provider message each row came from (JSON), by seq: only rows that have one
        self.raws: dict[int, bytes] = {}
        self.rules: list[Rule] = []
        self.items: list[WorkingItem] = []
        self.compaction = cp.Compaction()
        self.calibration = Calibration()
        self.system = SystemLayers()
        self.fingerprint: list[tuple[str, int]] | None = None
        # what assemblies already put in the audit log: an item left out again by the next
        # assembly, unchanged, is not recorded again. None until read from the stored audit
        # (`SessionService._audited`): a restarted daemon logged again what it held
        self.audited: set[tuple] | None = None
        self.last_total = 0
        self.next_item = 0
        self.next_rule = 0
        #: the system prompt params it was last assembled with: a workspace change re-measures
        #: the session with the same layers
        self.system_spec: protocol.SystemPromptParams | None = None
        #: whether this process measured its system layers (set_system)
        self.layered = False
        #: what its last assembly did (ctx/why adds it to what the compaction state says)
        self.last_audit: list[AuditEntry] | None = None
        #: another daemon changed it just before this one's last write: read it again
        self.stale = False
        #: its last assembly in this process, what ctx/session/budget answers until a change
        self.last_assembly: LastAssembly | None = None
        #: its history priced as a format sends it (None: as each message came), by format,
        #: with the length of the history it priced (`SessionService._history_for`)
        #: and how many of its first messages keep that price whatever comes (`settled`)
        self.priced: dict[str | None, tuple[int, History, int]] = {}
        #: the stored provider forms read so far, by seq (`SessionService._stored_at`)
        self.stored: dict[int, Stored] = {}


log = logging.getLogger(__name__)
T = TypeVar("T")


def table_band(model: str) -> float:
    """How far off our count of ``model``'s prompts may be, relative, by the model table."""
    from ctxlayer.tokenizers import model_info

    return model_info(model).uncertainty


def _reported(own: str, model: str) -> str:
    """The model whose reports hold for ``model`` in a session opened on ``own``: ``own``
    when the two are counted alike (the same encoding and correction), else ``model``."""
    from ctxlayer.tokenizers import counted_as

    return own if own == model or counted_as(own) == counted_as(model) else model


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="milliseconds")


def unknown_session(session_id: str) -> ContextError:
    return ContextError("unknown_session", f"no session {session_id!r} in this workspace",
                        field="sessionId")


#: the settings of a workspace nobody configured
DEFAULT_SETTINGS = SessionSettings()


def _default_settings(workspace: str) -> SessionSettings:
    return DEFAULT_SETTINGS


class SessionService:
    """Sessions of every workspace of one daemon over one SessionStore."""

    def __init__(self, store: SessionStore, counters: Callable[[str], Tokenizer], *,
                 default_model: Callable[[], str], default_budget: Callable[[str], int],
                 clock: Callable[[], str] = _now,
                 prior_band: Callable[[str], float] | None = None,
                 settings_of: Callable[[str], SessionSettings] | None = None) -> None:
        self.store = store
        self.counters = counters
        self.default_model = default_model
        self.default_budget = default_budget
        self.clock = clock
        # the model table's error band, shown until usage reports calibrate it
        self.prior_band = prior_band or table_band
        #: a workspace's settings, read where they live (the state's policies) each time: a
        #: workspace configured while the service opened on another thread is not missed
        self.settings_of = settings_of or _default_settings
        self._live: dict[tuple[str, str], LiveSession] = {}
        #: (sid, column) of the kept states that did not read: said once
        self._set_aside: set[tuple[int, str]] = set()
        self._lock = threading.RLock()

    def _settings(self, workspace: str) -> SessionSettings:
        return self.settings_of(workspace)

    # --- loading -------------------------------------------------------------------------

    def _get(self, workspace: str, session_id: str) -> LiveSession:
        live = self._live.get((workspace, session_id))
        if live is not None:
            return live
        row = self.store.get(workspace, session_id)
        if row is None or row.closed:
            # a closed session stays unknown until ``open`` names it again
            raise unknown_session(session_id)
        return self._load(row)

    def _load(self, row: SessionRow) -> LiveSession:
        counter = self.counters(row.model)
        live = LiveSession(row, counter)
        stored = self.store.messages(row.sid)
        recount = row.counter != counter.name
        fixed: list[tuple[int, int]] = []
        for seq, msg, tokens in stored:
            if recount:
                tokens = message_tokens(msg, counter)
                fixed.append((seq, tokens))
            live.history.append(msg, seq, tokens)
        if row.compaction:
            live.compaction = self._kept(row, "compaction", cp.Compaction, cp.Compaction())
        if recount:  # another model (ctx/session/configure) or another encoding of it
            state = cp.recounted(live.compaction, live.history, counter)
            changed = msgspec.json.encode(state) if state is not live.compaction else None
            self.store.recount(row.sid, fixed, counter.name, changed)
            live.compaction = state
            row.counter = counter.name
        live.raws = self.store.raws(row.sid)
        live.rules = self.store.rules(row.sid)
        live.items = self.store.items(row.sid)
        live.next_rule = max((r.seq for r in live.rules), default=-1) + 1
        live.next_item = max((it.seq for it in live.items), default=-1) + 1
        if row.system_spec:
            live.system_spec = stored_spec(row.system_spec)
        live.calibration = self._kept(row, "calibration", Calibration, Calibration())
        # the last assembly's, so the first one after a restart reads what it reuses of it;
        # its keys name the content (a message's seq, a hash of the rest), so a session
        # changed since reuses only the prefix that is still the same
        live.fingerprint = self._kept(row, "fingerprint", Fingerprint, None)
        self._calibration(live)
        self._live[(row.workspace, row.session_id)] = live
        return live

    def _calibration(self, live: LiveSession) -> Calibration:
        """The session's calibration over the workspace's `calibration_window` as it is now:
        its stored reports kept, its window the setting's (a session loaded from the store
        kept the window it was made with, whatever the setting said since)."""
        window = self._settings(live.row.workspace).calibration_window
        live.calibration = live.calibration.windowed(window)
        return live.calibration

    def _kept(self, row: SessionRow, column: str, kind: type[T], instead: T) -> T:
        """A session's compaction, calibration or fingerprint as the store kept it, else
        ``instead`` (a byte changed on disk, a form another version wrote). All are derived:
        the compaction is made again from the messages, the calibration measured again from
        usage reports, the fingerprint by the next assembly;
        so the session goes on without it, said once, where every request of it (every turn
        of a gateway chat) failed with a traceback."""
        data = getattr(row, column)
        if not data:
            return instead
        try:
            return msgspec.json.decode(data, type=kind)
        except msgspec.DecodeError as err:
            if (row.sid, column) not in self._set_aside:
                self._set_aside.add((row.sid, column))
                log.warning("session %r of %s: its kept %s does not read (%s); it goes on "
                            "without it, and the next one kept replaces it", row.session_id,
                            row.workspace, column, err)
            return instead

    # --- methods -------------------------------------------------------------------------

    def open(self, workspace: str, p: protocol.SessionOpenParams, *,
             chat: bool = False) -> protocol.SessionOpenResult:
        """Open (create when new) a session; ``chat``: the session backing a live chat
        (`Conversation.session_id`), the only new session whose id may begin `chat-`."""
        with self._lock:
            settings = self._settings(workspace)
            if p.session_id == "":  # a new id would answer, and the client's next call fail
                raise ContextError("invalid", "must not be empty (leave it out for a new "
                                   "session with an id of ctxlayer's)", field="sessionId")
            if not chat and p.session_id is not None:
                self._check_not_a_chats(workspace, p.session_id)
            sid = p.session_id if p.session_id is not None else secrets.token_hex(8)
            if p.mode is not None and p.mode not in settings.modes:
                raise ContextError("invalid", f"unknown mode {p.mode!r}", field="mode")
            require_model_named(p.model)
            require_tokens(p.budget)
            model = p.model or self.default_model()
            row, created = self.store.create_or_get(
                workspace, sid, model=model, mode=p.mode or settings.default_mode,
                budget=p.budget, now=self.clock())
            row.closed = False  # the store reopened it
            live = self._live.get((workspace, sid))
            if live is None:
                if created:
                    self.store.update(row.sid, row.updated_at, counter=self.counters(model).name)
                    row.counter = self.counters(model).name
                live = self._load(row)
            else:  # the mode another daemon set is the one this open answers
                live = self._fresh(workspace, sid)
            row = live.row
            return protocol.SessionOpenResult(
                session_id=sid, model=row.model, mode=row.mode,  # type: ignore[arg-type]
                budget=self._budget_of(live), created_at=row.created_at)

    def _check_not_a_chats(self, workspace: str, session_id: str) -> None:
        """A client may not make a session under a live chat's id (`chat-<conversationId>`):
        the chat of that id would take it over, and the client's ctx/why and ctx/restore then
        answer from the chat. One the state folder holds already is opened again: a chat's (by
        the id ctx/prepare answered) or a client's from before the prefix was kept for chats,
        which stays the client's to read, and is named in the log (a chat's holds no message:
        its messages are the client's)."""
        if not session_id.startswith(CHAT_PREFIX):
            return
        row = self.store.get(workspace, session_id)
        if row is None:
            raise ContextError(
                "invalid", f"{session_id!r} begins {CHAT_PREFIX!r}, which names the live "
                f"chats' sessions (ctx/prepare and the gateway answer a chat's as "
                f"{CHAT_PREFIX}<conversationId>): choose another id, or leave it out for one "
                "of ctxlayer's", field="sessionId")
        if row.messages:
            log.warning("session %s holds %d messages of a client's: its id is a live chat's "
                        "(ctx/prepare's conversation %r would share its audit)", session_id,
                        row.messages, session_id.removeprefix(CHAT_PREFIX))

    def _budget_of(self, live: LiveSession, override: int | None = None) -> int:
        return override or live.row.budget or self.default_budget(live.row.model)

    def append(self, workspace: str, session_id: str, messages: list[Message],
               raws: list[dict | None] | None = None) -> protocol.Budget:
        """Append messages; `raws[k]`, when given, is the provider message messages[k] came
        from (core/formats/stored.py), kept beside it as it came."""
        with self._lock:
            return self._retried(workspace, session_id,
                                 lambda: self._append(workspace, session_id, messages, raws))

    def _retried(self, workspace: str, session_id: str, write: Callable[[], T]) -> T:
        """`write`, again after reading the session anew when another daemon on the state
        folder (two editors on one workspace share it) took the positions or the id it chose
        from what it had read: it goes after the other's."""
        for _ in range(APPEND_TRIES - 1):
            try:
                return write()
            except SeqTaken:  # IdTaken too
                self._reload(workspace, session_id)
        return write()

    def _fresh(self, workspace: str, session_id: str) -> LiveSession:
        """The session as the store holds it: read again when another daemon on the state
        folder (two editors on one workspace share a session) changed what it assembles from
        (its messages, rules, working items, mode, window) since this one last did. One read
        of the session's revision a request."""
        live = self._get(workspace, session_id)
        if live.stale or self.store.revision(live.row.sid) != live.row.revision:
            self._reload(workspace, session_id)
            live = self._get(workspace, session_id)
        return live

    def _wrote(self, live: LiveSession, revision: int | None) -> None:
        """After this daemon's write: one change more than it knew of is its own; any other
        difference is another daemon's change, read at the next request."""
        if revision is None:
            return
        if revision != live.row.revision + 1:
            live.stale = True
        live.row.revision = revision

    def _reload(self, workspace: str, session_id: str) -> None:
        """Read the session again from the store, keeping what only this process knows of it
        (its system layers, its last assembly)."""
        old = self._live.pop((workspace, session_id), None)
        row = self.store.get(workspace, session_id)
        if old is None or row is None:
            return
        new = self._load(row)
        for name in ("system", "layered", "fingerprint", "audited", "last_audit"):
            setattr(new, name, getattr(old, name))
        if new.row.model != old.row.model:  # its system layers were counted for the old one
            new.layered = False

    def _append(self, workspace: str, session_id: str, messages: list[Message],
                raws: list[dict | None] | None) -> protocol.Budget:
        live = self._fresh(workspace, session_id)
        settings = self._settings(workspace)
        seq = live.history.seqs[-1] + 1 if len(live.history) else max(0, live.row.next_seq)
        rows: list[tuple[int, Message, int]] = []
        kept_raws: dict[int, bytes] = {}
        events: list[ItemEvent] = []
        # copies: the decay updates items in place, and the session's own change only once
        # the store took the turn (a failed write left them cooled in memory alone)
        items = [msgspec.structs.replace(it) for it in live.items]
        turn = turn_so_far(live.history.messages)  # a turn may go on over several appends
        retried = _retried_ids(messages, live.history)
        if retried:  # a client's retry of an append that landed: held once
            messages = [m for k, m in enumerate(messages) if k not in retried]
            raws = [r for k, r in enumerate(raws) if k not in retried] if raws else raws
            if not messages:
                return self._measure(live, settings)
        for k, msg in enumerate(messages):
            if raws is not None and raws[k] is not None:
                kept_raws[seq] = msgspec.json.encode(raws[k])
            if msg.id is None:
                msg = msgspec.structs.replace(msg, id=f"{OWN_ID}{seq}")
            tokens = message_tokens(msg, live.counter)
            rows.append((seq, msg, tokens))
            # the working zone cools once a turn, however many tool-calling steps it took
            items, turn, done = after_message(items, turn, msg, compress_item, settings.decay)
            events += done
            seq += 1
        removed = [e.item_id for e in events if e.action == "removed"]
        self._wrote(live, self.store.append(
            live.row.sid, rows, self.clock(), items=items, removed_items=removed, raws=kept_raws,
            audit=[_item_audit(e, live.counter) for e in events
                   if e.action in ("compressed", "removed")]))
        live.items = items
        for s, m, t in rows:
            live.history.append(m, s, t)
        live.raws.update(kept_raws)
        live.row.next_seq = seq
        return self._measure(live, settings)

    def add_item(self, workspace: str, session_id: str, spec: protocol.WorkingItemSpec
                 ) -> protocol.SessionAddItemResult:
        with self._lock:
            return self._retried(workspace, session_id,
                                 lambda: self._add_item(workspace, session_id, spec))

    def _add_item(self, workspace: str, session_id: str, spec: protocol.WorkingItemSpec
                  ) -> protocol.SessionAddItemResult:
        live = self._fresh(workspace, session_id)
        content = spec.content
        if spec.kind in LOG_KINDS:
            content = sanitize_log(content)
        seq = live.next_item
        # a name of the session's own passes over the names clients chose: "item-1" named by
        # a client and again here failed the request after it had replaced the client's item
        item_id = spec.id or free_id("item", seq, {it.id for it in live.items})
        item = new_item(item_id, spec.kind, content, optional=spec.optional,
                        source=spec.source, seq=seq)
        items = [it for it in live.items if it.id != item_id] + [item]
        old = next((it for it in live.items if it.id == item_id), None)
        replaced = None if old is None or _same_item(old, item) else _replaced(
            "working item", item_id, old.content, live.counter)
        self._wrote(live, self.store.put_items(live.row.sid, [item], new=spec.id is None,
                                               audit=[replaced] if replaced else (),
                                               now=self.clock()))
        # memory follows the store once it took the change: a failed write changes nothing
        live.items = items
        live.next_item = seq + 1
        return protocol.SessionAddItemResult(item_id=item_id, replaced=replaced)

    def add_rule(self, workspace: str, session_id: str,
                 spec: protocol.RuleSpec) -> protocol.SessionAddRuleResult:
        with self._lock:
            return self._retried(workspace, session_id,
                                 lambda: self._add_rule(workspace, session_id, spec))

    def _add_rule(self, workspace: str, session_id: str,
                  spec: protocol.RuleSpec) -> protocol.SessionAddRuleResult:
        live = self._fresh(workspace, session_id)
        settings = self._settings(workspace)
        if not spec.text.strip():
            raise ContextError("invalid", "a rule needs text", field="rule.text")
        before = {r.id for r in place_rules(live.rules, settings.rules).demoted}
        seq = live.next_rule
        # as for working items: never a name a client chose ("rule-1"), which failed the
        # request with its change already made in memory
        rule_id = spec.id or free_id("rule", seq, {r.id for r in live.rules})
        rule = Rule(id=rule_id, text=spec.text, weight=spec.weight, seq=seq)
        rules = [r for r in live.rules if r.id != rule_id] + [rule]
        old = next((r for r in live.rules if r.id == rule_id), None)
        replaced = None if old is None or (old.text, old.weight) == (rule.text, rule.weight) \
            else _replaced("rule", rule_id, old.text, live.counter)
        demoted = place_rules(rules, settings.rules).demoted
        newly = [r for r in demoted if r.id not in before]
        audit = [AuditEntry(
            action="demoted", reason=f"more than {settings.rules.max_rules} rules: the "
            "lowest weight moves to the working zone", summary=one_line(r.text),
            tokens_before=live.counter.count(r.text), tokens_after=live.counter.count(r.text),
            message_id=r.id) for r in newly]
        self._wrote(live, self.store.put_rule(live.row.sid, rule, self.clock(),
                                              [replaced, *audit] if replaced else audit,
                                              new=spec.id is None))
        live.rules, live.next_rule = rules, seq + 1  # only once the store took it
        return protocol.SessionAddRuleResult(rule_id=rule_id, demoted=[r.id for r in demoted],
                                             warning=imperative_warning(spec.text),
                                             replaced=replaced)

    def remove_rule(self, workspace: str, session_id: str, rule_id: str) -> None:
        with self._lock:
            live = self._fresh(workspace, session_id)
            if not any(r.id == rule_id for r in live.rules):
                raise ContextError("invalid", f"no rule {rule_id!r} in this session",
                                   field="ruleId")
            self._wrote(live, self.store.delete_rule(live.row.sid, rule_id))
            live.rules = [r for r in live.rules if r.id != rule_id]

    def set_mode(self, workspace: str, session_id: str, mode: str) -> protocol.Budget:
        with self._lock:
            live = self._fresh(workspace, session_id)
            settings = self._settings(workspace)
            if mode not in settings.modes:
                raise ContextError("invalid", f"unknown mode {mode!r}", field="mode")
            self._wrote(live, self.store.update(live.row.sid, self.clock(), mode=mode))
            live.row.mode = mode
            return self._measure(live, settings)

    def configure(self, workspace: str, session_id: str, p: protocol.SessionConfigureParams
                  ) -> protocol.Budget:
        """Change the session's model, budget or mode (a field left out keeps the session's):
        what an editor whose settings changed asks, as ctx/session/open answers an existing id
        unchanged. Kept in the store (its revision bumped, so another daemon on the state
        folder reads it); a new model's tokenizer counts every stored message again."""
        with self._lock:
            live = self._fresh(workspace, session_id)
            settings = self._settings(workspace)
            if p.model is not None and not p.model.strip():
                raise ContextError("invalid", "must not be empty (leave it out to keep the "
                                   "session's model)", field="model")
            if p.mode is not None and p.mode not in settings.modes:
                raise ContextError("invalid", f"unknown mode {p.mode!r}", field="mode")
            require_tokens(p.budget)
            asked = {"model": p.model, "mode": p.mode, "budget": p.budget}
            changes = {k: v for k, v in asked.items()
                       if v is not None and v != getattr(live.row, k)}
            if not changes:
                return self._measure(live, settings)
            self._wrote(live, self.store.update(live.row.sid, self.clock(), **changes))
            if "model" in changes:  # read again: _load counts with the new model's tokenizer
                self._reload(workspace, session_id)
                live = self._get(workspace, session_id)
            else:
                for name, value in changes.items():
                    setattr(live.row, name, value)
            return self._measure(live, settings)

    def budget(self, workspace: str, session_id: str, *,
               budget: int | None = None) -> protocol.Budget:
        """The session's budget; `budget`: what its next assembly fits to when not its own
        (a window its client names lowers it: state/requests/budgets.py `fitted_to`)."""
        with self._lock:
            live = self._fresh(workspace, session_id)
            return self._measure(live, self._settings(workspace), budget)

    def model_kept(self, workspace: str, session_id: str | None) -> str | None:
        """The model of a session the state folder holds (open or closed), else None: the one
        it keeps when it is opened again without one."""
        if session_id is None:
            return None
        with self._lock:
            row = self.store.get(workspace, session_id)
            return row.model if row is not None else None

    def model_of(self, workspace: str, session_id: str) -> str:
        """The session's model (what its messages are counted with)."""
        with self._lock:
            return self._get(workspace, session_id).row.model

    def budget_of(self, workspace: str, session_id: str) -> int:
        """The session's own budget (what its assemblies fit into): its model's default for
        a row stored without one (its None was compared with the window: an internal error)."""
        with self._lock:
            return self._budget_of(self._fresh(workspace, session_id))

    def set_system(self, workspace: str, session_id: str, system: SystemLayers) -> None:
        """Remember the system layers a session is measured against (segment changes)."""
        with self._lock:
            live = self._get(workspace, session_id)
            live.system = system
            live.layered = True

    def layered(self, workspace: str, session_id: str) -> bool:
        """Whether this process measured the session's system layers since it was opened, for
        the model the session has now (another daemon may have changed it: read afresh)."""
        with self._lock:
            return self._fresh(workspace, session_id).layered

    def system_spec(self, workspace: str, session_id: str
                    ) -> protocol.SystemPromptParams | None:
        """The system prompt params the session is assembled with: those of its last
        assembly that named them (`assemble`'s `spec`), else None (the segment alone)."""
        with self._lock:
            return self._get(workspace, session_id).system_spec

    def _keep_spec(self, live: LiveSession, spec: protocol.SystemPromptParams | None) -> None:
        """Remember the system prompt params an assembly succeeded with, for the next
        assemblies and workspace changes; kept: a restart uses them too."""
        if spec is None or spec == live.system_spec:
            return
        stored = msgspec.json.encode(spec)
        self._wrote(live, self.store.update(live.row.sid, self.clock(), system_spec=stored))
        live.system_spec, live.row.system_spec = spec, stored

    def keep_why(self, workspace: str, session_id: str, entries: list[AuditEntry]) -> None:
        """What the session's last assembly did (its audit), for ctx/why until the next one."""
        with self._lock:
            self._get(workspace, session_id).last_audit = list(entries)

    def why(self, workspace: str, session_id: str) -> list[AuditEntry]:
        """ctx/why of a session: what explains its last result, rebuilt from its compaction
        state (what the summary replaces, what a stage shortened, what was restored since),
        with what its last assembly in this process cut. After a restart, before an
        assembly, the kept state alone: what the last one cut was never kept."""
        with self._lock:
            live = self._get(workspace, session_id)
            return why_of(live.history, live.compaction, live.last_audit or ())

    def holds(self, workspace: str, session_id: str, message_id: str) -> bool:
        """Whether the session holds a message with id ``message_id``."""
        with self._lock:
            return any(m.id == message_id for m in self._get(workspace, session_id)
                       .history.messages)

    def _input(self, live: LiveSession, settings: SessionSettings, budget: int | None,
               system: SystemLayers | None = None, **extra: object) -> AssemblyInput:
        nominal = self._budget_of(live, budget)
        limit = self._calibration(live).effective_limit(live.row.model, nominal)
        layers = live.system if system is None else system
        return AssemblyInput(
            budget=limit, mode=live.row.mode, mode_spec=settings.modes[live.row.mode],
            system=layers.messages, system_cache_boundary=layers.cache_boundary,
            workspace_tokens=layers.workspace_tokens, rules=live.rules, items=live.items,
            rule_policy=settings.rules, policy=settings.compaction, previous=live.fingerprint,
            **extra)  # type: ignore[arg-type]

    def _measure(self, live: LiveSession, settings: SessionSettings,
                 budget: int | None = None) -> protocol.Budget:
        """The session's budget: its last assembly's while nothing changed since (a measure
        counts the newest message whole, which the assembly may have shortened: the status
        bar said 512% right after an assembly of 93%), else the session as it stands."""
        inp = self._input(live, settings, budget)
        band = self._band(live)
        last = live.last_assembly
        if (last is not None and last.revision == live.row.revision
                and last.budget.limit == inp.budget and last.system == live.system):
            return msgspec.structs.replace(last.budget, error_band=band)
        history, state = self._history_for(live, None)
        return measure(history, state, inp, live.counter, model=live.row.model,
                       session_id=live.row.session_id, error_band=band)

    def _band(self, live: LiveSession, model: str | None = None) -> float | None:
        model = live.row.model if model is None else model
        return round(self._calibration(live).error_band(model, self.prior_band(model)), 4) or None

    def band(self, workspace: str, session_id: str, model: str) -> float | None:
        """The error band (`Budget.error_band`) of the session's counts for ``model``: its
        calibration's spread, never narrower than the model table's; None for exact counts."""
        with self._lock:
            live = self._get(workspace, session_id)
            return self._band(live, _reported(live.row.model, model))

    def assembled(self, workspace: str, session_id: str) -> protocol.Budget:
        """What the session's last assembly in this process sent, as a Budget (also at a
        one-off budget, which ctx/session/budget leaves at the session's own)."""
        with self._lock:
            live = self._get(workspace, session_id)
            if live.last_assembly is None:
                return self._measure(live, self._settings(workspace))
            return msgspec.structs.replace(live.last_assembly.budget,
                                           error_band=self._band(live))

    def assemble(self, workspace: str, session_id: str, *, budget: int | None = None,
                 system: SystemLayers | None = None, client_summarizer: bool = False,
                 summary_text: str | None = None, offline: bool = False,
                 force: bool = False, keep_recent: int | None = None,
                 fmt: str | None = None,
                 spec: protocol.SystemPromptParams | None = None) -> Assembly:
        """One assembly; commits the new compaction state and audit before returning. ``fmt``:
        the format it is sent in, whose parts it counts (None: each message's own);
        ``system``: its layers, made from ``spec`` when given (both kept once it succeeds).

        Returns ``needs_summary`` (and changes nothing) when a client summary is wanted.
        A refused assembly (pinned content over the budget) changes nothing either: a
        request's system prompt, refused, was kept and refused every later assembly.
        """
        with self._lock:
            live = self._fresh(workspace, session_id)
            settings = self._settings(workspace)
            require_tokens(budget)
            inp = self._input(live, settings, budget, system,
                              client_summarizer=client_summarizer, summary_text=summary_text,
                              offline=offline, force_compaction=force, keep_recent=keep_recent)
            history, state = self._history_for(live, fmt)
            out = assemble(history, state, inp, live.counter)
            if out.result is None:
                return out
            self._keep_spec(live, spec)
            if system is not None:
                live.system = system
            now = self.clock()
            if out.compaction is not None:
                self._wrote(live, self.store.update(
                    live.row.sid, now, compaction=msgspec.json.encode(out.compaction)))
                live.compaction = out.compaction
            audited = self._audited(live) if out.audit else set()
            fresh = [e for e in out.audit if _audit_key(e) not in audited]
            if fresh:
                self.store.add_audit(live.row.sid, fresh, now)
                audited.update(_audit_key(e) for e in fresh)
            if out.fingerprint != live.fingerprint:  # written only when it changed
                self.store.update(live.row.sid, now,
                                  fingerprint=msgspec.json.encode(out.fingerprint))
                live.fingerprint = out.fingerprint
            live.last_total = out.result.tokens.total
            live.last_assembly = LastAssembly(live.row.revision, live.system, assembled_budget(
                out.result, next_compaction_at=out.next_compaction_at, model=live.row.model,
                session_id=live.row.session_id, error_band=None))
            return out

    def _audited(self, live: LiveSession) -> set[tuple]:
        """What the session's audit log holds (`_audit_key`), read from the store at the first
        assembly that has something to say: after each restart the first assembly of a
        compacted session logged again what it had logged (66 'summarized' entries twice)."""
        if live.audited is None:
            live.audited = {_audit_key(e) for e in self.store.audit(live.row.sid)}
        return live.audited

    def preview(self, workspace: str, session_id: str, *, budget: int | None = None,
                system: SystemLayers | None = None) -> Preview:
        """What an assembly at `budget` would send, changing nothing: no compaction state,
        audit, fingerprint or system layers kept, and a summary it needs written offline (no
        client is asked). The inspector's page of a session: looking must not compact it.
        With it, what ctx/why would say of that assembly: the messages its summary replaces
        (made now or before), those shortened, and what it cut."""
        with self._lock:
            live = self._fresh(workspace, session_id)
            require_tokens(budget)
            inp = self._input(live, self._settings(workspace), budget, system, offline=True)
            history, state = self._history_for(live, None)
            out = assemble(history, state, inp, live.counter)
            return Preview(out, why_of(live.history, out.compaction or live.compaction,
                                       out.audit))

    def _history_for(self, live: LiveSession, fmt: str | None
                      ) -> tuple[History, cp.Compaction]:
        """(the session's history with its parts as `fmt` sends them to its model now, its
        compaction state counted alike): its model and the turn under way decide what the
        provider reads of them (core/formats/priced.py); None: as each message came. Priced
        again from the last pricing's turn on: what came before it keeps its price."""
        from ctxlayer.core.formats import priced

        if not live.raws:  # nothing but what clients counted themselves
            return live.history, live.compaction
        n, source = len(live.history), live.history
        kept = live.priced.get(fmt)
        if kept is None or kept[0] != n:
            since = kept[2] if kept is not None else 0
            history = kept[1].head(since) if kept is not None else History()
            stored = [self._stored_at(live, k) if source.seqs[k] in live.raws else None
                      for k in range(since, n)]
            messages = priced.as_sent(fmt or "stored", live.row.model, source.messages[since:],
                                      stored, live.counter)
            for k, m in enumerate(messages, since):
                history.append(m, source.seqs[k], source.tokens[k]
                               if m is source.messages[k] else message_tokens(m, live.counter))
            kept = live.priced[fmt] = (n, history, priced.settled(source.messages))
        return kept[1], cp.recounted(live.compaction, kept[1], live.counter)

    def _stored_at(self, live: LiveSession, k: int) -> Stored:
        """The stored form of history message `k`, read once (rows never change once
        written): each pricing of the history reads them all."""
        seq = live.history.seqs[k]
        found = live.stored.get(seq)
        if found is None:
            found = live.stored[seq] = self._stored(live, k)
        return found

    def stored_for(self, workspace: str, session_id: str, messages: list[Message]
                   ) -> list[Stored | None]:
        """For each message of an assembly of this session, its stored provider form (None for
        one the assembly made, or one appended in the ctxlayer format). Matched by id, in
        order, so that a client id used twice still finds its own row."""
        with self._lock:
            live = self._get(workspace, session_id)
            if not live.raws:
                return [None] * len(messages)
            history = live.history
            where: dict[str, list[int]] = {}
            for k, m in enumerate(history.messages):
                if m.id is not None and history.seqs[k] in live.raws:
                    where.setdefault(m.id, []).append(k)
            out: list[Stored | None] = []
            after = 0
            for m in messages:
                found = where.get(m.id) if m.id is not None else None
                if not found:
                    out.append(None)
                    continue
                at = bisect_left(found, after)
                k = found[at] if at < len(found) else found[-1]
                after = k + 1
                out.append(self._stored_at(live, k))
            return out

    def _stored(self, live: LiveSession, k: int) -> Stored:
        seq = live.history.seqs[k]
        raw = self._raw(live, seq)
        piece = raw.get("piece")
        group = key = None
        if piece is not None:  # an Anthropic piece: the first one holds the native message
            key = seq - piece[0]
            if piece[0]:
                group = self._raw(live, key) if key in live.raws else None
        return Stored(message=live.history.messages[k], raw=raw, group=group, group_key=key)

    def _raw(self, live: LiveSession, seq: int) -> dict:
        """The provider message the row ``seq`` came from. One that does not read is named (its
        message alone would send the request without what only the provider form holds)."""
        try:
            raw = msgspec.json.decode(live.raws[seq])
        except msgspec.DecodeError as err:
            raise self.store.unreadable(live.row.sid, f"the provider message of message {seq}",
                                        err) from err
        if not isinstance(raw, dict):
            raise self.store.unreadable(live.row.sid, f"the provider message of message {seq}",
                                        ValueError("not an object"))
        return raw

    def restore(self, workspace: str, session_id: str, message_id: str) -> AuditEntry:
        """Bring a message back whole from the next assembly on (ctx/restore); audited once."""
        with self._lock:
            live = self._fresh(workspace, session_id)
            state, entry = restore_message(live.history, live.compaction, message_id)
            now = self.clock()
            self._wrote(live, self.store.update(live.row.sid, now,
                                                compaction=msgspec.json.encode(state)))
            live.compaction = state
            self.store.add_audit(live.row.sid, [entry], now)
            self._audited(live).add(_audit_key(entry))  # ctx/why reads it from the state
            return entry

    def summary_of(self, workspace: str, session_id: str) -> tuple[int, Message | None]:
        """(messages replaced so far, the summary message) of a session."""
        with self._lock:
            state = self._fresh(workspace, session_id).compaction
            return state.replaced, cp.summary_message(state)

    def report_usage(self, workspace: str, session_id: str, prompt_tokens: int,
                     estimated: int | None,
                     later: Callable[[Callable[[], None]], None] | None = None, *,
                     refused: bool = False) -> float:
        """Record the provider's count of the last prompt; returns the session's new bias.
        ``later``: where the calibration's row is written, when the caller must not wait for
        the database (a live chat's answer, while another chat's bulk writes hold it).
        ``refused``: the count of a prompt the provider refused as over the window."""
        with self._lock:
            live = self._get(workspace, session_id)
            if prompt_tokens < 0:
                raise ContextError("invalid", "must not be negative", field="promptTokens")
            if estimated is not None and estimated < 0:  # a ratio against it would flip sign
                raise ContextError("invalid", "must not be negative", field="estimatedTokens")
            if estimated is None and not live.last_total:
                # what it compares with is this process's count of the session's last prompt:
                # after a restart (or before any assembly) the report was dropped unsaid
                raise ContextError(
                    "invalid", "needed: this daemon has counted no prompt of the session "
                    "since it started (a restart forgets the last one); send our count of the "
                    "prompt the provider read (its assembly's tokens.total)",
                    field="estimatedTokens")
            counted = estimated if estimated is not None else live.last_total
            # recorded on a copy: the session's own changes once the store took it
            kept = msgspec.json.decode(msgspec.json.encode(self._calibration(live)),
                                       type=Calibration)
            bias = kept.record(live.row.model, prompt_tokens, counted, refused=refused)
            sid, now = live.row.sid, self.clock()
            calibration = msgspec.json.encode(kept)
            if later is None:
                self.store.update(sid, now, calibration=calibration)
            # written later (a live chat's answer): the process goes on with it meanwhile
            live.calibration = kept
        if later is not None:
            later(lambda: self.store.update(sid, now, calibration=calibration))
        return bias

    def kept_bias(self, workspace: str, session_ids: list[str], model: str
                  ) -> tuple[float, float | None]:
        """(the bias, the error band) for ``model`` of the calibration the first of
        ``session_ids`` that exists kept ((1.0, None): none does), read without opening the
        session: a live chat taken up after a restart fits its first turn with it (it was
        fitted as if counts were exact, and a provider counting 1.3x ours refused it as over
        the window), and shows its band (the table's ±10% was shown for a ±42% spread). A
        chat's reports are recorded under its session's model (`report_usage`): one gone on to
        a model counted alike (`/model` after a restart) fits with them, as it does in memory
        (`note_prompt`)."""
        with self._lock:
            for sid in session_ids:
                live = self._live.get((workspace, sid))
                if live is not None:
                    return (self._calibration(live).bias(_reported(live.row.model, model)),
                            self._band(live, _reported(live.row.model, model)))
                row = self.store.get(workspace, sid)
                if row is not None and row.calibration:
                    window = self._settings(workspace).calibration_window
                    kept = self._kept(row, "calibration", Calibration,
                                      Calibration()).windowed(window)
                    own = _reported(row.model, model)
                    band = kept.error_band(own, self.prior_band(model))
                    return kept.bias(own), round(band, 4) or None
            return 1.0, None

    def note_prompt(self, workspace: str, session_id: str, tokens: int) -> float:
        """Remember the tokens of a prompt prepared outside an assembly (a live chat's turn), so
        that a usage report without an estimate calibrates against it; returns the session's
        bias for its model. Memory only."""
        with self._lock:
            live = self._get(workspace, session_id)
            live.last_total = tokens
            return self._calibration(live).bias(live.row.model)

    def record_audit(self, workspace: str, session_id: str, entries: list[AuditEntry]) -> None:
        """Keep entries made outside an assembly (a live chat's turns) in the session's log."""
        with self._lock:
            sid = self._get(workspace, session_id).row.sid
        # written outside the service's lock: thousands of entries must not hold up the short
        # requests of other sessions (the store serializes its own writes)
        if entries:
            self.store.add_audit(sid, entries, self.clock())

    def audit(self, workspace: str, session_id: str, limit: int | None) -> list[AuditEntry]:
        if limit is not None and limit < 0:  # SQLite reads LIMIT -1 as "no limit"
            raise ContextError("invalid", "must not be negative (leave it out for every "
                               "entry)", field="limit")
        with self._lock:
            live = self._get(workspace, session_id)
            return self.store.audit(live.row.sid, limit)

    def list(self, workspace: str) -> list[protocol.SessionInfo]:
        with self._lock:
            return [protocol.SessionInfo(session_id=r.session_id, mode=r.mode,  # type: ignore
                                         model=r.model, messages=r.messages,
                                         updated_at=r.updated_at)
                    for r in self.store.list(workspace) if not r.closed]

    def close(self, workspace: str, session_id: str) -> None:
        """Close without reading the session: one whose rows do not read closes too (it was
        the way out its error names)."""
        with self._lock:
            live = self._live.get((workspace, session_id))
            row = live.row if live is not None else self.store.get(workspace, session_id)
            if row is None or row.closed:
                raise unknown_session(session_id)
            self.store.update(row.sid, self.clock(), closed=1)
            self._live.pop((workspace, session_id), None)

    def release(self, workspace: str, session_id: str) -> None:
        """Let the state in memory of a live chat's session go, the chat let go of: all of it
        is in the store, read again if the chat comes back (the sessions of 7,500 chats stayed
        in a gateway's memory, the chats themselves 64 at most)."""
        with self._lock:
            self._live.pop((workspace, session_id), None)

    def open_sessions(self, workspace: str) -> list[str]:
        with self._lock:
            return [sid for (ws, sid) in self._live if ws == workspace]


def free_id(kind: str, seq: int, taken: set[str]) -> str:
    """The name `<kind>-<n>` the session gives a rule or working item sent without an id: from
    its position on, the first one no rule or item of the session holds (a client may have
    chosen `rule-1` itself)."""
    n = seq
    while f"{kind}-{n}" in taken:
        n += 1
    return f"{kind}-{n}"


#: the ids of the sessions that back live chats (`chat-<conversationId>`, state/chat.py):
#: no client opens a new session under one (`SessionService.open`)
def require_model_named(model: str | None) -> None:
    """An empty model given to ctx/session/open is refused naming it, as configure does: it
    is not the connection's default, which leaving it out asks for."""
    if model is not None and not model.strip():
        raise ContextError("invalid", "must not be empty (leave it out for the connection's "
                           "model)", field="model")


CHAT_PREFIX = "chat-"


def chat_session(conversation_id: str) -> str:
    """The id of the session that backs the live chat ``conversation_id``."""
    return CHAT_PREFIX + conversation_id


def chat_of(session_id: str) -> str | None:
    """The live chat a session backs (`chat_session`), else None."""
    return session_id.removeprefix(CHAT_PREFIX) if session_id.startswith(CHAT_PREFIX) else None


#: the ids a session gives the messages a client sent without one: `ctx:msg:<seq>`
OWN_ID = "ctx:msg:"


def _retried_ids(messages: list[Message], history: History) -> set[int]:
    """The positions of ``messages`` the session holds already, under their id and as they
    are: a client's retry of an append that landed, held once. A client's id names one
    message: one the session holds as another message, or one of the session's own naming
    (its later message would be named alike), is refused naming it. Taken twice, ctx/restore
    and ctx/why found the first only."""
    retried: set[int] = set()
    for k, msg in enumerate(messages):
        if msg.id is None:
            continue
        at = history.ids.get(msg.id)
        if at is not None and history.messages[at] == msg:
            retried.add(k)
        elif at is not None:
            raise ContextError("invalid", f"the session holds another message under the id "
                               f"{msg.id!r}", field=f"messages[{k}].id")
        elif msg.id.startswith(OWN_ID):
            raise ContextError("invalid", f"ids starting {OWN_ID!r} are the ones the session "
                               "gives messages sent without one", field=f"messages[{k}].id")
    return retried


def stored_spec(data: bytes) -> protocol.SystemPromptParams | None:
    """The system prompt params a session kept; None when they no longer read (written by
    another version of ctxlayer): the next request's own, or the defaults, stand in."""
    try:
        return msgspec.json.decode(data, type=protocol.SystemPromptParams)
    except msgspec.DecodeError:
        log.warning("a session's kept system prompt params no longer read: left out")
        return None


def _audit_key(e: AuditEntry) -> tuple:
    """An entry's identity across assemblies (positions move as history grows; ids do not)."""
    where = e.message_id if e.message_id is not None else e.index
    return (where, e.action, e.reason, e.tokens_before, e.tokens_after)


def _same_item(old: WorkingItem, new: WorkingItem) -> bool:
    """Whether a working item given again under its id says what it said (a client's retry):
    nothing of it is replaced."""
    return (old.kind, old.content, old.optional, old.source) == \
        (new.kind, new.content, new.optional, new.source)


def _replaced(what: str, name: str, text: str, counter: Tokenizer) -> AuditEntry:
    """What a rule or working item given again under its id replaced, for the answer and the
    session's audit: it was replaced without a word, and the client never knew the id was
    taken (nothing is lost silently)."""
    return AuditEntry(
        action="dropped", reason=f"replaced: a {what} was given again with the id {name!r}",
        summary=f"{what} {name}: {one_line(text)}", tokens_before=counter.count(text),
        tokens_after=0, message_id=name)


def _item_audit(event: ItemEvent, counter: Tokenizer) -> AuditEntry:
    return AuditEntry(
        action="compressed" if event.action == "compressed" else "dropped",
        reason=(f"working item cooled to heat {event.heat:.2f}: compressed"
                if event.action == "compressed"
                else f"working item cooled to heat {event.heat:.2f}: removed"),
        summary=f"working item {event.item_id}: {one_line(event.before)}",
        tokens_before=counter.count(event.before), tokens_after=counter.count(event.after),
        message_id=event.item_id)
