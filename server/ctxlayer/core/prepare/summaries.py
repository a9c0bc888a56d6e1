"""Summary chunks of a live conversation: making one from the messages a step replaces, and
merging every chunk into one when together they pass their share of the room the system
prompt and the question leave of the budget.

The text is the session engine's offline summary (decided / open, the user's hard constraints
verbatim, the facts ledger), so a conversation reads the same whichever way it came in.
Must not: call a model, or look at anything but the messages it is given.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import NamedTuple

from ctxlayer.core.assembly.actions import log_lines, render_actions
from ctxlayer.core.assembly.constraints import detect
from ctxlayer.core.assembly.summary import (
    ASK_CHARS,
    offline_summary,
    own_words,
    render_summary,
)
from ctxlayer.core.compress.facts import Facts, Named, extract_facts
from ctxlayer.core.compress.ledger import (
    Ledger,
    add_messages,
    merge_ledgers,
    render_ledger,
    text_of,
)
from ctxlayer.core.prepare.model import Chunk, PreparePolicy
from ctxlayer.core.text import describe
from ctxlayer.core.tokens import Tokenizer, message_tokens
from ctxlayer.protocol import AuditEntry, Message

#: tokens each part of a chunk gets at the least, however small the room (but never more than
#: a quarter of the room each): the ledger most, as in a session's summary, for it is the
#: densest in exact values; then the last few calls, so an agent does not run them again; then
#: decided / open. With the action log's least above the ledger's, a small room's chunk was
#: mostly calls and sentences, and what the rest of a chat needed was in its ledger, unshown
#: (bench/realchats, dev, at 10%: 73 needed facts in assemble's summary and not in prepare's
#: request, 65 of them in a chunk's ledger)
LEDGER_MIN = 192
ACTIONS_MIN = 64
SUMMARY_MIN = 32
REASON = "compacted in a step: the conversation passed its budget"


def _text(summary: str, constraints: list[str], facts: Ledger | None, actions: list[str],
          replaced: int, size: Sizes) -> str:
    """The chunk's text, as the session engine writes its summary: decided / open, the user's
    hard constraints, the action log of an agent's tool calls (newest first) and the ledger
    of facts (paths, commands, errors, tests, line numbers) not already in the summary."""
    action_text = render_actions(actions, size.actions) if actions else ""
    ledger = render_ledger(facts, size.ledger, shown=summary + action_text) \
        if facts is not None else ""
    return render_summary(replaced, summary, constraints, ledger, actions=action_text)


def _beside_empty_ledger(facts: Ledger | None, size: Sizes) -> int:
    """The characters the decided / open part gets more when the chunk's facts fill under a
    quarter of the ledger's part: its own size again. A chat of prose names few facts (paths,
    commands, errors), and a chunk of four answered questions kept the newest two answers in
    its 300 characters beside an empty ledger of 3,700. Given all the ledger leaves unused,
    or up to its own size again whatever the ledger held, chunks grew, merged more often,
    and the dev replay kept 4 facts fewer of 680 at a 10% budget."""
    used = len(render_ledger(facts, size.ledger)) if facts is not None else 0
    return size.summary if used < size.ledger // 4 else 0


class Sizes(NamedTuple):
    """Characters of one chunk's parts."""

    summary: int  # decided / open
    ledger: int
    actions: int

    def times(self, k: int) -> Sizes:
        return Sizes(*(k * v for v in self))

    def scaled(self, want: int, usual: int) -> Sizes:
        """The parts in proportion for ``want`` tokens where they make ``usual``, each at
        least 32 characters."""
        return Sizes(*(max(32, int(v * want / usual)) for v in self))


def sizes(policy: PreparePolicy, room: int) -> Sizes:
    """The characters of one chunk's parts: shares of ``room`` (the tokens the system prompt
    and the question leave of the budget), each within its bounds."""
    def part(share: float, most: int, least: int) -> int:
        return max(min(least, room // 4), min(most, int(room * share))) * policy.chars_per_token

    return Sizes(part(policy.summary_share, policy.summary_max_tokens, SUMMARY_MIN),
                 part(policy.ledger_share, policy.ledger_max_tokens, LEDGER_MIN),
                 part(policy.actions_share, policy.actions_max_tokens, ACTIONS_MIN))


def least_room(policy: PreparePolicy, room: int) -> int:
    """The tokens the chunks together may grow to whatever room their step leaves:
    ``summaries_min_share`` of ``room``, but not past what one chunk's parts may take at most
    (a big budget keeps its room for the messages, and its chunks rarely merge)."""
    most = policy.summary_max_tokens + policy.ledger_max_tokens + policy.actions_max_tokens
    return min(int(policy.summaries_min_share * room), most)


def estimate(policy: PreparePolicy, room: int) -> int:
    """Tokens a new chunk is expected to take, before it is made."""
    return sum(sizes(policy, room)) // policy.chars_per_token + 32


def _facts(messages: Sequence[Message], indices: Sequence[int], scan_chars: int,
           known: Mapping[int, Facts], named: Mapping[int, Named]) -> Ledger | None:
    """The ranked ledger of the newest messages, reading at most ``scan_chars`` characters:
    the ledger shows a few hundred characters of them, so the oldest text of a huge first turn
    adds nothing but time. ``known``: facts already read from some of them (by conversation
    index), ahead of need; ``named``: their `named_facts`, where an outline read those."""
    read: list[Message] = []
    at: list[int] = []
    limit = scan_chars
    for msg, i in zip(reversed(messages), reversed(indices), strict=True):
        if scan_chars <= 0:
            break
        scan_chars -= len(msg.content) + sum(len(c.arguments) for c in msg.tool_calls or ())
        read.append(msg)
        at.append(i)
    read.reverse()
    at.reverse()
    if not read:
        return None
    # `in`, not `or`: a message read ahead that names nothing has empty (falsy) facts
    extracted = [known[i] if i in known else read_facts(m, named.get(i))
                 for m, i in zip(read, at, strict=True)]
    # the commands a user named in the older turns ("please look at pytest -k retry") are
    # asked for, however old: their words only, a bounded further read (no tool output)
    older, budget = [], 4 * limit
    for msg in reversed(messages[:len(messages) - len(read)]):
        if budget <= 0:
            break
        if msg.role == "user" and msg.kind not in ("toolOutput", "doc"):
            budget -= len(msg.content)
            older.append(msg)
    older.reverse()
    return add_messages(None, [*older, *read], [Facts()] * len(older) + extracted)


def read_facts(m: Message, named: Named | None = None) -> Facts:
    """`extract_facts` of a message; ``named``, the `named_facts` of its text when an outline
    read them (a message without calls: its text is all they were read from)."""
    return extract_facts(text_of(m), None if m.tool_calls else named)


def warm(messages: Sequence[Message], indices: Sequence[int], known: Mapping[int, Facts],
         max_chars: int, named: Mapping[int, Named] | None = None) -> dict[int, Facts]:
    """Facts of the messages at ``indices`` not known yet, oldest first, reading at most
    ``max_chars`` characters: what the next step will summarize, read ahead of need."""
    out: dict[int, Facts] = {}
    for i in indices:
        if max_chars <= 0:
            break
        if i in known:
            continue
        m = messages[i]
        out[i] = read_facts(m, (named or {}).get(i))
        max_chars -= len(text_of(m))
    return out


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


#: an assistant reply that only acknowledges what it was shown ("Ok.", "Ok, I won't try and
#: edit those files without asking first."): the user turn before it is context the client
#: injected (a repo map, the files added to the chat), not the user asking or deciding
_ACK = re.compile(r"^\W*(?:ok(?:ay)?|understood|got it|sure|noted)\b", re.IGNORECASE)
_ACK_WORDS = 16
#: a user turn telling the model to disregard what came before it (aider's "I switched to a new
#: code base. Please don't consider the above files"): the turns before it were examples
_DISREGARD = re.compile(r"\b(?:don'?t|do not|never) (?:consider|use|look at|edit) the above\b",
                        re.IGNORECASE)


#: examples come first: a disregard further into a chat is the user changing their mind
EXAMPLES_WITHIN = 12


def injected(messages: Sequence[Message], indices: Sequence[int]
             ) -> tuple[set[int], set[int]]:
    """(context, examples): positions of the turns a client injected rather than the user
    said. ``context``: a user turn the next assistant turn only acknowledges, and that reply,
    and a user turn that is all a client's wrapped context (Codex's `<environment_context>`:
    `own_words`); ``examples``: everything before a user turn among the conversation's first
    EXAMPLES_WITHIN that says to disregard it, and that turn."""
    context: set[int] = set()
    examples: set[int] = set()
    for k, (m, i) in enumerate(zip(messages, indices, strict=True)):
        if m.role == "user" and m.content.strip() and not own_words(m.content).strip():
            context.add(k)
        if m.role == "assistant" and not m.tool_calls and _ACK.match(m.content) \
                and len(m.content.split()) <= _ACK_WORDS and k and messages[k - 1].role == "user":
            context.update((k - 1, k))
        if m.role == "user" and i < EXAMPLES_WITHIN and _DISREGARD.search(m.content):
            examples.update(range(k + 1))
    return context, examples


def _examples_said(n: int) -> str:
    """What a chunk says of the client's example exchanges it stands for: left out of its
    summary and ledger (they are no one's work), a chunk of them alone was its header and
    nothing else (aider's six SEARCH/REPLACE examples, the model reading an empty summary)."""
    return (f"({n} of these messages were the example exchanges the client sends before "
            f"every chat, showing how to answer: not the user's work, left out.)")


def as_read(shown: Message, original: Message) -> Message:
    """What a summary reads of a message: as the result showed it, an outline keeping its head
    and tail and naming the facts of its cut part (read whole, the originals kept 4 fewer of
    685 facts on the dev replay at a 10% budget, no more at 25%), but the original when its
    text was shown as nothing beside its parts: an outline kept from before
    `shorten_message` kept the text beside a message's parts had cut the answer beside a
    thinking block or a web search's results to "", and the summary listed the question it
    answered as open, the answer nowhere. (A call's few words cut for its arguments are read
    as shown: read whole, they lost a fact at 10% on the dev replay.)"""
    if shown.content.strip() or not original.content.strip() or not original.parts:
        return shown
    return original


def make_chunk(shown: Sequence[Message], originals: Sequence[Message], indices: Sequence[int],
               tokens: Sequence[int], start: int, upto: int, counter: Tokenizer,
               policy: PreparePolicy, room: int, want: int = 0,
               known: Mapping[int, Facts] | None = None, written: str | None = None,
               writer: str = "offline", named: Mapping[int, Named] | None = None,
               read: dict[str, list[tuple[int, str]]] | None = None,
               task_chars: int = ASK_CHARS, whole: Sequence[int] | None = None) -> Chunk:
    """A chunk standing for ``shown`` (the messages as the result showed them; ``originals``
    are the client's, for constraints and facts), at conversation ``indices``; its parts
    scaled to about ``want`` tokens when that is given and not their shares of ``room``.
    ``written``: a model's decided / open part (``writer`` names it), cut to that part's size;
    the constraints, the action log and the ledger are made here all the same, so a fact it
    left out is still beside it (as with a client's ctx/summarize answer). ``read``: the
    offline summary's sentences by text, kept across the chunks one step writes.
    ``task_chars``: what the first ask keeps (the chat's first chunk: its task, a paragraph).
    ``whole``: the originals' tokens (``tokens`` when None), which the audit names: the
    message ctx/restore gives back, not an outline a step made of it first (a 735-line log
    outlined then summarized in one step was audited as its outline's 37 lines, 830 tokens,
    its own 19.5k nowhere)."""
    known = known or {}
    size = sizes(policy, room)
    usual = estimate(policy, room)
    if want > usual:
        size = Sizes(*(int(v * want / usual) for v in size))
    elif 0 < want < usual:  # the chunks' room is almost taken (`chunk_least`)
        size = size.scaled(want, usual)
    # what the client injected (examples, acknowledged context) is not the user's decisions,
    # open items or rules; examples name no facts of the work either
    context, examples = injected(originals, indices)
    said = [as_read(m, originals[k]) for k, m in enumerate(shown)
            if k not in context and k not in examples]
    keep = [k for k in range(len(originals)) if k not in examples]
    facts = _facts([originals[k] for k in keep], [indices[k] for k in keep],
                   policy.facts_scan_factor * size.ledger, known, named or {})
    summary = (offline_summary(said, "", size.summary + _beside_empty_ledger(facts, size), read,
                               task_chars=task_chars)
               if written is None
               else _cut(written.strip(), size.summary))
    if examples:
        summary = f"{_examples_said(len(examples))}\n{summary}".strip()
    constraints = bounded(detect([m for k, m in enumerate(originals)
                                  if k not in context and k not in examples])[0], size.summary)
    actions = tuple(log_lines(list(originals)))
    message = _chunk_message(start, upto, _text(summary, list(constraints), facts, list(actions),
                                                len(shown), size))
    audit = tuple(
        AuditEntry(action="summarized", reason=f"{REASON}; summary written {writer}",
                   summary=describe(m),
                   tokens_before=t, tokens_after=0, message_id=m.id or f"#{i}", index=i)
        for m, i, t in zip(originals, indices, tokens if whole is None else whole, strict=True))
    return Chunk(start=start, upto=upto, message=message,
                 tokens=message_tokens(message, counter, policy.fmt), summary=summary,
                 constraints=constraints, facts=facts, replaced=len(shown),
                 replaced_tokens=sum(tokens), audit=audit, actions=actions, writer=writer)


#: tokens of a message's label and separators in a summary's transcript
TRANSCRIPT_LABEL = 8


def fit_shown(shown: Sequence[Message], tokens: Sequence[int], room: int,
              policy: PreparePolicy) -> tuple[list[Message], int]:
    """``shown`` (what a model is asked to summarize, ``tokens`` each) within ``room`` tokens,
    for a summarizing model whose window is smaller than the part of the chat a step takes
    (a 1M-window chat summarized by a 200k model): the newest messages whole while they fit
    in what a quarter of the room, kept for the older ones' offline summary, leaves; the
    older ones as that summary, one message before them (their facts and calls are in the
    chunk's ledger and action log all the same). Returns (the messages, how many of the
    oldest that summary stands for: 0 when all fit)."""
    if sum(tokens) + TRANSCRIPT_LABEL * len(shown) <= room:
        return list(shown), 0
    part = max(64, room // 4)
    left, k = room - part, len(shown)
    while k > 0 and tokens[k - 1] + TRANSCRIPT_LABEL <= left:
        left -= tokens[k - 1] + TRANSCRIPT_LABEL
        k -= 1
    text = offline_summary(list(shown[:k]), "", part * policy.chars_per_token)
    note = Message(role="user", kind="summary", content=(
        f"[The {k} earlier messages, as their extractive summary: the whole of them does not "
        f"fit your window]\n{text or '(nothing decided or open in them)'}"))
    return [note, *shown[k:]], k


def _cut(text: str, max_chars: int) -> str:
    return text if len(text) <= max_chars else text[:max_chars].rstrip() + "…"


def merge_chunks(chunks: Sequence[Chunk], head: int, counter: Tokenizer, policy: PreparePolicy,
                 room: int, want: int = 0) -> Chunk:
    """One chunk standing for what every chunk stood for: decided/open merged newest first
    (twice one chunk's room, or about ``want`` tokens when given), constraints all kept, facts
    merged."""
    size = sizes(policy, room).times(2)
    if want > 0:
        size = size.scaled(want, 2 * estimate(policy, room))
    summary = offline_summary([], "\n".join(c.summary for c in chunks), size.summary)
    constraints = bounded(list(dict.fromkeys(s for c in chunks for s in c.constraints)),
                          size.summary)
    ledgers = [c.facts for c in chunks if c.facts is not None]
    facts = merge_ledgers(ledgers) if ledgers else None
    actions = tuple(a for c in chunks for a in c.actions)
    replaced = sum(c.replaced for c in chunks)
    upto = chunks[-1].upto
    message = _chunk_message(head, upto, _text(summary, list(constraints), facts, list(actions),
                                               replaced, size))
    return Chunk(start=head, upto=upto, message=message,
                 tokens=message_tokens(message, counter, policy.fmt), summary=summary,
                 constraints=constraints, facts=facts, replaced=replaced,
                 replaced_tokens=sum(c.replaced_tokens for c in chunks),
                 audit=tuple(e for c in chunks for e in c.audit), actions=actions)
