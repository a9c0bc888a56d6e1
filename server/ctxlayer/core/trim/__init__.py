"""Trimming a conversation into a token budget. The semantics, stated once:

Input: messages in conversation order, a budget (tokens the whole request may use, reply priming
included), an injected counter. Output: a TrimReport with the kept messages in order, their
exact total, and an AuditEntry for every message dropped or shortened, with its reason.

Stages, in order (both strategies):
1. enrich: attached files are embedded (the caller read them); a file attached again
   unchanged becomes a reference to its first copy.
2. orphans: a tool result whose call is not in the conversation is dropped. From here on a tool
   call and its results live and die together.
3. prune: an ephemeral message is dropped once `ephemeral_ttl` assistant turns followed it.
   Pinned messages never. Nothing is merged, so a reply never inherits its thinking's TTL.
With `rewrite_when_fits` off (provider formats: a request that fits is sent as it came),
stages 4 and 5 run only when the conversation is over the budget.
4. reasoning: <think>/<reasoning> blocks of earlier assistant turns are stripped.
5. dedup: a later copy of the same tool output or document becomes a reference to the first
   copy (cache-friendly: the prefix does not change); if the fit drops the first copy, the
   earliest surviving copy gets its content back.
Then the fit:
Shortening a message means: a tool output over `tool_output_cap` tokens becomes its outline
(JSON key paths and counts, a log's errors and key stack lines, head and tail lines); a message
making tool calls whose arguments are over that cap has their long string values outlined; any
other message has the middles of its long code/details blocks cut. It happens only when
over budget, longest first, before any history is dropped for it.
- `pipeline`: reduce (while over budget, shorten the longest messages first, skipping any that
  cannot be cut; only messages that could still be kept are candidates) then limit (keep the
  leading system block and pinned messages, fill from newest to oldest by whole groups,
  skipping a group that does not fit).
Retrieved documents are capped in number and size first, so retrieval never fills the budget
before history. Then:
- `priority`: cut P3 documents first, then
  P2 older history (truncate, then drop oldest first), then P1 recent messages; P0 (system and
  pinned) never.
Then (pipeline) the room the fit left brings back the messages it dropped whole that
stand alone (no tool call, not a result, not a document), newest first, each as its head and
tail (an outline for JSON or a log) in the room left, when at least MIN_RECLAIM tokens.
Then, with `user_first` (a format whose conversation starts with a user turn), the turns kept
before the first user message kept are dropped, a copy of what they held gets its content back
(as above), and the room they had goes back to the lone messages dropped whole that fit in it
as they are, when the question was not cut (a cut question has it first, below).
Then (both strategies), the room the fit left, when a cap's worth or more, goes back to the
tool outputs it outlined, newest first: each is outlined again from its original at a cap grown
by that room, so an outline grows with the room it has and nothing kept is dropped for it.
Then what they left goes to the tool calls whose long arguments the fit outlined (a call
is shortened by its arguments, never its text: their long string values outlined, still a JSON
object; trim/calls.py), newest first, each outlined again from its original in that room.
Then what they left goes to the code and details blocks cut to head+tail lines, newest first:
each is cut again from its original keeping as many lines at each end as the room holds.
Last, a question the fit cut is cut again from the same text to what all that left: the history
it was first sized against may have been dropped whole (a tool step, which reclaim does not
bring back), and the request went out half empty.
The newest user message (the question) is always kept: when it alone does not fit beside the
pinned content it is shortened (head and tail, an outline for JSON or a log) to what the rest
of the history leaves of the room, at least half of it, then grown to what the history kept
leaves (above); only when even MIN_QUESTION tokens of it do not fit is it
ContextError("pinned_over_budget"), naming what is fixed and the least budget it needs.
Pinned content alone over the budget raises ContextError("pinned_over_budget"). Trimming a
trimmed result changes nothing: a document already in the conversation word for word is not
added again (its audit entry says so). Shortened messages keep their ids.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import msgspec

from ctxlayer.core.errors import require_tokens
from ctxlayer.core.memo import Memo
from ctxlayer.core.text import describe
from ctxlayer.core.tokens import OPENAI_FORMAT, MessageFormat, Tokenizer
from ctxlayer.core.trim import calls, fit, priority, stages
from ctxlayer.core.trim.warm import TrimCache
from ctxlayer.core.trim.work import Work
from ctxlayer.protocol import AuditEntry, Message, Strategy

__all__ = ["TrimCache", "TrimOptions", "TrimReport", "docs_as_messages", "trim"]


class TrimOptions(msgspec.Struct, frozen=True, kw_only=True):
    strategy: Strategy = "pipeline"
    fmt: MessageFormat = OPENAI_FORMAT
    head_lines: int = 10  # kept at the start of a truncated block
    tail_lines: int = 10  # kept at its end
    tool_output_cap: int | None = None  # tokens; None: budget / 16, at least 256
    dedup_min_tokens: int = 32
    recent: int = 8  # priority: the newest messages in P1
    max_docs: int = 8  # retrieved documents kept at most
    doc_share: float = 0.1  # a document's cap as a share of the budget
    #: the newest user message is kept (shortened if it must be); off only for a caller that
    #: fits a slice of history whose question it keeps itself
    keep_question: bool = True
    #: dedup and old-reasoning stripping also when everything fits (the ctxlayer default);
    #: off for provider payloads, so that a request within its budget comes back equal
    rewrite_when_fits: bool = True
    #: a shortened tool output ends with a line naming the errors, tests, paths and lines of
    #: its cut part; off by default: a cold trim of a long chat outlines hundreds of outputs
    #: and reading the facts of each would triple its time
    name_cut_facts: bool = False
    #: the room the fit left brings back, shortened, the lone messages it dropped whole; off
    #: for a caller that decides itself what a message becomes (ctx/prepare's window)
    reclaim: bool = True
    #: the conversation must start with a user turn (a format's rule, Anthropic's: the codecs'
    #: `user_first` says when): the turns the fit would keep before the first user message
    #: are dropped by the fit, so that the room they had goes to the rest
    user_first: bool = False
    #: a call long by its arguments has them outlined (trim/calls.py); off for ctx/prepare's
    #: last resort, whose window outlines a newest call's arguments itself (`fit_calls`):
    #: there it squeezed the summaries instead (dev replay at 10%: 598 of 680 facts, 608 off)
    outline_calls: bool = True


class TrimReport(msgspec.Struct, kw_only=True):
    messages: list[Message]
    tokens: int
    budget: int
    dropped: list[AuditEntry]
    truncated: list[AuditEntry]  # truncated, compressed and deduplicated items


def docs_as_messages(docs: Sequence[str]) -> list[Message]:
    """Retrieved documents (ctx/trim `docs`) as P3 messages with daemon ids."""
    return [
        Message(role="user", content=d, id=f"ctx:doc:{k}", kind="doc", priority=3)
        for k, d in enumerate(docs)
    ]


def _with_docs(messages: list[Message], docs: Sequence[str]
               ) -> tuple[list[Message], list[AuditEntry]]:
    """Documents go just before the latest user message: volatile, so late in the prompt. A
    document already in the conversation word for word (a trimmed result trimmed again with
    the same documents) is not added twice; its entry says so."""
    if not docs:
        return messages, []
    added, repeated = [], []
    for doc in docs_as_messages(docs):
        if not _already_in(messages, doc.content):
            added.append(doc)
        else:
            repeated.append(AuditEntry(
                action="dropped", reason="already in the conversation word for word: not added "
                "again", summary=describe(doc), tokens_before=0, tokens_after=0,
                message_id=doc.id))
    last_user = next((i for i in range(len(messages) - 1, -1, -1)
                      if messages[i].role == "user"), len(messages))
    return [*messages[:last_user], *added, *messages[last_user:]], repeated


def _already_in(messages: Sequence[Message], text: str) -> bool:
    """Whether a user message holds `text` as its whole text or as whole lines of it: a
    provider format may have merged a document with the question that followed it into
    one message, whose text blocks read back joined by newlines."""
    if not text.strip():
        return False
    return any(m.role == "user" and _holds_lines(m.content, text) for m in messages)


def _holds_lines(content: str, text: str) -> bool:
    """Whether `text` is `content`, or whole lines of it (found without copying `content`)."""
    at = content.find(text)
    while at >= 0:
        end = at + len(text)
        if (at == 0 or content[at - 1] == "\n") and (end == len(content) or content[end] == "\n"):
            return True
        at = content.find(text, at + 1)
    return False


def trim(
    messages: Sequence[Message],
    budget: int,
    counter: Tokenizer,
    *,
    options: TrimOptions | None = None,
    docs: Sequence[str] = (),
    attachments: Mapping[str, str] | None = None,
    memo: Memo | None = None,
    cache: TrimCache | None = None,
) -> TrimReport:
    """`cache`, the TrimCache of this conversation's previous trims (one per conversation),
    makes a re-trim redo only the messages added since; the result is the same without it."""
    require_tokens(budget)
    options = options or TrimOptions()
    memo = memo if memo is not None else Memo()
    with_docs, repeated = _with_docs(list(messages), docs)
    msgs = stages.enrich(with_docs, attachments or {})
    w = Work(msgs, counter, options.fmt, memo, cache)
    w.dropped.extend(repeated)
    if not options.keep_question:
        w.question = None
    w.link_tool_results()
    stages.prune_ephemeral(w)
    refs: dict[int, int] = {}
    if options.rewrite_when_fits or w.total > budget:
        stages.strip_old_reasoning(w, memo)
        refs = stages.dedup(w, options.dedup_min_tokens, memo)
    priority.cap_docs(w, budget, options.max_docs, options.doc_share)
    sh = fit.Shortener(w, memo, options.head_lines, options.tail_lines,
                       options.tool_output_cap or max(256, budget // 16),
                       name_facts=options.name_cut_facts, calls=options.outline_calls)
    if options.strategy == "priority":
        priority.priority_fit(w, budget, sh, options.recent)
    else:
        fit.reduce(w, budget, sh)
        fit.limit(w, budget)
    fit.restore_orphaned_refs(w, refs, budget, sh)
    reclaiming = options.reclaim and options.strategy == "pipeline"  # priority: its own drops
    if reclaiming:
        fit.reclaim(w, budget, sh, options.user_first)
    if options.user_first:  # after reclaim, which may bring back the user turn they answer
        fit.restore_orphaned_refs(w, refs, budget, sh, user_first=True)
        # the room the leading turns had (900 tokens went out with 139) to what fits whole
        # in it, when the question was not cut: a cut question takes it first (below)
        if reclaiming and sh.question_cut is None:
            fit.reclaim(w, budget, sh, user_first=True, whole_only=True)
    fit.regrow(w, budget, sh)  # only the room nothing else needs
    calls.regrow_calls(w, budget, sh.tool_cap, memo)  # what the tool outputs left of it
    if options.reclaim:
        fit.regrow_blocks(w, budget, sh)  # what the tool outputs left of it
    fit.regrow_question(w, budget, sh)  # what the history kept left of it
    return TrimReport(messages=w.kept(), tokens=w.total, budget=budget, dropped=w.dropped,
                      truncated=w.changed)
