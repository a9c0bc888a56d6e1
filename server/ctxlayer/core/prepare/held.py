"""A live chat's newest tool loop, read as one assistant turn: its first step is held, and no
summary opens a turn inside it.

With thinking on, Anthropic reads an agent's whole tool loop (the assistant messages after the
last user message that is not all tool results) as one assistant turn, whose first assistant
message must open with a thinking block (core/formats/anthropic_thinking.py
`last_turn_start`); without interleaved thinking only that first step thinks. Two things
broke that here:
- a step summarized the loop's first step with the steps after it, and the request opened
  the loop with a later step's bare tool_use (the probe's s7 at 4,000: [summaries and the
  question, tu5, its result]): so that step is held (`Window.held`, found as a session's
  assembly finds it: core/assembly/loop.py `opening_step`): no step takes it into a summary
  and the last resort pins it; its calls' long arguments and its results are outlined as
  any, its thinking never changed;
- the chunk standing for the steps between then sat after the held step's result, a user
  message of text, which is not all tool results: it starts a new turn, which tu5 opened
  without thinking. So such a summary goes inside the tool result just before it, after
  that result's text (`folded`): read where it happened, after the question and the first
  step, and no turn starts in the loop. A summary after the question and before the loop
  stays where it is (it is part of the question's user turn).

Must not: decide what the window keeps (window.py, engine.py) or how it is written (the
codecs). Pure: the counter is injected.
"""

from __future__ import annotations

import msgspec

from ctxlayer.core.groups import is_result
from ctxlayer.core.prepare.fit import result_index
from ctxlayer.core.tokens import MessageFormat, Tokenizer, message_tokens
from ctxlayer.protocol import Message

#: what joins a summary to the tool result it is read in
JOIN = "\n\n"


def folded(kept: list[Message], keys: list, tokens: list[int], first_at: int | None,
           counter: Tokenizer, fmt: MessageFormat) -> tuple[list[Message], list, list[int]]:
    """The result with each summary after the held step (result position ``first_at``) that
    follows a tool result put inside that result, after its text: (messages, keys, tokens),
    the folded result counted again. As it was when nothing is held or nothing is to fold."""
    if first_at is None:
        return kept, keys, tokens
    out_kept: list[Message] = []
    out_keys: list = []
    out_tokens: list[int] = []
    for k, (m, key, t) in enumerate(zip(kept, keys, tokens, strict=True)):
        if k > first_at and m.kind == "summary" and out_kept and is_result(out_kept[-1]):
            into = out_kept[-1]
            joined = msgspec.structs.replace(into, content=into.content + JOIN + m.content)
            # a result key (its conversation index first) that names the summary too: the
            # next turn's cache reuse stops here when either changed
            out_keys[-1] = (result_index(out_keys[-1]), out_keys[-1], key)
            out_kept[-1] = joined
            out_tokens[-1] = message_tokens(joined, counter, fmt)
            continue
        out_kept.append(m)
        out_keys.append(key)
        out_tokens.append(t)
    return out_kept, out_keys, out_tokens

