"""Shortening one message's text to a token cap without losing what it names.

Owns ``shorten``: the tool-output compression (a JSON outline, a log's errors, else head and
tail) plus one line naming the errors, tests, paths and lines of the part that was cut, within a
share of the cap (the text is cut shorter to make room for it). A shortened traceback or
listing still says which exception, test or file it held, so a later step can find them.
``shorten_arguments`` does the same to a tool call's arguments (an agent writing a file through
a call: a heredoc, an edit's old and new strings): the long string values of the JSON object,
each shortened in proportion to its size, re-encoded as a JSON object, so every provider still
reads an object. Pure: the counter is injected.
"""

from __future__ import annotations

import json
from collections.abc import Callable

import msgspec

from ctxlayer.core.compress.facts import Named, NamedFacts
from ctxlayer.core.compress.ledger import facts_cut
from ctxlayer.core.compress.logs import looks_like_log
from ctxlayer.core.compress.tool_output import (
    CompressedOutput,
    Counter,
    Reading,
    compress_tool_output,
    first_words,
)
from ctxlayer.core.groups import is_result
from ctxlayer.core.tokens import OPENAI_FORMAT, MessageFormat, Tokenizer, message_tokens
from ctxlayer.protocol import Message, ToolCall

__all__ = ["NOTE_MIN", "NOTE_SHARE", "TEXT_LEAST", "blocks_least", "shorten",
           "shorten_arguments", "shorten_message"]

#: the line naming the cut part's facts takes at most this share of the cap, and is written
#: only when the cap is at least NOTE_MIN tokens (below, the head and tail say more than a list)
NOTE_SHARE = 0.3
NOTE_MIN = 48
#: a string value of a call's arguments up to this many tokens is a name, a flag, a short
#: command: kept whole, only the longer ones (a file's text, an edit) are shortened
VALUE_MIN = 24
#: the fewest tokens one long value of a call's arguments is shortened to
VALUE_CAP_MIN = 12


#: the share of the cap a user's message keeps for its first lines when its outline (a log's
#: errors, a JSON outline) would start further in; at least HEAD_LEAST tokens within half
HEAD_SHARE = 0.25
HEAD_LEAST = 24


def shorten(text: str, cap: int, counter: Counter, *, keep_head: bool = False,
            named: Named | None = None, reading: Reading | None = None,
            tokens: int | None = None) -> CompressedOutput | None:
    """``text`` within ``cap`` tokens, None when it fits already. ``keep_head``: the text is a
    user's (a question, a task): when its outline would not start with its first line (a task
    quoting a traceback reads as a log), its first lines come first, within HEAD_SHARE of the
    cap (HEAD_LEAST tokens, within half, when that share is smaller); what they ask is what
    the rest was pasted for. ``named``: `named_facts` of the text as the caller has them (read,
    or a `NamedFacts` it keeps); read here, kind by kind as a note asks, when None.
    ``reading``: what outlines of the text at other sizes read of it (`Reading`), when kept.
    ``tokens``: a guess of the text's tokens, used for its count when over twice the cap (see
    `compress_tool_output`)."""
    named = named if named is not None else NamedFacts(text)
    if keep_head:
        blocks = _each_block_noted(text, cap, counter, named)
        if blocks is not None:
            return blocks
    read = Reading.of(text, reading)
    short = _noted(text, cap, counter, named, read, tokens)
    if keep_head and short is not None and short.method == "headtail":
        return _more_of_the_start(text, short, cap, counter)
    if not keep_head or short is None:
        return short
    # a small cap's share is a line or less: up to HEAD_LEAST tokens of it, within half
    head = _head_lines(text.lstrip(), max(int(cap * HEAD_SHARE), min(cap // 2, HEAD_LEAST)),
                       counter)
    if not head or short.text.lstrip().startswith(head):
        return short
    rest = _after_head(text.lstrip(), head, cap - counter.count(head) - 1, counter, named, read)
    if rest is None:
        return short
    out = head + "\n" + rest.text
    after = counter.count(out)
    return short if after > cap else CompressedOutput(out, rest.method, short.tokens_before,
                                                        after)


def _after_head(text: str, head: str, cap: int, counter: Counter, named: Named,
                read: Reading) -> CompressedOutput | None:
    """The outline, within ``cap``, of what follows ``head`` (the first whole lines of
    ``text``, sent before it; ``text`` is what ``read`` read, its leading blanks stripped). Outlined whole, a log's outline showed its first lines again
    in its own section of them: a 600-line log sent steps 0-54 twice, 26% of it, where more
    of the log would have gone. A head that ends inside its first line (cut to its first
    words) leaves the text to be outlined whole: the rest of that line is in no other part
    (from the log as ``read`` read it: only the line its leading blanks end in read again)."""
    # ``text`` is the text read with its leading blanks stripped: where it starts in it
    start = len(read.text) - len(text)
    if not text.startswith(head + "\n") or head.endswith("…"):
        # the log's lines as read, not read again from the blanks on
        whole = read.after(start) if start else read
        return _noted(whole.text, cap, counter, named, whole)
    rest = read.after(start + len(head) + 1)
    return _noted(rest.text, cap, counter, NamedFacts(rest.text), rest)


#: the fewest lines at each end of every block `_each_block` keeps: fewer say too little of
#: a file, and the text's own head and tail say more
BLOCK_LINES_MIN = 3


def _each_block(text: str, cap: int, counter: Counter) -> CompressedOutput | None:
    """A user's text made of code blocks (the files aider's user added, each fenced under
    its path; a question between two pasted files) within ``cap`` tokens: the prose whole,
    every block its first and last lines, as many as the cap lets each keep, verbatim, so
    the model can quote them, the cut naming the line ranges kept; None when the text fits,
    is mostly prose, its one block reads as a log (its outline keeps the errors), or even
    BLOCK_LINES_MIN lines a block are over the cap. Cut as one text, six added files of 17k
    tokens kept the start of the first and the end of the last, none of the four between;
    one added file (aider's most common case) was cut with no line numbers."""
    from ctxlayer.core.trim.truncate import blocks, truncate_blocks  # the trim engine's (it imports
    # this module: here, not at the top)

    lines = text.split("\n")
    spans = blocks(lines, details=False)
    if not spans or _in_blocks(lines, spans) < BLOCKS_SHARE * len(text) \
            or (len(spans) < 2 and looks_like_log(text)):
        return None
    before = counter.count(text)
    if before <= cap:
        return None
    lo, hi, best = BLOCK_LINES_MIN, text.count("\n") // 2, None
    while lo <= hi:  # the most lines at each end that fit
        n = (lo + hi) // 2
        cut = truncate_blocks(text, n, n, min_cut=1, numbered=True)
        if cut is None:  # no block is that long: all of them whole, over the cap
            hi = n - 1
            continue
        after = counter.count(cut)
        if after <= cap:
            best, lo = (cut, after), n + 1
        else:
            hi = n - 1
    if best is None:
        return None
    return CompressedOutput(best[0], "headtail", before, best[1])


def blocks_least(text: str, counter: Counter) -> int | None:
    """The fewest tokens ``text``, a user's text made of code blocks, is cut to with every
    block still showing its ends (`_each_block` at BLOCK_LINES_MIN lines each, the cut naming
    the line ranges kept); None when no block is long enough to cut. Under it a user's text is
    cut by its own head and tail: the files aider's user added lost all but the first and the
    last one, and their line numbers."""
    from ctxlayer.core.trim.truncate import truncate_blocks  # as `_each_block`

    cut = truncate_blocks(text, BLOCK_LINES_MIN, BLOCK_LINES_MIN, min_cut=1, numbered=True)
    return None if cut is None else counter.count(cut)


#: the share of a text its code blocks hold for `_each_block` to cut each: files pasted or
#: added under their paths. A task whose prose holds what is asked (an issue with two snippets
#: in it) keeps more of it by its head and tail (on the dev replay, cut block by block, 9 of
#: 685 needed facts were lost at a 10% budget)
BLOCKS_SHARE = 0.8


def _in_blocks(lines: list[str], spans: list[tuple[int, int]]) -> int:
    """The characters of the lines inside the blocks ``spans`` (`blocks` of ``lines``)."""
    return sum(len(line) + 1 for start, end in spans for line in lines[start + 1:end])


def _each_block_noted(text: str, cap: int, counter: Counter, named: Named
                      ) -> CompressedOutput | None:
    """`_each_block`, with the line naming the facts of the lines it cut (as `_noted`)."""
    return _with_note(text, cap, counter, named, lambda c: _each_block(text, c, counter))


def _more_of_the_start(text: str, short: CompressedOutput, cap: int, counter: Counter
                       ) -> CompressedOutput:
    """A user's text cut to its head and tail: when the cap left it no tail and not even its
    first line, only the start of that line and the omission mark, its first words alone say
    more of what was asked (a task cut to 20 tokens kept "diff --git a/astroid/raw_building"
    and a mark; its first words, the whole path and the next one)."""
    head, mark, tail = short.text.partition("\n[... ")
    if not mark or not head.endswith("…") or tail.partition("]")[2].strip():
        return short
    words = first_words(text, cap, counter)
    if words is None or len(words) <= len(head):
        return short
    return CompressedOutput(words, short.method, short.tokens_before, counter.count(words))


def _head_lines(text: str, cap: int, counter: Counter) -> str:
    """The first whole lines of ``text`` within ``cap`` tokens (the first one cut to its first
    words when it alone is over)."""
    lines = text.split("\n")
    kept: list[str] = []
    used = 0
    for line in lines:  # each line counted alone, a token for its newline; checked once joined
        used += counter.count(line) + 1
        if used > cap:
            break
        kept.append(line)
    while kept and counter.count("\n".join(kept)) > cap:
        kept.pop()
    if kept:
        return "\n".join(kept)
    return first_words(lines[0], cap, counter) or ""


def _noted(text: str, cap: int, counter: Counter, named: Named, read: Reading,
           tokens: int | None = None) -> CompressedOutput | None:
    """The outline of ``text`` within ``cap`` tokens, with the line naming the facts of its cut
    part; None when it fits already. ``read``: what the outlines of the text read of it;
    ``tokens``: a guess of its tokens (`compress_tool_output`)."""
    return _with_note(text, cap, counter, named, lambda c: compress_tool_output(
        text, max(1, c), counter, reading=read, tokens=tokens))


def _with_note(text: str, cap: int, counter: Counter, named: Named,
               cut: Callable[[int], CompressedOutput | None]) -> CompressedOutput | None:
    """``cut(cap)`` (``text`` shortened to a cap), with the line naming the facts of its cut
    part, the text cut shorter to make room for it; None when it fits already."""
    short = cut(cap)
    if short is None or cap < NOTE_MIN:
        return short
    chars_per_token = max(1.0, len(short.text) / max(1, short.tokens_after))
    note = facts_cut(text, short.text, int(cap * NOTE_SHARE * chars_per_token), named)
    if not note:
        return short
    room = cap - counter.count(note) - 1
    again = cut(room) if room >= NOTE_MIN // 2 else None
    if again is None:
        return short
    # the same facts within the same length: facts_cut counts a separator and the closing
    # bracket beyond the note's own characters (without them a lone fact never fitted again)
    note = facts_cut(text, again.text, len(note) + 2, named)
    out = again.text + "\n" + note if note else again.text
    after = counter.count(out)
    if after > cap:  # a token more where the two join: the outline alone, as before
        return short
    return CompressedOutput(out, again.method, short.tokens_before, after)


def _long_values(value, out: list, counter: Counter) -> None:
    """The long string values of a parsed JSON value, at any depth, as [container, key,
    tokens] (the container is changed in place once they are shortened); tokens None for a
    value of GUESSED_FROM characters or more, whose count `_guess_values` gives."""
    items = value.items() if isinstance(value, dict) else enumerate(value)
    for key, v in items:
        if isinstance(v, str):
            if len(v) >= GUESSED_FROM:
                out.append([value, key, None])
                continue
            t = counter.count(v)
            if t > VALUE_MIN:
                out.append([value, key, t])
        elif isinstance(v, (dict, list)):
            _long_values(v, out, counter)


#: characters from which a value's tokens are guessed from the arguments' count rather than
#: counted: the arguments were counted with their message, and a value that long is most of
#: them (a file written through a call: a 3 MB run of one letter, one pre-token to tiktoken,
#: took 1 s to count again) and long whatever it holds (a token is never 2,000 characters)
GUESSED_FROM = 50_000


def _guess_values(values: list, originals: list[str], rest: int) -> None:
    """Give the values `_long_values` did not count (tokens None) their share of ``rest``,
    the arguments' tokens less the skeleton's and the counted values', by their lengths."""
    guessed = [(v, len(text)) for v, text in zip(values, originals, strict=True)
               if v[2] is None]
    chars = sum(n for _, n in guessed)
    for v, n in guessed:
        v[2] = max(VALUE_MIN + 1, rest * n // max(1, chars))


def _no_constant(name: str):
    raise ValueError(name)  # NaN and Infinity are no JSON a provider reads


def _encode(value) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def _closer(after: int, best: int, cap: int) -> bool:
    """Whether a count of ``after`` is a better outline than ``best``: within the cap beats
    over it; within, the longer (the room is used); over, the shorter."""
    if (after <= cap) != (best <= cap):
        return after <= cap
    return after > best if after <= cap else after < best


def shorten_arguments(arguments: str, cap: int, counter: Counter) -> str | None:
    """A call's ``arguments`` (JSON text) within about ``cap`` tokens: when it is a JSON
    object, its long string values are shortened by `shorten` (head and tail lines, a note
    naming the cut part's facts), each to a share of the room in proportion to its size, and
    it is re-encoded as a JSON object. None when it is not an object, or comes out no shorter
    (arguments that are not JSON are a tool's own input: left to the summary)."""
    try:
        return _shorten_object(arguments, cap, counter)
    except (ValueError, RecursionError):  # not JSON, or nested deeper than a walk goes
        return None


def _shorten_object(arguments: str, cap: int, counter: Counter) -> str | None:
    parsed = json.loads(arguments, parse_constant=_no_constant)
    if not isinstance(parsed, dict):
        return None
    before = counter.count(arguments)
    values: list = []
    _long_values(parsed, values, counter)
    if not values or before <= cap:
        return None
    originals = [c[k] for c, k, _ in values]
    for c, k, _ in values:
        c[k] = ""
    skeleton = counter.count(_encode(parsed))  # the keys, the short values, the syntax
    _guess_values(values, originals, before - skeleton - sum(t or 0 for _, _, t in values))
    long = sum(t for _, _, t in values)
    # a value costs more once escaped (newlines, quotes): its share of the room, as text
    escaped = max(1.0, (before - skeleton) / long)
    room = (cap - skeleton) / escaped
    best: tuple[int, str] | None = None
    for _ in range(3):  # the escapes are a guess: a pass or two more to come out near the cap
        for (c, k, t), text in zip(values, originals, strict=True):
            short = shorten(text, max(VALUE_CAP_MIN, int(room * t / long)), counter,
                            tokens=t if len(text) >= GUESSED_FROM else None)
            c[k] = text if short is None else short.text
        out = _encode(parsed)
        after = counter.count(out)
        if after < before and (best is None or _closer(after, best[0], cap)):
            best = (after, out)
        if 0.9 * cap <= after <= cap:
            break
        room *= cap / max(1, after)
    return best[1] if best is not None else None


def shorten_message(m: Message, tokens: int, cap: int, counter: Tokenizer,
                    fmt: MessageFormat = OPENAI_FORMAT, named: Named | None = None,
                    least: int = 0) -> tuple[Message, int] | None:
    """Message ``m`` (``tokens`` as counted whole) with its text shortened so the message
    takes about ``cap`` tokens (its overheads left as they are), and its new count; None when
    that makes it no shorter. When its tool calls' arguments hold more than its text (an
    agent writing a file through a call), they are shortened too (`shorten_arguments`).
    Its non-text parts (thinking sealed in its signature, an image, a web search's results:
    ``parts_tokens``) are never shortened, and count against the cap only as far as they
    leave the message without them ``least`` tokens, and its text at least TEXT_LEAST: a
    432-token thinking block over a 160-token cap had the answer beside it cut to nothing,
    every turn, to save the answer's 17 tokens (`_text_room`). A text cut to whitespace (a
    tiny cap) goes, as "", when the message keeps calls or parts, else it stays whole: a
    text of whitespace said nothing, and Anthropic refused the block holding it."""
    text = counter.count(m.content)
    args = [counter.count(c.arguments) for c in m.tool_calls or ()]
    if sum(args) <= text:
        short = shorten(m.content, _text_room(m, tokens, cap, text, least), counter,
                        keep_head=m.role == "user" and not is_result(m),
                        named=named if not m.tool_calls else None)
        if short is None:
            return None
        new = msgspec.structs.replace(m, content=short.text)
    else:
        new = _shorten_calls(m, tokens, cap, counter, text, args, least)
        if new is None:
            return None
    if not new.content.strip() and m.content.strip():
        if not (m.tool_calls or m.parts):
            return None
        new = msgspec.structs.replace(new, content="")
    after = message_tokens(new, counter, fmt)
    return (new, after) if after < tokens else None


#: the fewest tokens a message's text is cut to when its non-text parts take its cap: its
#: first words, which say what it answered (as a question is never cut under 16 tokens)
TEXT_LEAST = 16


def _text_room(m: Message, tokens: int, cap: int, words: int, least: int) -> int:
    """The tokens ``m``'s ``words`` (its text, and its calls' arguments when those are cut
    too) may take for ``m`` to take about ``cap``: what the rest of it leaves, but its parts
    never leave the message without them under ``least``, nor its text under TEXT_LEAST.
    The parts are what they are: whether one may go (an earlier turn's reasoning) is decided,
    and audited, before a message is shortened."""
    rest = tokens - words
    parts = m.parts_tokens or 0
    return max(TEXT_LEAST if parts else 1, cap - rest, least - (rest - parts))


def _shorten_calls(m: Message, tokens: int, cap: int, counter: Tokenizer, text: int,
                   args: list[int], least: int) -> Message | None:
    """``m`` with its calls' arguments shortened in proportion to their sizes, and its text
    too when that is long (past a quarter of the room); None when nothing got shorter."""
    room = _text_room(m, tokens, cap, text + sum(args), least)
    content = m.content
    if text > max(NOTE_MIN, room // 4):
        share = room * text // (text + sum(args))
        short = shorten(content, max(1, share), counter)
        content = content if short is None else short.text
    left = max(len(args) * VALUE_CAP_MIN, room - counter.count(content))
    calls: list[ToolCall] = []
    for c, t in zip(m.tool_calls or (), args, strict=True):
        got = shorten_arguments(c.arguments, max(VALUE_CAP_MIN, left * t // sum(args)), counter)
        calls.append(c if got is None else msgspec.structs.replace(c, arguments=got))
    if content is m.content and all(a is b for a, b in zip(calls, m.tool_calls or (),
                                                           strict=True)):
        return None
    return msgspec.structs.replace(m, content=content, tool_calls=calls)
