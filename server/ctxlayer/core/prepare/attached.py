"""The files a client puts in front of its conversation and sends again, current, every turn:
aider's read-only files (`--read`), its repo map and the files its user added to the chat,
each one user message of its own, its short acknowledgement after it. They are the user's
files as they are now, not history: a step keeps them whole, beside the summaries (a summary
of them kept their paths alone, and the model was asked to edit files it was never shown);
when together they pass their share of the budget they are shown by line ranges (each file
its first and last lines, verbatim, so an edit can quote them), said in the audit.
Must not: decide when a turn steps (engine.py) or touch any other message.
"""

from __future__ import annotations

from ctxlayer.core.compress.shorten import blocks_least, shorten_message
from ctxlayer.core.prepare.model import PreparePolicy
from ctxlayer.core.prepare.window import Window
from ctxlayer.core.tokens import Tokenizer
from ctxlayer.protocol import AuditEntry, Message

#: the share of the budget the attached files keep at least, together, once over it; more
#: when the rest of the request leaves more below the summary step's target
ATTACHED_SHARE = 0.5
CUT = ("shortened: the files the client attached (re-sent every turn) passed their share of "
       "the budget; each file keeps its first and last lines verbatim, the lines between cut")
GAVE = ("shortened to fit: the newest exchange left the request over its budget once the "
        "summaries had shrunk; the files the client attached gave what was still over, each "
        "file its first and last lines verbatim")
GREW = ("shown longer: a file the client attached, cut shorter before than the room now "
        "allows, is cut again from its original to that room (its first and last lines)")
#: a file cut before is cut again to the room only when that shows at least this many times
#: what it shows now: each new cut moves the provider's cached prefix from the file on
GROW_AT_LEAST = 2
#: the files cut to fit give this share of the budget (1/GIVE_MORE) more than is over, and
#: grow back to leave it free: room for the next turn's question
GIVE_MORE = 10


def fit_attached(win: Window, files: frozenset[int], budget: int, counter: Tokenizer,
                 policy: PreparePolicy) -> list[AuditEntry]:
    """When the request is still over ``budget`` after a step (which keeps the attached files
    whole and summarizes the rest first: a file of 9.8k tokens in a budget of 16,000 stays
    whole beside a summary of 30 turns), each attached files' message is shown shortened to
    its part of their share, in proportion to its size: what the rest leaves them below
    ``summary_target``, at least `ATTACHED_SHARE` of the budget. One shortened on an earlier
    turn keeps its text (the cached prefix holds). Returns the audit of those shortened now."""
    long = [i for i in _long(win, files, policy) if i not in win.rewrites]
    total = win.total()
    if not long or total <= budget:
        return []
    held = sum(win.shown_tokens(i) for i in files if i >= win.head)
    share = max(int(budget * ATTACHED_SHARE),
                int(budget * policy.summary_target) - (total - held))
    whole = sum(win.tokens[i] for i in long)
    over = held - share
    if over <= 0:
        return []
    out: list[AuditEntry] = []
    for i in long:
        cap = win.tokens[i] - -(-over * win.tokens[i] // whole)  # its part of the excess
        got = shorten_message(win.messages[i], win.tokens[i], max(1, cap), counter, policy.fmt)
        if got is not None and got[1] < win.tokens[i]:
            out.append(win.rewrite(i, got[0], got[1], "truncated", CUT))
    return out


def give_over(win: Window, files: frozenset[int], budget: int, counter: Tokenizer,
              policy: PreparePolicy) -> list[AuditEntry]:
    """Before the last resort, when the request is still over ``budget`` after its step (the
    newest exchange is big) and the attached files are shown: the summaries shrink first
    (`fit_summaries`), then the long files give what is still over, each its part in
    proportion to what it shows above its floor (`_least`: its ends, a few lines each, the
    cut naming the line ranges kept), cut from its original by its ends. The last resort's
    own cut took a file of 430 tokens to 108 for a request a few tokens over, kept so on later
    turns with 280 tokens free. They give a tenth of the budget more than is over, within half
    of what they show: exactly what was over, the next question was over again, and the files
    were cut a little shorter on every turn (466, 286, 250, 214 words; the cached prefix
    broken at them each time). Over half of what they show they give exactly what is over,
    down to their floors, when that leaves the newest question whole: held at half, the last
    resort cut a pasted log of 6,931 tokens that fitted whole to 2,587 (264 of its 700 rows)
    and the files kept 4,970. When even their floors leave too little, the question is cut
    anyway and they are held (cut to their floors besides, they broke the cached prefix on
    twice as many turns of random aider chats). Returns the audit of those cut now."""
    long = _long(win, files, policy)
    if not long or win.total() <= budget:
        return []
    if win.chunks:
        win.fit_summaries(budget, counter, policy)
    over = win.total() - budget
    now = {i: win.shown_tokens(i) for i in long}
    spare = {i: max(0, now[i] - _least(win, i, counter)) for i in long}
    room = sum(spare.values())
    if over <= 0 or room <= 0 or (over * 2 > sum(now.values()) and over > room):
        return []
    give = min(over + budget // GIVE_MORE, max(over, sum(now.values()) // 2), room)
    out: list[AuditEntry] = []
    for i in long:
        if not spare[i]:
            continue
        got = shorten_message(win.messages[i], win.tokens[i],
                              max(1, now[i] - -(-give * spare[i] // room)), counter, policy.fmt)
        if got is not None and got[1] < now[i]:
            out.append(win.rewrite(i, got[0], got[1], "truncated", GAVE))
    return out


def at_floors(win: Window, files: frozenset[int], counter: Tokenizer,
              policy: PreparePolicy) -> dict[int, tuple[Message, int] | None]:
    """The attached files' messages cut from their originals to their floors (`_least`: each
    file its ends, the cut naming the line ranges kept), by conversation index; None for one
    shown at its floor already (cut so on an earlier turn): what the last resort holds before
    it drops one whole. Dropped whole, a message of 384 tokens went with 369 left in a budget
    of 800 (a long system prompt and reminder), and the model could quote none of its files.
    A message not cut file by file has no floor here (the trim engine cuts it as any text)."""
    out: dict[int, tuple[Message, int] | None] = {}
    for i in _long(win, files, policy):
        least = _least(win, i, counter)
        if least <= 1:
            continue
        got = shorten_message(win.messages[i], win.tokens[i], least, counter, policy.fmt)
        if got is not None:
            out[i] = got if got[1] < win.shown_tokens(i) else None
    return out


def _least(win: Window, i: int, counter: Tokenizer) -> int:
    """The fewest tokens attached files' message ``i`` is cut to, each file keeping its ends
    (`blocks_least`), its overheads as counted; 1 when it is not cut file by file."""
    text = win.messages[i].content
    least = blocks_least(text, counter)
    return 1 if least is None else win.tokens[i] - counter.count(text) + least


def grow_back(win: Window, files: frozenset[int], budget: int, counter: Tokenizer,
              policy: PreparePolicy) -> list[AuditEntry]:
    """The attached files shown shorter than the request's room allows (a cut made when the
    request was over, kept while later turns left room: a file of 430 tokens kept at 108 with
    280 free) cut again from their originals to their part of that room, or whole when it
    holds them; only those that come out at least `GROW_AT_LEAST` times what they show.
    The room is what the request leaves of the budget but a tenth (1/GIVE_MORE), as
    `give_over` leaves: grown into all of it, the files left the request at 1,994 of 2,000,
    the next question was over, and they were cut again. Returns the audit of those cut
    again."""
    cut = [i for i in _long(win, files, policy) if i in win.rewrites]
    free = budget - budget // GIVE_MORE - win.total()
    if not cut or free <= 0:
        return []
    shown = sum(win.shown_tokens(i) for i in cut)
    out: list[AuditEntry] = []
    for i in cut:
        now = win.shown_tokens(i)
        room = now + free * now // shown
        if min(room, win.tokens[i]) < GROW_AT_LEAST * now:
            continue
        if win.tokens[i] <= room:  # whole: no cut to say
            del win.rewrites[i]
            continue
        got = shorten_message(win.messages[i], win.tokens[i], room, counter, policy.fmt)
        if got is not None and GROW_AT_LEAST * now <= got[1] <= room:
            out.append(win.rewrite(i, got[0], got[1], "truncated", GREW))
    return out


def _long(win: Window, files: frozenset[int], policy: PreparePolicy) -> list[int]:
    """The attached files' messages long enough to cut, shown in the result: a short one (a
    repo map of a few paths) is left whole, cutting it saves a few tokens."""
    verbatim = set(win.verbatim)
    return [i for i in sorted(files) if win.messages[i].role == "user"
            and (i >= win.upto or i in verbatim) and win.tokens[i] > policy.outline_min]
