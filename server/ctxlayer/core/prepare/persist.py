"""A live conversation's window kept across a restart, as data to store: what its window made
(summary chunks, outlines, messages shown whole, restored ids), the bytes written and read
back, and what is read of them without decoding them whole. Taking a kept window up again,
the state the first request after the restart starts from, is resuming.py's.

A snapshot names the messages it was made from by their hashes, and keeps each message's
count with the name of the counter that made it (its encoding and calibration): the first
request after a restart, a 5 MB history for Claude Code, then counts only what was added
since, as the turn before the restart would have. Each message's `shapes` hash leaves out
what its parts cost (an older model's thinking, no longer read once the user writes again).
A snapshot also keeps how the conversation was listed and what explains its result
(`kept_audit`): after a restart ctx/conversations and ctx/why answer for it before its chat
comes back. And the summary a model wrote ahead of need for the next step (`KeptAhead`, its
messages by their hashes): a restart before that step lost it, and the same paid call was
made again. And what its turn told its client (`KeptTold`): that request sent again after a
restart is told it again. And the attached files' messages its window showed whole among the
summarized ones (aider sends a file's new contents where the old ones were).
A turn that did not move the window keeps what it sent as the change from the window written
(`Sent`: the hashes of the messages it added, its result's tail); read together
(`as_sent`), they are the window as that turn showed it, so the first request after a restart
says the cache reuse of its prefix against the request sent last, never more. Both keep a hash
of that request's tool definitions and tool choice (`tools_key`): the tools open the prompt the
provider caches, and the first request after a restart that repeats them reuses them, as the
request in memory told it before.
Of several kept windows (a family's, the forks a new chat may start from) one is taken up; a
window read only for what judging among them needs (`KeptWindow`, its `Agreeing` part: its
hashes) is decoded whole once it is the one. The listing and the figures are read alike
(`listed`, `figures`), the rest of the bytes skipped.
Pure: no I/O (the state stores the bytes).
"""

from __future__ import annotations

import msgspec

from ctxlayer.core.prepare.aider_files import attached, is_attached
from ctxlayer.core.prepare.model import (
    DEFAULT_POLICY,
    Ahead,
    Chunk,
    ConversationState,
    Rewrite,
    common_prefix,
    shortened_audit,
    summarized_audit,
)
from ctxlayer.core.text import content_hash
from ctxlayer.core.tokens import MessageFormat
from ctxlayer.protocol import AuditEntry, Budget, ConversationInfo, Message

VERSION = 1


class KeptAhead(msgspec.Struct):
    """A model's summary written ahead of need (`model.Ahead`), its messages named by their
    `message_hash`: the turn after a restart takes it up when it has those messages there."""

    covered: list[int]
    hashes: list[str]
    text: str | None  # None: the answer was refused (``writer`` says why)
    writer: str


class KeptTold(msgspec.Struct):
    """What the turn a window was written at told its client (`model.Told`), and the budget
    its result was fitted to: the same request sent again after a restart is told it again."""

    budget: int
    dropped: list[AuditEntry]
    truncated: list[AuditEntry]
    restored: list[AuditEntry]
    notice: str | None


class Snapshot(msgspec.Struct, kw_only=True):
    version: int = VERSION
    head: int
    upto: int
    frontier: int
    hashes: list[str]  # of every message of the turn it was taken at
    chunks: list[Chunk]
    verbatim: list[int]
    rewrites: dict[int, Rewrite]  # a snapshot from before arguments were outlined reads too
    restored: dict[str, int]
    restored_audit: list[AuditEntry]
    out_keys: list  # the identity of each message of that turn's result (cache reuse)
    out_tokens: list[int]
    # each message's count (as `hashes`), by the counter named; a snapshot written before
    # they were kept has none, and its messages are counted again
    counted_with: str = ""
    tokens: list[int] = msgspec.field(default_factory=list)
    #: each message's hash without what its parts cost, "" where that is its hash (no parts)
    shapes: list[str] = msgspec.field(default_factory=list)
    #: the conversation as ctx/conversations lists it, as of when this window was written
    #: (whether it is listed is the store's: an aside is set aside after its window was
    #: written); None in a window written before it was kept, and, before the store kept
    #: that, for one not listed (an edit's chain left behind, a request beside a chat): after
    #: a restart it is listed from here until it comes back
    info: ConversationInfo | None = None
    #: the ids of the turn's messages (None where a message had none): after a restart ctx/why
    #: of an id the turn did not hold says so (no entries would read as "kept whole"); empty
    #: in a window written before they were kept
    ids: list[str | None] = msgspec.field(default_factory=list)
    #: the summary a model wrote ahead for the next step; None when there is none, and in a
    #: window written before it was kept
    ahead: KeptAhead | None = None
    #: the chat's figures when this window was written, as its last turn's ctx/budgetChanged
    #: said them: after a restart ctx/session/budget of its session answers them; None in a
    #: window written before they were kept
    budget: Budget | None = None
    #: what the turn told its client; None when a later turn's `Sent` stands in for it (that
    #: turn told nothing: it did not move the window), and in a window written before it was
    #: kept: the same request after a restart is then a turn like any other
    told: KeptTold | None = None
    #: `tools_key` of the turn's request; "" for one without tools, and in a window written
    #: before it was kept (the tools are then not counted as reused after a restart)
    tools: str = ""
    #: the attached files' messages (`aider_files.attached`) the window showed whole among
    #: the summarized ones: written anew in place (aider sends a file's new contents, edited
    #: outside it, where the old ones were), they need not agree for the window to be taken
    #: up. Empty in a window written before it was kept
    attached: list[int] = msgspec.field(default_factory=list)
    #: `asked_hash` of the turn's last user message: a request that carries it, answered,
    #: goes on from this window however little else of it agrees (`resuming.goes_on`: its
    #: first question edited in place, aider's files message written anew); "" when it has
    #: none, and in a window written before it was kept
    asked: str = ""


class _Listed(msgspec.Struct):
    """A kept window read for its listing only (the rest of it is skipped, not decoded)."""

    version: int = 0
    info: ConversationInfo | None = None


class _Figures(msgspec.Struct):
    """A kept window read for its figures only: its Budget and how many messages its turn
    had (each message's hash left as raw bytes, not decoded)."""

    version: int = 0
    budget: Budget | None = None
    hashes: list[msgspec.Raw] = msgspec.field(default_factory=list)


def message_hash(m: Message) -> str:
    """content_hash of the message's JSON, hashed as msgspec writes it (UTF-8 already: the
    same digest without a round trip through str)."""
    return content_hash(msgspec.json.encode(m))


def shape_hash(m: Message) -> str:
    """`message_hash` of the message without what its non-text parts cost, "" when it has
    none (its shape is then its hash)."""
    if m.parts_tokens is None and m.parts is None:
        return ""
    return message_hash(msgspec.structs.replace(m, parts_tokens=None, parts=None))


def counted_by(counter_name: str, fmt: MessageFormat) -> str:
    """What a message's count depends on besides the message: the counter (its encoding and
    calibration) and what the format adds around each message."""
    return f"{counter_name} {fmt.per_message}/{fmt.per_tool_call}" if counter_name else ""


def snapshot(state: ConversationState, counter_name: str = "",
             fmt: MessageFormat = DEFAULT_POLICY.fmt) -> Snapshot:
    """What to keep of ``state`` (only what its window made: the rest is the client's), and
    its messages' counts when ``counter_name`` names the counter that made them."""
    counted_with = counted_by(counter_name, fmt)
    return Snapshot(head=state.head, upto=state.upto,
                    frontier=max(state.frontier, state.upto),
                    hashes=[message_hash(m) for m in state.messages],
                    chunks=list(state.chunks), verbatim=list(state.verbatim),
                    rewrites=dict(state.rewrites), restored=dict(state.restored),
                    restored_audit=list(state.restored_audit), out_keys=list(state.out_keys),
                    out_tokens=list(state.out_tokens), counted_with=counted_with,
                    tokens=list(state.tokens) if counted_with else [],
                    shapes=[shape_hash(m) for m in state.messages],
                    ids=[m.id for m in state.messages], ahead=_kept_ahead(state.ahead),
                    told=_kept_told(state), attached=_shown_files(state),
                    asked=last_asked(state.messages))


def asked_hash(m: Message) -> str:
    """A user message's words, hashed: what tells that a request carries a chat's question
    wherever it stands in it (the derived ids of a client's messages name their position)
    and however its client spaced it (aider restores a question from its markdown log with
    a line end after it, `identity._words`)."""
    return content_hash(" ".join(m.content.split()))


#: a question shorter than this (characters of its words, and 3 words) tells no chat from
#: another: "continue", "yes", "And f2?" end many chats; such a question tells its chat only
#: with the chat's question before it (`last_asked`, `asked_hashes`)
TELLS_FROM = 12


def tells_a_chat(words: str) -> bool:
    """Whether a question (its words joined by single blanks) is long enough that a request
    carrying it, answered, is the chat that asked it last going on."""
    return len(words) >= TELLS_FROM and words.count(" ") >= 2


def _words_of(m: Message) -> str:
    return " ".join(m.content.split())


def _asked(question: Message, before: Message | None) -> str:
    """`asked_hash` of a question that tells its chat; of a short one with the question before
    it; "" for a short one with none before it."""
    words = _words_of(question)
    if tells_a_chat(words):
        return asked_hash(question)
    return "" if before is None else content_hash(_words_of(before) + "\n" + words)


def asked_hashes(messages: list[Message]) -> set[str]:
    """What ``messages`` carry answered, as `last_asked` names a kept window's last question:
    each user message followed by an assistant one, a short one with the user message before
    it."""
    out: set[str] = set()
    before: Message | None = None
    for k, m in enumerate(messages):
        if m.role != "user":
            continue
        if k + 1 < len(messages) and messages[k + 1].role == "assistant":
            out.add(_asked(m, before))
        before = m
    out.discard("")
    return out


def last_asked(messages: list[Message]) -> str:
    """`asked_hash` of the last user message of ``messages``, with the one before it when it
    is too short to tell its chat (`tells_a_chat`); "" when there is none to tell it by."""
    users = [m for m in messages if m.role == "user"]
    if not users:
        return ""
    return _asked(users[-1], users[-2] if len(users) > 1 else None)


def _shown_files(state: ConversationState) -> list[int]:
    """The attached files' messages ``state``'s window shows whole among the summarized."""
    shown = set(state.verbatim)
    return [i for i in sorted(attached(state.messages))
            if i in shown and is_attached(state.messages[i])]


def _kept_told(state: ConversationState) -> KeptTold | None:
    told = state.told
    if told is None or not state.sent:  # no result was made of it
        return None
    return KeptTold(state.budget, list(told.dropped), list(told.truncated),
                    list(told.restored), told.notice)


def _kept_ahead(ahead: Ahead | None) -> KeptAhead | None:
    if ahead is None:
        return None
    return KeptAhead(list(ahead.covered), [message_hash(m) for m in ahead.messages],
                     ahead.text, ahead.writer)


class Sent(msgspec.Struct, kw_only=True):
    """What a turn that did not move its window sent, as the change from the window kept
    (written at ``turn``): the window is written only when a step moves it, and a restart
    took that older turn's result for the last one sent, so the first request after it said
    a smaller cache reuse than it had (2,086 tokens where 2,761 of its prefix were sent
    before). Only what differs is kept: a write of a few messages' hashes a turn, never the
    history. Taken up only with the window of its ``turn``."""

    version: int = VERSION
    turn: int
    since: int  # the leading messages it shares with the window's turn
    hashes: list[str]  # of its messages from ``since`` on (`message_hash`)
    shapes: list[str]  # and their `shape_hash`
    tokens: list[int]  # and their counts, by the counter of ``counted_with``
    ids: list[str | None]
    counted_with: str
    frontier: int
    rewrites: list[int]  # the outlines of the window it still shows (by message index)
    out_from: int  # the leading messages of its result the window's result had too
    out_keys: list  # the identity of each message of its result from ``out_from`` on
    out_tokens: list[int]
    tools: str = ""  # `tools_key` of its request
    asked: str = ""  # `asked_hash` of its last user message, as `Snapshot.asked`


#: the fields of a request that open the prompt before its messages, with the tools
TOOLS_FIELDS = ("tools", "tool_choice")


def tools_key(request: object) -> str:
    """A hash of the request's tool definitions and tool choice, "" when it has no tools:
    what a window keeps of them, so the first request after a restart knows whether it repeats
    the tools sent last (their order of keys aside, as a comparison of the two requests)."""
    if not isinstance(request, dict) or not request.get("tools"):
        return ""
    return content_hash(msgspec.json.encode([request.get(k) for k in TOOLS_FIELDS],
                                            order="sorted"))


#: a turn's messages with their `message_hash` and `shape_hash`, taken over by the next turn
#: as far as it repeats them (a turn hashes only what it added)
Hashed = tuple[list[Message], list[str], list[str]]


def hashed(before: Hashed | None, messages: list[Message]) -> Hashed:
    """The hashes of ``messages``: those of ``before`` as far as the two agree."""
    k = common_prefix(before[0], messages) if before is not None else 0
    hashes = (before[1][:k] if before is not None else []) + \
        [message_hash(m) for m in messages[k:]]
    shapes = (before[2][:k] if before is not None else []) + \
        [shape_hash(m) for m in messages[k:]]
    return messages, hashes, shapes


def carries(written: ConversationState, state: ConversationState) -> bool:
    """Whether ``state`` shows the window ``written`` made as it was (the same summaries and
    messages shown whole beside them, the same restored ids, outlines only of those the
    written one had): what a `Sent` can say as a change from it. Else its window is written
    whole."""
    return state.head == written.head and state.upto == written.upto \
        and state.chunks == written.chunks and state.verbatim == written.verbatim \
        and state.restored == written.restored \
        and all(written.rewrites.get(i) == rw for i, rw in state.rewrites.items())


def extends(before: ConversationState, state: ConversationState) -> bool:
    """Whether ``state``'s turn only went on from ``before``'s: its messages and its result
    start with all of ``before``'s. A restart that finds ``before``'s record (this turn's
    write lost to a kill) then says no more reuse than this turn's would: whatever a request
    shares with the older result, it shares with this one."""
    n = len(before.out_keys)
    return common_prefix(before.messages, state.messages) == len(before.messages) \
        and state.out_keys[:n] == before.out_keys and state.out_tokens[:n] == before.out_tokens


def sent(written: ConversationState, state: ConversationState, hashes: Hashed, turn: int,
         counter_name: str = "", fmt: MessageFormat = DEFAULT_POLICY.fmt,
         tools: str = "") -> Sent:
    """What ``state`` (whose window `carries` that of ``written``, kept at ``turn``) sent, as
    the change from it; ``hashes``: `hashed` of its messages, ``tools``: `tools_key` of its
    request."""
    since = common_prefix(written.messages, state.messages)
    out_from = 0
    n = min(len(written.out_keys), len(state.out_keys))
    while out_from < n and written.out_keys[out_from] == state.out_keys[out_from] \
            and written.out_tokens[out_from] == state.out_tokens[out_from]:
        out_from += 1
    counted_with = counted_by(counter_name, fmt)
    return Sent(turn=turn, since=since, hashes=hashes[1][since:], shapes=hashes[2][since:],
                tokens=list(state.tokens[since:]) if counted_with else [],
                ids=[m.id for m in state.messages[since:]], counted_with=counted_with,
                frontier=max(state.frontier, state.upto), rewrites=sorted(state.rewrites),
                out_from=out_from, out_keys=list(state.out_keys[out_from:]),
                out_tokens=list(state.out_tokens[out_from:]), tools=tools,
                asked=last_asked(state.messages))


def as_sent(snap: Snapshot, last: Sent) -> Snapshot:
    """The window ``snap`` as the later turn ``last`` showed it: that turn's messages and
    result, so the first request after a restart compares itself with what was sent last.
    ``snap`` itself when the two do not fit together (a cache, never a reason to fail)."""
    if not _fits(snap, last):
        return snap
    since = last.since
    counted = bool(last.counted_with) and last.counted_with == snap.counted_with \
        and len(snap.tokens) >= since and len(last.tokens) == len(last.hashes)
    hashes, shapes = _sent_hashes(snap, last)
    return msgspec.structs.replace(
        snap, hashes=hashes, shapes=shapes,
        ids=snap.ids[:since] + last.ids if len(snap.ids) >= since else [],
        tokens=snap.tokens[:since] + last.tokens if counted else [],
        counted_with=snap.counted_with if counted else "",
        frontier=last.frontier, rewrites={i: snap.rewrites[i] for i in last.rewrites},
        out_keys=snap.out_keys[:last.out_from] + last.out_keys,
        out_tokens=snap.out_tokens[:last.out_from] + last.out_tokens, tools=last.tools,
        asked=last.asked,
        # what the window's turn told is not what the later turn sent was told
        told=None)


def _fits(snap: Snapshot | Agreeing, last: Sent) -> bool:
    """Whether ``last`` reads as a change from the window ``snap`` (`as_sent`)."""
    return len({len(last.hashes), len(last.shapes), len(last.ids)}) == 1 \
        and last.since <= len(snap.hashes) and last.out_from <= len(snap.out_keys) \
        and last.out_from <= len(snap.out_tokens) \
        and len(last.out_keys) == len(last.out_tokens) \
        and all(i in snap.rewrites for i in last.rewrites)


def _sent_hashes(snap: Snapshot | Agreeing, last: Sent) -> tuple[list[str], list[str]]:
    """The hashes and shapes of the messages ``last`` sent (it `_fits` ``snap``)."""
    since = last.since
    # a window written before shapes were kept has none: its messages then agree by hash
    return (snap.hashes[:since] + last.hashes,
            snap.shapes[:since] + last.shapes if len(snap.shapes) >= since else [])


def _sent_at(turn: int, sent: tuple[int, bytes] | None) -> Sent | None:
    """What the chat's last turn sent, read of ``sent`` (the turn of the window it was kept
    beside, its bytes), when it was kept beside this very window, written at ``turn`` (one
    kept with an older window says nothing of the newer: a step wrote the window since)."""
    if sent is None or sent[0] != turn:
        return None
    last = decode_sent(sent[1])
    return last if last is not None and last.turn == turn else None


def encode_sent(last: Sent) -> bytes:
    return msgspec.json.encode(last)


def decode_sent(data: bytes) -> Sent | None:
    """The `Sent` in ``data``, None when it is of another version or unreadable."""
    try:
        last = msgspec.json.decode(data, type=Sent)
    except (msgspec.DecodeError, msgspec.ValidationError):
        return None
    return last if last.version == VERSION else None


def encode(snap: Snapshot) -> bytes:
    return msgspec.json.encode(snap)


def decode(data: bytes) -> Snapshot | None:
    """The snapshot in ``data``, None when it is of another version or unreadable (the
    conversation then starts afresh: a snapshot is a cache, never a reason to fail)."""
    try:
        snap = msgspec.json.decode(data, type=Snapshot)
    except (msgspec.DecodeError, msgspec.ValidationError):
        return None
    return snap if snap.version == VERSION else None


def decode_kept(data: bytes, turn: int, sent: tuple[int, bytes] | None) -> Snapshot | None:
    """The window kept in ``data`` at ``turn`` as the chat's last turn showed it (`as_sent`),
    with what that turn ``sent`` ((window turn, bytes) as the state folder keeps it, None when
    it keeps none); None when the window does not read (`decode`)."""
    return _whole(data, _sent_at(turn, sent))


def _whole(data: bytes, last: Sent | None) -> Snapshot | None:
    """The window in ``data`` as the later turn ``last`` (when there is one) showed it."""
    snap = decode(data)
    return snap if snap is None or last is None else as_sent(snap, last)


class Agreeing(msgspec.Struct, kw_only=True):
    """A kept window read only for what judging a request's agreement with it needs (its
    messages' hashes and shapes, what its summaries stand for, its attached files) and
    whether a later turn's `Sent` fits it (`_fits`); the summaries, the audit and the rest
    are skipped, not decoded (40 us for a 72 KB window, 180 us whole). Each field as
    `Snapshot` has it or looser (`Raw`), none required that it does not require: a window
    that does not read so does not read whole either."""

    version: int = VERSION
    head: int
    upto: int
    hashes: list[str]
    shapes: list[str] = msgspec.field(default_factory=list)
    attached: list[int] = msgspec.field(default_factory=list)
    rewrites: dict[int, msgspec.Raw]
    out_keys: list[msgspec.Raw]
    out_tokens: list[int]
    asked: str = ""


_AGREEING = msgspec.json.Decoder(Agreeing)


class KeptWindow:
    """A window the state folder keeps, with what its chat's last turn sent beside it, read
    as far as choosing among windows needs (`agreeing`, as `as_sent` shows it) and decoded
    whole (`whole`) only once `resuming.resume_best` chose it: a new chat after a restart
    compares itself with the workspace's most recent windows and takes up one at most
    (decoding each whole cost its first request 1.7 to 3.4 ms for 72 KB windows)."""

    def __init__(self, data: bytes, last: Sent | None, agreeing: Agreeing,
                 listed: bool = True) -> None:
        self._data, self._last = data, last  # ``last``: `_sent_at` the window's turn
        self.agreeing = agreeing
        #: whether its chat is listed: not a chain an edit left behind, nor an aside
        self.listed = listed
        self._whole: Snapshot | None = None
        self._decoded = False

    @classmethod
    def read(cls, data: bytes, turn: int, sent: tuple[int, bytes] | None,
             listed: bool = True) -> KeptWindow | None:
        """The window kept in ``data`` at ``turn`` (``sent``: as `decode_kept` takes it;
        ``listed``: whether its chat is); None when it does not read even so (nor would it
        whole: skipped, as a cache)."""
        try:
            got = _AGREEING.decode(data)
        except (msgspec.DecodeError, msgspec.ValidationError):
            return None
        if got.version != VERSION:
            return None
        last = _sent_at(turn, sent)
        if last is not None and _fits(got, last):
            hashes, shapes = _sent_hashes(got, last)
            got = msgspec.structs.replace(got, hashes=hashes, shapes=shapes, asked=last.asked)
        return cls(data, last, got, listed)

    def whole(self) -> Snapshot | None:
        """The window decoded whole (`decode_kept`), once; None when it does not read so."""
        if not self._decoded:
            self._whole, self._decoded = _whole(self._data, self._last), True
        return self._whole


def listed(data: bytes) -> ConversationInfo | None:
    """The listing kept in a window's bytes, None when it has none or does not read."""
    try:
        got = msgspec.json.decode(data, type=_Listed)
    except (msgspec.DecodeError, msgspec.ValidationError):
        return None
    return got.info if got.version == VERSION else None


def figures(data: bytes) -> tuple[Budget | None, int] | None:
    """(the Budget, the messages of its turn) kept in a window's bytes, None when they do not
    read; the Budget is None in a window written before it was kept."""
    try:
        got = msgspec.json.decode(data, type=_Figures)
    except (msgspec.DecodeError, msgspec.ValidationError):
        return None
    return (got.budget, len(got.hashes)) if got.version == VERSION else None


def kept_audit(snap: Snapshot) -> list[AuditEntry]:
    """What explains the result of the turn ``snap`` was taken at, as `audit_of` says it of
    that turn's state: what was summarized, shortened and restored; not what its last-resort
    fit dropped (a window does not keep it: the next turn fits anew)."""
    return [*summarized_audit(snap.chunks, snap.verbatim), *shortened_audit(snap.rewrites),
            *snap.restored_audit]
