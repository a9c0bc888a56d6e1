"""Rolling compaction of a session's history, as data plus pure steps.

State (``Compaction``, persisted by the store as one JSON value):
- ``upto_seq``: history messages with a smaller seq are replaced by the summary;
- ``summary``: the decided/open part (from the client's summarizer or the offline one);
- ``constraints`` / ``marked``: the user's hard constraints (constraints.py), and those the
  user marked;
- ``request``: the newest user message replaced (an agent's task is often its only user
  message, followed by hundreds of tool calls): shown verbatim in the summary, its middle cut
  only when it is over its share;
- ``actions``: the action log, one line per tool call replaced (actions.py);
- ``ledger``: the ranked facts ledger of every replaced message (compress/ledger.py);
- ``rewrites``: messages still shown verbatim that an earlier stage shortened (seq -> text);
- ``made_for``: the history share the summary stage ran for: an assembly with more room where
  the whole history fits, or with much more (assemble.py `_withdraws`), withdraws the summary
  (and makes it again for its share when needed), so one call at a small budget does not
  summarize a session for good.

When history passes ``trigger`` of its share, the cheap stages run first on the messages older
than the newest ``keep_recent`` (tool outputs over their cap become outlines, later copies
become references, long prose is compressed extractively), and when that is not enough the
summary stage replaces the oldest messages: as many of the newest messages stay verbatim as fit
in ``target`` of the share once the summary is counted, so the budget is used, and the next
compaction comes only after the history has grown again by the difference (compaction moves in
steps, so the provider's cached prefix holds between them). The summary stage's trigger reads
the history as the plan counts it (`planned_tokens`: the tail's older tool outputs outlined,
the summary at its planned room) and the plan keeps the tail under it, so an unchanged
session assembles to the same state every time, and after a restart too.
The summary message is a user turn with its daemon id (``ctx:summary:<upto_seq>``), placed
right after the system layers, rules and working zone (an assistant acknowledgement follows it
when the verbatim tail starts with a user turn, so roles alternate); a constraint, action or
fact that does not fit its share gives way to the newer or better-ranked ones, never the whole
summary.
No stage touches a message kept whole (`history.kept_whole`: the client's system messages,
what it pinned, with their tool-call groups) and no summary replaces one: the history's leading
system messages stay where they stood, before the summary (the cached prefix holds), the others
come right after it in their order; their tokens are taken from the room first.
Must not: call a model (the summary text is passed in) or touch storage.
"""

from __future__ import annotations

import re

import msgspec

from ctxlayer.core.assembly import actions as act
from ctxlayer.core.assembly import constraints as hc
from ctxlayer.core.assembly.compacted import (
    ACK_TEXT,
    Compaction,
    Rewrite,
    history_tokens,
    is_tool_result,
    kept_in,
    leading_system,
    shown_message,
    summary_id,
    summary_message,
    tokens_of,
    verbatim_start,
)
from ctxlayer.core.assembly.history import History, kept_whole
from ctxlayer.core.assembly.policy import CompactionPolicy
from ctxlayer.core.assembly.stages import run_cheap_stages
from ctxlayer.core.assembly.summary import (
    TASK_CHARS,
    first_ask_chars,
    off_topic,
    offline_summary,
    own_words,
    refusal,
    render_summary,
    split_task,
    with_task,
    without_asks_in,
)
from ctxlayer.core.assembly.tail import QUESTION_FLOOR, shortened_least
from ctxlayer.core.compress.facts import Facts, extract_facts
from ctxlayer.core.compress.ledger import (
    Ledger,
    add_messages,
    from_facts,
    render_ledger,
    text_of,
)
from ctxlayer.core.text import describe
from ctxlayer.core.tokens import Tokenizer, message_tokens
from ctxlayer.protocol import AuditEntry, Message

__all__ = [
    "ACK_TEXT", "Compaction", "CompactionPolicy", "Rewrite", "Sizes", "apply_summary",
    "covered", "covered_messages", "fitted_summary", "history_tokens", "is_tool_result",
    "kept_in", "leading_system", "plan_stop", "planned_tokens", "rerender", "summary_room",
    "tail_tool_cap", "run_cheap_stages", "shown_message", "sizes", "summary_id",
    "summary_message", "tokens_of", "verbatim_start",
]


class Sizes(msgspec.Struct, frozen=True):
    summary_tokens: int
    summary_chars: int
    constraint_tokens: int
    request_chars: int
    action_chars: int
    ledger_chars: int
    task_chars: int = TASK_CHARS  # the most a kept first ask is (`first_ask_chars`)

    @property
    def reserve(self) -> int:
        """Tokens the summary message may take at most (a conservative estimate)."""
        cpt = 3
        return (self.constraint_tokens + (self.summary_chars + self.request_chars
                                          + self.action_chars + self.ledger_chars
                                          + self.task_chars) // cpt + 40)


def sizes(policy: CompactionPolicy, share: int) -> Sizes:
    cpt = policy.chars_per_token
    # what a client summarizer is asked for is capped (it costs a model call); the offline
    # summary costs nothing and may fill its whole share
    summary_tokens = max(32, min(policy.summary_max_tokens, int(share * policy.summary_share)))
    return Sizes(
        summary_tokens=summary_tokens,
        summary_chars=max(summary_tokens, int(share * policy.summary_share)) * cpt,
        constraint_tokens=max(16, int(share * policy.constraint_share)),
        request_chars=max(240, int(share * policy.request_share) * cpt),
        action_chars=max(120, int(share * policy.action_share) * cpt),
        ledger_chars=max(200, int(share * policy.ledger_share) * cpt))


def _ledger_of(state: Compaction) -> Ledger | None:
    if state.ledger is not None:
        return state.ledger
    return from_facts(state.facts) if state.facts is not None else None


def _cut_middle(text: str, max_chars: int) -> str:
    """``text`` within about ``max_chars``: its first and last whole lines, those between
    named ("[... lines 9-599 of 604 cut ...]"). Cut by characters, the newest request read
    "def f20(x):\n    r\n[... 8,580 characters omitted ...]\nrn x + 293". A first line
    longer than the head's room keeps its start, a last one longer than what is left its end
    (each marked with an ellipsis, the cut then counted in characters)."""
    if len(text) <= max_chars:
        return text
    if max_chars < 40:
        return ""
    lines = text.split("\n")
    room = max_chars - 36  # the line naming the cut
    head = _lines_within(lines, int(room * 0.6))
    whole = bool(head)
    if not whole:
        head = [_words_start(lines[0], int(room * 0.6)) + "…"]
    left = room - sum(len(line) + 1 for line in head)
    tail = _lines_within(lines[len(head) if whole else 1:][::-1], left)[::-1]
    if not tail and left >= 12:
        # the end of the last line, or of the one line past the head's part of it: a request
        # on one line asks its question at its end ("... QUESTION_END: why did it crash?")
        last = lines[-1] if len(lines) > 1 else lines[0][len(head[0]) - 1:]
        whole, tail = False, ["…" + _words_end(last, left - 2)]
    if whole:
        # what the tail leaves of its room goes back to the head, line by line
        spare = left - sum(len(line) + 1 for line in tail)
        head += _lines_within(lines[len(head):len(lines) - len(tail)], spare)
        lo, hi = len(head) + 1, len(lines) - len(tail)
        gone = f"line {lo}" if lo == hi else f"lines {lo}-{hi}"
        return "\n".join([*head, f"[... {gone} of {len(lines)} cut ...]", *tail])
    cut = len(text) - sum(len(line) - line.count("…") for line in head + tail)
    return "\n".join([*head, f"[... {cut:,} characters cut ...]", *tail])


def _words_start(line: str, room: int) -> str:
    """The start of ``line`` within ``room`` characters, ending at a blank when one is in the
    second half of it (a line with none is cut where the room ends)."""
    cut = line[:room]
    at = cut.rfind(" ")
    return cut[:at] if at >= room // 2 else cut


def _words_end(line: str, room: int) -> str:
    """The end of ``line`` within ``room`` characters, starting after a blank when one is in
    the first half of it."""
    cut = line[len(line) - room:] if room < len(line) else line
    at = cut.find(" ")
    return cut[at + 1:] if 0 <= at <= room // 2 and room < len(line) else cut


def _lines_within(lines: list[str], room: int) -> list[str]:
    """The first of ``lines`` that fit in ``room`` characters, each with its line break."""
    kept: list[str] = []
    used = 0
    for line in lines:
        used += len(line) + 1
        if used > room:
            break
        kept.append(line)
    return kept


def _render(state: Compaction, sz: Sizes, counter: Tokenizer, **sized: int) -> tuple[str, list[str]]:
    """The summary text for these sizes (``sized`` overrides fields of ``sz``), and the
    constraints it demoted to the ledger."""
    size = {name: sized.get(name, getattr(sz, name)) for name in PARTS}
    task, _ = split_task(state.summary)
    summary = without_asks_in(state.summary, state.request)  # shown verbatim below it
    if task and split_task(summary)[0] == task:  # not the request shown verbatim
        summary = split_task(summary)[1]
    else:
        task = ""
    cut = size["summary_chars"]
    if cut < len(summary):
        summary = summary[:cut].rstrip() + ("…" if cut else "")
    if len(task) > size["task_chars"]:
        task = task[:max(0, size["task_chars"] - 1)].rstrip()
        task = task and task + "…"
    summary = with_task(task, summary)
    kept, demoted = hc.split(state.constraints, state.marked, size["constraint_tokens"], counter)
    actions = act.render_actions(state.actions, size["action_chars"])
    request = _cut_middle(state.request.strip(), size["request_chars"])
    ledger = render_ledger(_ledger_of(state), size["ledger_chars"],
                           shown="\n".join([summary, *kept, request, actions]),
                           extra=("instructions (demoted from the hard constraints)", demoted))
    return render_summary(state.replaced, summary, kept, ledger, actions, request,
                          state.parts), demoted


#: the summary's parts, most important first: when the summary must shrink, the last gives way
#: first (decided/open/details, then the request down to REQUEST_FLOOR, the action log, the
#: ledger, the hard constraints, and last the user's first ask; the request is never cut out).
#: The ledger ranks high because it is the densest in exact values: measured on real agent
#: transcripts (bench/realchats) it keeps the most of what the rest needs. The first ask (an
#: agent's task, at most TASK_CHARS) ranks above all: cut with decided/open, it was the first
#: thing a long session's summary lost (turn 35 of 40 at a budget of 3000), its ledger keeping
#: "line 44, line 43, ...".
PARTS = ("task_chars", "constraint_tokens", "ledger_chars", "action_chars", "request_chars",
         "summary_chars")
#: characters of the newest user message a shrinking summary keeps at least (head and tail)
REQUEST_FLOOR = 240


#: the newest non-text parts a summary names (a session of 200 screenshots names 8)
MAX_PARTS = 8
_PART_TOKENS = re.compile(r" \([\d,]+ tokens\)")


def _parts_of(msgs: list[Message]) -> list[str]:
    """The non-text parts of ``msgs`` as a summary names them: what and where, not their cost
    (the model reads that they were there)."""
    return [_PART_TOKENS.sub("", p) + (f" in message {m.id}" if m.id else "")
            for m in msgs for p in (m.parts or ())]


def rerender(state: Compaction, share: int, policy: CompactionPolicy, counter: Tokenizer) -> None:
    """Render the summary message for a history share (only when the state or share changed)."""
    state.sized_for = share
    if not state.replaced:
        state.rendered, state.rendered_tokens, state.demoted = "", 0, []
        return
    state.rendered, state.demoted = _render(state, sizes(policy, share), counter)
    state.rendered_tokens = message_tokens(summary_message(state), counter)
    state.ack_tokens = message_tokens(Message(role="assistant", content=ACK_TEXT), counter)


def recounted(state: Compaction, history: History, counter: Tokenizer) -> Compaction:
    """The state with its tokens counted again by `counter` (the session's model changed, and
    its messages were recounted): the summary, its acknowledgement and each rewrite. The text
    stays; only the figures the history layer adds up were the old model's."""
    if not state.replaced and not state.rewrites:
        return state
    out = msgspec.structs.replace(state, rewrites=dict(state.rewrites))
    if state.replaced:
        out.rendered_tokens = message_tokens(summary_message(state), counter)
        out.ack_tokens = message_tokens(Message(role="assistant", content=ACK_TEXT), counter)
    for seq, rw in state.rewrites.items():
        i = history.index_of_seq(seq)
        if i < len(history) and history.seqs[i] == seq:
            shown = msgspec.structs.replace(history.messages[i], content=rw.content)
            out.rewrites[seq] = msgspec.structs.replace(rw, tokens=message_tokens(shown, counter))
    return out


def fitted_summary(state: Compaction, room: int, policy: CompactionPolicy,
                   counter: Tokenizer) -> tuple[Message, int, list[str]] | None:
    """The summary message shortened to ``room`` tokens for one assembly: its parts give way in
    the reverse order of PARTS, each only once every less important part is empty; the
    constraints that no longer fit are demoted to what is left of the ledger. None when even
    the bare header does not fit."""
    sz = sizes(policy, state.sized_for or room)

    def make(sized: dict[str, int]) -> tuple[Message, int, list[str]]:
        text, demoted = _render(state, sz, counter, **sized)
        msg = Message(role="user", content=text, id=summary_id(state), kind="summary")
        return msg, message_tokens(msg, counter), demoted

    def search(floor: dict[str, int], order: tuple[str, ...] = PARTS
               ) -> tuple[Message, int, list[str]]:
        fixed: dict[str, int] = {}
        for k, name in enumerate(order):
            rest = {**dict.fromkeys(order[k + 1:], 0),
                    **{n: v for n, v in floor.items() if n in order[k + 1:]}}
            lo, hi = 0, getattr(sz, name)
            if name in floor and make({**fixed, name: floor[name], **rest})[1] <= room:
                lo = floor[name]  # what is kept of the request at the least
            if make({**fixed, name: hi, **rest})[1] <= room:
                fixed[name] = hi
                continue
            while lo < hi:  # the largest size of this part that fits with the later parts empty
                mid = (lo + hi + 1) // 2
                if make({**fixed, name: mid, **rest})[1] <= room:
                    lo = mid
                else:
                    hi = mid - 1
            fixed.update({name: lo, **rest})
            break
        return make(fixed)

    # the newest user message a summary replaced is never left out, only shortened: the parts
    # after it give way down to a floor of it (the ledger and the action log rank above it);
    # when even the floor does not fit beside the header, it comes first
    best = search({"request_chars": min(REQUEST_FLOOR, sz.request_chars)}
                  if state.request else {})
    if best[1] > room and state.request:
        best = search({}, ("request_chars", *(n for n in PARTS if n != "request_chars")))
    ask = " ".join(state.request.split())
    if ask and (best[1] > room or ask[:24] not in " ".join(best[0].content.split())):
        # no room for the summary's header and the request's head and tail: the request's
        # first words alone, as many as fit
        for head in (f"[{state.replaced} earlier messages summarized] ", ""):
            def stub(chars: int, head: str = head) -> tuple[Message, int, list[str]]:
                text = f"{head}{ask[:chars].rstrip()}{'…' if chars < len(ask) else ''}"
                msg = Message(role="user", content=text, id=summary_id(state), kind="summary")
                return msg, message_tokens(msg, counter), []

            lo, hi = 0, min(len(ask), REQUEST_FLOOR)
            while lo < hi:
                mid = (lo + hi + 1) // 2
                if stub(mid)[1] <= room:
                    lo = mid
                else:
                    hi = mid - 1
            if lo >= min(12, len(ask)):  # a short request ("go on", "yes") whole
                return stub(lo)
    return best if best[1] <= room else None


#: tokens left in the tail's room below which the next older message is not kept shortened
SHORT_MIN = 64


def tail_tool_cap(share: int) -> int:
    """Tokens an older tool output of the verbatim tail is planned at (the window outlines it)."""
    return max(48, share // 20)


#: of the history share, what the newest tool output of the tail is planned at, at most: the
#: window outlines it to the room the rest leaves it (`tail.fit`). Planned whole, a log over the
#: room had everything before the question summarized instead: 2,400 lines at a budget of
#: 12,000 sent 4,311 tokens, the log and its one FATAL line gone, where ctx/trim sent 11,520
NEWEST_TOOL_SHARE = 0.5


class _Plan(msgspec.Struct, frozen=True):
    """How the tail is counted: tool outputs at their outline's size (the newest at most
    NEWEST_TOOL_SHARE of the share), the tail's oldest message at what the window shortens it
    to (`tail.shortened_least`), and the messages kept whole at none (the caller counted them)."""

    older_cap: int
    newest_cap: int
    kept: frozenset[int] = frozenset()

    @classmethod
    def of(cls, share: int | None, kept: frozenset[int] = frozenset()) -> _Plan | None:
        if share is None:
            return None
        return cls(tail_tool_cap(share), max(tail_tool_cap(share),
                                             int(share * NEWEST_TOOL_SHARE)), kept)

    def outlined(self) -> _Plan:
        """The plan with the newest tool output at the least the window outlines it to: the
        window outlines it before it shortens the question (`tail.fit`), so beside the
        question it takes what the question leaves, down to that."""
        return msgspec.structs.replace(self, newest_cap=self.older_cap)


def summary_room(policy: CompactionPolicy, share: int) -> int:
    """Tokens a compaction plans the summary at: the largest its parts can render to, but at
    most half of the target (an assembly shortens a longer one to its room)."""
    return min(sizes(policy, share).reserve, int(share * policy.target) // 2)


def planned_tokens(history: History, state: Compaction, share: int,
                   policy: CompactionPolicy) -> int:
    """Tokens of the history layer as a compaction plans it (`plan_stop`): the verbatim tail's
    tool outputs at most their outline's size and its oldest message at what the window
    shortens it to (the window does both before it summarizes anything), the summary at most
    `summary_room` (an assembly shortens it to that). The trigger reads this figure: read from
    ``history_tokens`` instead, a tail just planned to fit passed the trigger again, and every
    assembly of an unchanged session summarized one or two more messages."""
    start = verbatim_start(history, state)
    plan = _Plan.of(share, frozenset(kept_in(history, 0, len(history))))
    assert plan is not None
    newest = _newest_tool(history, start)
    restored = set(state.restored)
    over = max(0, state.rendered_tokens - summary_room(policy, share))
    first = _oldest_shortened(history, state, start, plan)
    for i in range(start, len(history)):
        # the window never shortens what is kept whole or restored: counted whole
        if i in plan.kept or history.seqs[i] in restored:
            continue
        cost = tokens_of(history, state, i)
        over += cost - _planned(history, state, i, newest, plan, first)
    return history_tokens(history, state) - over


def _newest_tool(history: History, start: int) -> int:
    """The position of the newest tool output at or after ``start`` (the end when none)."""
    msgs = history.messages
    return next((i for i in range(len(history) - 1, start - 1, -1)
                 if is_tool_result(msgs[i])), len(history))


def _oldest_shortened(history: History, state: Compaction, i: int, plan: _Plan | None) -> int:
    """The message planned at what the window shortens it to when the tail starts at i (none:
    -1): the tail's oldest, not kept whole, when it is the user turn the newest question
    answers (the exchange before it). A screenshot and 300 functions asked about, then "Are
    you sure? Look again", were summarized at a budget of 4,000 (1,445 tokens sent, the
    screenshot gone) where the window keeps it with its text cut. Older turns count whole:
    planned shortened too, a long session kept more of them cut where the summary kept their
    facts (bench/realchats dev at 10%: 584 facts of 680 where 603)."""
    if plan is None:
        return -1
    j = next((j for j in range(i, len(history)) if j not in plan.kept), -1)
    msgs = history.messages
    asks = [k for k in range(len(history) - 1, i - 1, -1)
            if msgs[k].role == "user" and not is_tool_result(msgs[k])]
    return j if len(asks) >= 2 and j == asks[1] else -1


def _planned(history: History, state: Compaction, i: int, newest_tool: int,
             plan: _Plan | None, first: int = -1) -> int:
    """Tokens message i is planned at in the tail: a tool output at its outline's size (the
    newest at most `_Plan.newest_cap`: the window outlines it to what the rest leaves), the
    tail's oldest (`first`) at what the window shortens it to, its images kept; one kept
    whole at none (it is shown wherever the tail starts: the caller counted it)."""
    if plan is not None and i in plan.kept:
        return 0
    cost = tokens_of(history, state, i)
    if plan is None:
        return cost
    msg = history.messages[i]
    if is_tool_result(msg):
        return min(cost, plan.older_cap if i < newest_tool else plan.newest_cap)
    if i == first and history.seqs[i] not in state.restored and not kept_whole(msg):
        return min(cost, shortened_least(msg, cost))
    return cost


def tail_fits(history: History, state: Compaction, i: int, room: int,
              plan: _Plan | None) -> bool:
    """Whether messages [i, end) fit in ``room`` as plan_stop counts them."""
    newest_tool = _newest_tool(history, i)
    first = _oldest_shortened(history, state, i, plan)
    used = 0
    for j in range(i, len(history)):
        used += _planned(history, state, j, newest_tool, plan, first)
    return used <= room


def plan_stop(history: History, state: Compaction, room: int, share: int | None = None,
              kept: frozenset[int] = frozenset(), limit: int | None = None) -> int:
    """Where the verbatim tail starts: the newest messages that fit in ``room`` tokens, never
    between a tool call and its results (a newest user message left behind is shown verbatim
    in the summary). With the history ``share`` given, tool outputs count at their outline's
    size and the tail's oldest message at what the window shortens it to (``_planned``): the
    window outlines and shortens before it drops anything. The messages ``kept`` whole count
    nothing here: the caller took their tokens out of ``room``. What the tail keeps beyond its
    room (the oldest to be shortened, a call with its results, the question) stays within
    ``limit`` (the trigger's room): past it, the next assembly of the unchanged session
    compacted again, and each one summarized a message more."""
    start = verbatim_start(history, state)
    n = len(history)
    msgs = history.messages
    plan = _Plan.of(share, kept)
    newest_tool = _newest_tool(history, start)
    stop, used = n, 0
    while stop > start:
        i = stop - 1
        cost = _planned(history, state, i, newest_tool, plan)
        if used + cost > room:
            if room - used >= SHORT_MIN:
                stop -= 1  # the oldest kept is shortened by the window rather than left out
            break
        used += cost
        stop -= 1
    stop = max(stop, start)
    last_user = next((i for i in range(n - 1, start - 1, -1)
                      if msgs[i].role == "user" and not is_tool_result(msgs[i])), None)
    # the question being answered stays a message of its own when it is last, when its tail
    # fits, or when what follows it (a reply, an agent's step) fits in what the window leaves
    # beside a question over the room (`tail.QUESTION_FLOOR`): the window shortens it in
    # place. Summarized instead, a long question with a short reply after it left the
    # request at 18% of its budget, the question cut to its share of the summary. Its newest
    # tool output counts at the least the window outlines it to (`_Plan.outlined`): counted
    # at up to half the share, a question with a screenshot, a call and a 200-line output
    # went into the summary, its screenshot not sent, 1,775 of a budget of 7,000 unused.
    # Only when one step follows it (a call and its outputs): beside an agent's loop of
    # several, counted so, the question "stayed" while the loop's newest steps went into the
    # summary (1 of 3 steps sent, 2,255 of 3,000), the widening that had kept them refused.
    one_step = last_user is not None and all(
        is_tool_result(m) for m in msgs[last_user + 2:])
    beside = plan.outlined() if plan is not None and one_step else plan
    question = last_user is not None and (last_user == n - 1 or tail_fits(
        history, state, last_user, room, beside) or tail_fits(
        history, state, last_user + 1, int(room * (1 - QUESTION_FLOOR)), beside))
    if question:
        stop = min(stop, last_user)
    while start < stop < n and is_tool_result(msgs[stop]):
        stop -= 1  # keep the call with its results
    while limit is not None and not tail_fits(history, state, stop, limit, plan):
        if question and stop >= last_user:
            break  # the question stays, whatever it takes (the window fits it)
        later = stop + 1
        while later < n and is_tool_result(msgs[later]):
            later += 1  # not between a call and its results
        if later >= n:
            break  # the newest turn stays, whatever it takes (the window fits it)
        stop = later
    if stop == start and not (question and stop == last_user):
        # nothing older fits out: replace at least up to a clean boundary (but the question
        # kept as its own message: the window shortens it, and nothing is replaced)
        while stop < n - 1 and (stop == start or is_tool_result(msgs[stop])):
            stop += 1
        if stop < n and is_tool_result(msgs[stop]):
            # none but the newest call's results past it: replacing the call orphaned them
            # (the window dropped them), so nothing is replaced; the window shortens the turn
            stop = start
    return stop


#: why a message is replaced by the summary (ctx/why says it of every assembly that sends it)
SUMMARIZED = "rolling compaction: history passed its trigger"


def covered(history: History, state: Compaction, stop: int) -> list[int]:
    """Positions of the messages the summary stage would replace: those before ``stop`` after
    the summary's, but the ones kept whole (`history.kept_whole`), which stay as they are."""
    start = verbatim_start(history, state)
    kept = set(kept_in(history, start, stop))
    return [i for i in range(start, stop) if i not in kept]


def covered_messages(history: History, state: Compaction, stop: int) -> list[Message]:
    """The messages the summary stage would replace, as shown (rewrites applied)."""
    return [shown_message(history, state, i) for i in covered(history, state, stop)]


def _audit(msg: Message, index: int, action: str, reason: str, before: int, after: int):
    return AuditEntry(action=action, reason=reason, summary=describe(msg), tokens_before=before,
                      tokens_after=after, message_id=msg.id, index=index)


def apply_summary(
    history: History, state: Compaction, stop: int, summary_text: str | None, share: int,
    policy: CompactionPolicy, counter: Tokenizer,
    extracted: dict[int, tuple[Facts, list[str]]] | None = None,
) -> tuple[Compaction, list[AuditEntry]]:
    """Replace messages [verbatim start, stop) by the summary, but those kept whole (shown
    beside it as they are: `covered`); return the new state.

    ``summary_text`` is the client's summary of (previous summary + covered messages); None
    means the offline extractive one, and so does an empty, off-topic or refusing ("I'm sorry,
    but I can't...") client summary (audited). Constraints, the action log and the ledger are always made here, so a client
    summary that lacks a fact still has it beside it. ``extracted``: facts and constraints per
    history index, filled in and reused across calls of one assembly.
    """
    at = covered(history, state, stop)
    shown = [shown_message(history, state, i) for i in at]
    originals = [history.messages[i] for i in at]
    audit: list[AuditEntry] = []
    sz = sizes(policy, share)
    first_id = summary_id(Compaction(upto_seq=history.seqs[stop - 1] + 1))
    if summary_text is not None:
        opening = refusal(summary_text)
        overlap = (off_topic(summary_text, shown) if summary_text.strip() and not opening
                   else 0.0)
        if overlap is not None:
            audit.append(AuditEntry(
                action="summarized", reason="client summary " + (
                    f"a refusal (it opens {opening!r})" if opening else
                    f"off-topic (only {overlap:.0%} of its words occur in the "
                    "text it replaces)" if summary_text.strip() else "empty")
                + ": replaced by the offline summary",
                summary=" ".join(summary_text.split())[:80] or "(empty)",
                tokens_before=counter.count(summary_text), tokens_after=0, message_id=first_id))
            summary_text = None
    request_at = next((k for k in range(len(originals) - 1, -1, -1)
                       if originals[k].role == "user" and not is_tool_result(originals[k])
                       and originals[k].kind != "summary"), None)
    if summary_text is None:
        # the request is shown verbatim: its sentences would only repeat it
        read = [m for k, m in enumerate(shown) if k != request_at]
        summary_text = offline_summary(read, state.summary, sz.summary_chars, asked=(
            [originals[request_at]] if request_at is not None else []),
            task_chars=first_ask_chars(not state.replaced))  # the first: the task
    cache = extracted if extracted is not None else {}
    facts: list[Facts] = []
    orders: list[list[str]] = []
    for i, msg in zip(at, originals, strict=True):
        got = cache.get(i)
        if got is None:
            got = cache[i] = (extract_facts(text_of(msg)), hc.orders_of(msg))
        facts.append(got[0])
        orders.append(got[1])
    constraints, marked = hc.detect(originals, state.constraints, state.marked, orders)
    # in the user's own words: context a client wraps around them took the request's room
    request = own_words(originals[request_at].content).strip() if request_at is not None \
        else state.request
    shown_still = {history.seqs[i] for i in kept_in(history, 0, stop)}
    new = Compaction(
        upto_seq=history.seqs[stop - 1] + 1,
        replaced=state.replaced + len(at),
        summary=summary_text.strip(),
        constraints=constraints, marked=marked, request=request,
        actions=(state.actions + act.log_lines(originals))[-act.MAX_LINES:],
        ledger=add_messages(_ledger_of(state), originals, facts),
        # a rewrite stays while its message is shown: in the tail, or kept whole beside it
        rewrites={s: r for s, r in state.rewrites.items()
                  if s >= history.seqs[stop - 1] + 1 or s in shown_still},
        restored=list(state.restored), made_for=share,
        parts=(state.parts + _parts_of(originals))[-MAX_PARTS:],
    )
    rerender(new, share, policy, counter)
    # the message as the client sent it (what ctx/restore gives back), not an outline of it
    audit += [_audit(msg, i, "summarized", SUMMARIZED, history.tokens[i], 0)
              for i, msg in zip(at, originals, strict=True)]
    return new, audit
