"""Small text helpers every core module shares: content hashes and one-line summaries."""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Sequence

from ctxlayer.protocol import Message


def content_hash(text: str | bytes) -> str:
    """A short, stable content hash (sha256, 16 hex digits) for sections, parts and caches;
    bytes (already UTF-8, as msgspec writes JSON) are hashed as they are."""
    data = text if isinstance(text, bytes) else text.encode("utf-8", "surrogatepass")
    return hashlib.sha256(data).hexdigest()[:16]


def normalized_hash(text: str) -> str:
    """sha256 of whitespace-normalised text: two texts differing only in spacing match, so dedup
    catches a copy that was re-indented or re-wrapped."""
    return hashlib.sha256(" ".join(text.split()).encode("utf-8", "surrogatepass")).hexdigest()


def split_lines(text: str) -> list[str]:
    """The lines of ``text`` as a file or a log has them: ended by "\n", "\r\n" or "\r" and
    nothing else (a final break opens no line, as with ``str.splitlines``). ``splitlines`` also
    breaks at form feeds, vertical tabs, \x1c-\x1e, NEL and U+2028/U+2029, which a line can hold:
    an outline quoting a log's lines cut "ERROR: page break\x0cafter formfeed" in two."""
    if "\r" in text:
        text = text.replace("\r\n", "\n").replace("\r", "\n")
    lines = text.split("\n")
    if not lines[-1]:
        lines.pop()
    return lines


def lines_of(text: str):
    """The lines of ``text`` one by one, without splitting all of it: those with something in
    them as `split_lines` gives them (a "\r\n" may give one more empty line), for callers that
    want the first that says something (an audit line of each of a 5 MB chat's 830 file reads
    split all 5 MB to read 830 first lines)."""
    start = 0
    while start < len(text):
        end = text.find("\n", start)
        if end < 0:
            end = len(text)
        yield from text[start:end].split("\r")
        start = end + 1


def counted(n: int, noun: str) -> str:
    """`1 message`, `2 messages`: a count and its noun, as a user reads it."""
    return f"{n:,} {noun}" if n == 1 else f"{n:,} {noun}s"


def tokens_said(n: int) -> str:
    """`1 token`, `212 tokens`: as a part's label says its cost (no thousands separator: the
    labels have always written the bare number)."""
    return f"{n} token" if n == 1 else f"{n} tokens"


#: how a line the model reads as markdown structure starts: a heading ('# Git', the segment's
#: own section header), a code fence (an unclosed one swallowed the sections after it), a
#: quote or an HTML block ('<!--' hides what follows)
_MARKDOWN_STARTS = ("#", "```", "~~~", ">", "<")
#: a whole line that is a thematic break or a setext underline ('---' makes the line above a
#: heading)
_MARKDOWN_RULE = re.compile(r"(?:[-*_=] *){3,}")


def reads_as_markdown(line: str) -> bool:
    """Whether ``line`` alone would read as markdown structure, not as text."""
    return line.startswith(_MARKDOWN_STARTS) or _MARKDOWN_RULE.fullmatch(line) is not None


def path_line(path: str) -> str:
    """A file's path as one entry of a list shows it: as it is, unless it holds a control
    character (a newline made one file two entries), starts or ends with a space (read as
    indentation), starts with a double quote, or reads as markdown structure (a root file
    named '# Git' printed a second '# Git' section); then quoted with escapes, as git quotes
    such names (`"new\\nline.py"`)."""
    if (path.isprintable() and path == path.strip(" ") and not path.startswith('"')
            and not reads_as_markdown(path)):
        return path
    return '"' + "".join(_ESCAPES.get(c) or (c if c.isprintable() else _code(c))
                         for c in path) + '"'


def visible(text: str) -> str:
    """``text`` for a terminal: every character that is not printable written as its escape
    (`\\x1b`, `\\n`), so that what a client or a tool wrote (an escape sequence in a tool's
    output, a model name) cannot move the cursor, clear the screen or retitle the window of
    whoever lists the chats."""
    if text.isprintable():
        return text
    return "".join(c if c.isprintable() else _ESCAPES.get(c) or _code(c) for c in text)


_ESCAPES = {"\n": "\\n", "\t": "\\t", "\r": "\\r", '"': '\\"', "\\": "\\\\"}


def sound(text: str) -> str:
    """``text`` as valid UTF-8: a byte of a file name that is not UTF-8 (Python holds it as a
    lone surrogate, U+DC80-U+DCFF) written as its escape, `\\xff`, any other lone surrogate as
    `\\udXXX`. JSON and the tokenizer refuse lone surrogates: a file so named in a workspace
    without git made every `ctx/segment` an internal error."""
    try:
        text.encode("utf-8")
        return text
    except UnicodeEncodeError:
        return "".join(_code(c) if "\ud800" <= c <= "\udfff" else c for c in text)


def _code(c: str) -> str:
    n = ord(c)
    if 0xDC80 <= n <= 0xDCFF:  # the byte a file name held (os.fsdecode's surrogateescape)
        return f"\\x{n - 0xDC00:02x}"
    return f"\\x{n:02x}" if n < 0x100 else f"\\u{n:04x}" if n < 0x10000 else f"\\U{n:08x}"


def one_line(text: str, width: int = 80) -> str:
    """The first non-empty line of a text, cut to `width` characters."""
    for line in lines_of(text):
        line = line.strip()
        if line:
            return line if len(line) <= width else line[: width - 1] + "…"
    return "(empty)"


def describe(msg: Message, width: int = 80) -> str:
    """A one-line summary of what a message was, for audit entries. A text message says its
    lines and first line ("user (3 lines): Fix the parser"); one with parts or tool calls
    names each, so the line shows what cost the tokens ("user: image 1024x768 (772 tokens) +
    'look at this screenshot'", "assistant: thinking (212 tokens) + read(a.py)")."""
    head = msg.role
    if msg.kind and msg.kind != "chat":
        head += f"/{msg.kind}"
    if msg.tool_call_id:
        head += f" result of {msg.tool_call_id}"
    pieces = list(msg.parts or ())
    if not pieces and msg.parts_tokens:  # counted by a client that did not say what they are
        pieces.append(f"parts ({tokens_said(msg.parts_tokens)})")
    pieces += [call_line(c.name, c.arguments) for c in msg.tool_calls or ()]
    if not pieces:
        lines = msg.content.count("\n") + 1 if msg.content else 0
        return f"{head} ({lines} lines): {one_line(msg.content, width)}"
    if msg.content.strip():
        room = max(16, width - sum(len(p) + 3 for p in pieces))
        pieces.append(f"'{one_line(msg.content, room)}'")
    return f"{head}: {' + '.join(pieces)}"


def call_line(name: str, arguments: str) -> str:
    """A tool call as `name(its argument values)`, cut short: `read(a.py)`."""
    try:
        args = json.loads(arguments) if arguments.strip() else {}
        if isinstance(args, dict):
            text = ", ".join(v if isinstance(v, str) else json.dumps(v) for v in args.values())
        else:
            text = args if isinstance(args, str) else json.dumps(args)
    except (ValueError, RecursionError):  # not JSON, or nested deeper than a reader follows
        text = arguments
    text = one_line(text, 40) if text.strip() else ""
    return f"{name}({text})"


#: the id a codec makes up for a message that came without one (formats/common.py
#: `derive_id`): the format's prefix, where the client had the message, a digest of it
_DERIVED_ID = re.compile(r"(cx|oa|an|rs)(\d+|s\d*|i)(?:\.\d+)?\.[0-9a-f]{12}")


def client_place(message_id: str | None) -> str | None:
    """Where the client had the message a codec made the id ``message_id`` for, in its
    request's own terms (`messages[3]`, `system`, `input[2]`); None for any other id: the
    client's own, which names the message as it is."""
    got = _DERIVED_ID.fullmatch(message_id or "")
    if got is None:
        return None
    fmt, at = got.groups()
    if at == "i":
        return "instructions"
    if at.startswith("s"):  # Anthropic's system prompt, a Responses input given as a string
        return "system" if fmt == "an" else "input"
    return f"{'input' if fmt == 'rs' else 'messages'}[{at}]"


def mention(msgs: Sequence[Message], i: int) -> str:
    """How an audit reason (or a note the model reads) names message ``i`` of ``msgs``: by
    what the client sent, never by an id a codec made up, which is in no message the user or
    the model sees ("same content as an2.0.920618240910"). A tool output by its call
    (`the output of bash(make test) (call call_0)`), else the client's own id, else where its
    request had it (`messages[3]`), else its position."""
    m = msgs[i]
    if m.tool_call_id:
        # its call is in the newest assistant message before it: no further back is read
        k = next((k for k in range(i - 1, -1, -1) if msgs[k].role == "assistant"), None)
        calls = msgs[k].tool_calls or () if k is not None else ()
        call = next((c for c in calls if c.id == m.tool_call_id), None)
        if call is not None:
            return f"the output of {call_line(call.name, call.arguments)} (call {call.id})"
    place = client_place(m.id)
    if place is not None:
        return place
    return m.id or f"message #{i}"
