"""Fitting a conversation into its budget: the Shortener (block truncation, tool-output
outlines, prose condensing), `reduce` + `limit` (the pipeline strategy); the priority
strategy builds on these in priority.py.

Both share three rules: pinned messages and the leading system block are kept (they alone over
the budget is a ContextError, never a silent overflow); a tool call and its results are kept or
dropped together; every cut is recorded with its reason.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable

from ctxlayer.core.compress.extractive import compress_prose
from ctxlayer.core.compress.facts import NamedFacts
from ctxlayer.core.compress.shorten import shorten
from ctxlayer.core.compress.tool_output import compress_tool_output
from ctxlayer.core.errors import ContextError
from ctxlayer.core.groups import is_output
from ctxlayer.core.memo import Memo
from ctxlayer.core.trim import calls, tail
from ctxlayer.core.trim.stages import reference
from ctxlayer.core.trim.truncate import truncate_blocks
from ctxlayer.core.trim.warm import remembered
from ctxlayer.core.trim.work import Work
from ctxlayer.protocol import AuditAction, Message

#: the memo's kind for `named_facts` of a text: an outline at another cap names the same facts,
#: and a caller that read them already (prepare's step) leaves them there
NAMED = "named"

#: the fewest tokens of text a shortened question keeps; a budget with less room than this for
#: it is pinned_over_budget rather than a question cut to a word
MIN_QUESTION = 16


def fixed_set(w: Work, every_system: bool = False) -> set[int]:
    """Indices always kept: the leading system block (with `every_system`, every system and
    priority-0 message: P0), pinned messages, the newest user message (the question), and the
    groups they belong to."""
    keep: set[int] = set()
    for i, m in enumerate(w.msgs):
        if m.role != "system":
            break
        keep.add(i)
    p0 = w.pinned.get(every_system)
    if p0 is None:  # reduce and limit both ask: found once (on the warm path, for new messages)
        p0 = w.pinned[every_system] = w.where(("p0", every_system),
                                              _p0_or_system if every_system else _pinned)
    for i in p0:
        keep.update(w.group_of(i))
    if w.question is not None:
        keep.update(w.group_of(w.question))
    return {i for i in keep if w.alive[i]}


def _pinned(m: Message) -> bool:
    return m.pinned


def _p0_or_system(m: Message) -> bool:
    return m.pinned or m.role == "system" or m.priority == 0


def truncatable(w: Work, i: int) -> bool:
    m = w.msgs[i]
    return w.alive[i] and not m.pinned and not m.tool_calls


#: caps a regrown outline tries, one cap apart (an outline comes out under its cap: a tenth
#: under for a long log, so the first try often leaves a cap's worth of room)
REGROW_TRIES = 3


class Shortener:
    """How one message gets shorter: a tool output over its cap becomes its outline (JSON
    key paths and counts, a log's errors and key stack lines, or head and tail lines); any other
    message has the middles of its long code/details blocks cut, each cut naming the line
    ranges kept (a file aider's user added, cut by the last resort, said only "[...]").
    Results are memoised by content, so a warm re-trim derives nothing twice."""

    def __init__(self, w: Work, memo: Memo, head: int, tail: int, tool_cap: int, *,
                 name_facts: bool = False, calls: bool = True) -> None:
        self.w, self.memo, self.head, self.tail, self.tool_cap = w, memo, head, tail, tool_cap
        self.name_facts = name_facts
        self.calls = calls  # a call's long arguments may be outlined (TrimOptions)
        self._done = w.facts(("shorten", tool_cap, head, tail, name_facts))
        #: per message, what shortening it did the last time, by what it was then (`shorten`)
        self.did = w.facts(("shortened", tool_cap, head, tail, name_facts, calls))
        #: (its entry in `w.changed`, the text it was cut from) once the question was cut
        self.question_cut: tuple[int, str] | None = None

    def _is_big_output(self, i: int) -> bool:
        m, w = self.w.msgs[i], self.w
        return is_output(m) and w.tokens[i] - w.extra[i] > self.tool_cap

    def _cut(self, i: int) -> str | None:
        text, head, tail = self.w.content[i], self.head, self.tail
        return self.memo.get(("trunc", head, tail), text,
                             lambda: truncate_blocks(text, head, tail, numbered=True))

    def _outline(self, i: int, cap: int | None = None, text: str | None = None):
        """The outline of tool output i (its current text, or ``text``) at ``cap`` (the
        Shortener's cap when None), memoised by text and cap."""
        counter = self.w.counter
        text = self.w.content[i] if text is None else text
        cap = self.tool_cap if cap is None else cap
        if self.name_facts:
            memo = self.memo
            return memo.get(("tool+facts", cap), text, lambda: shorten(
                text, cap, counter, named=memo.get(NAMED, text, lambda: NamedFacts(text))))
        return self.memo.get(("tool", cap), text,
                             lambda: compress_tool_output(text, cap, counter))

    def regrown(self, i: int, now: int, left: int):
        """(outline, its tokens, its room) of tool output i from its original, the largest of
        a few caps a multiple of the usual cap apart that fits in ``now + left`` tokens and is
        longer than ``now``; None when none is. Its room is its cap, or ``now + left`` when the
        cap is over that (an outline comes out under its cap): an audit said "in 8500 tokens,
        the room the fit left" of an 8,000-token budget."""
        w, cap = self.w, self.tool_cap
        grown, best = (now + left) // cap * cap, None
        for _ in range(REGROW_TRIES):
            if grown <= now:
                break
            out = self._outline(i, grown, w.original[i])
            if out is None:
                break
            body = w.counter.count(out.text)
            if body > now + left:
                break
            if body > now:
                best = (out, body, min(grown, now + left))
            if now + left - body < cap:
                break
            grown += cap
        return best

    def reachable(self, order: Iterable[int], room: int) -> tuple[list[int], int]:
        """The messages of `order` (newest first, alive) that fit in `room` once shortened, as
        far as they reach, and their tokens as they are now (one walk for both). Once
        shortened is exact for outlines and estimated from the characters kept for cut blocks
        (it only decides which messages are reachable); a re-trim takes the estimates of the
        messages it shares with the last one from the warm cache, read inline (a call per
        message was a third of this walk)."""
        w = self.w
        facts = w.facts(("estimate", self.tool_cap, self.head, self.tail, self.name_facts))
        content, tokens, msgs, arguments = w.content, w.tokens, w.msgs, w.arguments
        cap = self.tool_cap if self.calls else None
        window: list[int] = []
        acc = now = 0
        for i in order:
            m = msgs[i]
            if m.pinned:  # as it is
                low = tokens[i]
            elif m.tool_calls:  # making calls: their arguments outlined to the cap (about:
                # what is over it saved), the text as it is
                low = tokens[i] if cap is None or arguments[i] <= cap \
                    else tokens[i] - (arguments[i] - cap)
            else:
                hit = facts[i] if facts is not None else None
                text = content[i]
                if hit is not None and hit[0] is text:
                    low = hit[1]
                else:
                    low = self._estimate(i)
                    if facts is not None:
                        facts[i] = (text, low)
            acc += low
            if acc > room:
                break
            now += tokens[i]
            window.append(i)
        return window, now

    def _estimate(self, i: int) -> int:
        w = self.w
        if self._is_big_output(i):
            out = self._outline(i)
            if out is not None:
                return w.extra[i] + out.tokens_after
        cut = self._cut(i)
        if cut is None:
            return w.tokens[i]
        body = w.tokens[i] - w.extra[i]
        return w.extra[i] + body * len(cut) // max(1, len(w.content[i]))

    def shorten(self, i: int) -> int:
        """Shorten message i once; returns the tokens saved (0 when it cannot be cut). What
        shortening a message did is a warm fact: it reads only the message (the same in the
        prefix a re-trim shares), its text, cost, extra tokens, liveness and outlined calls
        now, so when those are what they were the last time, the change it made then (its
        text, figures, calls and entry) is made again without a look at anything (a re-trim of
        1M tokens shortens the same 95 messages each turn: most of `reduce`)."""
        w = self.w
        did = self.did
        now = (w.content[i], w.tokens[i], w.extra[i], w.alive[i], w.calls.get(i))
        hit = did[i] if did is not None else None
        if hit is not None and hit[0] is now[0] and hit[1:5] == now[1:]:
            return w.redo_change(i, hit[-1])
        made = len(w.changed)
        saved = self._shorten(i)
        if did is not None:
            did[i] = (*now, w.change(i) if len(w.changed) > made else None)
        return saved

    def _shorten(self, i: int) -> int:
        """Shorten message i once (`shorten`): how a text is shortened is a warm fact (its cut
        text, its count and its reason); a message making calls keeps its text: its calls'
        long arguments are outlined (calls.py)."""
        w = self.w
        if w.msgs[i].tool_calls:
            return calls.outline(w, i, self.tool_cap, self.memo) \
                if self.calls and calls.outlinable(w, i, self.tool_cap) else 0
        how = remembered(self._done, i, w.content[i], self._how)
        if how is None:
            return 0
        return w.replace(i, how[0], how[2], how[3], body=how[1])

    def _how(self, i: int) -> tuple[str, int, AuditAction, str] | None:
        """(shortened text, its tokens, action, reason) for message i, or None: no cut."""
        count = self.w.counter.count
        if self._is_big_output(i):
            out = self._outline(i)
            if out is not None:
                return (out.text, count(out.text), "compressed", f"tool output over "
                        f"{self.tool_cap} tokens: kept its {out.method} outline")
        cut = self._cut(i)
        if cut is None:
            return None
        return (cut, count(cut), "truncated", f"over budget: middle of long code/details blocks "
                                              f"cut to {self.head}+{self.tail} lines")

    def fit_question(self, i: int, body: int) -> int:
        """Cut the question to at most `body` tokens of text: an outline for JSON or a log,
        else its head and tail lines around an omission marker."""
        w = self.w
        text = w.content[i]
        out = shorten(text, body, w.counter, keep_head=True)
        if out is None:
            return 0
        self.question_cut = (len(w.changed), text)
        return w.replace(i, out.text, "truncated", f"the newest user message alone is over the "
                         f"room left: kept its {_kept(out.method)} in {body} tokens")

    def condense(self, i: int, ratio: float, keywords: tuple[str, ...], why: str) -> int:
        """Keep about `ratio` of the message's prose, best sentences first, code whole."""
        w = self.w
        if not truncatable(w, i) or w.msgs[i].role not in ("user", "assistant"):
            return 0
        text = w.content[i]
        out = self.memo.get(("prose", ratio, keywords), text,
                            lambda: compress_prose(text, ratio, keywords))
        if not out or len(out) >= len(text) * 0.9:
            return 0
        return w.replace(i, out, "compressed", f"{why}: kept about {ratio:.0%} of its prose "
                                                "(extractive), code whole")


def shorten_longest(w: Work, candidates: Iterable[int], over: int, sh: Shortener) -> int:
    """Shorten the longest candidates first until `over` tokens are saved. A message that cannot
    be cut is skipped and the next one tried (gptme stops there); a call is cut by its long
    arguments. Returns what is left of `over` (<= 0 when done). A message shortened the last
    turn while it was what it is now has that change made again inline (`Shortener.shorten`'s
    warm fact, read here): a re-trim of 1M tokens shortens the same 99 messages each turn,
    and two calls for each were most of this walk."""
    msgs, alive, tokens, cap = w.msgs, w.alive, w.tokens, sh.tool_cap
    arguments, outlined, content, extra = w.arguments, w.calls, w.content, w.extra
    # truncatable() and calls.outlinable(), inline: a call each was a third of this walk
    order = sorted((-tokens[i], i) for i in candidates if alive[i] and not msgs[i].pinned
                   and (not msgs[i].tool_calls or sh.calls and i not in outlined
                        and arguments[i] > cap))  # the heap's order: nothing is pushed
    did, changed, saved = sh.did, w.changed, 0
    for _, i in order:
        if over <= 0:
            break
        hit = did[i] if did is not None else None
        if hit is None or hit[0] is not content[i] or hit[1] != tokens[i] or not hit[3] \
                or hit[2] != extra[i] or hit[4] != outlined.get(i):
            over -= sh.shorten(i)  # alive: a candidate, and nothing here drops one
            continue
        made = hit[5]  # Work.redo_change, inline
        if made is None:
            continue
        text, after, more, calls_then, entry = made
        less = tokens[i] - after
        content[i], tokens[i], extra[i] = text, after, more
        if calls_then is not None:
            outlined[i] = calls_then
        changed.append(entry)
        saved += less
        over -= less
    w.total -= saved
    return over


def regrow(w: Work, budget: int, sh: Shortener) -> None:
    """The room the fit left goes back to the tool outputs it outlined, newest first: each is
    outlined again from its original at a cap grown by the room left (rounded down to a
    multiple of the usual cap, so a re-trim that has a little less room finds the same
    outline), as long as a cap's worth of room is left. What the fit kept stays kept: only
    room nothing else took is used (a 3,000-line log outlined to a 16th of the budget had
    left five sixths of it empty)."""
    left, cap = budget - w.total, sh.tool_cap
    if left < cap:
        return
    entries = {e.index: k for k, e in enumerate(w.changed) if e.action == "compressed"}
    for i in sorted(entries, reverse=True):
        m = w.msgs[i]
        if not w.alive[i] or not is_output(m):
            continue
        if w.extra[i] + w.counter.count(w.original[i]) != w.changed[entries[i]].tokens_before:
            continue  # an earlier stage changed it before its outline: not outlined from that
        found = sh.regrown(i, w.tokens[i] - w.extra[i], left)
        if found is None:
            continue
        out, body, grown = found
        left -= w.redo(entries[i], out.text, body, f"tool output over {cap} tokens: kept its "
                       f"{out.method} outline in {grown} tokens, the room the fit left")
        if left < cap:
            return


#: the fewest tokens of text a dropped message comes back in: less of it says too little
MIN_RECLAIM = 64


def _kept(method: str) -> str:
    """What a shortened user's text kept, by the method that shortened it, as an audit says."""
    return {"json": "JSON outline", "log": "log outline"}.get(method, "head and tail")


def regrow_question(w: Work, budget: int, sh: Shortener) -> None:
    """The question was cut (`fit_fixed`) beside all the history then left, to at least half
    the room; the fit then kept only what of that history fitted, and what the kept history
    leaves goes to the question first: it is cut again, from the text it was cut from, in its
    room and that. A 2,371-token question was cut to 479 tokens beside a 4,944-token tool step
    that was then dropped whole, and a 1,000-token budget went out with 491."""
    cut = sh.question_cut
    left = budget - w.total
    if cut is None or left < MIN_QUESTION:
        return
    k, text = cut
    q = w.changed[k].index
    if q is None or not w.alive[q]:
        return
    now = w.tokens[q] - w.extra[q]
    body = now + left
    out = sh.memo.get(("question", body), text, lambda: shorten(
        text, body, w.counter, keep_head=True))
    grown = text if out is None else out.text  # None: it fits whole (never once cut: safe)
    tokens = w.counter.count(grown)
    if now < tokens <= body:
        kept = "whole" if out is None else f"its {_kept(out.method)}"
        w.redo(k, grown, tokens, f"the newest user message alone is over the room left: kept "
               f"{kept} in {body} tokens, what the history kept beside it left")


#: why a leading turn goes when the conversation must start with a user turn
LEADING_TURN = "the request must start with a user message: leading assistant turn dropped"


def lead_with_user(w: Work) -> None:
    """The turns kept before the first user message kept go, when the format wants a user turn
    first (Anthropic's `user_first`), each with its tool results: the fit says so itself, so
    that the room they had goes to the question and what the fit dropped. The encoder's repair
    dropped them after the fit, and a 600-token budget went out with 296 tokens. A pinned turn
    is not dropped here (the encoder says what becomes of it)."""
    for i, m in enumerate(w.msgs):
        if not w.alive[i] or m.role == "system":
            continue
        if m.role == "user" or m.pinned:
            return
        w.drop_group(i, LEADING_TURN)


def reclaim(w: Work, budget: int, sh: Shortener, user_first: bool = False,
            whole_only: bool = False) -> None:
    """The room the fit left goes to the messages it dropped whole that stand alone (no tool
    call, not a result, not a document: a long message of prose or a pasted log, with no code
    block to cut), newest first: each comes back as its head and tail (an outline for JSON or
    a log) in the room left. A 2,400-token message went whole from a budget of 800 with 793
    tokens left, and the request went out with 12 of them. With ``user_first``, a turn that
    would come before every user message kept stays out (it would lead the request);
    ``whole_only``: only what fits as it is comes back."""
    left = budget - w.total
    if left < MIN_RECLAIM:
        return
    gone = sorted((e.index for e in w.dropped if e.index is not None
                   and e.reason.startswith("over budget: ")), reverse=True)
    # the first user message kept, found once and moved as user messages come back (a scan
    # before every message brought back was quadratic in a long chat)
    first_user = next((j for j, m in enumerate(w.msgs) if w.alive[j] and m.role == "user"),
                      len(w.msgs))
    for i in gone:
        m = w.msgs[i]
        if m.tool_calls or m.role in ("tool", "system") or m.tool_call_id is not None \
                or m.kind == "doc" or w.group[i] in w.members:
            continue
        if user_first and m.role != "user" and first_user > i:
            continue
        body = left - w.extra[i]
        if body < MIN_RECLAIM:
            return
        if w.tokens[i] <= left:  # whole: the room leading turns left (user_first) holds it
            left -= w.undrop(i)
            first_user = min(first_user, i) if m.role == "user" else first_user
            continue
        if whole_only:
            continue
        text = w.content[i]
        out = sh.memo.get(("reclaim", body), text, lambda t=text, b=body: shorten(
            t, b, w.counter, keep_head=True))
        if out is None:
            continue
        left -= w.revive(i, out.text, w.counter.count(out.text), f"over budget: kept its "
                         f"{_kept(out.method)} in the {left} tokens the fit left")
        first_user = min(first_user, i) if m.role == "user" else first_user


#: tries of a regrown block cut (a few halvings between what fits and what does not)
REGROW_BLOCK_TRIES = 8


def regrow_blocks(w: Work, budget: int, sh: Shortener) -> None:
    """The room left goes back to the code and details blocks the fit cut to `head`+`tail`
    lines, newest first: each is cut again from its original keeping as many lines at each
    end as the room holds (a 400-line block cut to 10+10 lines left 650 of an 800-token
    budget empty). When the whole text fits it comes back whole."""
    left = budget - w.total
    if left < MIN_RECLAIM:
        return
    entries = {e.index: k for k, e in enumerate(w.changed) if e.action == "truncated"
               and e.reason.startswith("over budget: middle of long code")}
    for i in sorted(entries, reverse=True):
        if not w.alive[i]:
            continue
        original, count = w.original[i], w.counter.count
        whole = count(original)
        if w.extra[i] + whole != w.changed[entries[i]].tokens_before:
            continue  # an earlier stage changed it before its cut: not cut from that
        room = w.tokens[i] - w.extra[i] + left
        best = _most_lines(original, whole, room, sh.head, count)
        if best is None:
            continue
        text, body, n = best
        reason = ("over budget: kept whole in the room the fit left" if n is None else
                  f"over budget: middle of long code/details blocks cut to {n}+{n} lines, "
                  "the room the fit left")
        left -= w.redo(entries[i], text, body, reason)
        if left < MIN_RECLAIM:
            return


def _most_lines(original: str, whole: int, room: int, head: int, count
                ) -> tuple[str, int, int | None] | None:
    """(text, its tokens, lines kept at each end or None when whole) of `original` (of
    `whole` tokens) with its long blocks cut to the most lines at each end that fit in `room`
    tokens, more than `head`; None when no more fit."""
    if whole <= room:
        return original, whole, None
    lo, hi, best = head, None, None  # lo fits (the fit's own cut), hi does not
    n = max(1, head) * 2  # head_lines may be 0
    for _ in range(REGROW_BLOCK_TRIES):
        cut = truncate_blocks(original, n, n, numbered=True)
        if cut is None:
            break
        body = count(cut)
        if body <= room:
            lo, best = n, (cut, body, n)
        else:
            hi = n
        if hi is not None and hi - lo <= max(1, lo // 8):
            break
        n = max(1, lo) * 2 if hi is None else (lo + hi) // 2
    return best


def check_fixed(w: Work, fixed: set[int], budget: int, least: int | None = None) -> int:
    """The room the fixed set leaves, or pinned_over_budget naming what it holds and the least
    budget it needs (``least``: with the question cut as far as the fit cuts it, when it was
    not cut here; it was its whole size, and named pinned content there was none of)."""
    cost = w.fmt.reply_priming + sum(w.tokens[i] for i in fixed)
    if cost > budget:
        cut = least is not None and least < cost
        what = _fixed_parts(w, fixed, cut)
        verb = "needs" if len(what) == 1 else "need"
        figure = f"at least {least}" if cut else f"{cost}"
        raise ContextError(
            "pinned_over_budget",
            f"{' and '.join(what)} alone {verb} {figure} tokens, over the budget of {budget}",
            field="budget",
        )
    return budget - cost


def _fixed_parts(w: Work, fixed: set[int], cut: bool) -> list[str]:
    """What the fixed set holds, as a refusal names it: only what is there."""
    what = []
    if any(w.msgs[i].role == "system" for i in fixed):
        what.append("the pinned system content")
    if any(w.msgs[i].pinned and w.msgs[i].role != "system" and i != w.question for i in fixed):
        what.append("the pinned messages")
    if w.question in fixed:
        what.append("the newest user message" + (" (cut as far as it goes)" if cut else ""))
    return what or ["the pinned content"]


def fit_fixed(w: Work, fixed: set[int], budget: int, sh: Shortener) -> int:
    """Make what is always kept fit, and return the room left for the rest: the longest fixed
    messages are shortened first; if the question still does not fit beside the pinned
    content, it keeps its head and tail (an outline for JSON or a log) in what the history
    leaves of the room, but never less than half of it: a short history is kept whole beside
    it, a long one shares the room (and `regrow_question` gives it what the history the fit
    kept leaves)."""
    over = w.fmt.reply_priming + sum(w.tokens[i] for i in fixed) - budget
    if over > 0:
        shorten_longest(w, list(fixed), over, sh)
    q = w.question
    least = None
    if q is not None and q in fixed and truncatable(w, q):
        others = w.fmt.reply_priming + sum(w.tokens[i] for i in fixed if i != q)
        room = budget - others
        if w.tokens[q] > room:
            history = sum(w.tokens[i] for i in range(len(w.msgs)) if w.alive[i] and i not in fixed)
            body = max(room // 2, room - history) - w.extra[q]
            if body < 2 * MIN_QUESTION:  # too little to halve: it takes all of the room
                body = room - w.extra[q]
            if body >= MIN_QUESTION:  # below that nothing of the question would be left
                sh.fit_question(q, body)
            else:  # the budget that gives it MIN_QUESTION, when it can be cut that far
                least = others + w.extra[q] + _least_question(w, q)
    return check_fixed(w, fixed, budget, least)


def _least_question(w: Work, q: int) -> int:
    """The fewest tokens of text the fit cuts the question to: MIN_QUESTION when it can be
    cut that far, else all of it."""
    text = w.tokens[q] - w.extra[q]
    if text <= MIN_QUESTION:
        return text
    out = shorten(w.content[q], MIN_QUESTION, w.counter, keep_head=True)
    return MIN_QUESTION if out is not None and w.counter.count(out.text) <= MIN_QUESTION \
        else text


def reduce(w: Work, budget: int, sh: Shortener) -> None:
    """Shorten the longest messages while over budget, bounded: only messages that could still
    be kept once shortened are candidates, so a 1M-token chat is not compressed message by
    message before most of it is dropped."""
    if w.total <= budget:
        return
    fixed = fixed_set(w)
    room = fit_fixed(w, fixed, budget, sh)
    candidate = w.alive.copy()
    for i in fixed:
        candidate[i] = False
    # newest first, walked in C (a generator's step per message was a fifth of reduce)
    rest = itertools.compress(range(len(candidate) - 1, -1, -1), reversed(candidate))
    if w.total <= 2 * budget:  # little over: every message is a candidate, no need to estimate
        window = list(rest)
        now = sum(w.tokens[i] for i in window)
    else:  # newest first, as far as the room reaches: older messages are not even listed
        window, now = sh.reachable(rest, room)
    shorten_longest(w, window, now - room, sh)


def limit(w: Work, budget: int) -> None:
    """Keep the fixed set, then fill from newest to oldest by whole groups; a group that does
    not fit is dropped and older, smaller ones still get the room (gptme stops at the first).
    With a warm cache, the old end where the room ran out is the previous walk's, replayed
    when this walk would decide it the same (tail.py)."""
    fixed = fixed_set(w)
    room = check_fixed(w, fixed, budget)
    decided: set[int] = set()
    alive, group, members, tokens = w.alive, w.group, w.members, w.tokens
    entry, dropped, lost, first = w._entry, w.dropped, 0, len(w.dropped)
    tails = tail.by_room(w.cache.tails.values() if w.cache is not None else ())
    replay_below = max((t.start for ts in tails.values() for t in ts), default=0)
    lowest_kept = len(alive)  # below it the room stayed what it is: the tail of this walk
    for i in range(len(w.msgs) - 1, -1, -1):
        if i < replay_below and room in tails:
            ours = tail.replay_any(tails, i + 1, room, tokens, group, fixed, alive)
            if ours is not None:
                dropped.extend(ours)
                lost += sum(e.tokens_before for e in ours)
                break
        if not alive[i] or i in fixed:
            continue
        g = group[i]
        if g not in members:  # a message alone (most are): its own cost, met once
            cost = tokens[i]
            if cost <= room:
                room -= cost
                lowest_kept = i
            else:  # w.drop, inline: half of a long chat goes here every turn
                alive[i] = False
                lost += cost
                dropped.append(entry(i, "dropped", f"over budget: {cost} tokens, "
                                     f"{room if room > 0 else 0} left", cost, 0))
            continue
        if g in decided:
            continue
        decided.add(g)
        cost = w.group_tokens(g)
        if cost <= room:
            room -= cost
            lowest_kept = i
        else:
            w.drop_group(i, f"over budget: {cost} tokens, {max(room, 0)} left")
    w.total -= lost
    if w.cache is not None:
        w.cache.keep_tail(tail.remember(lowest_kept, room, tokens, group, fixed, alive,
                                        dropped[first:]))


def restore_orphaned_refs(w: Work, refs: dict[int, int], budget: int, sh: Shortener,
                          user_first: bool = False) -> None:
    """A deduplicated copy whose original was dropped gets its content back (the first such copy
    becomes the original of the later ones), shortened as any message is when that overflows
    (the newest tool output, a copy of an old one, went whole from a budget its outline fitted
    with room to spare); if it still does, the oldest history goes, and the check runs again
    until every kept reference points at a kept message. ``refs`` (copy -> original) is kept
    up to date, so a later call starts from what this one restored. With ``user_first`` the
    turns that would lead the request go first (`lead_with_user`), at every round: a copy
    went out as "[identical to the output of read(views.py) above (call toolu_01)]" with that
    call dropped after the check as a leading turn, the file in the request nowhere."""
    while True:
        if user_first:
            lead_with_user(w)
        restored: dict[int, int] = {}
        for i, j in sorted(refs.items()):
            if not w.alive[i] or w.alive[j]:
                continue
            if j in restored:
                k = refs[i] = restored[j]
                w.replace(i, reference(w, k), "deduplicated", "re-pointed: the copy it "
                          "referred to was dropped")
                continue
            restored[j] = i
            del refs[i]
            w.replace(i, w.original[i], "deduplicated",
                      "restored: the copy it referred to was dropped")
        if not restored:
            return
        if w.total > budget:
            shorten_longest(w, list(restored.values()), w.total - budget, sh)
        if w.total > budget:
            limit(w, budget)
