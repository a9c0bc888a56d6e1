"""The window of a live conversation in one turn: which messages are shown whole, which by
their outline, which stand in a summary, and the compaction step: outlines of the oldest long
messages first, then a summary chunk that moves the boundary.

`Window` is the turn's working copy of the state's lists (the state itself is never changed).
Groups: an assistant message with tool calls and the results that answer its call ids are one
group (core/groups.py); the boundary never falls inside one, so no result is shown without its
call.
Must not: decide when a turn steps (engine.py does) or fit what the step could not (the trim
engine does, as a last resort).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Collection
from dataclasses import dataclass

import msgspec

from ctxlayer.core.assembly.loop import opening_step
from ctxlayer.core.assembly.summary import first_ask_chars
from ctxlayer.core.compress.facts import Facts, Named, NamedFacts, named_part
from ctxlayer.core.compress.shorten import shorten_message
from ctxlayer.core.groups import ToolGroups, is_output, is_result
from ctxlayer.core.prepare import rules as rules_of
from ctxlayer.core.prepare import summaries
from ctxlayer.core.prepare.aider_files import is_ack, is_attached
from ctxlayer.core.prepare.merging import Merging
from ctxlayer.core.prepare.model import (
    Ahead,
    Chunk,
    PreparePolicy,
    Rewrite,
    apply_shown,
    shown_of,
)
from ctxlayer.core.text import describe
from ctxlayer.core.tokens import Tokenizer, message_tokens
from ctxlayer.protocol import AuditAction, AuditEntry, Message

#: a new chunk is guessed at no more than this and a third of the tokens it stands for
CHUNK_LEAST = 48
QUESTION_SHORTENED = ("shortened in a step: the newest user message, older than the last turn, "
                      "keeps its head and tail so the history it asked for fits")
OUTLINED = "outlined in a step: the conversation passed its budget (the original stays summarizable)"
KEPT_SHORT = ("shortened in a step rather than summarized: a summary of this long message would "
              "have left most of the request's budget unused (the original stays summarizable)")


def last_group(groups: ToolGroups, upto: int, messages: list[Message]) -> int:
    """Where the last group starts (not before ``upto``): it always stays verbatim. System
    notes a client puts after the turn belong to it: the group before them is the last one
    too (Claude Code's reminder after the newest tool result left that result to be
    outlined, the output the agent had just asked for never seen whole)."""
    n = len(groups.lead)
    if not n:
        return upto
    start = groups.lead[n - 1]
    while start > upto and all(messages[j].role == "system" for j in range(start, n)):
        start = groups.lead[start - 1]
    return max(upto, start)


def newest_user(messages: list[Message]) -> int:
    for i in range(len(messages) - 1, -1, -1):
        m = messages[i]
        if m.role == "user" and not is_result(m):
            return i
    return -1


@dataclass(slots=True)
class Step:
    """What one step did: the messages it outlined (oldest first) and the chunks it made
    (two when it summarized on both sides of the newest question: `Window.wall`)."""

    outlined: list[AuditEntry]
    chunks: list[Chunk]


class Window(Merging):
    """The turn's view: head + chunks + verbatim + messages[upto:], with rewrites applied.
    ``frontier`` (>= upto): the messages before it were looked at by an outline step; each
    long one among them is shown by its outline (a rewrite) until a summary takes it."""

    __slots__ = ("messages", "tokens", "cum", "head", "upto", "chunks", "verbatim", "rewrites",
                 "fmt_priming", "frontier", "facts", "named", "ahead", "held", "_groups",
                 "_read")

    def __init__(self, messages: list[Message], tokens: list[int], cum: list[int], head: int,
                 upto: int, chunks: list[Chunk], verbatim: list[int],
                 rewrites: dict[int, Rewrite], priming: int,
                 frontier: int | None = None, facts: dict[int, Facts] | None = None,
                 ahead: Ahead | None = None, named: dict[int, Named] | None = None) -> None:
        self.messages, self.tokens, self.cum = messages, tokens, cum
        self.head, self.upto, self.chunks, self.verbatim = head, upto, chunks, verbatim
        self.rewrites = rewrites
        self.fmt_priming = priming
        self.frontier = upto if frontier is None else max(upto, frontier)
        self.facts = facts if facts is not None else {}  # read ahead of need, by index
        # `named_facts` an outline read (of a message without calls): a summary or a later
        # outline of the same message reads only what they leave out
        self.named = named if named is not None else {}
        self.ahead = ahead  # a model's summary of what the next step may take
        #: the newest tool loop's first step when it carries the turn's thinking and a later
        #: step does not: never summarized (held.py), its calls outlined as any
        self.held = opening_step(messages)
        self._groups: ToolGroups | None = None
        # the offline summary's sentences by text, for this turn only: a step that writes its
        # chunk again over fewer messages (`_give_back`) reads none of them twice
        self._read: dict[str, list[tuple[int, str]]] = {}

    @property
    def groups(self) -> ToolGroups:
        """The turn's tool-call groups, made the first time a step or a recall asks."""
        if self._groups is None:
            self._groups = ToolGroups(self.messages)
        return self._groups

    def shown_tokens(self, i: int) -> int:
        rw = self.rewrites.get(i)
        return self.tokens[i] if rw is None else rw[1]

    def shown(self, i: int) -> Message:
        """Message i as the result shows it: its text and its calls' arguments as rewritten."""
        rw = self.rewrites.get(i)
        m = self.messages[i]
        return m if rw is None else apply_shown(m, rw[0])

    def tail_tokens(self) -> int:
        n, upto = len(self.messages), self.upto
        delta = sum(rw[1] - self.tokens[i] for i, rw in self.rewrites.items() if i >= upto)
        return self.cum[n] - self.cum[upto] + delta

    def fixed_tokens(self) -> int:
        """Everything but the tail: priming, head, chunks, verbatim messages."""
        return (self.fmt_priming + self.cum[self.head] + sum(c.tokens for c in self.chunks)
                + sum(self.shown_tokens(i) for i in self.verbatim))

    def total(self) -> int:
        return self.fixed_tokens() + self.tail_tokens()

    def show_whole(self, i: int) -> list[int]:
        """Put the group of summarized message i back in the result, whole; returns the indices
        newly shown (empty when it was shown already or is in the tail)."""
        if i < self.head or i >= self.upto or i in self.verbatim:
            for k in self.groups.of(i):
                self.rewrites.pop(k, None)
            return []
        grp = [k for k in self.groups.of(i) if k not in self.verbatim]
        for k in grp:
            self.rewrites.pop(k, None)
        self.verbatim = sorted({*self.verbatim, *grp})
        return grp

    # --- the compaction step ----------------------------------------------------------------

    def _stop(self) -> int:
        """The start of the last group, which always stays verbatim."""
        return last_group(self.groups, self.upto, self.messages)

    def step(self, budget: int, counter: Tokenizer, policy: PreparePolicy,
             keep: Callable[[int], bool], rules: Collection[int] = ()) -> Step | None:
        """Outline first: the oldest long messages not yet looked at become their outlines
        until the request is down to ``target`` of the budget; the prefix up to them holds.
        Only when outlines are not enough is the oldest part summarized (a chunk), down to
        ``summary_target``, so summary steps, which move more of the prefix, come rarely.
        ``rules``: the messages carrying the user's instruction files (kept whole by
        ``keep``), cut to their share first when over it (`keep_rules`)."""
        outlined = self.keep_rules(rules, budget, counter, policy) if rules else []
        outlined += self.outline(budget, counter, policy, keep)
        if outlined and self.total() <= budget:
            return Step(outlined, [])
        instead = self._shorten_instead(budget, counter, policy, keep)
        if instead is not None:
            outlined.append(instead)
            if self.total() <= budget:
                return Step(outlined, [])
        # what came before the newest question first, then, if the request needs it, the work
        # on it after it: one chunk for both was read after the question, its "Asked" the
        # previous question (Claude Code --continue: Q0's summary, Q2, Q1's summary)
        wall = self.wall(keep)
        chunk = self.summarize(budget, counter, policy, keep, outlined, wall)
        chunks = [chunk] if chunk is not None else []
        if wall is not None and (chunk is None or self.upto >= wall) \
                and self.total() > int(budget * policy.summary_target):
            more = self.summarize(budget, counter, policy, keep, outlined)
            chunks += [more] if more is not None else []
        if not chunks and not outlined:
            return None
        return Step(outlined, chunks)

    def wall(self, keep: Callable[[int], bool]) -> int | None:
        """Where the newest question's kept run starts (it, and the user turns just before it
        that a step keeps whole: a client's context, the user's rules) when a summary step
        would walk past it (after the boundary, before the last group): a chunk stops there.
        None when there is none."""
        msgs = self.messages
        w = newest_user(msgs)
        if w <= self.upto:
            return None
        while w - 1 >= self.upto and keep(w - 1):
            if msgs[w - 1].role == "user" and not is_result(msgs[w - 1]):
                w -= 1
            # aider's files and their acknowledgement just before the question: after each
            # edit it applies, aider sends them after the turn just answered, one exchange
            # further on; below the boundary, that move made the window again on every turn
            # (the whole history summarized anew, the request at 43% of its budget)
            elif w - 2 >= self.upto and is_ack(msgs[w - 1]) and keep(w - 2) \
                    and is_attached(msgs[w - 2]):
                w -= 2
            else:
                break
        return w if self.upto < w < self._stop() else None

    def keep_rules(self, rules: Collection[int], budget: int, counter: Tokenizer,
                   policy: PreparePolicy) -> list[AuditEntry]:
        """The messages of ``rules`` (carrying the user's instruction files), when together
        over the room the rest of the request leaves them (`rules.room`), are each shown by
        its `rules.kept_form` within its part of that room, in proportion to its size, from
        now on (once: the rewrite stays, so the prefix moves once); the audit entries of those
        cut."""
        todo = [i for i in sorted(rules) if i >= self.head and i not in self.rewrites]
        whole = sum(self.tokens[i] for i in todo)
        room = rules_of.room(budget, policy, self._rest(set(todo)))  # those cut before: rest
        if whole <= room:
            return []
        out = []
        for i in todo:
            cap = room * self.tokens[i] // whole
            got = rules_of.kept_form(self.messages[i].content, cap, counter)
            if got is None:
                continue
            short = msgspec.structs.replace(self.messages[i], content=got[0])
            after = message_tokens(short, counter, policy.fmt)
            if after < self.tokens[i]:
                out.append(self.rewrite(i, short, after, "truncated",
                                        rules_of.cut_reason(got[1], cap, got[2])))
        return out

    def _rest(self, rules: set[int]) -> int:
        """The tokens of what the request holds beside the messages carrying instruction files
        (``rules``) whatever a step does: the priming, the messages that stay first, the newest
        exchange (its question, its last group)."""
        stop, q = self._stop(), newest_user(self.messages)
        newest = sum(self.shown_tokens(i) for i in range(stop, len(self.messages))
                     if i not in rules)
        if self.head <= q < stop and q not in rules:
            newest += self.shown_tokens(q)
        return self.fmt_priming + self.cum[self.head] + newest

    def rewrite(self, i: int, short: Message, after: int, action: AuditAction,
                 reason: str) -> AuditEntry:
        """Show message i as ``short`` (``after`` tokens) from now on, audited: every
        shortening a step or the fit makes (outline, question, a long user message, the newest
        exchange's calls and replies) is kept this way."""
        m = self.messages[i]
        entry = AuditEntry(action=action, reason=reason, summary=describe(m),
                           tokens_before=self.tokens[i], tokens_after=after,
                           message_id=m.id or f"#{i}", index=i)
        self.rewrites[i] = (shown_of(m, short), after, entry)
        return entry

    def _shorten_instead(self, budget: int, counter: Tokenizer, policy: PreparePolicy,
                         keep: Callable[[int], bool]) -> AuditEntry | None:
        """The long user messages a summary would take (an agent's demonstration, a file the
        user added, a pasted log), each in turn from the oldest: the first whose summary, with
        all before it, would leave the request under ``summary_target`` of the budget is
        shortened instead (head and tail, naming the facts of its cut part), down to that
        target. A SWE-agent chat whose first request was an 8.4k-token demonstration in a
        7.6k budget went out at 41% of it, the demonstration a 1.2k-token summary; shortened,
        at 73%. On the dev replay this changed no fact at any budget; the lowest use once over
        budget rose from 51.7% / 41.3% to 64.0% / 66.4% at 40% / 70%. Only the oldest looked
        at, a 760-token question before a 7k-token pasted log was it: its summary left the
        request full, so nothing was shortened, and the log went into the summary with it
        (311 of 5,000 tokens sent, the log's one error line lost)."""
        least = self.outline_cap(budget, policy)
        total, target = self.total(), int(budget * policy.summary_target)
        guess = self.chunk_guess(self.room(budget, newest_user(self.messages)), policy)
        i = self._long_user_message(least, keep, self.upto)
        while i is not None:
            shown = self.shown_tokens(i)
            older = sum(self.shown_tokens(k) for k in range(self.upto, i))
            if total - older - shown + guess < target:
                break
            # a summary down to it still reaches the step's target: the next one, if any
            i = self._long_user_message(least, keep, i + 1)
        if i is None:
            return None  # a summary reaches the step's target: it is the better step
        if total - older + guess <= budget:
            return None  # with what came before it summarized it fits: it stays whole
        cap = shown - (total - target)
        if cap < least:
            return None
        got = shorten_message(self.messages[i], self.tokens[i], cap, counter, policy.fmt,
                              self._named(i), least=least)
        if got is None or got[1] >= shown:
            return None
        return self.rewrite(i, got[0], got[1], "truncated", KEPT_SHORT)

    def _long_user_message(self, least: int, keep: Callable[[int], bool],
                           start: int) -> int | None:
        """The first message from ``start`` on that the summary would take and is one user
        message of its own over ``least`` tokens as shown; None when there is none, or when
        that one was shortened before.
        Not only the oldest: a short exchange may come first (aider's files, which a step now
        keeps whole, `attached.py`, went into the summary with its repo map's: six files of
        17k tokens in a budget of 12,000, 19 of their 900 lines kept, the request at 45%)."""
        for i in range(start, self._stop()):
            if self.groups.end(i) != i + 1 or keep(i) or i in self.verbatim:
                continue
            m = self.messages[i]
            # long by its words: an image's tokens are no text to shorten
            if m.role != "user" or m.kind == "summary" \
                    or self.shown_tokens(i) - (m.parts_tokens or 0) <= least:
                continue
            # once only (``i in self.rewrites``): each time moves the prefix from it, so the
            # summary takes it next, when newer messages are there to fill the room
            return None if i in self.rewrites else i
        return None

    def chunk_guess(self, room: int, policy: PreparePolicy) -> int:
        """The next chunk's size, guessed (by `summarize` and `planned` alike): the last one's,
        but never under what a chunk's parts take in this room (a new chunk is made to at least
        that; `chunks_for` guesses at most a third of what it stands for): a tiny last chunk
        made the walk expect no merge, and the merge that came left the request at two fifths
        of its budget."""
        return max(summaries.estimate(policy, room), self.chunks[-1].tokens if self.chunks else 0)

    def chunks_for(self, est: int, room: int, policy: PreparePolicy) -> Callable[[int], int]:
        """What the chunks take once a new one standing for ``t`` tokens joined them: a new
        chunk is guessed at ``est``, but at most a third of what it stands for and a little
        (a step a few tokens over a small budget guessed the parts' least sizes, took
        everything to make room for them, and the chunk came out at a fifth of the guess)."""
        return lambda t: self.chunks_after(min(est, CHUNK_LEAST + t // 3), room, policy)

    def planned(self, budget: int, policy: PreparePolicy,
                keep: Callable[[int], bool]) -> list[int]:
        """The messages the summary step is expected to take when the conversation goes on
        growing as its last turn did (the last group, with the user message before it): the
        walk of `summarize` on the first request past the budget, as far as it stays within
        the messages there are now; [] when it would go further."""
        msgs, n = self.messages, len(self.messages)
        lead = self.groups.lead[-1] if self.groups.lead else n
        if lead > 0 and msgs[lead - 1].role == "user" and not is_result(msgs[lead - 1]):
            lead -= 1
        growth = max(1, self.cum[n] - self.cum[lead])
        total = self.total()
        tail = self.tail_tokens() + growth * max(1, -(-(budget + 1 - total) // growth))
        stay = self._stay(keep)
        out = [i for i in self.verbatim if i not in stay]
        q = newest_user(msgs)
        room = self.room(budget, q)
        est = self.chunk_guess(room, policy)
        base = self.fmt_priming + self.cum[self.head] + sum(self.shown_tokens(i) for i in stay)
        target = int(budget * policy.summary_target)
        wall = self.wall(keep)  # a step's chunk stops there (`step`)
        j, taken, _, base, tail, chunks = self._walk(
            self.upto, n if wall is None else wall, base, tail, target, keep, budget,
            int(budget * policy.summary_floor), sum(self.shown_tokens(i) for i in out),
            self.chunks_for(est, room, policy))
        if wall is None and j >= n and base + chunks + tail > target:
            return []  # the step would take more than there is now
        return sorted([*out, *taken])

    def _stay(self, keep: Callable[[int], bool]) -> set[int]:
        """The verbatim messages a step shows apart from the summaries: the groups of those
        ``keep`` says stay whole."""
        stay: set[int] = set()
        for i in self.verbatim:
            if keep(i) or i == self.held:
                stay.update(self.groups.of(i))
        return stay & set(self.verbatim)

    def _walk(self, j: int, stop: int, base: int, tail: int, target: int,
              keep: Callable[[int], bool], budget: int, floor: int, covering: int,
              chunks: Callable[[int], int]) -> tuple[int, list[int], list[int], int, int, int]:
        """The summary step's walk: whole groups from ``j`` on, oldest first, while what stays
        before the tail (``base``, and the chunks: ``chunks(t)`` when the new one stands for
        ``t`` tokens) and ``tail`` are over ``target``; a group ``keep`` names stays whole
        (its cost joins ``base``), the others are taken. A group that would leave a request
        which fits under ``floor`` is not taken once something is (``covering``: the tokens
        the step takes already). Returns (where it stopped, taken, kept whole, base, tail,
        chunks)."""
        taken: list[int] = []
        kept: list[int] = []
        took = covering
        fixed = base + chunks(took)
        while j < stop and fixed + tail > target:
            e = self.groups.end(j)
            cost = sum(self.shown_tokens(k) for k in range(j, e))
            now = fixed + tail
            if (covering or taken) and now <= budget and now - cost < floor:
                break  # a big group (a file the user added) is not summarized to empty
            tail -= cost
            if any(keep(k) or k == self.held for k in range(j, e)):
                kept.extend(range(j, e))
                base += cost
            else:
                taken.extend(range(j, e))
                took += cost
            fixed = base + chunks(took)
            j = e
        return j, taken, kept, base, tail, fixed - base

    def room(self, budget: int, q: int) -> int:
        """The tokens the system prompt and the question (message ``q``) leave of the budget:
        what a summary's parts are sized to."""
        room = budget - self.fmt_priming - self.cum[self.head] - (
            self.shown_tokens(q) if q >= self.head else 0)
        return max(room, budget // 4)

    def _ahead_for(self, covered: list[int]) -> tuple[str | None, str]:
        """(text, writer) of the summary written ahead for exactly ``covered`` as they are now;
        (None, "offline") for any other messages: the offline summary stands in."""
        a = self.ahead
        if a is None or a.covered != tuple(covered) or any(
                self.messages[i] != m for i, m in zip(a.covered, a.messages, strict=True)):
            return None, "offline"
        return a.text, a.writer

    def _named(self, i: int) -> Named:
        """Message i's `named_facts`: as read before, else kept to be read kind by kind as
        an outline's note (and later the summary) asks."""
        have = self.named.get(i)
        if have is None:
            have = self.named[i] = NamedFacts(self.messages[i].content)
        return have

    def outline_cap(self, budget: int, policy: PreparePolicy) -> int:
        """The tokens one message is outlined to: a share of the budget, so an outline grows
        with the room (more head and tail lines, every distinct error kept)."""
        return max(policy.outline_min, min(policy.outline_max, int(budget * policy.outline_share)))

    def outline(self, budget: int, counter: Tokenizer, policy: PreparePolicy,
                keep: Callable[[int], bool]) -> list[AuditEntry]:
        """Outline the long tool outputs and assistant messages from the frontier on, oldest
        first and group by group, until the request is down to ``target`` of the budget (an
        assistant message long by its calls' arguments gets them outlined); when that is not
        enough, those an earlier step looked at and left long (outlined only as far as it
        needed, cut by the last resort, shown whole beside the summaries), again from their
        originals. User messages (the user's words) are left to the summary; a file a
        user attached as a document is a piece of its own, a tool output's kind, outlined as
        one."""
        msgs = self.messages
        stop = self._stop()
        cap = self.outline_cap(budget, policy)
        target = int(budget * policy.target)
        again_target = int(budget * policy.again_target)
        total = self.total()
        out: list[AuditEntry] = []

        def one(i: int) -> None:
            nonlocal total
            m = msgs[i]
            # a message shortened before (outlined only as far as an earlier step needed, or
            # fitted by the last resort beside the summaries) is outlined again from its
            # original while it is still long: a summary would take all of it
            shown = self.shown_tokens(i)
            # long by its words, not by its parts (thinking, an image, a web search's
            # results), which an outline keeps whole: outlining the short answer beside a
            # big thinking block saved its few tokens and moved the prefix from it
            if (m.role != "assistant" and not is_output(m) and not is_result(m)) or keep(i) \
                    or shown - (m.parts_tokens or 0) <= cap * 3 // 2:
                return
            # only as short as the target needs, at least the outline's own size: the
            # room a request has is used, not left empty. A message a step outlined before is
            # outlined again as far as ``again_target`` needs: each partial outline of an
            # early message rewrote all that came after it, and a big one was outlined three
            # times in four steps
            rw = self.rewrites.get(i)
            again = rw is not None and rw[2].reason == OUTLINED
            this_cap = max(cap, shown - (total - (again_target if again else target)))
            if this_cap >= shown:
                return
            known = self.facts.get(i)  # read ahead of need: most of an outline's cost
            got = shorten_message(m, self.tokens[i], this_cap, counter, policy.fmt,
                                  named_part(known) if known is not None else self._named(i),
                                  least=cap)
            if got is None or got[1] >= shown:
                return
            short, after = got
            out.append(self.rewrite(i, short, after,
                                     "compressed" if is_result(m) else "truncated", OUTLINED))
            total -= shown - after

        # the messages no step looked at yet first: the prefix before them holds
        j = self.frontier
        while j < stop and total > target:
            e = self.groups.end(j)
            for i in range(j, e):
                one(i)
            j = e
        self.frontier = max(self.frontier, j)
        # then, rather than a summary (which moves the prefix from the summaries on), those
        # looked at before and still long, oldest first: the ones shown whole beside the
        # summaries, and those outlined only as far as their step needed
        for i in [*self.verbatim, *range(self.upto, min(j, stop))]:
            if total <= target:
                break
            one(i)
        return out

    def _shorten_question(self, q: int, stop: int, budget: int, counter: Tokenizer,
                          policy: PreparePolicy, need: int,
                          shortened: list[AuditEntry]) -> None:
        """The newest user message, when older than the last group (an agent's task) and over
        ``question_share`` of the budget, is shown by its head and tail (naming the facts of
        its cut part) from this summary step on: it stays, but does not crowd out the history
        it asked for. Only as short as the step needs (``need`` tokens, at least down to that
        share): a task cut to a quarter of the budget when the request was a few tokens over
        left half the budget empty. A later step may shorten it further, down to the share.
        An agent's task sits before every chunk, so each shortening moves the whole prefix
        after the system prompt. Never shortening it billed 3.7-4.6 points less on the dev
        replay at a 10% budget (about 2 at 25%) but kept 60 fewer facts (cuts 0.6 / 0.7 / 0.8,
        budgets 25 / 10%), and shortening it once only saved at most half a point. Never one
        carrying instruction files (Claude Code's first message: `keep_rules` cuts those, by
        priority; by head and tail, a CLAUDE.md beside the task lost the lines between)."""
        if q < self.head or q >= stop or self.messages[q].pinned \
                or q in rules_of.carrying(self.messages[:q + 1]):
            return
        rw = self.rewrites.get(q)
        if rw is not None and rw[2].reason != QUESTION_SHORTENED:
            return
        least = int(budget * policy.question_share)
        shown = self.shown_tokens(q)
        cap = max(least, shown - need)
        if cap >= shown or self.tokens[q] <= least:
            return
        m = self.messages[q]
        got = shorten_message(m, self.tokens[q], cap, counter, policy.fmt)
        if got is None or got[1] >= shown:
            return
        # told to the client with the step's outlines
        shortened.append(self.rewrite(q, got[0], got[1], "truncated", QUESTION_SHORTENED))

    def summarize(self, budget: int, counter: Tokenizer, policy: PreparePolicy,
                  keep: Callable[[int], bool], shortened: list[AuditEntry],
                  wall: int | None = None) -> Chunk | None:
        """Summarize the oldest verbatim messages, group by group, down to ``summary_target``
        of the budget (up to the last group, ``wall``, or a group leaving a fitting request
        under ``summary_floor``); those ``keep`` says stay whole (pinned, restored, the newest
        question) are shown apart. The new chunk or None; a task it shortens: ``shortened``."""
        msgs = self.messages
        stop = min(self._stop(), wall or len(msgs))  # the last group always stays verbatim
        if stop <= self.upto:
            return None
        stay = self._stay(keep)
        covered = [i for i in self.verbatim if i not in stay]
        # summaries are sized to the room the system prompt and the question leave: a chat
        # whose system prompt and task take most of the budget gets smaller summaries, not
        # summaries that crowd out the turn the model answers
        q = newest_user(msgs)
        target = int(budget * policy.summary_target)
        self._shorten_question(q, stop, budget, counter, policy, self.total() - target, shortened)
        room = self.room(budget, q)
        est = self.chunk_guess(room, policy)
        base = self.fmt_priming + self.cum[self.head] + sum(self.shown_tokens(i) for i in stay)
        tail = self.tail_tokens()
        floor = int(budget * policy.summary_floor)
        j, kept_whole = self.upto, sorted(stay)
        chunk: Chunk | None = None
        chunks = self.chunks_for(est, room, policy)  # a guess, at first
        for _ in range(4):
            # what the chunks will take once the new one joined them and they were merged
            j, taken, kept, base, tail, _ = self._walk(
                j, stop, base, tail, target, keep, budget, floor,
                sum(self.shown_tokens(i) for i in covered), chunks)
            covered.extend(taken)
            kept_whole.extend(kept)
            if not covered:
                j, taken, kept, base, tail = self._take_one(j, stop, base, tail, keep, budget,
                                                           floor, chunks)
                covered.extend(taken)
                kept_whole.extend(kept)
            if not covered:
                return None
            covered.sort()
            # a summary grows into the room the step leaves below its target, as an outline
            # grows with its room, but not past what the chunks may take together
            chunks_room = int(policy.summaries_share * room) - sum(c.tokens for c in self.chunks)
            # and at least ``summaries_min_share`` of the room, all chunks together: the ledger
            # of the history is what keeps its facts once outlines keep the recent messages cheap
            floor_room = summaries.least_room(policy, room) - sum(c.tokens for c in self.chunks)
            fixed = base + sum(c.tokens for c in self.chunks)
            # at least what a chunk's parts take (not the last chunk's size: a merge of every
            # chunk), or the room the chunks have left when less, down to ``chunk_least``
            usual = summaries.estimate(policy, room)
            least = min(usual, max(chunks_room, int(usual * policy.chunk_least)))
            want = max(least, min(max(target - fixed - tail, floor_room), chunks_room))
            text, writer = self._ahead_for(covered)
            chunk = self._chunk(covered, j, counter, policy, room, want, text, writer)
            if base + self.chunks_after(chunk.tokens, room, policy) + tail <= budget \
                    or j >= stop:
                break
            # the summary came out bigger than expected: walk on, with its size
            est = chunk.tokens
            chunks = (lambda size: lambda t: self.chunks_after(size, room, policy))(est)
        assert chunk is not None
        # or much smaller (a chat of prose names few facts, and its ledger stays short): the
        # newest groups it took are given back, shown whole, while the request stays under
        # its target (a step left a prose chat at two thirds of its budget, every time)
        back, gained = self._give_back(covered, set(kept_whole), j, target - (
            base + self.chunks_after(chunk.tokens, room, policy) + tail) - budget // 50)
        if back < j and text is None:  # never a summary a model wrote for these messages
            covered = [i for i in covered if i < back]
            j, tail = back, tail + gained
            chunk = self._chunk(covered, j, counter, policy, room, want, text, writer)
        for i in covered:
            self.rewrites.pop(i, None)
        self.verbatim = sorted(kept_whole)
        self.upto = j
        self.frontier = max(self.frontier, j)
        self.chunks = self._joined(covered, chunk, counter, policy, room)
        self._merge(counter, policy, room, target - base - tail)
        return chunk

    def _joined(self, covered: list[int], chunk: Chunk, counter: Tokenizer,
                policy: PreparePolicy, room: int) -> list[Chunk]:
        """The chunks with the new one: after the others, merged with those made after a
        question it now stands for (one a step kept whole between chunks, `wall`), so that
        question's "Asked" is read before the work done on it. Its place in the prefix, the
        question's, moves all the same."""
        newest = [c.audit[-1].index if c.audit else -1 for c in self.chunks]
        asked = [i for i in covered if self.messages[i].role == "user"
                 and not is_result(self.messages[i]) and newest and i < newest[-1]]
        k = next((k for k, n in enumerate(newest) if asked and n > asked[0]), None)
        if k is None:
            return [*self.chunks, chunk]
        fold = [*self.chunks[k:], chunk]
        merged = summaries.merge_chunks(fold, fold[0].start, counter, policy, room)
        # its audit in conversation order, as every chunk's (its last entry the newest)
        audit = tuple(sorted(merged.audit, key=lambda e: e.index))
        return [*self.chunks[:k], dataclasses.replace(merged, audit=audit)]

    def _take_one(self, j: int, stop: int, base: int, tail: int, keep: Callable[[int], bool],
                  budget: int, floor: int, chunks: Callable[[int], int]
                  ) -> tuple[int, list[int], list[int], int, int]:
        """The oldest group from ``j`` on that may go, when the walk took none: its guess said
        merging the chunks alone brings the request under its target, but a merge runs only
        beside a new chunk (with none taken, the last resort dropped whole messages of a
        request over budget). Returns (where it stopped, taken, kept whole, base, tail)."""
        taken: list[int] = []
        kept: list[int] = []
        while not taken and j < stop:
            j, more, whole, base, tail, _ = self._walk(
                j, self.groups.end(j), base, tail, -1, keep, budget, floor, 0, chunks)
            taken.extend(more)
            kept.extend(whole)
        return j, taken, kept, base, tail

    def _chunk(self, covered: list[int], upto: int, counter: Tokenizer, policy: PreparePolicy,
               room: int, want: int, text: str | None, writer: str) -> Chunk:
        """The summary chunk standing for the messages at ``covered`` (`summaries.make_chunk`)."""
        msgs = self.messages
        return summaries.make_chunk(
            [self.shown(i) for i in covered], [msgs[i] for i in covered], covered,
            [self.shown_tokens(i) for i in covered], self.upto, upto, counter, policy, room,
            want, self.facts, text, writer, self.named, self._read,
            # the chat's first chunk: its first ask is the task
            task_chars=first_ask_chars(self.upto == self.head),
            whole=[self.tokens[i] for i in covered])

    def _give_back(self, covered: list[int], kept: set[int], j: int, room: int
                   ) -> tuple[int, int]:
        """Where a summary step that took up to ``j`` may stop instead, giving its newest
        whole groups back while they take at most ``room`` tokens (never the group of the
        first message it covers, nor one holding a message kept whole); returns (that index,
        the tokens given back)."""
        first = covered[0] if covered else j
        back, gained = j, 0
        while back > self.upto:
            start = self.groups.lead[back - 1]
            cost = sum(self.shown_tokens(k) for k in range(start, back))
            if start <= first or self.groups.end(start) != back \
                    or any(k in kept for k in range(start, back)) or gained + cost > room:
                break
            back, gained = start, gained + cost
        return back, gained
