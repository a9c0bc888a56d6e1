"""One turn of a live conversation: recognize what is new, step the window when the request
would pass its budget, fit what still does not fit, and say how much of the previous result's
prefix this one repeats. The semantics are stated in the package docstring.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Collection, Sequence

import msgspec

from ctxlayer.core.compress.shorten import shorten
from ctxlayer.core.errors import ContextError, require_tokens
from ctxlayer.core.memo import Memo
from ctxlayer.core.prepare import summaries
from ctxlayer.core.prepare.model import DEFAULT_POLICY, ConversationState, PreparePolicy, Turn
from ctxlayer.core.prepare.recall import recall
from ctxlayer.core.prepare.window import Window, group_of, is_result, newest_user
from ctxlayer.core.text import describe
from ctxlayer.core.tokens import Tokenizer, message_tokens
from ctxlayer.core.trim import TrimOptions, trim
from ctxlayer.protocol import AuditEntry, Message

#: the fewest tokens the last resort outlines a tool output to when it keeps the summaries
TOOL_CAP_MIN = 48
QUESTION_FIT = ("shortened to fit: the newest user message is never dropped, its head and tail "
                "kept beside the summary and the newest exchange")
RESTORED = "restored on request: shown whole and pinned for this conversation"


def prepare_turn(previous: ConversationState | None, messages: Sequence[Message], budget: int,
                 counter: Tokenizer, *, policy: PreparePolicy = DEFAULT_POLICY,
                 restored: Collection[str] = (), client_breakpoints: int = 0,
                 memo: Memo | None = None) -> Turn:
    """This turn's request fitted into ``budget``, from the previous turn's state (or None)."""
    require_tokens(budget)
    msgs = list(messages)
    if not msgs:
        raise ContextError("invalid", "a conversation needs at least one message",
                           field="messages")
    win, common, carry = _recognize(previous, msgs, counter, policy)
    restored_at, restored_audit, newly = _restore(previous if carry else None, win, restored)
    stepped = None
    if win.total() > budget:
        q = newest_user(msgs)
        at = set(restored_at.values())
        stepped = win.step(budget, counter, policy,
                           lambda i: i == q or msgs[i].pinned or i in at)
    recalled = _recall(win, common, budget, counter, policy)
    kept, keys, out_tokens, dropped, truncated, total = _fit(
        win, budget, counter, policy, set(restored_at.values()), memo)
    state = ConversationState(
        messages=msgs, tokens=win.tokens, cum=win.cum, head=win.head, upto=win.upto,
        frontier=win.frontier, chunks=tuple(win.chunks), verbatim=tuple(win.verbatim),
        rewrites=win.rewrites, restored=restored_at, restored_audit=tuple(restored_audit),
        out_keys=keys, out_tokens=out_tokens, dropped=tuple(dropped), total=total,
        facts={i: f for i, f in win.facts.items() if i >= win.upto})
    chunk = stepped.chunk if stepped is not None else None
    new_summarized = list(chunk.audit) if chunk is not None else []
    # an outline a summary then took is audited as summarized only
    taken = {e.index for e in new_summarized}
    outlined = [e for e in (stepped.outlined if stepped else []) if e.index not in taken]
    return Turn(
        messages=kept, tokens=total, budget=budget, dropped=new_summarized + dropped,
        truncated=outlined + truncated,
        restored=[*restored_audit[len(restored_audit) - len(newly):], *recalled],
        compacted=bool(win.chunks), cache_reuse_tokens=_reuse(previous, keys, common),
        breakpoints=_breakpoints(kept, keys, win.upto) if client_breakpoints == 0 else [],
        notice=_notice(chunk.replaced if chunk else 0,
                       chunk.replaced_tokens if chunk else 0, outlined, dropped, truncated,
                       len(newly), budget, len(recalled)),
        state=state, stepped=stepped is not None)


def _recall(win: Window, common: int, budget: int, counter: Tokenizer,
            policy: PreparePolicy) -> list[AuditEntry]:
    """Bring back, with the newest message, the exact lines of earlier summarized or outlined
    messages it names (recall.py), when that fits the budget."""
    msgs, last = win.messages, len(win.messages) - 1
    if common > last or last in win.rewrites or not (win.chunks or win.rewrites):
        return []
    verbatim = set(win.verbatim)
    shown: list[str | None] = []
    for i in range(last):
        if i in win.rewrites:
            shown.append(win.rewrites[i][0])
        elif win.head <= i < win.upto and i not in verbatim:
            shown.append(None)
        else:
            shown.append(msgs[i].content)
    # what names the facts: the newest exchange (on a first request, everything is new)
    start = group_of(msgs, last).start if is_result(msgs[last]) else last
    got = recall(msgs, shown, max(common, start), budget, counter, policy.recall_share,
                 policy.fmt)
    if got is None or win.total() + got[1] - win.tokens[last] > budget:
        return []
    win.rewrites[last] = got
    return [got[2]]


def _recognize(previous: ConversationState | None, msgs: list[Message], counter: Tokenizer,
               policy: PreparePolicy) -> tuple[Window, int, bool]:
    """The turn's window: the messages the previous turn had are reused with their counts
    (only the rest is counted), and its window carries over when nothing it summarized
    changed. Returns (window, messages in common, carried over)."""
    fmt = policy.fmt
    common = _common_prefix(previous.messages, msgs) if previous is not None else 0
    if previous is not None and common:
        tokens, cum = previous.tokens[:common], previous.cum[:common + 1]
    else:
        tokens, cum = [], [0]
    for m in msgs[common:]:  # only the new text is counted
        t = message_tokens(m, counter, fmt)
        tokens.append(t)
        cum.append(cum[-1] + t)
    head = 0
    while head < len(msgs) and msgs[head].role == "system":
        head += 1
    carry = previous is not None and common >= previous.upto and previous.head == head
    if not carry:
        return Window(msgs, tokens, cum, head, head, [], [], {}, fmt.reply_priming), common, False
    assert previous is not None
    return Window(msgs, tokens, cum, head, previous.upto, list(previous.chunks),
                  list(previous.verbatim),
                  {i: r for i, r in previous.rewrites.items() if i < common},
                  fmt.reply_priming, min(previous.frontier, common),
                  {i: f for i, f in previous.facts.items() if i < common}), common, True


def _fit(win: Window, budget: int, counter: Tokenizer, policy: PreparePolicy,
         restored: set[int], memo: Memo | None):
    """The result of the window, fitted when even the last group alone is over the budget
    (the trim engine, with the summaries shrunk into one before they give way). Returns
    (messages, keys, tokens, dropped, truncated, total)."""
    kept, keys, out_tokens = _assemble(win)
    total = win.total()
    if total <= budget:
        return kept, keys, out_tokens, [], [], total
    fitted = _last_resort(win, kept, keys, out_tokens, budget, counter, policy, restored, memo,
                          may_shrink=True)
    if fitted is None:  # the summaries would have given way: one smaller chunk instead
        win.fit_summaries(budget, counter, policy)
        total = win.total()
        kept, keys, out_tokens = _assemble(win)
        if total <= budget:
            return kept, keys, out_tokens, [], [], total
        fitted = _last_resort(win, kept, keys, out_tokens, budget, counter, policy, restored,
                              memo)
    assert fitted is not None
    kept, keys, out_tokens, dropped, truncated = fitted
    return kept, keys, out_tokens, dropped, truncated, policy.fmt.reply_priming + sum(out_tokens)


def warm(state: ConversationState, budget: int, policy: PreparePolicy = DEFAULT_POLICY,
         max_chars: int = 200_000) -> ConversationState | None:
    """The same state with the facts of the messages its next step will summarize read ahead
    of need (at most ``max_chars`` characters a call, oldest first), once its result passed
    ``precompact_at`` of ``budget``; None when there is nothing to read. Pure, and meant to run
    between requests: the step then finds the facts read."""
    if state.total < policy.precompact_at * budget:
        return None
    n = len(state.messages)
    stop = n - 1
    while stop > state.upto and is_result(state.messages[stop]):
        stop -= 1
    todo = [i for i in range(state.upto, stop) if i not in state.facts]
    if not todo:
        return None
    read = summaries.warm(state.messages, todo, state.facts, max_chars)
    return dataclasses.replace(state, facts={**state.facts, **read})


def audit_of(state: ConversationState) -> list[AuditEntry]:
    """Every entry that explains the last result: messages summarized, shortened, restored and
    dropped, oldest first."""
    shown = set(state.verbatim)
    out = [e for c in state.chunks for e in c.audit
           if e.index is None or e.index not in shown]
    out += [rw[2] for _, rw in sorted(state.rewrites.items())]
    out += state.restored_audit
    out += state.dropped
    return out


# --- helpers --------------------------------------------------------------------------------


def _common_prefix(before: list[Message], now: list[Message]) -> int:
    """How many leading messages two turns share (C-speed when the turn only appends)."""
    p = len(before)
    if len(now) >= p and now[:p] == before:
        return p
    k, m = 0, min(p, len(now))
    while k < m and now[k] == before[k]:
        k += 1
    return k


def _find(msgs: list[Message], message_id: str) -> int | None:
    return next((i for i, m in enumerate(msgs) if m.id == message_id), None)


def _restore(previous: ConversationState | None, win: Window, restored: Collection[str]):
    """Resolve restored ids to indices; put the newly restored back whole, audited."""
    msgs = win.messages
    before = previous.restored if previous is not None else {}
    audit = list(previous.restored_audit) if previous is not None else []
    at: dict[str, int] = {}
    newly: list[int] = []
    for rid in restored:
        idx = before.get(rid)
        if idx is None or idx >= len(msgs) or msgs[idx].id != rid:
            idx = _find(msgs, rid)
        if idx is None:
            continue  # no longer in the conversation: nothing to show
        at[rid] = idx
        if rid not in before:
            newly.append(idx)
            win.show_whole(idx)
            audit.append(AuditEntry(action="restored", reason=RESTORED,
                                    summary=describe(msgs[idx]), tokens_before=0,
                                    tokens_after=win.tokens[idx], message_id=rid, index=idx))
    return at, audit, newly


def _key(win: Window, i: int):
    rw = win.rewrites.get(i)
    return i if rw is None else (i, rw[0])


def _assemble(win: Window) -> tuple[list[Message], list, list[int]]:
    """The result's messages, their identities (for cache reuse) and tokens."""
    msgs, toks, h, upto = win.messages, win.tokens, win.head, win.upto
    n = len(msgs)
    # what is shown whole from before every chunk's messages (the question an agent was given)
    # stays where it was, before the chunks: a new chunk then leaves it in the prefix, and it
    # stays there when a newer question comes
    first = win.chunks[0].start if win.chunks else -1
    lead = [i for i in win.verbatim if i <= first]
    after = [i for i in win.verbatim if i not in lead]
    shown = [*lead, *(("s", c) for c in win.chunks), *after]
    kept = [*msgs[:h], *(x[1].message if isinstance(x, tuple) else win.shown(x) for x in shown),
            *msgs[upto:]]
    keys: list = [*range(h), *(("s", x[1].message.content) if isinstance(x, tuple)
                               else _key(win, x) for x in shown), *range(upto, n)]
    out = [*toks[:h], *(x[1].tokens if isinstance(x, tuple) else win.shown_tokens(x)
                        for x in shown), *toks[upto:]]
    offset = h + len(shown) - upto
    for i, rw in win.rewrites.items():
        k = i if i < h else (i + offset if i >= upto else None)
        if k is not None:
            kept[k], keys[k], out[k] = win.shown(i), (i, rw[0]), rw[1]
    return kept, keys, out


class _Question:
    """The newest user message at its place in a result (a summary chunk after it is a user
    turn too, so the trim engine is not left to find it: it is pinned, and shortened here to
    a cap when it must be), each shortening made once."""

    def __init__(self, win: Window, kept: list[Message], keys: list, tokens: list[int],
                 counter: Tokenizer, policy: PreparePolicy) -> None:
        self.at = newest_user(win.messages)  # its index in the conversation
        self.pos = next((k for k, key in enumerate(keys)
                         if self.at >= 0 and _index(key) == self.at), -1)  # in the result
        self.kept, self.tokens, self.counter, self.fmt = kept, tokens, counter, policy.fmt
        self._short: dict[int, tuple[Message, int]] = {}

    def within(self, cap: int | None) -> tuple[Message, int] | None:
        """The question shortened to ``cap`` tokens; None when it fits already."""
        if self.pos < 0 or cap is None or self.tokens[self.pos] <= cap:
            return None
        if cap not in self._short:
            m = self.kept[self.pos]
            overhead = self.tokens[self.pos] - self.counter.count(m.content)
            short = shorten(m.content, max(1, cap - overhead), self.counter)
            new = msgspec.structs.replace(m, content=short.text if short else m.content)
            self._short[cap] = (new, message_tokens(new, self.counter, self.fmt))
        return self._short[cap]

    def keep_shortened(self, win: Window, cap: int | None) -> list[AuditEntry]:
        """The shortening the fit used, said once and kept for later turns like a rewrite."""
        short = self.within(cap)
        if short is None:
            return []
        m = self.kept[self.pos]
        entry = AuditEntry(action="truncated", reason=QUESTION_FIT, summary=describe(m),
                           tokens_before=self.tokens[self.pos], tokens_after=short[1],
                           message_id=m.id, index=self.at)
        win.rewrites[self.at] = (short[0].content, short[1], entry)
        return [entry]


def _last_resort(win: Window, kept: list[Message], keys: list, tokens: list[int], budget: int,
                 counter: Tokenizer, policy: PreparePolicy, restored: set[int],
                 memo: Memo | None, may_shrink: bool = False):
    """Fit with the trim engine what the window alone could not (the newest exchange alone is
    over the budget), the messages at ``restored`` pinned, and the summary chunks too when
    they fit beside the system prompt and the question; what it shortens keeps its new text
    on later turns. None (``may_shrink``) when the summaries would have to give way: the
    caller shrinks them first."""
    memo = memo if memo is not None else Memo()  # the attempts shorten the same texts
    question = _Question(win, kept, keys, tokens, counter, policy)
    found = _attempts(win, kept, keys, tokens, budget, counter, policy, restored, memo,
                      question, may_shrink)
    if found is None:
        return None
    report, cap = found
    return _take(win, report, kept, keys, counter, policy, question.keep_shortened(win, cap))


def _attempts(win: Window, kept: list[Message], keys: list, tokens: list[int], budget: int,
              counter: Tokenizer, policy: PreparePolicy, restored: set[int], memo: Memo,
              question: _Question, may_shrink: bool):
    """(the trim report, the question's cap) of the first attempt that keeps the newest
    exchange: a summary stands for everything before it, so it is held, the question whole
    beside it (at most half the budget), then with the question shorter (its head and tail);
    only when even that leaves no room for the newest exchange, which the model answers, does
    the summary give way."""
    options = TrimOptions(fmt=policy.fmt, name_cut_facts=True)  # a few messages: cheap
    newest = f"ctx:fit:{len(kept) - 1}"

    def inputs(summaries_held: bool, cap: int | None, pinned: set[int]) -> list[Message]:
        ins: list[Message] = []
        for k, (m, key) in enumerate(zip(kept, keys, strict=True)):
            i = _index(key)
            short = question.within(cap) if k == question.pos else None
            m = msgspec.structs.replace(short[0] if short else m, id=f"ctx:fit:{k}")
            if (i is not None and i in pinned) or (summaries_held and m.kind == "summary"):
                m = msgspec.structs.replace(m, pinned=True)
            ins.append(m)
        return ins

    held = policy.fmt.reply_priming + sum(
        t for k, (m, t) in enumerate(zip(kept, tokens, strict=True))
        if m.role == "system" or m.kind == "summary" or k == question.pos)
    # the room the summaries and the question leave: the newest tool output is outlined to fit
    capped = msgspec.structs.replace(
        options, tool_output_cap=max(TOOL_CAP_MIN, (budget - held) * 3 // 4))
    caps = [budget // 2, int(budget * policy.question_share), budget // 8, budget // 16]
    pinned = restored | {question.at}
    report = None
    attempts = [*((True, c, capped) for c in caps), *((False, c, options) for c in caps)]
    for k, (summaries_held, cap, opts) in enumerate(attempts):
        if k == len(caps) and may_shrink and win.chunks:
            return None
        try:
            report = trim(inputs(summaries_held, cap, pinned), budget, counter, memo=memo,
                          options=opts)
        except ContextError as exc:
            if exc.kind != "pinned_over_budget":
                raise
            report = None
        if report is not None and report.messages and report.messages[-1].id == newest:
            return report, cap
    if report is None:  # the question alone at a sixteenth of the budget is over: unpinned
        return trim(inputs(False, None, set()), budget, counter, options=options,
                    memo=memo), None
    return report, caps[-1]


def _take(win: Window, report, kept: list[Message], keys: list, counter: Tokenizer,
          policy: PreparePolicy, truncated: list[AuditEntry]):
    """The fitted result mapped back to the conversation: its audit by message, what it
    shortened kept as rewrites for later turns."""
    def where(e: AuditEntry) -> tuple[int, AuditEntry]:
        k = int(e.message_id.rsplit(":", 1)[1]) if e.message_id else e.index
        return k, msgspec.structs.replace(e, message_id=kept[k].id, index=_index(keys[k]))

    dropped = [where(e)[1] for e in report.dropped]
    by_pos: dict[int, Message] = {int(m.id.rsplit(":", 1)[1]): m for m in report.messages}
    for e in report.truncated:
        k, entry = where(e)
        truncated.append(entry)
        i = _index(keys[k])
        if i is not None and k in by_pos:
            text = by_pos[k].content
            win.rewrites[i] = (text, message_tokens(
                msgspec.structs.replace(win.messages[i], content=text), counter, policy.fmt),
                entry)
    out_kept, out_keys, out_tokens = [], [], []
    for k in sorted(by_pos):
        i = _index(keys[k])
        m = kept[k] if by_pos[k].content is kept[k].content else msgspec.structs.replace(
            kept[k], content=by_pos[k].content)
        out_kept.append(m)
        out_keys.append(keys[k] if i is None or i not in win.rewrites else (i, m.content))
        out_tokens.append(message_tokens(m, counter, policy.fmt))
    return out_kept, out_keys, out_tokens, dropped, truncated


def _index(key) -> int | None:
    """The conversation index a result key stands for (None for a summary)."""
    if isinstance(key, int):
        return key
    return key[0] if isinstance(key[0], int) else None


def _reuse(previous: ConversationState | None, keys: list, common: int) -> int:
    """Tokens at the start of this result identical to the previous result."""
    if previous is None:
        return 0
    pk = previous.out_keys
    if common == len(previous.messages) and len(keys) >= len(pk) and keys[:len(pk)] == pk:
        return sum(previous.out_tokens)
    k, m = 0, min(len(pk), len(keys))
    while k < m and pk[k] == keys[k]:
        i = _index(pk[k])
        if i is not None and i >= common:
            break
        k += 1
    return sum(previous.out_tokens[:k])


def _breakpoints(kept: list[Message], keys: list, upto: int) -> list[int]:
    """Cache breakpoints: the end of the system prompt, the end of what only a step changes
    (summaries and messages shown whole after them), the end of the result."""
    points = []
    sys_end = 0
    while sys_end < len(kept) and kept[sys_end].role == "system":
        sys_end += 1
    if sys_end:
        points.append(sys_end - 1)
    stable = sys_end
    while stable < len(keys) and (_index(keys[stable]) is None or _index(keys[stable]) < upto):
        stable += 1
    if stable > sys_end:
        points.append(stable - 1)
    points.append(len(kept) - 1)
    return sorted(set(points))[:4]


def _k(tokens: int) -> str:
    if tokens < 1000:
        return str(tokens)
    if tokens < 100_000 and tokens % 1000:
        return f"{tokens / 1000:.1f}k"
    return f"{round(tokens / 1000)}k"


def _notice(summarized: int, summarized_tokens: int, outlined: list[AuditEntry],
            dropped: list[AuditEntry], truncated: list[AuditEntry], restored: int,
            budget: int, recalled: int = 0) -> str | None:
    """One line for the user when this turn summarized, cut or restored something."""
    did = []
    if summarized:
        did.append(f"summarized {summarized} older messages ({_k(summarized_tokens)} tokens)")
    if outlined:
        saved = sum(e.tokens_before - e.tokens_after for e in outlined)
        did.append(f"outlined {len(outlined)} older messages ({_k(saved)} tokens saved)")
    if dropped:
        did.append(f"dropped {len(dropped)} messages "
                   f"({_k(sum(e.tokens_before for e in dropped))} tokens)")
    if truncated:
        did.append(f"shortened {len(truncated)} messages")
    parts = [" and ".join(did) + f" to fit {_k(budget)}"] if did else []
    if restored:
        parts.append(f"restored {restored} message{'s' if restored > 1 else ''} whole")
    if recalled:
        parts.append("recalled the exact earlier lines the newest message names")
    return "ctxlayer: " + "; ".join(parts) if parts else None
