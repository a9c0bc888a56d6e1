"""SQLite persistence of sessions: messages, rules, working items, state, audit log.

One database file per user (paths.py), sessions keyed by (workspace, session id). WAL journal.

Durability: an append is acknowledged only after its transaction commits. In WAL mode a
commit has written the transaction to the WAL file, so ``kill -9`` of the daemon cannot lose
it (the OS holds the pages); ``synchronous=NORMAL`` leaves out only the fsync that protects
against a power cut or OS crash, where the last commits may be lost but the database stays
consistent. Measured here (bench/session_bench.py, one 2.4 kB message per transaction):
NORMAL 0.03 ms p50, FULL 0.6 ms p50 and 4 ms p90. The default is "normal", because the
requirement is surviving a killed daemon; ``durability="full"`` (``[session] durability`` in
ctxlayer.toml) fsyncs every commit for power-loss safety.

A database that SQLite cannot read (not a database, malformed, failed quick_check, which is
left out only when the file is as the last clean close left it: store/closed.py) is moved
aside as ``sessions.sqlite3.corrupt-<n>`` (with its -wal and -shm) with one warning naming both
paths, and a fresh one is created; no other file is touched. A file SQLite finds damaged while
the daemon runs is noted so (store/closed.py): the next open checks it whole and moves it
aside. Any other failure to open it (busy beyond BUSY_TIMEOUT_MS, a full disk, a read-only
folder) is a StoreError and the file stays: several daemons share the state folder (an editor
window each), and opening a new one together, or while another writes, is their usual start.
Thread safety: one connection guarded by a lock; every public method is one transaction.
Must not: know about the wire or pygls; decide policy (the service does).
"""

from __future__ import annotations

import contextlib
import logging
import os
import sqlite3
import threading
import time
from collections.abc import Callable, Collection, Iterable, Iterator, Mapping
from pathlib import Path
from typing import Literal, TypeVar

import msgspec

from ctxlayer.core.zones.rules import Rule
from ctxlayer.core.zones.working import WorkingItem
from ctxlayer.protocol import AuditEntry, Message, ToolCall
from ctxlayer.statefiles import make_private_dir, make_private_file, unusable_folder
from ctxlayer.store import schema
from ctxlayer.store.closed import (
    checked_whole,
    closed_cleanly,
    met_damaged,
    note_clean_close,
    note_damaged,
)
from ctxlayer.store.paths import DB_NAME, state_dir

try:
    import fcntl
except ImportError:  # Windows
    fcntl = None  # type: ignore[assignment]

log = logging.getLogger("ctxlayer.store")

Durability = Literal["normal", "full"]

_enc = msgspec.json.Encoder()
_dec_msg = msgspec.json.Decoder(Message)
_dec_rule = msgspec.json.Decoder(Rule)
_dec_item = msgspec.json.Decoder(WorkingItem)
_dec_audit = msgspec.json.Decoder(AuditEntry)
T = TypeVar("T")

#: the fields of a stored message (and of its tool calls) this version reads
_MESSAGE_FIELDS = frozenset(Message.__struct_encode_fields__)
_CALL_FIELDS = frozenset(ToolCall.__struct_encode_fields__)


def _message(body: bytes) -> Message:
    """A stored message. Message is strict on the wire (a misspelled field is the client's
    error), but a row a newer ctxlayer wrote into the shared state folder may hold a field this
    one does not know (Message gained `partsTokens` and `parts` without a schema change): read
    without it. Nothing of it is lost: a message row is never written again, only its tokens."""
    try:
        return _dec_msg.decode(body)
    except msgspec.ValidationError:
        data = msgspec.json.decode(body)
        if not isinstance(data, dict):
            raise
    known = {k: v for k, v in data.items() if k in _MESSAGE_FIELDS}
    if isinstance(calls := known.get("toolCalls"), list):
        known["toolCalls"] = [{k: v for k, v in c.items() if k in _CALL_FIELDS}
                              if isinstance(c, dict) else c for c in calls]
    return msgspec.convert(known, Message)


#: audit entries written in one transaction by add_audit
AUDIT_CHUNK = 512
#: audit entries `forget` removes in one transaction
FORGET_CHUNK = 5000
#: kept windows of one family read when its first request after a restart looks for its own
#: (a chat, its sub-agents' and forks', most recent first)
FAMILY_MOST = 8


def _audit_batch(entries: Iterable[AuditEntry]) -> list[bytes]:
    """Audit entries as the JSON rows they are stored as (encoded before the lock is taken)."""
    return [_enc.encode(e) for e in entries]


def _has_json_each(conn: sqlite3.Connection) -> bool:
    """Whether this SQLite has its JSON functions (built in since 3.38, an option before)."""
    try:
        conn.execute("SELECT count(*) FROM json_each('[]')").fetchone()
    except sqlite3.OperationalError:
        return False
    return True


class StoreError(Exception):
    """The database cannot be used (e.g. written by a newer ctxlayer)."""


class UnreadableRow(StoreError):
    """A row of a session does not read (a byte changed on disk, which SQLite's checks pass,
    or a form another version of ctxlayer wrote): named, never a traceback."""


class FolderGone(StoreError):
    """The database file this process opened is no longer at its path (the state folder was
    deleted or moved, or another file put there): a write into it would be lost."""


class SeqTaken(StoreError):
    """Another process (a second daemon on the state folder) appended to the session since it
    was read: the rows' positions are taken, nothing was written."""


class IdTaken(SeqTaken):
    """Another process gave a new rule or working item the id this one named from what it had
    read (`rule-N`, `item-N`): nothing was written."""


#: a LIMIT above any count: a larger one overflows SQLite's integers
_ALL = 2**63 - 1

#: how long an open or a write waits for another connection (another daemon) to let go
BUSY_TIMEOUT_MS = 5000


class _Damaged(sqlite3.DatabaseError):
    """The database failed its integrity check."""


def _damaged(err: sqlite3.DatabaseError) -> bool:
    """Whether ``err`` says the file is not a database SQLite can read (moved aside then):
    malformed, not a database, a failed check. Not a busy or locked one, a full disk or a
    read-only folder: the file is fine, and moving it aside lost another daemon's sessions
    (it went on writing the file it had open, under the new name)."""
    name = getattr(err, "sqlite_errorname", None) or ""
    return isinstance(err, _Damaged) or name.startswith(("SQLITE_CORRUPT", "SQLITE_NOTADB"))


def describe_store_error(exc: Exception) -> str:
    """What failed, in words a user can act on."""
    text = str(exc)
    if isinstance(exc, StoreError):  # said so where it was raised: once is enough
        return text
    low = text.lower()
    if "locked" in low or "busy" in low:
        return f"the database is locked by another process ({text}); try again"
    if "full" in low:
        return f"the disk is full ({text}); free some space"
    if "readonly" in low or "read-only" in low:
        return f"the database cannot be written ({text}); check the state folder's permissions"
    if "malformed" in low or "not a database" in low:
        return (f"the database file is damaged ({text}); restart the daemon to move it aside "
                "and start a fresh one")
    return text


#: the file beside the database whose lock opens share and a move aside takes alone
OPENING_NAME = DB_NAME + ".opening"
#: how long an open waits for a move aside under way (or a move for the opens' checks)
OPENING_WAIT_S = 60.0


@contextlib.contextmanager
def _opening(directory: Path, *, alone: bool) -> Iterator[None]:
    """Hold the state folder's opening lock (flock), shared or ``alone``. None where there is
    no flock (Windows, which does not rename an open file), nor when its file cannot be made
    (a read-only folder: the open itself fails and says so)."""
    if fcntl is None:
        yield
        return
    try:
        fd = os.open(directory / OPENING_NAME, os.O_RDWR | os.O_CREAT, 0o600)
    except OSError:
        yield
        return
    try:
        # tried until the wait is over: a blocking flock waited forever on a stopped process
        deadline = time.monotonic() + OPENING_WAIT_S
        while True:
            try:
                fcntl.flock(fd, (fcntl.LOCK_EX if alone else fcntl.LOCK_SH) | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() > deadline:
                    raise StoreError(
                        f"{directory / DB_NAME} could not be opened: another process kept "
                        f"{OPENING_NAME} locked for {OPENING_WAIT_S:.0f} s while it opened "
                        "the database or moved a damaged one aside; try again") from None
                time.sleep(0.01)
        yield
    finally:
        os.close(fd)  # the lock goes with it


def _write_ahead(conn: sqlite3.Connection) -> None:
    """WAL journal mode. Turning a new file to it takes the file alone, and SQLite answers
    busy at once there, without waiting (two opening one new file could wait on each other
    forever): tried again until BUSY_TIMEOUT_MS have passed."""
    deadline = time.monotonic() + BUSY_TIMEOUT_MS / 1000
    while True:
        try:
            conn.execute("PRAGMA journal_mode=WAL").fetchone()
            return
        except sqlite3.OperationalError as err:
            if getattr(err, "sqlite_errorname", "") != "SQLITE_BUSY" \
                    or time.monotonic() > deadline:
                raise
            time.sleep(0.01)


class SessionRow(msgspec.Struct, kw_only=True):
    sid: int
    workspace: str
    session_id: str
    model: str
    mode: str
    budget: int | None
    created_at: str
    updated_at: str
    closed: bool
    next_seq: int
    counter: str | None
    compaction: bytes | None
    calibration: bytes | None
    #: counts the changes to what the session assembles from (`SessionStore._bump`)
    revision: int = 0
    messages: int = 0
    #: the system prompt params it was last assembled with (JSON), None: none given yet
    system_spec: bytes | None = None
    #: its last assembly's fingerprint (JSON), None: none kept
    fingerprint: bytes | None = None


_ROW = ("sid, workspace, session_id, model, mode, budget, created_at, updated_at, closed, "
        "next_seq, counter, compaction, calibration, revision, system_spec, fingerprint")


def _row(r: tuple, messages: int = 0) -> SessionRow:
    return SessionRow(sid=r[0], workspace=r[1], session_id=r[2], model=r[3], mode=r[4],
                      budget=r[5], created_at=r[6], updated_at=r[7], closed=bool(r[8]),
                      next_seq=r[9], counter=r[10], compaction=r[11], calibration=r[12],
                      revision=r[13], messages=messages, system_spec=r[14],
                      fingerprint=r[15])


class SessionStore:
    """The session database. ``recovered_from`` names the corrupt file moved aside, if any."""

    def __init__(self, directory: str | Path | None = None, *,
                 durability: Durability = "normal") -> None:
        folder = state_dir(directory)
        try:
            self.directory = make_private_dir(folder)
        except OSError as err:  # a file in its place, no permission, a read-only disk
            raise StoreError(str(unusable_folder(folder, err))) from err
        self.path = self.directory / DB_NAME
        self.durability = durability
        self.recovered_from: Path | None = None
        self.checked_at_open = True  # False: closed cleanly and untouched since (closed.py)
        #: the error with which SQLite first said the open file is damaged, None while it never
        #: did: no clean close is noted then, and the next open checks the file whole
        self.damaged: sqlite3.DatabaseError | None = None
        self._lock = threading.Lock()
        try:
            self._conn = self._open()
        except OSError as err:  # its file cannot be made or set private
            raise StoreError(f"{self.path} cannot be opened ({err.strerror})") from err
        except sqlite3.DatabaseError as err:  # busy, locked, a full disk: the file is left alone
            raise StoreError(f"{self.path} could not be opened: "
                             f"{describe_store_error(err)}") from err
        self._json_each = _has_json_each(self._conn)
        self._opened = self._identity()
        #: the FolderGone said, once it was found (every use after it fails the same way)
        self.gone: FolderGone | None = None

    def _identity(self) -> tuple[int, int] | None:
        """(device, inode) of the file at the database's path now, None when there is none."""
        try:
            info = os.stat(self.path)
        except OSError:
            return None
        return info.st_dev, info.st_ino

    def _still_there(self) -> None:
        """Fail when the file this connection writes is no longer the one at its path. SQLite
        goes on writing a deleted file, so after `rm -rf` of the state folder every write was
        answered as stored and lost at the next start (a second daemon started a new file
        meanwhile, and the two split apart). One stat a transaction: a few microseconds."""
        if self.gone is None and self._identity() == self._opened:
            return
        if self.gone is None:
            self.gone = FolderGone(
                f"the state folder {self.directory} was deleted or moved while ctxlayer ran "
                f"(its sessions database {self.path} is not the file this process opened): "
                "this change was not stored, and none will be until ctxlayer restarts (reload "
                "the editor window, restart the gateway), which starts a new database there")
            log.error("%s", self.gone)
        raise self.gone

    def gone_now(self) -> FolderGone | None:
        """The FolderGone a write would meet now, None while the file is still at its path."""
        try:
            self._still_there()
        except FolderGone as exc:
            return exc
        return None

    def set_durability(self, durability: Durability) -> None:
        """Commit every transaction to disk before returning ("full"), or at checkpoints."""
        with self._locked():
            self._conn.execute(f"PRAGMA synchronous={durability.upper()}")
            self.durability = durability

    # --- opening -------------------------------------------------------------------------

    def _open(self) -> sqlite3.Connection:
        """The connection to the database, a damaged one moved aside first. Two processes
        finding it damaged together (editor windows restored at once) each moved "it" aside:
        one's rename found the file gone (a raw FileNotFoundError), one opened the -wal of
        the file being moved ("disk I/O error"), or one moved aside the fresh file the other
        had just made. So opens share the opening lock, a move aside takes it alone, and
        under it the file is opened again first: another process may have moved it already."""
        with _opening(self.directory, alone=False):
            try:
                return self._connect()
            except sqlite3.DatabaseError as err:
                if not _damaged(err):  # busy, locked, a full disk: the file is fine
                    raise
        with _opening(self.directory, alone=True):
            try:
                return self._connect()
            except sqlite3.DatabaseError as err:
                if not _damaged(err):
                    raise
                self.recovered_from = self._move_aside(err)
            return self._connect()

    def _connect(self) -> sqlite3.Connection:
        unchanged = closed_cleanly(self.path)  # taken away first: a crash from now on checks
        whole = met_damaged(self.path)  # a process met it damaged: every check SQLite has
        # 0600 before SQLite opens it: the conversations are the user's alone (SQLite gives
        # the -wal and -shm it creates the same mode; ones left by an older ctxlayer are set)
        for path in (self.path, *(self.path.with_name(DB_NAME + s) for s in ("-wal", "-shm"))):
            if path == self.path or path.exists():
                make_private_file(path)
        conn = sqlite3.connect(self.path, isolation_level=None, check_same_thread=False)
        try:
            # first: another daemon on this state folder (a second editor window) may be
            # opening or writing it, and every step below waits for it rather than failing
            conn.execute(f"PRAGMA busy_timeout={BUSY_TIMEOUT_MS}")
            _write_ahead(conn)
            conn.execute(f"PRAGMA synchronous={self.durability.upper()}")
            conn.execute("PRAGMA foreign_keys=ON")
            self.checked_at_open = not unchanged
            if self.checked_at_open:  # reads the whole file (store/closed.py)
                pragma = "integrity_check" if whole else "quick_check"
                check = conn.execute(f"PRAGMA {pragma}").fetchone()
                if not check or check[0] != "ok":
                    raise _Damaged(f"{pragma}: {check[0] if check else 'no answer'}")
                checked_whole(self.path)
            self._migrate(conn)
        except (sqlite3.DatabaseError, StoreError):
            conn.close()
            raise
        return conn

    def _migrate(self, conn: sqlite3.Connection) -> None:
        """Bring the schema to this version, one step a transaction; the version is read
        again inside each (another process opening the same new folder may have taken the
        step meanwhile: both creating the tables was an error, and the file moved aside)."""
        while True:
            version = conn.execute("PRAGMA user_version").fetchone()[0]
            if version > schema.VERSION:
                raise StoreError(
                    f"{self.path} has schema version {version}, newer than this ctxlayer "
                    f"understands ({schema.VERSION}); upgrade ctxlayer or set CTXLAYER_STATE_DIR"
                )
            if version == schema.VERSION:
                return
            conn.execute("BEGIN IMMEDIATE")
            try:
                if conn.execute("PRAGMA user_version").fetchone()[0] == version:
                    for statement in _statements(schema.MIGRATIONS[version]):
                        conn.execute(statement)
                    conn.execute(f"PRAGMA user_version={version + 1}")
                conn.execute("COMMIT")
            except BaseException:
                conn.execute("ROLLBACK")
                raise

    def _move_aside(self, err: Exception) -> Path:
        n = 1
        while (aside := self.path.with_name(f"{DB_NAME}.corrupt-{n}")).exists():
            n += 1
        self.path.rename(aside)
        for suffix in ("-wal", "-shm"):
            side = self.path.with_name(DB_NAME + suffix)
            if side.exists():
                side.rename(aside.with_name(aside.name + suffix))
        log.warning("session database %s is unreadable (%s); moved it to %s and started a "
                    "fresh one", self.path, err, aside)
        return aside

    def close(self) -> None:
        with self._lock:
            self._conn.close()
            # not ours when gone; met damaged: noted so, never as closed cleanly
            if self.gone is None and self.damaged is None and self._identity() == self._opened:
                note_clean_close(self.path)

    def _met(self, exc: BaseException | None) -> None:
        """Keep that SQLite said the file is damaged (once, in the log and in a note beside
        it): the clean close noted the damaged file, the next open left its check out, and
        every start failed as the one before, the file never moved aside."""
        if self.damaged is not None or not isinstance(exc, sqlite3.DatabaseError) \
                or not _damaged(exc):
            return
        self.damaged = exc
        if self.gone is None and self._identity() == self._opened:  # else not this file
            note_damaged(self.path, str(exc))
        log.error("session database %s is damaged (%s): it is moved aside when ctxlayer next "
                  "starts", self.path, exc)

    @property
    def schema_version(self) -> int:
        with self._locked():
            return self._conn.execute("PRAGMA user_version").fetchone()[0]

    def _tx(self) -> _Tx:
        """One transaction (BEGIN IMMEDIATE .. COMMIT) under the lock."""
        self._still_there()
        return _Tx(self, begin=True)

    def _locked(self) -> _Tx:
        """The connection under the lock, no transaction of its own (a read alone)."""
        return _Tx(self, begin=False)

    # --- sessions ------------------------------------------------------------------------

    def create_or_get(self, workspace: str, session_id: str, *, model: str, mode: str,
                      budget: int | None, now: str) -> tuple[SessionRow, bool]:
        """The session (created when new) and whether it was created."""
        with self._tx() as c:
            found = c.execute(f"SELECT {_ROW} FROM sessions WHERE workspace=? AND session_id=?",
                              (workspace, session_id)).fetchone()
            if found:
                row = _row(found, self._count(c, found[0]))
                if row.closed:
                    c.execute("UPDATE sessions SET closed=0 WHERE sid=?", (row.sid,))
                    row.revision = self._bump(c, row.sid)
                return row, False
            c.execute("INSERT INTO sessions (workspace, session_id, model, mode, budget, "
                      "created_at, updated_at) VALUES (?,?,?,?,?,?,?)",
                      (workspace, session_id, model, mode, budget, now, now))
            new = c.execute(f"SELECT {_ROW} FROM sessions WHERE workspace=? AND session_id=?",
                            (workspace, session_id)).fetchone()
            return _row(new), True

    def get(self, workspace: str, session_id: str) -> SessionRow | None:
        with self._tx() as c:
            found = c.execute(f"SELECT {_ROW} FROM sessions WHERE workspace=? AND session_id=?",
                              (workspace, session_id)).fetchone()
            return _row(found, self._count(c, found[0])) if found else None

    def list(self, workspace: str) -> list[SessionRow]:
        with self._tx() as c:
            rows = c.execute(f"SELECT {_ROW} FROM sessions WHERE workspace=? "
                             "ORDER BY updated_at DESC", (workspace,)).fetchall()
            return [_row(r, self._count(c, r[0])) for r in rows]

    @staticmethod
    def _count(c: sqlite3.Connection, sid: int) -> int:
        return c.execute("SELECT count(*) FROM messages WHERE sid=?", (sid,)).fetchone()[0]

    @staticmethod
    def _bump(c: sqlite3.Connection, sid: int) -> int:
        """Count one change to what the session assembles from; its revision after it. A
        daemon that knew the revision before its own write finds one more after: any other
        difference is another daemon's change (state/session_service.py `_wrote`)."""
        return c.execute("UPDATE sessions SET revision=revision+1 WHERE sid=? RETURNING revision",
                         (sid,)).fetchone()[0]

    def revision(self, sid: int) -> int | None:
        """The session's revision as stored. A read alone, no write lock."""
        with self._locked():
            row = self._conn.execute("SELECT revision FROM sessions WHERE sid=?",
                                     (sid,)).fetchone()
        return row[0] if row else None

    def update(self, sid: int, now: str, **fields: object) -> int:
        """Set the fields; the session's revision after (the counter, the calibration and the
        last assembly's fingerprint are each daemon's own measure of the same messages: not a
        change to them)."""
        allowed = {"model", "mode", "budget", "closed", "counter", "compaction", "calibration",
                   "system_spec", "fingerprint"}
        bad = set(fields) - allowed
        if bad:
            raise ValueError(f"cannot update {sorted(bad)}")
        sets = ", ".join(f"{k}=?" for k in fields)
        with self._tx() as c:
            c.execute(f"UPDATE sessions SET {sets}{', ' if sets else ''}updated_at=? WHERE sid=?",
                      (*fields.values(), now, sid))
            if set(fields) - {"counter", "calibration", "fingerprint"}:
                return self._bump(c, sid)
            return c.execute("SELECT revision FROM sessions WHERE sid=?", (sid,)).fetchone()[0]

    # --- messages ------------------------------------------------------------------------

    def append(self, sid: int, messages: Iterable[tuple[int, Message, int]], now: str, *,
               items: Iterable[WorkingItem] = (), removed_items: Iterable[str] = (),
               audit: Iterable[AuditEntry] = (), raws: Mapping[int, bytes] | None = None
               ) -> int:
        """Append (seq, message, tokens) rows and the turn's zone-B changes in one commit;
        the session's revision after. `raws` holds, by seq, the provider message a row came
        from (JSON), kept as it came."""
        raws = raws or {}
        batch = _audit_batch(audit)
        with self._tx() as c:
            rows = [(sid, seq, _enc.encode(m), t, raws.get(seq)) for seq, m, t in messages]
            try:
                c.executemany("INSERT INTO messages (sid, seq, body, tokens, raw) "
                              "VALUES (?,?,?,?,?)", rows)
            except sqlite3.IntegrityError as err:  # the transaction is rolled back
                raise SeqTaken(f"another process appended to session {sid} ({err})") from err
            if rows:
                c.execute("UPDATE sessions SET next_seq=?, updated_at=? WHERE sid=?",
                          (rows[-1][1] + 1, now, sid))
            self._put_items(c, sid, items)
            c.executemany("DELETE FROM items WHERE sid=? AND item_id=?",
                          [(sid, i) for i in removed_items])
            self._add_audit(c, sid, batch, now)
            return self._bump(c, sid)

    def messages(self, sid: int) -> list[tuple[int, Message, int]]:
        with self._tx() as c:
            rows = c.execute("SELECT seq, body, tokens FROM messages WHERE sid=? ORDER BY seq",
                             (sid,)).fetchall()
        try:
            return [(seq, _message(body), tokens) for seq, body, tokens in rows]
        except (msgspec.DecodeError, TypeError):
            raise self._named(sid, "message", [r[:2] for r in rows], _message) from None

    def raws(self, sid: int) -> dict[int, bytes]:
        """The provider messages of a session's rows that have one, by seq (JSON bytes)."""
        with self._tx() as c:
            rows = c.execute("SELECT seq, raw FROM messages WHERE sid=? AND raw IS NOT NULL",
                             (sid,)).fetchall()
        return {seq: raw for seq, raw in rows}

    def recount(self, sid: int, rows: Iterable[tuple[int, int]], counter: str,
                compaction: bytes | None = None) -> None:
        """Store new token counts (seq, tokens) after the session's counter changed, and the
        compaction state counted again with it (its summary's and rewrites' tokens). Not a
        change to the session: the same text, measured anew."""
        with self._tx() as c:
            c.executemany("UPDATE messages SET tokens=? WHERE sid=? AND seq=?",
                          [(t, sid, s) for s, t in rows])
            c.execute("UPDATE sessions SET counter=? WHERE sid=?", (counter, sid))
            if compaction is not None:
                c.execute("UPDATE sessions SET compaction=? WHERE sid=?", (compaction, sid))

    def _read(self, sid: int, what: str, rows: list[tuple[object, bytes]],
              decode: Callable[[bytes], T]) -> list[T]:
        """The value of each (key, body) row; a row that does not read is an UnreadableRow
        naming the session and the row (it was a traceback, on every request of that
        session)."""
        try:
            return [decode(body) for _, body in rows]
        except (msgspec.DecodeError, TypeError):
            raise self._named(sid, what, rows, decode) from None

    def _named(self, sid: int, what: str, rows: list[tuple[object, bytes]],
               decode: Callable[[bytes], object]) -> UnreadableRow:
        """The error naming the first of ``rows`` that does not read (found again row by row
        only once one failed: the reads stay one list comprehension)."""
        for key, body in rows:
            try:
                decode(body)
            except (msgspec.DecodeError, TypeError) as err:
                return self.unreadable(sid, f"{what} {key}", err)
        return self.unreadable(sid, f"a {what}", ValueError("it read once, not twice"))

    def unreadable(self, sid: int, what: str, err: Exception) -> UnreadableRow:
        """The error saying that ``what`` of the session ``sid`` does not read, and what to do."""
        with self._locked():
            row = self._conn.execute("SELECT session_id, workspace FROM sessions WHERE sid=?",
                                     (sid,)).fetchone()
        name = f"session {row[0]!r} of {row[1]}" if row else f"session {sid}"
        return UnreadableRow(
            f"{what} of {name} in {self.path} does not read ({err}): the file was changed "
            "outside ctxlayer, or by a version that stores it otherwise; close the session "
            "and open a new one (its other sessions are not affected)")

    # --- rules and items -----------------------------------------------------------------

    def put_rule(self, sid: int, rule: Rule, now: str, audit: Iterable[AuditEntry] = (), *,
                 new: bool = False) -> int:
        """Add or replace a rule; the session's revision after. `new`: an id this process
        named, which another may have taken since (IdTaken, nothing written)."""
        batch = _audit_batch(audit)
        with self._tx() as c:
            try:
                c.execute(f"INSERT {'' if new else 'OR REPLACE '}INTO rules (sid, rule_id, body) "
                          "VALUES (?,?,?)", (sid, rule.id, _enc.encode(rule)))
            except sqlite3.IntegrityError as err:  # the transaction is rolled back
                raise IdTaken(f"rule {rule.id} of session {sid} was taken ({err})") from err
            self._add_audit(c, sid, batch, now)
            c.execute("UPDATE sessions SET updated_at=? WHERE sid=?", (now, sid))
            return self._bump(c, sid)

    def delete_rule(self, sid: int, rule_id: str) -> int | None:
        """The session's revision after, None when it had no such rule."""
        with self._tx() as c:
            if not c.execute("DELETE FROM rules WHERE sid=? AND rule_id=?",
                             (sid, rule_id)).rowcount:
                return None
            return self._bump(c, sid)

    def rules(self, sid: int) -> list[Rule]:
        with self._tx() as c:
            rows = c.execute("SELECT rule_id, body FROM rules WHERE sid=?", (sid,)).fetchall()
        return self._read(sid, "rule", rows, _dec_rule.decode)

    def put_items(self, sid: int, items: Iterable[WorkingItem], *, new: bool = False,
                  audit: Iterable[AuditEntry] = (), now: str = "") -> int:
        """Add or replace working items, with `audit` (at `now`); the session's revision
        after. `new`: ids this process named, which another may have taken since (IdTaken,
        nothing written)."""
        batch = _audit_batch(audit)
        with self._tx() as c:
            if new:
                try:
                    c.executemany("INSERT INTO items (sid, item_id, body) VALUES (?,?,?)",
                                  [(sid, it.id, _enc.encode(it)) for it in items])
                except sqlite3.IntegrityError as err:  # the transaction is rolled back
                    raise IdTaken(f"a working item id of session {sid} was taken ({err})") \
                        from err
            else:
                self._put_items(c, sid, items)
            if batch:
                self._add_audit(c, sid, batch, now)
            return self._bump(c, sid)

    @staticmethod
    def _put_items(c: sqlite3.Connection, sid: int, items: Iterable[WorkingItem]) -> None:
        c.executemany("INSERT OR REPLACE INTO items (sid, item_id, body) VALUES (?,?,?)",
                      [(sid, it.id, _enc.encode(it)) for it in items])

    def items(self, sid: int) -> list[WorkingItem]:
        with self._tx() as c:
            rows = c.execute("SELECT item_id, body FROM items WHERE sid=?", (sid,)).fetchall()
        return sorted(self._read(sid, "working item", rows, _dec_item.decode),
                      key=lambda it: it.seq)

    # --- audit ---------------------------------------------------------------------------

    def add_audit(self, sid: int, entries: Iterable[AuditEntry], now: str) -> None:
        """In transactions of AUDIT_CHUNK entries, each encoded before the lock is taken: a
        10 MB chat's thousands of cuts let another session's one-row write in between."""
        entries = list(entries)
        for k in range(0, len(entries), AUDIT_CHUNK):
            batch = _audit_batch(entries[k:k + AUDIT_CHUNK])
            with self._tx() as c:
                self._add_audit(c, sid, batch, now)

    def _add_audit(self, c: sqlite3.Connection, sid: int, rows: list[bytes], now: str) -> None:
        """One statement for the whole batch where SQLite has `json_each`: it walks the JSON
        array in C, where executemany takes the GIL back for every row. Beside a busy worker
        thread that is half a millisecond a row: the 3,700 cuts of a 10 MB chat held the
        database for 130 ms, and another chat's one-row write waited that long."""
        if not rows:
            return
        if self._json_each:
            c.execute("INSERT INTO audit (sid, at, body) SELECT ?, ?, value FROM json_each(?)",
                      (sid, now, (b"[" + b",".join(rows) + b"]").decode()))
        else:
            c.executemany("INSERT INTO audit (sid, at, body) VALUES (?,?,?)",
                          [(sid, now, r) for r in rows])

    def audit(self, sid: int, limit: int | None = None) -> list[AuditEntry]:
        """Audit entries, newest first. One that does not read (an action a newer version
        names, a byte changed on disk) is left out and said in the log: the log of what was
        cut is read whole but for it, where the whole audit failed, the session itself fine."""
        with self._tx() as c:
            rows = c.execute("SELECT id, body FROM audit WHERE sid=? ORDER BY id DESC LIMIT ?",
                             (sid, -1 if limit is None else min(limit, _ALL))).fetchall()
        try:
            return [_dec_audit.decode(body) for _, body in rows]
        except (msgspec.DecodeError, TypeError):
            pass
        read: list[AuditEntry] = []
        for key, body in rows:
            try:
                read.append(_dec_audit.decode(body))
            except (msgspec.DecodeError, TypeError) as err:
                log.warning("audit entry %s of session %s in %s does not read (%s): left out "
                            "of the audit read", key, sid, self.path, err)
        return read


    # --- live conversations (ctx/prepare, the gateway) ----------------------------------

    def put_conversation(self, workspace: str, conversation_id: str, model: str, turn: int,
                         body: bytes, now: str, listed: bool = True) -> None:
        """Keep a conversation's window (core/prepare/persist.py's bytes), ``listed`` or not
        by ctx/conversations; a write of an older turn than the one kept is ignored (two
        writes may finish out of order)."""
        with self._tx() as c:
            c.execute(
                "INSERT INTO conversations (workspace, conversation_id, model, turn, body, "
                "updated_at, listed) VALUES (?,?,?,?,?,?,?) ON CONFLICT (workspace, "
                "conversation_id) DO UPDATE SET model=excluded.model, turn=excluded.turn, "
                "body=excluded.body, updated_at=excluded.updated_at, listed=excluded.listed "
                "WHERE excluded.turn > conversations.turn",
                (workspace, conversation_id, model, turn, body, now, int(listed)))

    def set_listed(self, workspace: str, conversation_id: str, listed: bool) -> None:
        """List a kept conversation again, or no longer (a request set aside as asked beside
        a chat after its window was written); nothing when none is kept under that id."""
        with self._tx() as c:
            c.execute("UPDATE conversations SET listed=? WHERE workspace=? AND "
                      "conversation_id=?", (int(listed), workspace, conversation_id))

    def conversation(self, workspace: str, conversation_id: str) -> tuple[str, int, bytes] | None:
        """(model, turn, body) of a kept conversation, None when there is none."""
        with self._tx() as c:
            row = c.execute("SELECT model, turn, body FROM conversations WHERE workspace=? AND "
                            "conversation_id=?", (workspace, conversation_id)).fetchone()
        return (row[0], row[1], row[2]) if row else None

    def put_sent(self, workspace: str, conversation_id: str, turn: int, body: bytes,
                 now: str) -> None:
        """Keep what a conversation's last turn sent beside the window of ``turn`` (persist.py's
        `Sent` bytes); a write for an older window than the one kept is ignored."""
        with self._tx() as c:
            c.execute(
                "INSERT INTO sent (workspace, conversation_id, turn, body, updated_at) VALUES "
                "(?,?,?,?,?) ON CONFLICT (workspace, conversation_id) DO UPDATE SET "
                "turn=excluded.turn, body=excluded.body, updated_at=excluded.updated_at "
                "WHERE excluded.turn >= sent.turn",
                (workspace, conversation_id, turn, body, now))

    def sent_of(self, workspace: str, conversation_ids: Collection[str]
                ) -> dict[str, tuple[int, bytes]]:
        """(window turn, body) of what the last turns of ``conversation_ids`` sent, of those
        that keep one."""
        names = list(conversation_ids)
        if not names:
            return {}
        with self._tx() as c:
            rows = c.execute("SELECT conversation_id, turn, body FROM sent WHERE workspace=? "
                             f"AND conversation_id IN ({','.join('?' * len(names))})",
                             (workspace, *names)).fetchall()
        return {r[0]: (r[1], r[2]) for r in rows}

    def recent_conversations(self, workspace: str, most: int) -> list[tuple[str, bytes]]:
        """(conversation id, body) of the workspace's kept conversations that are listed, the
        most recently kept first, at most ``most`` (the time index, not a scan)."""
        with self._tx() as c:
            rows = c.execute("SELECT conversation_id, body FROM conversations INDEXED BY "
                             "conversations_by_time WHERE workspace=? AND listed ORDER BY "
                             "updated_at DESC LIMIT ?", (workspace, most)).fetchall()
        return [(r[0], r[1]) for r in rows]

    def recent_windows(self, workspace: str, but: Collection[str] = (),
                       most: int = FAMILY_MOST) -> list[tuple[str, str, int, bytes]]:
        """(conversation id, model, turn, body) of the workspace's kept conversations but
        those in ``but``, the most recently kept first, at most ``most`` (the time index)."""
        names = list(but)
        with self._tx() as c:
            rows = c.execute("SELECT conversation_id, model, turn, body FROM conversations "
                             "INDEXED BY conversations_by_time WHERE workspace=? AND "
                             f"conversation_id NOT IN ({','.join('?' * len(names))}) "
                             "ORDER BY updated_at DESC LIMIT ?",
                             (workspace, *names, most)).fetchall()
        return [(r[0], r[1], r[2], r[3]) for r in rows]

    def count_conversations(self, workspace: str, besides: Collection[str]) -> int:
        """How many listed conversations the workspace keeps, not counting those in
        ``besides``."""
        names = list(besides)
        with self._tx() as c:
            row = c.execute("SELECT COUNT(*) FROM conversations WHERE workspace=? AND listed "
                            f"AND conversation_id NOT IN ({','.join('?' * len(names))})",
                            (workspace, *names)).fetchone()
        return row[0]

    def family_conversations(self, workspace: str, family: str, model: str,
                             but: Collection[str] = (), most: int = FAMILY_MOST
                             ) -> list[tuple[str, int, bytes]]:
        """(conversation id, turn, body) of the kept conversations of a family on ``model``:
        the family's id and its forks' (``<family>-<run><n>``), but those in ``but`` (the
        chats in memory: left out before the bound, which counted them, so a family of ten
        chats coming back read fewer windows at each), the most recently kept first, at most
        ``most``. A range of the table's key, not a scan."""
        names = list(but)
        with self._tx() as c:
            rows = c.execute(
                "SELECT conversation_id, turn, body FROM conversations WHERE workspace=? AND "
                "conversation_id >= ? AND conversation_id < ? AND model=? AND (conversation_id=? "
                "OR substr(conversation_id, 1, ?)=?) AND conversation_id NOT IN "
                f"({','.join('?' * len(names))}) ORDER BY updated_at DESC LIMIT ?",
                (workspace, family, family + ".", model, family, len(family) + 1, family + "-",
                 *names, most)).fetchall()
        return [(r[0], r[1], r[2]) for r in rows]

    def put_moved(self, workspace: str, family: str, target: str, now: str) -> None:
        """Keep that requests of ``family`` go on in the family ``target``."""
        with self._tx() as c:
            c.execute("INSERT INTO moved_families (workspace, family, target, updated_at) "
                      "VALUES (?,?,?,?) ON CONFLICT (workspace, family) DO UPDATE SET "
                      "target=excluded.target, updated_at=excluded.updated_at",
                      (workspace, family, target, now))

    def moved(self, workspace: str, family: str) -> str | None:
        """The family requests of ``family`` go on in, None when it was not moved."""
        with self._tx() as c:
            row = c.execute("SELECT target FROM moved_families WHERE workspace=? AND family=?",
                            (workspace, family)).fetchone()
        return row[0] if row else None

    def put_answer(self, workspace: str, answer_id: str, conversation_id: str,
                   now: str) -> None:
        """Keep that the provider's answer ``answer_id`` was of ``conversation_id``."""
        with self._tx() as c:
            c.execute("INSERT INTO answers (workspace, answer_id, conversation_id, updated_at) "
                      "VALUES (?,?,?,?) ON CONFLICT (workspace, answer_id) DO UPDATE SET "
                      "conversation_id=excluded.conversation_id, updated_at=excluded.updated_at",
                      (workspace, answer_id, conversation_id, now))

    def answered(self, workspace: str, answer_id: str) -> str | None:
        """The conversation the provider's answer ``answer_id`` was of, None when unknown."""
        with self._tx() as c:
            row = c.execute("SELECT conversation_id FROM answers WHERE workspace=? AND "
                            "answer_id=?", (workspace, answer_id)).fetchone()
        return row[0] if row else None

    # --- forgetting (state/expiry.py) -----------------------------------------------------

    def forget(self, workspace: str, before: str) -> tuple[int, int]:
        """Remove the workspace's audit entries written before ``before`` (an ISO time, as the
        rows keep it) and the windows of its conversations last kept before it, its moved
        families older than it whose chat has no window left, and its answers named before it;
        (audit entries, windows) removed. Sessions, their messages, rules and working items stay."""
        audit = 0
        while True:  # a transaction a batch: a first run after months lets other writes in
            with self._tx() as c:
                # by time, not by session: SQLite's own plan walked every entry of the
                # workspace's sessions to find the few (most days none) that are old: 13.9 ms
                # for 100,000 entries and none to remove, 0.1 ms by time
                n = c.execute("DELETE FROM audit WHERE id IN (SELECT id FROM audit INDEXED BY "
                              "audit_by_time WHERE at < ? AND sid IN (SELECT sid FROM sessions "
                              "WHERE workspace = ?) LIMIT ?)",
                              (before, workspace, FORGET_CHUNK)).rowcount
            audit += n
            if n < FORGET_CHUNK:
                break
        with self._tx() as c:
            # by the time index: the rows keep their time after the body (schema 6)
            windows = c.execute("DELETE FROM conversations INDEXED BY conversations_by_time "
                                "WHERE workspace = ? AND updated_at < ?",
                                (workspace, before)).rowcount
            # a moved family goes with the last window of the family it went on in: moved long
            # ago, its chat may still go on (a few rows a workspace: no index)
            c.execute("DELETE FROM moved_families WHERE workspace = ? AND updated_at < ? AND "
                      "NOT EXISTS (SELECT 1 FROM conversations k WHERE k.workspace = "
                      "moved_families.workspace AND k.conversation_id >= target AND "
                      "k.conversation_id < target || '.' AND (k.conversation_id = target OR "
                      "substr(k.conversation_id, 1, length(target) + 1) = target || '-'))",
                      (workspace, before))
            c.execute("DELETE FROM answers WHERE workspace = ? AND updated_at < ?",
                      (workspace, before))
            # what a turn sent goes with its window (a chat's last turn is never older)
            c.execute("DELETE FROM sent INDEXED BY sent_by_time WHERE workspace = ? AND "
                      "updated_at < ?", (workspace, before))
        return audit, windows


def models_in_use(directory: str | Path | None = None) -> list[str]:
    """The models of the state folder's sessions (the gateway's chats open one each), the most
    recently updated first, read without opening the store (no check, no migration: a quick
    read-only look; [] when there is no database or it cannot be read)."""
    path = state_dir(directory) / DB_NAME
    if not path.exists():
        return []
    try:
        conn = sqlite3.connect(f"{path.as_uri()}?mode=ro", uri=True)
        try:
            rows = conn.execute("SELECT model FROM sessions ORDER BY updated_at DESC "
                                "LIMIT 100").fetchall()
        finally:
            conn.close()
    except (sqlite3.Error, ValueError):  # ValueError: a path no file URI names
        return []
    return list(dict.fromkeys(r[0] for r in rows if isinstance(r[0], str)))


def _statements(script: str) -> list[str]:
    return [s.strip() for s in script.split(";") if s.strip()]


class _Tx:
    """The store's connection under its lock: one transaction (BEGIN IMMEDIATE .. COMMIT,
    ROLLBACK on error) when ``begin``. An error saying the file is damaged is kept by the store
    (`SessionStore._met`)."""

    __slots__ = ("store", "begin")

    def __init__(self, store: SessionStore, begin: bool) -> None:
        self.store, self.begin = store, begin

    def __enter__(self) -> sqlite3.Connection:
        store = self.store
        store._lock.acquire()
        try:
            if self.begin:
                store._conn.execute("BEGIN IMMEDIATE")
        except BaseException as exc:
            store._lock.release()
            store._met(exc)
            raise
        return store._conn

    def __exit__(self, exc_type, exc, tb) -> None:
        store = self.store
        try:
            if self.begin:
                store._conn.execute("ROLLBACK" if exc_type else "COMMIT")
        except BaseException as err:
            store._lock.release()
            store._met(exc)
            store._met(err)
            raise
        store._lock.release()
        store._met(exc)
