"""The trim engine's working state: the conversation as parallel arrays, keep-with groups, and
the audit of everything a stage did.

Stages never build new lists of messages; they mark an index dead or give it new content, and
each such change is recorded once, here, with its reason and token cost.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence

import msgspec

from ctxlayer.core.groups import ToolGroups
from ctxlayer.core.memo import Memo
from ctxlayer.core.text import describe, mention
from ctxlayer.core.tokens import MessageFormat, Tokenizer
from ctxlayer.core.trim.warm import TrimCache, remembered
from ctxlayer.protocol import AuditAction, AuditEntry, Message, ToolCall


class Work:
    """One trim in progress. `group[i]` is the index of the message that i lives and dies with
    (an assistant message with tool calls and all its results share the call's index)."""

    __slots__ = (
        "alive",
        "arguments",
        "cache",
        "calls",
        "changed",
        "content",
        "counter",
        "described",
        "dropped",
        "extra",
        "fmt",
        "group",
        "labels",
        "members",
        "memo",
        "msgs",
        "original",
        "pinned",
        "question",
        "tokens",
        "total",
    )

    def __init__(
        self, msgs: Sequence[Message], counter: Tokenizer, fmt: MessageFormat, memo: Memo,
        cache: TrimCache | None = None,
    ) -> None:
        self.msgs = list(msgs)
        self.memo = memo
        self.counter = counter
        self.fmt = fmt
        self.cache = cache
        n = len(self.msgs)
        self.content = [m.content for m in self.msgs]
        self.original = list(self.content)
        same = cache.shared(self.msgs, counter, fmt) if cache is not None else 0
        extra, tokens, arguments = (cache.extra[:same], cache.tokens[:same],
                                    cache.arguments[:same]) if same else ([], [], [])
        # tokens a message costs beyond its text: per-message overhead, tool calls and the
        # non-text parts (images, documents), which are never shortened; and its calls'
        # arguments alone, as they came (what outlining them can save: calls.py asks it of
        # every call in reach each turn, a call and a cache lookup each)
        for m in self.msgs[same:]:
            e = fmt.per_message + (m.parts_tokens or 0)
            a = 0
            for c in m.tool_calls or ():
                e += fmt.per_tool_call + counter.count(c.name)
                size = counter.count(c.arguments)
                e += size
                a += size
            extra.append(e)
            arguments.append(a)
        texts = self.content[same:]
        many = getattr(counter, "count_many", None)
        counts = many(texts) if many else [counter.count(c) for c in texts]
        tokens += [c + e for c, e in zip(counts, extra[same:], strict=True)]
        if cache is not None:
            cache.keep(self.msgs, same, counter, fmt, list(extra), list(tokens), arguments)
        self.extra, self.tokens = extra, tokens
        #: tokens of message i's calls' arguments as it came (0: it makes none); never changed
        self.arguments = arguments
        self.described = cache.column("describe") if cache is not None else None
        self.labels = cache.column("label") if cache is not None else None
        self.pinned: dict[bool, list[int]] = {}  # fixed_set's P0 indices, found once
        self.alive = [True] * n
        self.group = list(range(n))
        self.members: dict[int, list[int]] = {}
        self.dropped: list[AuditEntry] = []
        self.changed: list[AuditEntry] = []
        #: the tool calls of a message whose arguments a stage outlined (calls.py), by index
        self.calls: dict[int, list[ToolCall]] = {}
        self.total = fmt.reply_priming + sum(self.tokens)
        # the newest user message (not a retrieved document, not a summary standing for older
        # turns): the question being asked, which every strategy keeps, shortened if it must be
        self.question = next((i for i in range(n - 1, -1, -1) if self.msgs[i].role == "user"
                              and self.msgs[i].kind not in ("doc", "summary")), None)

    # --- keep-with groups -------------------------------------------------------------------

    def link_tool_results(self) -> None:
        """Tie every tool result to its call (core/groups.py); a result whose call is absent
        is dropped."""
        cache = self.cache
        since = cache.groups if cache is not None else None
        groups = ToolGroups(self.msgs, since)
        if cache is not None:
            if since is not None and len(since.lead) < len(groups.lead):
                cache.base = since
            cache.groups = groups  # read, never changed: the next turn's start from them
        self.group, self.members = groups.lead, groups.members
        for i in groups.orphans:
            self.drop(i, "orphan: the tool call this result answers is not in the conversation")

    def group_of(self, i: int) -> list[int]:
        return self.members.get(self.group[i], [i])

    def group_tokens(self, g: int) -> int:
        members = self.members.get(g)
        if members is None:  # most messages are a group of their own
            return self.tokens[g] if self.alive[g] else 0
        return sum(self.tokens[j] for j in members if self.alive[j])

    def where(self, name, test) -> list[int]:
        """The positions of the messages ``test`` (of a message alone, named ``name``) holds
        for, in order; the warm cache's for the shared prefix (TrimCache.where)."""
        if self.cache is None:
            return [i for i, m in enumerate(self.msgs) if test(m)]
        return self.cache.where(name, test)

    def facts(self, kind):
        """The warm cache's facts `kind` by position (see TrimCache.column), or None without a
        cache: for loops over every message, which read and fill them inline."""
        return None if self.cache is None else self.cache.column(kind)

    # --- changes, each recorded once ----------------------------------------------------------

    def drop(self, i: int, reason: str) -> None:
        if not self.alive[i]:
            return
        self.alive[i] = False
        self.total -= self.tokens[i]
        self.dropped.append(self._entry(i, "dropped", reason, self.tokens[i], 0))

    def drop_group(self, i: int, reason: str) -> None:
        """Drop i with everything it lives and dies with (a call and all its results)."""
        for j in self.group_of(i):
            self.drop(j, reason if j == i else f"{reason} (kept with {self._label(i)})")

    def replace(self, i: int, content: str, action: AuditAction, reason: str,
                body: int | None = None) -> int:
        """Give message i new content (of `body` tokens, counted here when not given); returns
        the tokens saved."""
        before = self.tokens[i]
        after = self.extra[i] + (self.counter.count(content) if body is None else body)
        self.content[i] = content
        self.tokens[i] = after
        self.total += after - before
        self.changed.append(self._entry(i, action, reason, before, after))
        return before - after

    def replace_calls(self, i: int, calls: list[ToolCall], action: AuditAction,
                      reason: str) -> int:
        """Give message i new tool calls (their arguments outlined): its text stays, its extra
        tokens are counted again. Returns the tokens saved."""
        saved = self._set_calls(i, calls)
        self.changed.append(self._entry(i, action, reason, self.tokens[i] + saved,
                                        self.tokens[i]))
        return saved

    def redo_calls(self, k: int, calls: list[ToolCall], reason: str) -> int:
        """Change again the calls of the message of entry k of `changed`: its one entry says
        the new size and reason. Returns the tokens it grew by."""
        entry = self.changed[k]
        grew = -self._set_calls(entry.index, calls)
        self.changed[k] = msgspec.structs.replace(entry, tokens_after=self.tokens[entry.index],
                                                  reason=reason)
        return grew

    def _set_calls(self, i: int, calls: list[ToolCall]) -> int:
        m, fmt, count = self.msgs[i], self.fmt, self.counter.count
        extra = fmt.per_message + (m.parts_tokens or 0) + sum(
            fmt.per_tool_call + count(c.name) + count(c.arguments) for c in calls)
        saved = self.extra[i] - extra
        self.calls[i] = calls
        self.extra[i] = extra
        self.tokens[i] -= saved
        self.total -= saved
        return saved

    def change(self, i: int) -> tuple:
        """What the last change of message i left (its text, cost, extra tokens, outlined calls
        and the entry that says it), for `redo_change` on a later trim."""
        return self.content[i], self.tokens[i], self.extra[i], self.calls.get(i), self.changed[-1]

    def redo_change(self, i: int, change: tuple | None) -> int:
        """Make again on message i a change a `change` of it said (None: it made none), when
        the message was then what it is now; returns the tokens saved."""
        if change is None:
            return 0
        content, after, extra, outlined, entry = change
        saved = self.tokens[i] - after
        self.content[i], self.tokens[i], self.extra[i] = content, after, extra
        if outlined is not None:
            self.calls[i] = outlined
        self.total -= saved
        self.changed.append(entry)
        return saved

    def revive(self, i: int, content: str, body: int, reason: str) -> int:
        """Bring back message i, dropped, as `content` (of `body` tokens of text): its drop
        entry becomes one `truncated` entry. Returns the tokens it takes."""
        k = next(k for k, e in enumerate(self.dropped) if e.index == i)
        before = self.dropped.pop(k).tokens_before
        after = self.extra[i] + body
        self.alive[i] = True
        self.content[i], self.tokens[i] = content, after
        self.total += after
        self.changed.append(self._entry(i, "truncated", reason, before, after))
        return after

    def undrop(self, i: int) -> int:
        """Bring back message i, dropped, as it is: its drop entry goes (nothing of it is
        cut). Returns the tokens it takes."""
        k = next(k for k, e in enumerate(self.dropped) if e.index == i)
        self.dropped.pop(k)
        self.alive[i] = True
        self.total += self.tokens[i]
        return self.tokens[i]

    def redo(self, k: int, content: str, body: int, reason: str) -> int:
        """Change again the message of entry k of `changed` (to `content`, of `body` tokens of
        text): its one entry says the new size and reason. Returns the tokens it grew by."""
        entry = self.changed[k]
        i = entry.index
        after = self.extra[i] + body
        grew = after - self.tokens[i]
        self.content[i], self.tokens[i] = content, after
        self.total += grew
        self.changed[k] = msgspec.structs.replace(entry, tokens_after=after, reason=reason)
        return grew

    def _label(self, i: int) -> str:
        """How a reason names message i (text.mention), a warm fact: it reads message i and
        the messages before it, all in the prefix the cache keeps facts for, so it holds while
        i's text is the very string (a re-trim of 1M tokens named the same 30 dropped tool
        steps every turn, parsing their calls' arguments: half of `limit`)."""
        return remembered(self.labels, i, self.msgs[i].content, self._mention)

    def _mention(self, i: int) -> str:
        return mention(self.msgs, i)

    def _entry(self, i: int, action: AuditAction, reason: str, before: int, after: int):
        m = self.msgs[i]
        described = self.described
        hit = described[i] if described is not None else None
        # keyed by the message's own text: a summary describes the message as it came
        if hit is not None and hit[0] is m.content:
            summary_text = hit[1]
        else:
            # everything describe reads: two turns "Let me check." calling run_tests with other
            # arguments were one key, and the audit named the first one's file for both
            key = (m.role, m.kind, m.tool_call_id, m.content,
                   tuple((c.name, c.arguments) for c in m.tool_calls) if m.tool_calls else None,
                   tuple(m.parts) if m.parts else None, m.parts_tokens)
            summary_text = self.memo.get("describe", key, lambda: describe(m))
            if described is not None:
                described[i] = (m.content, summary_text)
        return AuditEntry(
            action=action, reason=reason, summary=summary_text, tokens_before=before,
            tokens_after=after, message_id=m.id, index=i,
        )

    # --- result -----------------------------------------------------------------------------

    def kept(self) -> list[Message]:
        calls = self.calls
        if not calls:  # the dead skipped in C: a warm re-trim of a long chat drops half of it
            return [m if c is m.content else msgspec.structs.replace(m, content=c)
                    for m, c in itertools.compress(zip(self.msgs, self.content, strict=True),
                                                   self.alive)]
        out = []
        for i, m in enumerate(self.msgs):
            if self.alive[i]:
                c = self.content[i]
                m = m if c is m.content else msgspec.structs.replace(m, content=c)
                out.append(m if i not in calls else msgspec.structs.replace(
                    m, tool_calls=calls[i]))
        return out
