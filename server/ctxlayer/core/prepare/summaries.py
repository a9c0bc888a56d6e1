"""Summary chunks of a live conversation: making one from the messages a step replaces, and
merging every chunk into one when together they pass their share of the budget.

The text is the session engine's offline summary (decided / open, the user's hard constraints
verbatim, the facts ledger), so a conversation reads the same whichever way it came in.
Must not: call a model, or look at anything but the messages it is given.
"""

from __future__ import annotations

from collections.abc import Sequence

from ctxlayer.core.assembly.actions import log_lines, render_actions
from ctxlayer.core.assembly.constraints import detect
from ctxlayer.core.assembly.summary import offline_summary, render_summary
from ctxlayer.core.compress.facts import Facts, extract_facts
from ctxlayer.core.compress.ledger import from_facts, render_ledger
from ctxlayer.core.prepare.model import Chunk, PreparePolicy
from ctxlayer.core.text import describe
from ctxlayer.core.tokens import Tokenizer, message_tokens
from ctxlayer.protocol import AuditEntry, Message

REASON = "compacted in a step: the conversation passed its budget"


def merge_all(many: list[Facts]) -> Facts:
    """Facts of many messages at once: one dedup per kind instead of one per message."""
    fields = Facts.__struct_fields__
    return Facts(*(tuple(dict.fromkeys(v for f in many for v in getattr(f, name)))
                   for name in fields))


def _text(summary: str, constraints: list[str], facts: Facts | None, actions: list[str],
          replaced: int, ledger_chars: int) -> str:
    """The chunk's text, as the session engine writes its summary: decided / open, the user's
    hard constraints, the action log of an agent's tool calls (newest first) and the ledger
    of facts (paths, commands, errors, tests, line numbers) not already in the summary."""
    action_text = render_actions(actions, ledger_chars // 2) if actions else ""
    ledger = render_ledger(from_facts(facts), ledger_chars, shown=summary + action_text) \
        if facts is not None else ""
    return render_summary(replaced, summary, constraints, ledger, actions=action_text)


def sizes(policy: PreparePolicy, budget: int) -> tuple[int, int]:
    """(characters of decided/open, characters of the ledger) of one chunk."""
    summary = max(64, min(policy.summary_max_tokens, int(budget * policy.summary_share)))
    ledger = max(32, min(policy.ledger_max_tokens, int(budget * policy.ledger_share)))
    return summary * policy.chars_per_token, ledger * policy.chars_per_token


def estimate(policy: PreparePolicy, budget: int) -> int:
    """Tokens a new chunk is expected to take, before it is made."""
    summary, ledger = sizes(policy, budget)
    return (summary + ledger) // policy.chars_per_token + 32


def _facts(messages: Sequence[Message], scan_chars: int) -> Facts | None:
    """Facts of the newest messages, reading at most ``scan_chars`` characters: the ledger
    shows a few hundred characters of them, so the oldest text of a huge first turn adds
    nothing but time."""
    found: list[Facts] = []
    for msg in reversed(messages):
        if scan_chars <= 0:
            break
        text = msg.content
        if msg.tool_calls:
            text += "\n" + "\n".join(f"{c.name} {c.arguments}" for c in msg.tool_calls)
        scan_chars -= len(text)
        found.append(extract_facts(text))
    found.reverse()
    return merge_all(found) if found else None


def bounded(constraints: Sequence[str], max_chars: int) -> tuple[str, ...]:
    """The user's hard constraints within ``max_chars``, oldest first (the rules a chat starts
    with are usually stated first), each at most 400 characters: a chat that states a rule in
    every message must not grow its summary past the budget."""
    out: list[str] = []
    used = 0
    for c in constraints:
        c = c if len(c) <= 400 else c[:399] + "…"
        if used + len(c) > max_chars:
            break
        out.append(c)
        used += len(c) + 3
    return tuple(out)


def _chunk_message(start: int, upto: int, text: str) -> Message:
    return Message(role="user", content=text, id=f"ctx:summary:{start}-{upto}", kind="summary")


def make_chunk(shown: Sequence[Message], originals: Sequence[Message], indices: Sequence[int],
               tokens: Sequence[int], start: int, upto: int, counter: Tokenizer,
               policy: PreparePolicy, budget: int) -> Chunk:
    """A chunk standing for ``shown`` (the messages as the result showed them; ``originals``
    are the client's, for constraints and facts), at conversation ``indices``."""
    summary_chars, ledger_chars = sizes(policy, budget)
    summary = offline_summary(list(shown), "", summary_chars)
    constraints = bounded(detect(list(originals))[0], summary_chars)
    facts = _facts(originals, policy.facts_scan_factor * ledger_chars)
    actions = tuple(log_lines(list(originals)))
    message = _chunk_message(start, upto, _text(summary, list(constraints), facts, list(actions),
                                                len(shown), ledger_chars))
    audit = tuple(
        AuditEntry(action="summarized", reason=REASON, summary=describe(m),
                   tokens_before=t, tokens_after=0, message_id=m.id or f"#{i}", index=i)
        for m, i, t in zip(shown, indices, tokens, strict=True))
    return Chunk(start=start, upto=upto, message=message,
                 tokens=message_tokens(message, counter, policy.fmt), summary=summary,
                 constraints=constraints, facts=facts, replaced=len(shown),
                 replaced_tokens=sum(tokens), audit=audit, actions=actions)


def merge_chunks(chunks: Sequence[Chunk], head: int, counter: Tokenizer, policy: PreparePolicy,
                 budget: int) -> Chunk:
    """One chunk standing for what every chunk stood for: decided/open merged newest first
    (twice one chunk's room), constraints all kept, facts merged."""
    summary_chars, ledger_chars = sizes(policy, budget)
    summary = offline_summary([], "\n".join(c.summary for c in chunks), 2 * summary_chars)
    constraints = bounded(list(dict.fromkeys(s for c in chunks for s in c.constraints)),
                          2 * summary_chars)
    facts = merge_all([c.facts for c in chunks if c.facts is not None]) or None
    actions = tuple(a for c in chunks for a in c.actions)
    replaced = sum(c.replaced for c in chunks)
    upto = chunks[-1].upto
    message = _chunk_message(head, upto, _text(summary, list(constraints), facts, list(actions),
                                               replaced, 2 * ledger_chars))
    return Chunk(start=head, upto=upto, message=message,
                 tokens=message_tokens(message, counter, policy.fmt), summary=summary,
                 constraints=constraints, facts=facts, replaced=replaced,
                 replaced_tokens=sum(c.replaced_tokens for c in chunks),
                 audit=tuple(e for c in chunks for e in c.audit), actions=actions)
