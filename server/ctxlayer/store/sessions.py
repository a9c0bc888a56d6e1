"""The sessions' rows (ctx/session/*): a session, its messages, rules, working items and
audit log, read and written. A mixin of `db.SessionStore`, which owns the connection
(``_conn``, ``path``), its lock and its transactions (``_tx``, ``_locked``).

A row that does not read is an `UnreadableRow` naming it; a newer version's unknown message
fields are read past (message rows are never written again); an audit entry that does not
read is left out and said in the log. A write that finds its seq or id taken by another
daemon on the same state folder writes nothing (`SeqTaken`, `IdTaken`); every write that
changes what a session assembles from counts one more revision (`_bump`).
Must not: know about the wire or pygls; decide policy (the service does).
"""

from __future__ import annotations

import logging
import sqlite3
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import TypeVar

import msgspec

from ctxlayer.core.zones.rules import Rule
from ctxlayer.core.zones.working import WorkingItem
from ctxlayer.protocol import AuditEntry, Message, ToolCall
from ctxlayer.store.errors import IdTaken, SeqTaken, UnreadableRow

log = logging.getLogger("ctxlayer.store")

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


def _audit_batch(entries: Iterable[AuditEntry]) -> list[bytes]:
    """Audit entries as the JSON rows they are stored as (encoded before the lock is taken)."""
    return [_enc.encode(e) for e in entries]


#: a LIMIT above any count: a larger one overflows SQLite's integers
_ALL = 2**63 - 1


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
    #: counts the changes to what the session assembles from (`SessionRows._bump`)
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


class SessionRows:
    """The reads and writes of the sessions' tables (`db.SessionStore` gives the connection)."""

    path: Path
    _conn: sqlite3.Connection
    _json_each: bool  # whether SQLite has json_each (`_add_audit`)

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
