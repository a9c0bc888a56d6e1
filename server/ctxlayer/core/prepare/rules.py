"""The user's instruction files in a live chat: the messages carrying them stay whole.

A user message that carries an instruction file (CLAUDE.md in Claude Code's first user
message, Codex's AGENTS.md message: `assembly/instructions.py`) is the user's standing rules.
A step keeps it whole, shown ahead of the summaries where it stood (`engine._kept_whole`), so
it is sent as it came and the cached prefix up to it holds. Summarized, its rules became the
few sentences that read as orders (4 of a 24-line CLAUDE.md were left), and Codex's file
became the chunk's "Asked". When a step finds it over the room the rest of the request leaves
it (`room`: at least ``SHARE`` of the budget) it is shown, from then on, as the files' texts
within that room, their lines by priority (`kept_form`, `Window.keep_rules`), audited as
shortened with the lines it cut.
Must not: count tokens other than through the injected counter.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from ctxlayer.core.assembly.constraints import is_order
from ctxlayer.core.assembly.instructions import Instructions, carries, found
from ctxlayer.core.assembly.summary import own_words
from ctxlayer.core.groups import is_result
from ctxlayer.core.prepare.model import PreparePolicy
from ctxlayer.core.prepare.summaries import estimate
from ctxlayer.core.tokens import Tokenizer
from ctxlayer.protocol import Message

#: the share of the budget the messages carrying instruction files keep at least, together,
#: once cut (`room`)
SHARE = 0.1
_SPECIFIC = re.compile(r"`|/|\b\w+\.\w{1,5}\b|\d")


def carrying(msgs: Sequence[Message]) -> set[int]:
    """The user messages that carry an instruction file, among those before the first
    assistant message: where the clients put them, once a session (read there only, a step
    of a long chat does not search every user message's text)."""
    out = set()
    for k, m in enumerate(msgs):
        if m.role == "assistant":
            break
        if m.role == "user" and m.kind is None and not is_result(m) and carries(m.content) \
                and found(m.content):
            out.add(k)
    return out


def room(budget: int, policy: PreparePolicy, rest: int) -> int:
    """The tokens the messages carrying instruction files may take together once cut: what
    ``rest`` (the priming, the messages that stay first, the newest exchange) leaves them below
    the summary step's target, less a summary chunk's guess (`summaries.estimate`), so that
    the turns after the cut have a step's room before they pass the budget, the rules beside
    the summaries; at least ``SHARE`` of the budget. The rewrite stays for the cached prefix:
    cut to fill the budget, the next turn would cut them again. Cut to a tenth of the budget
    whatever the rest left, a 300-line CLAUDE.md kept 14 lines at a budget of 2,000, and
    Claude Code's first request went out at 543 tokens (now 31 lines, 853 tokens; no margin
    but the target's kept 72 lines, but stepped on 32 of 40 turns rather than 20)."""
    left = int(budget * policy.summary_target) - rest \
        - estimate(policy, max(budget - rest, budget // 4))
    return max(int(budget * SHARE), left)


def _rank(line: str) -> int:
    """A line's priority, 0 first: an order, a line naming something exact (a path, a
    command, a number), a heading, the rest; 4: a blank line."""
    words = line.strip().lstrip("-*• ").strip()
    if not words:
        return 4
    if is_order(words):
        return 0
    if words.startswith("#"):
        return 2
    return 1 if _SPECIFIC.search(words) else 3


def kept_form(content: str, cap: int, counter: Tokenizer
              ) -> tuple[str, list[str], bool] | None:
    """(the text a message carrying instruction files is shown as, the lines of the files it
    cut, whether the user's own words were cut), or None when it carries none. The files'
    texts within ``cap`` tokens, each with the words introducing it, their lines kept by
    priority (`_rank`; in the file's order within one) and shown in the file's order; then the
    user's own words (in Claude Code's first message, its task) whole, cut to their head only
    when they alone pass ``cap``: cut to their share beside the files, a 200-word task went out
    as its first 80 words for the rest of the chat, the audit naming only the files' lines.
    The client's other context (git status, reminders) is left out. The files' lines take
    what the user's words leave of ``cap``, at least half of it."""
    files = found(content)
    if not files:
        return None
    own = " ".join(own_words(content).replace("<INSTRUCTIONS>", " ").split()) \
        if any(f.framed for f in files) else ""
    own_cut = bool(own) and counter.count(own) > cap
    if own_cut:
        words = own.split()
        while words and counter.count(" ".join(words) + "…") > cap:
            words = words[:len(words) * 3 // 4]
        own = " ".join(words) + "…" if words else ""
    lines = [(k, j, line) for k, f in enumerate(files) for j, line in enumerate(f.body.split("\n"))]
    room = max(cap - (counter.count(own) if own else 0), cap // 2) \
        - sum(counter.count(f.head) + 6 for f in files)
    keep: set[tuple[int, int]] = set()
    for rank in range(5):
        for k, j, line in lines:
            cost = counter.count(line) + 1
            if _rank(line) == rank and cost <= room:
                keep.add((k, j))
                room -= cost
    cut = [line for k, j, line in lines if (k, j) not in keep and line.strip()]
    parts = [_framed(f, "\n".join(x for kk, j, x in lines if kk == k and (k, j) in keep))
             for k, f in enumerate(files)]
    return "\n\n".join([*parts, *([own] if own else [])]), cut, own_cut


def _framed(f: Instructions, body: str) -> str:
    if f.framed:
        return f"<system-reminder>\n{f.head}{body}\n</system-reminder>"
    return f"{f.head}{body}\n</INSTRUCTIONS>"


def cut_reason(cut: list[str], cap: int, own_cut: bool = False) -> str:
    """The audit's reason for a message carrying instruction files shown cut."""
    first = "; ".join(" ".join(x.split()) for x in cut[:3])
    own = (f"; the user's own words, alone over {cap} tokens, cut to their head"
           if own_cut else "")
    return (f"the user's instruction files, kept whole ahead of the summaries, cut to {cap} "
            f"tokens (the room the rest of the request leaves them, at least {SHARE:.0%} of "
            f"the budget): the client's other context and {len(cut)} "
            f"of their lines left out{': ' + first if first else ''}"
            f"{' …' if len(cut) > 3 else ''}{own}")
