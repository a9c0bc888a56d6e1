"""The rolling summary's parts that never depend on a model.

The user's hard constraints are found in constraints.py and kept verbatim in every summary,
whatever a summarizer returns, so a weak summarizer cannot lose them.
- ``offline_summary``: the extractive summary used when no client summarizer answers (or
  none was declared): what the user asked in their own words, sentences with decision cues,
  open questions and exact details, newest kept first when space runs out, merged with the
  previous summary.
- ``off_topic``: whether a client's summary shares almost nothing with the text it replaces;
- ``refusal``: whether a summarizer's answer opens as a refusal to summarize;
- ``SUMMARY_INSTRUCTIONS`` and ``render_summary``: what a client summarizer is asked and how
  the summary message reads (decided/open, hard constraints, action log, facts ledger).
Must not: call a model or know about the wire beyond Message.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from ctxlayer.core.compress.ledger import CUT_HEAD, holds
from ctxlayer.core.compress.tool_output import OMITTED
from ctxlayer.core.text import normalized_hash, split_lines
from ctxlayer.protocol import Message

_SENTENCE_END = re.compile(r"(?<=[.!?])\s+|(?<=[。！？])|\n+")
_DECIDED = re.compile(
    r"\b(decided|decision|agreed|we will|we'll|going with|chose|chosen|settled|use|using|"
    r"fixed|done|resolved|confirmed|switched to|implemented|merged)\b|决定|确认|已完成|采用",
    re.IGNORECASE,
)
#: an agent narrating its next move ("Let me use the test runner:", "Now I'll check why"):
#: neither a decision nor an open question, whatever cue words it holds
_PLAN = re.compile(
    r"(?:(?:now|first|next|then|ok|okay|great|good|perfect|so)[,!.]?\s+)?"
    r"(?:let me|let's|let us|i'll|i will|i'm going to|i am going to)\b",
    re.IGNORECASE,
)
_OPEN = re.compile(
    r"\?|？|\b(todo|open question|not yet|still|pending|unclear|unknown|need to|next step|"
    r"to do|later|investigate|why)\b|待定|未决|还没|需要",
    re.IGNORECASE,
)

#: the offline summary reads at most this many times its size of the newest text (at least
#: SCAN_MIN_CHARS)
SCAN_FACTOR = 40
SCAN_MIN_CHARS = 64_000
SCAN_MAX_CHARS = 240_000  # and never more than this (the newest ~60k tokens)

SUMMARY_INSTRUCTIONS = (
    "Summarize the conversation below for the assistant's own memory, replacing it in the "
    "context. Write three bullet lists and nothing else:\n"
    "Decided: decisions and conclusions reached.\n"
    "Open: questions and tasks still open.\n"
    "Hard constraints: conditions the user stated that must not change.\n"
    "Keep every file path, command, error code, line number, identifier and number exactly. "
    "If a previous summary is given first, update it rather than repeating it."
)


def sentences(text: str) -> list[str]:
    """Sentences split at . ! ? followed by a space, at 。！？ and at line ends."""
    return [s.strip() for s in _SENTENCE_END.split(text) if len(s.strip()) > 3]


#: a token that names something exact: letters and digits mixed, a path, a name with an
#: underscore or inner capitals, an option, a number of two digits or more
_SPECIFIC = re.compile(
    r"\b(?:[A-Za-z]+[-_#./:=]?\d|\d+[-_#./:=]?[A-Za-z]|\w+/\w|[A-Za-z]\w*_\w|[a-z]+[A-Z]|"
    r"\d{2,}\b)|(?<!\w)--?[a-z][\w-]+"
)
#: what every match of _OPEN / _DECIDED holds, lowercased, when the text is ASCII (so a text
#: without any is not searched: the patterns, case-blind and starting with ``\b``, are tried at
#: every character, a sixth of the first assembly of a 1M-token session)
_OPEN_WORDS = ("?", "todo", "open question", "not yet", "still", "pending", "unclear", "unknown",
               "need to", "next step", "to do", "later", "investigate", "why")
_DECIDED_WORDS = ("decided", "decision", "agreed", "we will", "we'll", "going with", "chose",
                  "settled", "use", "using", "fixed", "done", "resolved", "confirmed",
                  "switched to", "implemented", "merged")


def _cued(rx: re.Pattern[str], words: tuple[str, ...], text: str) -> bool:
    """Whether ``rx`` finds anything in ``text``; an ASCII text with none of ``words`` is not
    searched (each is in every match, lowercased: the answer is the same)."""
    if text.isascii():
        lowered = text.lower()
        if not any(w in lowered for w in words):
            return False
    return rx.search(text) is not None


def _is_open(text: str) -> bool:
    return _cued(_OPEN, _OPEN_WORDS, text)


def _is_decided(text: str) -> bool:
    return _cued(_DECIDED, _DECIDED_WORDS, text)


_PARTS = ("Asked", "Decided", "Open", "Details")
#: what a client wraps around the context it adds to a user turn (Claude Code's CLAUDE.md, its
#: git status, its reminders; Codex's `<environment_context>`, a user turn of its own before
#: the task): not the user's words. Read as theirs, its lines became the summary's "Decided"
#: items and the user's own task, beside them, was left out; Codex's was the chunk's "Asked".
_INJECTED = re.compile(r"<(system-reminder|environment_context)>.*?(?:</\1>|\Z)", re.DOTALL)
_INJECTED_TAGS = ("<system-reminder>", "<environment_context>")
#: characters of a user turn's own words an ask keeps: the task an agent was given, which a
#: resumed session's next compaction summarized away when it named no cue word
ASK_CHARS = 200
#: characters of the first ask (the chat's task) kept whole, whatever the summary's size: a
#: paragraph. Claude Code's first question, summarized once a second one came, went out as
#: its first 80 characters at a budget of 2,000 (a quarter of the part), 200 at any budget
TASK_CHARS = 800


def first_ask_chars(opening: bool) -> int:
    """What the first ask of a summary keeps: `TASK_CHARS` when the summary opens the chat
    (``opening``: it stands for the chat's first messages, its first ask is the task), else
    `ASK_CHARS`. The one cap of both: a live chat's first chunk (prepare) and a session's first
    compaction (assemble), which kept the task to 200 characters where prepare kept 800."""
    return TASK_CHARS if opening else ASK_CHARS
#: the share of the summary the asks may take at most (the first one and the newest)
ASK_SHARE = 4
#: what ctxlayer itself wrote into a shortened message: its omission markers ("[... 52 lines
#: omitted ...]" was a summary's detail) and the line naming the facts of a cut part
_OURS = re.compile(f"{OMITTED.pattern}|^{re.escape(CUT_HEAD)}[^\\n]*\\]$", re.MULTILINE)
_MARKS = frozenset("0123456789/_-#")
_INNER_CAPITAL = re.compile(r"[a-z][A-Z]")


def _maybe_specific(text: str) -> bool:
    """A cheap necessary condition of _SPECIFIC (most prose has none of these characters)."""
    return not _MARKS.isdisjoint(text) or _INNER_CAPITAL.search(text) is not None


def offline_summary(messages: list[Message], previous: str, max_chars: int,
                    read: dict[str, list[tuple[int, str]]] | None = None,
                    asked: Sequence[Message] = (), task_chars: int = ASK_CHARS) -> str:
    """An extractive summary of ``messages`` in four parts, merged with the previous one:
    Asked (the user's own words opening each of their turns, a client's injected context
    aside: the first ask and the newest within a quarter of ``max_chars``), Decided (sentences
    with decision cues), Open (questions, things still to do) and Details (sentences that name
    something exact: a position, a code, a command, a number), decided and open within a third
    of what the asks leave each and the details in what they leave, the newest kept when
    space runs out. A part with nothing in it is left out ("Decided: - (none)" three times
    was a small summary's tenth, and said nothing).

    Newest first: messages are read from the end and reading stops once every part is full or
    ``SCAN_FACTOR`` times ``max_chars`` of text have been read (a chat without cues would
    otherwise be read whole), so the cost is bounded by the summary's size, not by the
    history's. Tool outputs are not read (the action log and the ledger cover them); facts and
    hard constraints are extracted elsewhere, from every replaced message. ``read``: the
    sentences each text kept, by text, from an earlier call; this call adds its own (a live
    step that writes its chunk again over fewer messages reads none of them twice).
    ``asked``: messages after ``messages`` read for their asks alone (a session's summary
    shows its latest request verbatim, not its sentences: an agent's task, the request of
    its first compaction, then entered no summary and the next one lost it).
    ``task_chars``: what the first ask keeps of a message (the chat's task, read by a caller
    that knows it is: `TASK_CHARS`); one of ``previous`` keeps what it kept.
    """
    previous_parts = _split_previous(previous)
    was = previous_parts[0]
    asked = _first_and_newest(_dedup(was + _asks([*messages, *asked])),
                              max(80, max_chars // ASK_SHARE),
                              TASK_CHARS if was and len(was[0]) > ASK_CHARS else task_chars)
    max_chars = max(0, max_chars - sum(len(x) + 3 for x in asked))
    third = max(80, max_chars // 3)
    found: list[list[str]] = [[], [], []]
    sizes = [0, 0, 0]
    unread = min(SCAN_MAX_CHARS, max(SCAN_MIN_CHARS, SCAN_FACTOR * max_chars))
    for msg in reversed(messages):
        if (sizes[0] >= third and sizes[1] >= third and sizes[2] >= max_chars) or unread <= 0:
            break
        if msg.role not in ("user", "assistant") or msg.kind == "summary":
            continue
        unread -= len(msg.content)
        kept = read.get(msg.content) if read is not None else None
        if kept is None:
            kept = _kept_sentences(msg.content)
            if read is not None:
                read[msg.content] = kept
        for part, flat in kept:
            found[part].append(flat)
            sizes[part] += len(flat) + 3
    said = "\n".join(asked)  # a sentence an ask holds already is not said twice
    merged = [[x for x in _dedup(prev + new[::-1]) if x not in said]
              for prev, new in zip(previous_parts[1:], found, strict=True)]
    decided = _newest_within(merged[0], third)
    open_ = _newest_within(merged[1], third)
    # details take what decided and open leave
    left = max_chars - sum(len(x) + 3 for x in decided + open_)
    details = _newest_within(merged[2], max(third, left))
    return "\n".join(_section(t, items) for t, items in zip(
        _PARTS, (asked, decided, open_, details), strict=True) if items)


def own_words(content: str) -> str:
    """A user turn's text without the context a client injected into it (`_INJECTED`)."""
    return _INJECTED.sub(" ", content) if any(t in content for t in _INJECTED_TAGS) \
        else content


def _asks(messages: list[Message]) -> list[str]:
    """The opening of each user turn in the user's own words, oldest first: the task and the
    questions, whatever cue words they hold (or none: "Check the build log.")."""
    out = []
    for msg in messages:
        if msg.role != "user" or msg.kind in ("summary", "doc", "toolOutput", "rule", "memory"):
            continue
        head = own_words(msg.content)[:4 * TASK_CHARS]
        if "omitted ...]" in head or CUT_HEAD in head:
            head = _OURS.sub(" ", head)
        flat = " ".join(head.split())
        if flat:
            # past TASK_CHARS: longer than any ask keeps whole
            out.append(flat if len(flat) <= TASK_CHARS else flat[:TASK_CHARS] + "…")
    return out


def repeats(text: str, ask: str) -> bool:
    """Whether ``text`` (flattened) says ``ask`` again, whole: not as the start or the end of a
    longer word or number ("Fix issue #12" does not repeat "Fix issue #1", nor "q19" "q1": a
    substring test left those asks out). An ask cut to its head ("…") needs its head only."""
    head = ask.removesuffix("…")
    if head != ask:
        at = text.find(head)
        while at > 0 and (text[at - 1].isalnum() or text[at - 1] == "_"):
            at = text.find(head, at + 1)
        return at >= 0
    return holds(text, ask) >= 0


def without_asks_in(summary: str, text: str) -> str:
    """``summary`` without the asks ``text`` repeats (a session's summary shows its latest
    request verbatim beside them: at its first compaction that request is its only ask, said
    twice)."""
    if "Asked:\n" not in summary or not text:
        return summary
    flat = " ".join(text.split())
    lines, out, asking = summary.split("\n"), [], False
    for line in lines:
        if line == "Asked:":
            asking = True
        elif asking and line.startswith("- "):
            if line[2:] and repeats(flat, line[2:]):
                continue
        else:
            asking = False
        out.append(line)
    if out and out[0] == "Asked:" and (len(out) == 1 or not out[1].startswith("- ")):
        out = out[1:]
    return "\n".join(out)


_TASK_AT = "Asked:\n- "


def split_task(summary: str) -> tuple[str, str]:
    """(the first ask of ``summary``'s Asked part, ``summary`` without it): an agent's task,
    which a summary sizes apart from the rest (cut with the rest, it was the first thing a
    shrinking summary lost, the ledger's line numbers kept). ("", summary) when none."""
    if not summary.startswith(_TASK_AT):
        return "", summary
    end = summary.find("\n", len(_TASK_AT))
    if end < 0:
        return summary[len(_TASK_AT):], ""
    rest = summary[end + 1:]
    return summary[len(_TASK_AT):end], ("Asked:\n" + rest if rest.startswith("- ") else rest)


def with_task(task: str, rest: str) -> str:
    """``rest`` (a summary, maybe cut) with ``task`` as the first ask of its Asked part."""
    if not task:
        return rest
    if rest.startswith("Asked:\n"):
        rest = rest[len("Asked:\n"):]
    return _TASK_AT + task + ("\n" + rest if rest else "")


def _first_and_newest(items: list[str], max_chars: int, first_chars: int) -> list[str]:
    """The first of ``items`` (an agent's task) whole when it is the chat's task of at most
    ``first_chars`` (past `ASK_CHARS`), whatever ``max_chars``; else its head, up to
    `ASK_CHARS` and ``max_chars`` (whole, a long task left the part empty at a small
    budget; an issue's text of thousands of characters, kept to `TASK_CHARS`, cost 3 of 680
    facts on the dev replay at a 10% budget); and the newest after it, each up to
    `ASK_CHARS`, within what it leaves of ``max_chars``."""
    if not items:
        return []
    first = items[0] if ASK_CHARS < first_chars and len(items[0]) <= first_chars \
        else _head(items[0], min(ASK_CHARS, max(2, max_chars - 3)))
    rest = [_head(x, ASK_CHARS) for x in items[1:]]
    return [first, *_newest_within(rest, max_chars - len(first) - 3)]


def _head(ask: str, most: int) -> str:
    return ask if len(ask) <= most else ask[:most - 1].rstrip() + "…"


def _kept_sentences(content: str) -> list[tuple[int, str]]:
    """(part, sentence) of the sentences of one message a summary may keep, newest first:
    part 0 decided, 1 open, 2 details."""
    text = own_words(content)
    if "omitted ...]" in text or CUT_HEAD in text:
        text = _OURS.sub(" ", text)
    if not (_maybe_specific(text) or _is_open(text) or _is_decided(text)):
        return []  # no sentence of it can be kept: not split
    out: list[tuple[int, str]] = []
    for sentence in reversed(sentences(text)):
        flat = " ".join(sentence.split())
        if len(flat) > 240:
            flat = flat[:239] + "…"
        plan = _PLAN.match(flat) is not None
        if not plan and _is_open(flat):
            out.append((1, flat))
        elif not plan and _is_decided(flat):
            out.append((0, flat))
        elif _maybe_specific(flat) and _SPECIFIC.search(flat):
            out.append((2, flat))
    return out


def _split_previous(previous: str) -> tuple[list[str], list[str], list[str], list[str]]:
    parts: dict[str, list[str]] = {title: [] for title in _PARTS}
    target = None
    for line in split_lines(previous):
        title = line.rstrip(":")
        if line.endswith(":") and title in parts:
            target = parts[title]
        elif line.startswith("- ") and target is not None and line[2:] != "(none)":
            target.append(line[2:])
    return parts["Asked"], parts["Decided"], parts["Open"], parts["Details"]


def _dedup(items: list[str]) -> list[str]:
    seen: set[str] = set()
    out = []
    for item in items:
        key = normalized_hash(item)
        if key not in seen:
            seen.add(key)
            out.append(item)
    return out


def _newest_within(items: list[str], max_chars: int) -> list[str]:
    kept: list[str] = []
    used = 0
    for item in reversed(items):
        if used + len(item) + 3 > max_chars:
            break
        kept.append(item)
        used += len(item) + 3
    kept.reverse()
    return kept


def _section(title: str, items: list[str]) -> str:
    return f"{title}:\n" + ("\n".join(f"- {i}" for i in items) if items else "- (none)")


_WORD = re.compile(r"[^\W\d_]{4,}")
#: of a client summary's words, at least this share must occur in the text it replaces
MIN_OVERLAP = 0.15
#: the newest characters of the replaced text read for that check
OVERLAP_SCAN_CHARS = 400_000


def off_topic(summary: str, messages: list[Message]) -> float | None:
    """The share of the summary's words found in ``messages`` when under MIN_OVERLAP (the
    summary is about something else), else None. Words: four letters or more, any case."""
    words = {w.lower() for w in _WORD.findall(summary)} - {"decided", "open", "none", "hard",
                                                           "constraints"}
    if not words:
        return 0.0
    vocab: set[str] = set()
    left = OVERLAP_SCAN_CHARS
    for msg in reversed(messages):
        if left <= 0:
            break
        text = msg.content[-left:]
        left -= len(text)
        vocab.update(w.lower() for w in _WORD.findall(text))
        for call in msg.tool_calls or ():
            vocab.update(w.lower() for w in _WORD.findall(call.arguments))
    share = len(words & vocab) / len(words)
    return share if share < MIN_OVERLAP else None


#: how a model's refusal opens ("I'm sorry, but I can't help with summarizing this
#: conversation about the retry queue"): the topic's words are there, so the off-topic check
#: lets it by, but it is no summary. A summary opens with what was decided, never with these.
#: Only spaces and emphasis may come before: a summary may open with a quote or a bullet of
#: what someone could not do ('"I can't log in" was the report', "- I cannot use Postgres"),
#: and "Sorry-path handling", "Unfortunately, I/O errors" are no refusals either.
_REFUSAL = re.compile(
    r"[\s*_]*(i['’]?m sorry|i am sorry|sorry(?=[\s,.!])|i apologi[sz]e|(?:my )?apologies\b"
    r"|i (?:can['’]?t|cannot|can not|won['’]?t|will not|am unable|am not able)(?=[\s,.*_])"
    r"|i['’]?m (?:unable|not able)\b|as an ai\b|as a(?:n ai)? language model\b"
    r"|i (?:must|have to|need to) decline\b|unfortunately,? i(?=[\s'’]))",
    re.IGNORECASE)


def refusal(summary: str) -> str | None:
    """The opening words of ``summary`` when it opens as a refusal ("I'm sorry", "I can't",
    "As an AI"...), else None."""
    got = _REFUSAL.match(summary)
    return got.group(1) if got else None


def render_summary(replaced: int, summary: str, constraints: list[str], ledger: str,
                   actions: str = "", request: str = "", not_sent: list[str] | None = None
                   ) -> str:
    """The summary message's text: header, the non-text parts of the replaced messages (an
    image no text holds), the user's latest request, decided/open, hard constraints, action
    log, facts ledger."""
    parts = [f"[Summary of {replaced} earlier messages, replaced to save context]"]
    if not_sent:
        parts[0] += "\n" + "\n".join(f"[{p} not sent]" for p in not_sent)
    if request.strip():
        parts.append("The user's latest request in them (verbatim):\n" + request.strip())
    if summary.strip():
        parts.append(summary.strip())
    if constraints:
        parts.append(_section("Hard constraints (the user's, verbatim)", constraints))
    if actions.strip():
        parts.append("Actions (tool calls, newest first):\n" + actions.strip())
    if ledger.strip():
        parts.append("Facts ledger (exact values from the replaced messages):\n" + ledger.strip())
    return "\n\n".join(parts)
