"""The last resort of a turn: fitting with the trim engine what the window alone could not
(the newest exchange alone is over the budget). The newest user message is pinned at its
place (a summary chunk after it is a user turn too, so the trim engine is not left to find
it) and shortened in steps, then no further than the request needs (`_Attempt.widened`);
the summaries are held beside it as long as the newest exchange still fits, then shrunk by
the caller, and only then give way; the attached files are held at their share, then at
their floors (each file's ends, `attached.at_floors`, the question given all the room they
leave), and only then may be dropped whole. Before it, the newest exchange gives what it
can spare: a call's long arguments (`fit_calls`), a long reply's middle (`fit_prose`). What it
shortens keeps its new text on later turns (a rewrite). Must not: move the window
(window.py does).
"""

from __future__ import annotations

import msgspec

from ctxlayer.core.compress.shorten import shorten_message
from ctxlayer.core.errors import ContextError
from ctxlayer.core.groups import is_output, is_result
from ctxlayer.core.memo import Memo
from ctxlayer.core.prepare.model import PreparePolicy, shown_of
from ctxlayer.core.prepare.window import Window, newest_user
from ctxlayer.core.text import describe
from ctxlayer.core.tokens import Tokenizer, message_tokens
from ctxlayer.core.trim import TrimOptions, trim
from ctxlayer.core.trim.fit import MIN_QUESTION
from ctxlayer.protocol import AuditEntry, Message

#: the fewest tokens the last resort outlines a tool output to when it keeps the summaries
TOOL_CAP_MIN = 48
CALL_FIT = ("shortened to fit: the newest tool call's arguments outlined, so the call and its "
            "result are kept rather than dropped together")
FLOOR_FIT = ("shortened to fit: the files the client attached, held at their floor (each file "
             "its first and last lines verbatim, the line ranges kept named) rather than "
             "dropped whole")
QUESTION_FIT = ("shortened to fit: the newest user message is never dropped, its head and tail "
                "kept beside the summary and the newest exchange")


class _Question:
    """The newest user message at its place in a result (a summary chunk after it is a user
    turn too, so the trim engine is not left to find it: it is pinned, and shortened here to
    a cap when it must be), each shortening made once."""

    def __init__(self, win: Window, kept: list[Message], keys: list, tokens: list[int],
                 counter: Tokenizer, policy: PreparePolicy) -> None:
        self.at = newest_user(win.messages)  # its index in the conversation
        self.pos = next((k for k, key in enumerate(keys)
                         if self.at >= 0 and result_index(key) == self.at), -1)  # in the result
        self.kept, self.tokens, self.counter, self.fmt = kept, tokens, counter, policy.fmt
        #: what its non-text parts take (a screenshot): never cut, so its caps are beside them
        self.parts = (kept[self.pos].parts_tokens or 0) if self.pos >= 0 else 0
        self._short: dict[int, tuple[Message, int]] = {}

    def within(self, cap: int | None) -> tuple[Message, int] | None:
        """The question shortened to ``cap`` tokens; None when it fits already."""
        if self.pos < 0 or cap is None or self.tokens[self.pos] <= cap:
            return None
        if cap not in self._short:
            m, tokens = self.kept[self.pos], self.tokens[self.pos]
            self._short[cap] = shorten_message(m, tokens, cap, self.counter, self.fmt) or (
                m, tokens)
        return self._short[cap]

    def size(self, cap: int) -> int:
        """The question's tokens at ``cap``."""
        short = self.within(cap)
        return self.tokens[self.pos] if short is None else short[1]

    def longest_within(self, room: int, lo: int, hi: int) -> int:
        """The cap from ``lo`` (which fits) to under ``hi`` whose cut is the longest within
        ``room`` tokens, bisected at the shortening's own step: it is not monotonic by a token
        or two (a cut ends at a line), so of the caps tried that fit, the longest cut."""
        best = lo
        while hi - lo > 1:
            mid = (lo + hi) // 2
            if self.size(mid) > room:
                hi = mid
                continue
            lo = mid
            if self.size(mid) > self.size(best):
                best = mid
        return best

    def reaching(self, least: int) -> int:
        """A cap whose cut takes at least ``least`` tokens: a cut ends at a word or a line
        and comes out a few tokens under its cap (20 for 22), so a few tries above it."""
        cap = least
        for _ in range(3):
            short = self.size(cap)
            if short >= least:
                break
            cap += least - short + 1
        return cap

    def keep_shortened(self, win: Window, cap: int | None) -> list[AuditEntry]:
        """The shortening the fit used, said once and kept for later turns like a rewrite."""
        short = self.within(cap)
        if short is None:
            return []
        return [win.rewrite(self.at, short[0], short[1], "truncated", QUESTION_FIT)]


def last_resort(win: Window, kept: list[Message], keys: list, tokens: list[int], budget: int,
                 counter: Tokenizer, policy: PreparePolicy, restored: set[int],
                 memo: Memo | None, may_shrink: bool = False, rules: set[int] = frozenset(),
                 floors: dict[int, tuple[Message, int] | None] | None = None,
                 opening: int | None = None):
    """Fit with the trim engine what the window alone could not (the newest exchange alone is
    over the budget), the messages at ``restored`` pinned, those carrying the user's
    instruction files (``rules``) too unless the newest exchange fits in no other way
    (unpinned, a Codex chat's AGENTS.md was the first message dropped), and the summary
    chunks too when
    they fit beside the system prompt and the question; what it shortens keeps its new text
    on later turns. ``floors``: the attached files' messages at their floors by conversation
    index (`attached.at_floors`), tried held at them before they may be dropped whole.
    None (``may_shrink``) when the summaries would have to give way: the
    caller shrinks them first. ``opening``: the newest tool loop's first step, held
    (held.py): pinned (in ``restored``), its results counted as held by the room the tool
    outputs share (outlined by the step, they leave the newest output the rest)."""
    memo = memo if memo is not None else Memo()  # the attempts shorten the same texts
    question = _Question(win, kept, keys, tokens, counter, policy)
    found = _attempts(win, kept, keys, tokens, budget, counter, policy, restored, memo,
                      question, may_shrink, rules, floors or {}, _results_of(win, kept, opening))
    if found is None:
        return None
    report, cap, floored = found
    cut = [_shortened(win, kept, keys, tokens, k, result_index(keys[k]), got, FLOOR_FIT)
           for k, got in floored.items()]
    return _take(win, report, kept, keys, counter, policy,
                 cut + question.keep_shortened(win, cap))


def _results_of(win: Window, kept: list[Message], step: int | None) -> frozenset[int]:
    """The result positions of ``kept`` answering the calls of message ``step``."""
    if step is None:
        return frozenset()
    ids = {c.id for c in win.messages[step].tool_calls or ()}
    return frozenset(k for k, m in enumerate(kept) if is_result(m) and m.tool_call_id in ids)


def question_caps(budget: int, policy: PreparePolicy, parts: int = 0) -> list[int]:
    """The sizes the last resort tries the question at, longest first: at most half the
    budget, then shorter; never under MIN_QUESTION, for a question cut to its first word or
    two is as good as lost. A question with non-text ``parts`` (a screenshot, never cut) is
    tried at them and those sizes of the room they leave for its text: sized as a whole, a
    1,067-token screenshot took every cap of a 1,200-token budget and the question's text was
    cut to 16 tokens, its end lost and 65 tokens of the budget unused."""
    room = max(0, budget - parts)
    return sorted(set(parts + max(MIN_QUESTION, c) for c in (
        room // 2, int(room * policy.question_share), room // 8, room // 16)),
        reverse=True)


def question_least(kept: list[Message], keys: list, tokens: list[int], budget: int,
                   policy: PreparePolicy, question: _Question, held: set[int]) -> int:
    """The fewest tokens the question keeps beside the summaries held when it ends the
    request (a chat's question): half the room the system prompt and the messages ``held``
    (by conversation index) leave, all of itself when it takes less (what more the request
    lets it take, `_Attempt.widened` gives it). Held at any cap, a summary written on an
    earlier turn kept 96 tokens of a 150-token budget and a 700-token question went out at
    32, its last word cut, where a fresh prepare of the same chat sent it at 94 beside a
    34-token summary. 0 for an agent's task, which every later request carries beside its
    work: given half the room beside the newest exchange, the summaries of the work gave way
    (the dev replay kept 591 facts of 680 at a 10% budget, 609 without)."""
    if question.pos < 0 or any(m.role != "system" for m in kept[question.pos + 1:]):
        return 0
    fixed = policy.fmt.reply_priming + sum(
        t for k, (m, t) in enumerate(zip(kept, tokens, strict=True)) if k != question.pos and (
            m.role == "system" or result_index(keys[k]) in held))
    # its parts whole and half the room they leave for its text (`question_caps`)
    parts = question.parts
    return min(tokens[question.pos], parts + max(0, (budget - fixed - parts) // 2))


def fit_calls(win: Window, kept: list[Message], keys: list, tokens: list[int], budget: int,
              counter: Tokenizer, policy: PreparePolicy) -> list[AuditEntry]:
    """Before the last resort: the calls of the newest exchange (after the question) whose
    arguments leave no room for their results beside the system prompt, the question at
    its shortest and the summaries, up to a quarter of the budget (an agent writing a long
    file through a call), get their arguments outlined
    to half that room, in proportion to their sizes, in ``kept`` / ``keys`` / ``tokens`` and
    as rewrites for later turns. The trim engine cuts no call, so it dropped the exchange
    whole, and the model was left with nothing of what it had just done. Returns their
    audit."""
    question = _Question(win, kept, keys, tokens, counter, policy)
    after = range(question.pos + 1, len(kept))
    calls = [k for k in after if kept[k].tool_calls and kept[k].kind != "summary"]
    if not calls:
        return []
    outputs = sum(1 for k in after if is_output(kept[k]))
    fixed = policy.fmt.reply_priming + sum(t for m, t in zip(kept, tokens, strict=True)
                                           if m.role == "system")
    # the question as short as an attempt of the last resort makes it, not shorter: judged
    # beside a question of MIN_QUESTION, a call that fitted only that way was dropped whole
    ask = min(tokens[question.pos], question_caps(budget, policy, question.parts)[-1]) \
        if question.pos >= 0 else 0
    # and the summaries, shrunk to a quarter of the budget at most: a call long by the script
    # it wrote left no room for them, and the summary of a hundred messages gave way to it
    held = min(budget // 4, sum(t for m, t in zip(kept, tokens, strict=True)
                                if m.kind == "summary"))
    free = budget - fixed - ask - held - outputs * TOOL_CAP_MIN - 8
    total = sum(tokens[k] for k in calls)
    if total <= free or free <= 0:
        return []
    out: list[AuditEntry] = []
    for k in calls:
        i = result_index(keys[k])
        if i is None:
            continue
        got = shorten_message(kept[k], tokens[k], max(1, free // 2 * tokens[k] // total),
                              counter, policy.fmt)
        if got is None:
            continue
        out.append(_shortened(win, kept, keys, tokens, k, i, got, CALL_FIT))
    return out


def outputs_spare(win: Window, kept: list[Message], keys: list, tokens: list[int], budget: int,
                  counter: Tokenizer, policy: PreparePolicy) -> int:
    """The tokens the tool outputs after the question can give up so the summaries stay: the
    last resort outlines them to the room the summaries leave, and they keep at least half of
    the room the rest leaves the two (TOOL_CAP_MIN each at the least). Counted at their size
    as the window outlined them, the summaries shrank to nothing beside an outline of the
    newest `cat` and were dropped, the user's task with them (an OpenCode chat, budget 7,758:
    a 594-token summary dropped, 32 tokens left, beside a 569-token outline)."""
    question = _Question(win, kept, keys, tokens, counter, policy)
    outputs = [k for k in range(question.pos + 1, len(kept))
               if is_output(kept[k]) and kept[k].kind != "summary"]
    if question.pos < 0 or not outputs:
        return 0
    now = sum(tokens[k] for k in outputs)
    summaries = sum(t for m, t in zip(kept, tokens, strict=True) if m.kind == "summary")
    room = budget - (policy.fmt.reply_priming + sum(tokens) - now - summaries)
    keep = max(len(outputs) * TOOL_CAP_MIN, room // 2)
    return max(0, now - keep)


def question_spare(win: Window, kept: list[Message], keys: list, tokens: list[int],
                   budget: int, counter: Tokenizer, policy: PreparePolicy,
                   held: set[int]) -> int:
    """The tokens the question can give up so the summaries stay: down to its share of the
    room (`question_least`), not further; counted whole, a summary beside a long question
    had no room to shrink into and was held at its size, the question cut for it. 0 for an
    agent's task (`question_least`)."""
    question = _Question(win, kept, keys, tokens, counter, policy)
    least = question_least(kept, keys, tokens, budget, policy, question, held | {question.at})
    return max(0, tokens[question.pos] - least) if least else 0


def _shortened(win: Window, kept: list[Message], keys: list, tokens: list[int], k: int, i: int,
               got: tuple[Message, int], reason: str) -> AuditEntry:
    """Result message k (conversation index i) shown as ``got`` from now on: in ``kept`` /
    ``keys`` / ``tokens`` and as a rewrite for later turns; its audit entry."""
    short, after = got
    entry = win.rewrite(i, short, after, "truncated", reason)
    kept[k], keys[k], tokens[k] = short, (i, win.rewrites[i][0]), after
    return entry


PROSE_FIT = ("shortened to fit: the newest assistant message's head and tail, rather than the "
             "summaries of everything before it")


def fit_prose(win: Window, kept: list[Message], keys: list, tokens: list[int], budget: int,
              counter: Tokenizer, policy: PreparePolicy) -> list[AuditEntry]:
    """Before the last resort: an assistant message after the question (the newest exchange)
    over ``prose_share`` of the budget is shortened (its head and tail, and its calls'
    arguments when they are most of it) as far as the request needs, not below that share,
    in ``kept`` / ``keys`` / ``tokens`` and as a rewrite for later turns. The last resort
    would otherwise squeeze the summaries for its room: a mini-swe-agent's 725-token reasoning
    left 111 tokens of a 1,206-token budget to the summary of 56 messages, which had taken 616
    (django-10914 on the dev replay). Returns their audit."""
    least = int(budget * policy.prose_share)
    if least < policy.prose_min:  # a message cut that short keeps nothing worth its place
        return []
    question = _Question(win, kept, keys, tokens, counter, policy)
    over = policy.fmt.reply_priming + sum(tokens) - budget
    out: list[AuditEntry] = []
    for k in range(question.pos + 1, len(kept)):
        m, i = kept[k], result_index(keys[k])
        if over <= 0:
            break
        # over the share by its words: its parts (thinking) are never shortened
        if m.role != "assistant" or m.kind == "summary" or i is None \
                or tokens[k] - (m.parts_tokens or 0) <= least:
            continue
        got = shorten_message(m, tokens[k], max(least, tokens[k] - over), counter, policy.fmt,
                              least=least)
        if got is None:
            continue
        over -= tokens[k] - got[1]
        out.append(_shortened(win, kept, keys, tokens, k, i, got, PROSE_FIT))
    return out


class _Attempt:
    """One way of fitting the result with the trim engine: the summaries held or not, the
    question at a cap, these messages pinned. Its report when it keeps the newest exchange."""

    def __init__(self, kept: list[Message], keys: list, tokens: list[int], budget: int,
                 counter: Tokenizer, policy: PreparePolicy, memo: Memo,
                 question: _Question, fixed: frozenset[int] = frozenset()) -> None:
        self.kept, self.keys, self.tokens, self.budget = kept, keys, tokens, budget
        self.fixed = fixed  # result positions held at their size by the tool outputs' room
        self.counter, self.policy, self.memo, self.question = counter, policy, memo, question
        # a few messages: cheap; what a dropped message becomes is the window's to say
        self.options = TrimOptions(fmt=policy.fmt, name_cut_facts=True, reclaim=False,
                                   outline_calls=False)
        self.newest = f"ctx:fit:{len(kept) - 1}"
        #: the result positions cut to their floors here, and what each shows
        self.floored: dict[int, tuple[Message, int]] = {}
        self.at_floor = False  # the attached files held at their floors

    def at_floors(self, floors: dict[int, tuple[Message, int] | None]) -> _Attempt | None:
        """This attempt with the attached files' messages at their ``floors`` (by
        conversation index; None for one shown at its floor already); None when none of
        them is in the result."""
        at = {k: floors[i] for k, key in enumerate(self.keys)
              if (i := result_index(key)) is not None and i in floors}
        if not at:
            return None
        floored = {k: got for k, got in at.items() if got is not None}
        kept, tokens = list(self.kept), list(self.tokens)
        for k, (m, t) in floored.items():
            kept[k], tokens[k] = m, t
        out = _Attempt(kept, self.keys, tokens, self.budget, self.counter, self.policy,
                       self.memo, self.question, self.fixed)
        out.floored, out.at_floor = floored, True
        return out

    def inputs(self, summaries_held: bool, cap: int | None, pinned: set[int]) -> list[Message]:
        ins: list[Message] = []
        q = self.question
        for k, (m, key) in enumerate(zip(self.kept, self.keys, strict=True)):
            i = result_index(key)
            short = q.within(cap) if k == q.pos else None
            m = msgspec.structs.replace(short[0] if short else m, id=f"ctx:fit:{k}")
            if (i is not None and i in pinned) or (summaries_held and m.kind == "summary"):
                m = msgspec.structs.replace(m, pinned=True)
            if k > q.pos >= 0 and m.role == "user" and m.kind is None:
                # a restored user turn shown after the question (which stands before the
                # summaries of the work on it): the trim engine takes the newest user turn
                # for the question, so this one is read as the documents are
                m = msgspec.structs.replace(m, kind="doc")
            ins.append(m)
        return ins

    def run(self, summaries_held: bool, cap: int, pinned: set[int]):
        """The trim report of this attempt; None when what it pins alone is over."""
        opts = _tool_cap(self.kept, self.tokens, self.budget, self.policy, self.question, cap,
                         summaries_held, self.options, self.fixed)
        try:
            return trim(self.inputs(summaries_held, cap, pinned), self.budget, self.counter,
                        memo=self.memo, options=opts)
        except ContextError as exc:
            if exc.kind != "pinned_over_budget":
                raise
            return None

    def keeps_newest(self, report) -> bool:
        return report is not None and bool(report.messages) and \
            report.messages[-1].id == self.newest

    def widened(self, report, cap: int, fails: int):
        """(report, cap) with the question cut at the largest cap under ``fails`` (the cap
        tried before, which did not fit, or the question whole) that the room the attempt at
        ``cap`` left takes, everything else as that attempt kept it: cut only as far as the
        request needs, not to the next of the fixed sizes (a 306-token question was cut to
        148 in a request a few tokens over). Only when it ends the request and the messages
        before it can give the next request's room (`_gives_room`), or the attached files are
        at their floors (`at_floors`: nothing before it gives more, so it takes the room:
        at the fixed size, a 2,406-token question went out at 1,803 of a 4,000 budget with
        210 tokens unused); else at the fixed size. With an exchange after it (an agent's
        task, carried by every later request), widened to the room under ``target``, the dev
        replay kept 8 facts fewer of 680 at a 10% budget. Not the trim engine again at the
        larger cap: it gave the question what it dropped before it and outlined after it (12
        facts fewer)."""
        q = self.question
        at = next((k for k, m in enumerate(report.messages) if m.id == f"ctx:fit:{q.pos}"),
                  None)
        # it ends the request: what follows it, if anything, is a system message (aider's
        # reminder), not an exchange that carries it to the next request
        if q.pos < 0 or at is None or any(m.role != "system" for m in report.messages[at + 1:]) \
                or not (self.at_floor or self._gives_room(report, at)):
            return report, cap
        shown = report.messages[at]
        fmt = self.policy.fmt
        room = self.budget - report.tokens + message_tokens(shown, self.counter, fmt)
        best = q.longest_within(room, cap, min(fails, self.tokens[q.pos] + 1))
        short = q.within(best)
        if best == cap or short is None:
            return report, cap
        longer = msgspec.structs.replace(shown, content=short[0].content,
                                         tool_calls=short[0].tool_calls)
        tokens = report.tokens - message_tokens(shown, self.counter, fmt) + message_tokens(
            longer, self.counter, fmt)
        if tokens > self.budget:  # counted otherwise than the cut said: as it was
            return report, cap
        messages = list(report.messages)
        messages[at] = longer
        return msgspec.structs.replace(report, messages=messages, tokens=tokens), best

    def _gives_room(self, report, at: int) -> bool:
        """Whether the messages before the question (summaries, history, attached files: not
        the system prompt, nor what the client pinned) can give the next request what a step
        leaves free (``1 - target`` of the budget): then the question may fill the budget,
        the window shrinks those for the next turn. Else it is what the next request cuts
        again, its cached prefix moved with it: an agent's task beside the system prompt
        alone, filled to the budget, was cut again by the next request (the dev replay
        billed 55.4% where it bills 54.8% at a 10% budget, 78.6% for 77.9% at 25%); filled
        to ``target``, two requests later, and a fact of 680 was lost at 10%."""
        free = self.budget - int(self.budget * self.policy.target)
        gives = sum(message_tokens(m, self.counter, self.policy.fmt)
                    for m in report.messages[:at] if m.role != "system"
                    and not self.kept[int(m.id.rsplit(":", 1)[1])].pinned)
        return gives >= free


def _attempts(win: Window, kept: list[Message], keys: list, tokens: list[int], budget: int,
              counter: Tokenizer, policy: PreparePolicy, restored: set[int], memo: Memo,
              question: _Question, may_shrink: bool, rules: set[int] = frozenset(),
              floors: dict[int, tuple[Message, int] | None] | None = None,
              fixed: frozenset[int] = frozenset()):
    """(the trim report, the question's cap, the result positions shown at their floors) of
    the first attempt that keeps the newest exchange: a summary stands for everything before
    it, so it is held, the question whole beside it (at most half the budget), then with the
    question shorter (its head and tail), then as long as the request lets it be
    (`_Attempt.widened`); only when even that leaves no room for the newest exchange, which
    the model answers, does the summary give way; the attached files are held at their
    ``floors`` before they may be dropped whole, the question given the room they leave."""
    attempt = _Attempt(kept, keys, tokens, budget, counter, policy, memo, question, fixed)
    # first the room everything else leaves it under the share an outline step brings a
    # request to (a task alone with the system prompt may take most of the budget; made to
    # fill all of it, the next turn's reply and question passed the budget at once and the
    # question went into a summary), then at most half the budget, then shorter
    rest = policy.fmt.reply_priming + sum(t for k, t in enumerate(tokens) if k != question.pos)
    caps = question_caps(budget, policy, question.parts)
    room = int(budget * policy.target) - rest
    if room > caps[0]:
        caps.insert(0, room)
    pinned = restored | {question.at}
    # beside a summary the question keeps more than its first words: a 940-token task cut to
    # 16 tokens ("We're currently solving th") next to a summary of the steps taken on it was
    # a worse request than the summary shrunk or left out; and at least its share of the room
    # (`question_least`), the summary shrinking or going first
    least = question_least(kept, keys, tokens, budget, policy, question, pinned | rules)
    beside = sorted({c for c in caps if c > MIN_QUESTION and c >= least} | {least},
                    reverse=True) if least > MIN_QUESTION else [c for c in caps
                                                                if c > MIN_QUESTION] or caps
    # the user's instruction files held beside the summaries and the question; dropped only
    # when the newest exchange fits in no other way (held then, the newest call went instead)
    # with attached files, a request that holds them is fuller than any that drops them,
    # and one that holds them at their share than one at their ends (a ladder's rank)
    held = pinned | rules
    ladders = [(attempt, True, beside, held, 2), (attempt, False, caps, held, 2)]
    floored = attempt.at_floors(floors or {})
    if floored is not None:
        ladders.append((floored, False, caps, held, 1))
    if rules:
        ladders.append((attempt, False, caps, pinned, 0))
    fullest = None  # (rank, tokens, report, cap, attempt) that used the most of the budget
    for n, (tried, summaries_held, ladder, pins, rank) in enumerate(ladders):
        if n == 1 and may_shrink and win.chunks:
            return None
        for j, cap in enumerate(ladder):
            if summaries_held and cap == least:  # its cut at least that (counted only here)
                cap = question.reaching(least)
            report = tried.run(summaries_held, cap, pins)
            if report is not None and (tried.at_floor or tried.keeps_newest(report)):
                # up to the cap that did not fit, or the question whole
                report, cap = tried.widened(report, cap, ladder[j - 1] if j
                                            else tokens[question.pos] + 1)
            if tried.keeps_newest(report):
                return report, cap, tried.floored
            if report is not None:
                found = (rank if floored else 0, report.tokens, report, cap, tried)
                fullest = found if fullest is None or found[:2] > fullest[:2] else fullest
    if fullest is None:  # the question alone at a sixteenth of the budget is over: unpinned
        return trim(attempt.inputs(False, None, set()), budget, counter,
                    options=attempt.options, memo=memo), None, {}
    # the newest exchange fits in no way (aider's reminder alone over the budget): of what
    # does fit, the request that uses the budget (a 940-token task went out cut to 16 tokens
    # in an 87-token budget, 49% of it, when the first attempt kept 56 of its tokens); with
    # the files at their floors, the question took the room they leave
    _, _, report, cap, tried = fullest
    return report, cap, tried.floored


def _take(win: Window, report, kept: list[Message], keys: list, counter: Tokenizer,
          policy: PreparePolicy, truncated: list[AuditEntry]):
    """The fitted result mapped back to the conversation: its audit by message, at each
    message's own size (a log a step outlined, then dropped here, was audited as its outline:
    163 tokens and 13 lines for 277), what it shortened kept as rewrites for later turns."""
    def where(e: AuditEntry) -> tuple[int, AuditEntry]:
        k = int(e.message_id.rsplit(":", 1)[1]) if e.message_id else e.index
        i = result_index(keys[k])
        e = msgspec.structs.replace(e, message_id=kept[k].id, index=i)
        if i in win.rewrites:  # the trim engine read the outline; the client sent the original
            e = msgspec.structs.replace(e, tokens_before=win.tokens[i],
                                        summary=describe(win.messages[i]))
        return k, e

    dropped = [where(e)[1] for e in report.dropped]
    by_pos: dict[int, Message] = {int(m.id.rsplit(":", 1)[1]): m for m in report.messages}
    for e in report.truncated:
        k, entry = where(e)
        truncated.append(entry)
        i = result_index(keys[k])
        if i is not None and k in by_pos:
            # the message as the result showed it (its calls' arguments outlined, maybe),
            # with the text the trim engine left
            short = msgspec.structs.replace(kept[k], content=by_pos[k].content,
                                            tool_calls=by_pos[k].tool_calls)
            win.rewrites[i] = (shown_of(win.messages[i], short),
                               message_tokens(short, counter, policy.fmt), entry)
    out_kept, out_keys, out_tokens = [], [], []
    for k in sorted(by_pos):
        i = result_index(keys[k])
        # the text and the calls the trim engine left (it outlines long arguments too:
        # with the text alone, a call it outlined was sent whole and counted whole, over)
        m = kept[k] if by_pos[k].content is kept[k].content and \
            by_pos[k].tool_calls is kept[k].tool_calls else msgspec.structs.replace(
                kept[k], content=by_pos[k].content, tool_calls=by_pos[k].tool_calls)
        out_kept.append(m)
        out_keys.append(keys[k] if i is None or i not in win.rewrites
                        else (i, win.rewrites[i][0]))
        out_tokens.append(message_tokens(m, counter, policy.fmt))
    return out_kept, out_keys, out_tokens, dropped, truncated


def _tool_cap(kept: list[Message], tokens: list[int], budget: int, policy: PreparePolicy,
              question: _Question, cap: int, summaries_held: bool,
              options: TrimOptions, fixed: frozenset[int] = frozenset()) -> TrimOptions:
    """The options of one attempt: the tool outputs after the question outlined to share the
    room the system prompt, the question at ``cap``, the summaries (when held) and the other
    messages after the question leave; the newest tool output is outlined to fit rather than
    dropped with its call."""
    held = policy.fmt.reply_priming
    outputs = 0
    for k, (m, t) in enumerate(zip(kept, tokens, strict=True)):
        if m.role == "system" or (summaries_held and m.kind == "summary") or k in fixed:
            held += t
        elif k == question.pos:
            held += min(t, cap)
        elif k > question.pos and m.kind != "summary":
            if is_output(m):
                outputs += 1
            else:
                held += t  # a call, an answer: not outlined
    room = (budget - held) // max(1, outputs) - 8
    return msgspec.structs.replace(options, tool_output_cap=max(TOOL_CAP_MIN, room))


def result_index(key) -> int | None:
    """The conversation index a result key stands for (None for a summary)."""
    if isinstance(key, int):
        return key
    return key[0] if isinstance(key[0], int) else None
