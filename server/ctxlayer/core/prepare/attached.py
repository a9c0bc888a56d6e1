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

from ctxlayer.core.compress.shorten import shorten_message
from ctxlayer.core.prepare.model import PreparePolicy
from ctxlayer.core.prepare.window import Window
from ctxlayer.core.tokens import Tokenizer
from ctxlayer.protocol import AuditEntry

#: the share of the budget the attached files keep at least, together, once over it; more
#: when the rest of the request leaves more below the summary step's target
ATTACHED_SHARE = 0.5
CUT = ("shortened: the files the client attached (re-sent every turn) passed their share of "
       "the budget; each file keeps its first and last lines verbatim, the lines between cut")


def fit_attached(win: Window, files: frozenset[int], budget: int, counter: Tokenizer,
                 policy: PreparePolicy) -> list[AuditEntry]:
    """When the request is still over ``budget`` after a step (which keeps the attached files
    whole and summarizes the rest first: a file of 9.8k tokens in a budget of 16,000 stays
    whole beside a summary of 30 turns), each attached files' message is shown shortened to
    its part of their share, in proportion to its size: what the rest leaves them below
    ``summary_target``, at least `ATTACHED_SHARE` of the budget. One shortened on an earlier
    turn keeps its text (the cached prefix holds). Returns the audit of those shortened now."""
    # a short one (a repo map of a few paths) is left whole: cutting it saves a few tokens
    long = [i for i in sorted(files) if win.messages[i].role == "user" and i >= win.head
            and i not in win.rewrites and win.tokens[i] > policy.outline_min]
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
