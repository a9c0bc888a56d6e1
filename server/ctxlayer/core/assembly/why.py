"""What explains a session's last assembly (ctx/why), rebuilt from its compaction state.

Rebuilt, not remembered: an assembly that summarizes nothing new sends the same summary as the
one before it, and a restarted daemon has only the kept state; both must still say which
messages the summary replaces. From the state: the messages the summary replaces
(`summarized`; never those kept whole beside it, `history.kept_whole`), those shown shortened
by an earlier stage (their rewrite's action), those restored on request (`restored`, never `summarized`: they are shown whole); then what the
assembly itself cut or noted that the state does not hold (its dropped and truncated entries,
a client summary replaced as off-topic), each message and action once.
Pure: reads the history and the state.
"""

from __future__ import annotations

from collections.abc import Iterable

from ctxlayer.core.assembly.compacted import Compaction, kept_in, verbatim_start
from ctxlayer.core.assembly.compaction import SUMMARIZED
from ctxlayer.core.assembly.history import History
from ctxlayer.core.assembly.restore import RESTORED
from ctxlayer.core.text import describe
from ctxlayer.protocol import AuditEntry

#: the reason of a rewrite kept before rewrites said theirs
SHORTENED = "shortened by an earlier compaction stage"


def why_of(history: History, state: Compaction,
           assembled: Iterable[AuditEntry] = ()) -> list[AuditEntry]:
    """Every entry that explains an assembly of ``history`` from ``state``, oldest first, then
    the entries of ``assembled`` (what that assembly did) not said already."""
    start = min(verbatim_start(history, state), len(history))
    restored = set(state.restored)
    whole = set(kept_in(history, 0, start))  # shown as they are beside the summary
    out = [_entry(history, i, "summarized", SUMMARIZED, 0)
           for i in range(start) if history.seqs[i] not in restored and i not in whole]
    for i in range(start, len(history)):
        rw = state.rewrites.get(history.seqs[i])
        if rw is not None and history.seqs[i] not in restored:
            out.append(_entry(history, i, rw.action, rw.reason or SHORTENED, rw.tokens))
    for i in range(len(history)):
        if history.seqs[i] in restored:
            out.append(_entry(history, i, "restored", RESTORED, history.tokens[i]))
    said = {(e.message_id, e.action) for e in out}
    return out + [e for e in assembled if e.message_id is None
                  or (e.message_id, e.action) not in said]


def _entry(history: History, i: int, action: str, reason: str, after: int) -> AuditEntry:
    msg = history.messages[i]
    return AuditEntry(action=action, reason=reason, summary=describe(msg),  # type: ignore
                      tokens_before=history.tokens[i], tokens_after=after, message_id=msg.id,
                      index=i)
