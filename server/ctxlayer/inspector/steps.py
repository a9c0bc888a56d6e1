"""The slider's data: what the engine itself does to a chat at other budgets.

The page never works out a verdict of its own (a guess in the browser is what once marked as
dropped the tool results the daemon had outlined and kept). Here the engine runs at each of a
set of budgets, and the page looks up the nearest one. The runner is injected: core.trim for
a chat given as messages, core.prepare for a live chat (from its last state, which is only
read). Pure: no I/O.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Sequence
from typing import TypeVar

from ctxlayer.core.errors import ContextError, said_of_the_budget
from ctxlayer.core.memo import Memo
from ctxlayer.core.prepare import ConversationState, audit_of, prepare_turn
from ctxlayer.core.prepare.fit import result_index
from ctxlayer.core.tokens import Tokenizer
from ctxlayer.inspector.data import InspectorStep, verdicts
from ctxlayer.protocol import AuditEntry, Message

#: budgets the engine is run at, evenly from 1/STEPS of the window to all of it
STEPS = 20

#: what the engine did at one budget: (dropped, shortened, tokens of its result)
Outcome = tuple[Sequence[AuditEntry], Sequence[AuditEntry], int]
T = TypeVar("T")


def step_budgets(window: int, budget: int, count: int = STEPS) -> list[int]:
    """`count` budgets from 1/count of the window (5% for 20) to the whole window, and the
    current budget, smallest first."""
    top = max(window, budget, 1)
    return sorted({max(1, round(top * k / count)) for k in range(1, count + 1)} | {budget})


def engine_steps(messages: Sequence[Message], budgets: Sequence[int],
                 run: Callable[[int], Outcome]) -> list[InspectorStep]:
    """Run the engine at each budget. A budget it cannot serve (the pinned part alone is over
    it) is a step with the engine's own words as its error, not a guess."""
    steps = []
    for b in budgets:
        try:
            dropped, truncated, tokens = run(b)
        except ContextError as exc:
            steps.append(InspectorStep(budget=b, error=str(exc)))
            continue
        steps.append(InspectorStep(budget=b, verdicts=verdicts(messages, dropped, truncated),
                                   tokens=tokens))
    return steps


def split_audit(entries: Sequence[AuditEntry]) -> tuple[list[AuditEntry], list[AuditEntry]]:
    """A live chat's audit as the table shows it: (dropped, shortened); restored is kept."""
    return ([e for e in entries if e.action == "dropped"],
            [e for e in entries if e.action not in ("dropped", "restored")])


def after_tools(budget: int, tools: int, fit: Callable[[int], T]) -> T:
    """``fit`` of what a budget leaves the messages once the tool definitions (sent with every
    request) have theirs; the engine's refusal, in its words, when they fill it alone. The
    engine's own refusal is said of ``budget`` as `ctxlayer trim` says it: `inspect --html
    --budget 2000` said "over the budget of 1632", a budget the user never gave (its tools
    took 368)."""
    if tools >= budget:
        raise ContextError("pinned_over_budget", f"the tool definitions alone need "
                           f"{tools} tokens, over the budget of {budget}", field="budget")
    try:
        return fit(budget - tools)
    except ContextError as exc:
        raise said_of_the_budget(exc, budget, tools) from None


def prepare_runner(state: ConversationState, counter: Tokenizer, *, tools: int = 0,
                   restored: Collection[str] = ()) -> Callable[[int], Outcome]:
    """The next turn of a live chat at budget b, as ctx/prepare would fit it: the same
    messages from the same state (a state is never changed: the turn builds a new one), the
    tool definitions' tokens taken off the budget first."""
    memo = Memo()

    def run(b: int) -> Outcome:
        turn = after_tools(b, tools, lambda room: prepare_turn(
            state, state.messages, room, counter, restored=restored, memo=memo))
        dropped, shortened = split_audit(audit_of(turn.state))
        return dropped, shortened, turn.tokens + tools

    return run


def cache_row(state: ConversationState, reused: int) -> int:
    """The row of a live chat's page (a message of its last request, as the engine read it)
    where the cached prefix of its result ends, that prefix being the first ``reused`` tokens
    of the result (what the previous result shared with it: `chats` calls it est. cache):
    the message the first result message past it stands for, a summary's first message for
    a summary; past the last row when the whole result is cached (a request sent again)."""
    total = 0
    for key, tokens in zip(state.out_keys, state.out_tokens, strict=False):
        if total + tokens > reused:
            at = result_index(key)
            if at is None:  # a summary, keyed by its text
                at = next((c.start for c in state.chunks if c.message.content == key[1]),
                          state.head)
            return at
        total += tokens
    return len(state.messages)
