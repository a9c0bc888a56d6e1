"""Structured facts: the paths, commands, error codes, line numbers, test names, identifiers
and numbers a summary or a compressed item must keep.

Owns `Facts`, `extract_facts` and `format_ledger`. Pure, linear (a fixed set of bounded regexes,
one pass each, then a sort of the matches by position), never raises on any string.

Recall matters most for paths, commands, error codes and line numbers: a summary that loses
"tests/test_api.py:42" or "E0382" sends the next fix astray. Precision
matters most for identifiers: only dotted module paths, calls written with parentheses,
CamelCase names with two or more humps, snake_case names and backticked single names count.
Every list is deduplicated in first-seen order.
"""

from __future__ import annotations

import bisect
import heapq
import itertools
import re
from collections.abc import Callable, Iterable, Iterator
from operator import itemgetter

import msgspec

from ctxlayer.core.compress import fact_patterns as pat

__all__ = ["Facts", "Named", "NamedFacts", "extract_facts", "format_ledger", "prose_commands"]


class Facts(msgspec.Struct, frozen=True):
    """Facts found in a text, each kind deduplicated in first-seen order."""

    paths: tuple[str, ...] = ()
    commands: tuple[str, ...] = ()
    error_codes: tuple[str, ...] = ()
    line_numbers: tuple[str, ...] = ()
    identifiers: tuple[str, ...] = ()
    numbers: tuple[str, ...] = ()
    tests: tuple[str, ...] = ()  # test names and node ids: what a later run is asked about

    def merge(self, other: Facts) -> Facts:
        """These facts, then the other's new ones, kind by kind."""
        return Facts(
            *(_dedup(getattr(self, f) + getattr(other, f)) for f in self.__struct_fields__)
        )

    def __len__(self) -> int:
        return sum(len(getattr(self, f)) for f in self.__struct_fields__)

    def is_empty(self) -> bool:
        return len(self) == 0


def _dedup(items: tuple[str, ...] | list[str]) -> tuple[str, ...]:
    return tuple(dict.fromkeys(items))


# ---------------------------------------------------------------------------------------------
# Extraction


def _blank_urls(text: str) -> str:
    if "://" not in text:
        return text
    return pat.URL.sub(lambda m: " " * len(m.group(0)), text)


def _clean_path(raw: str) -> str | None:
    p = raw.rstrip(pat.TRAIL)
    if not p or p in (".", "..", "/", "~", "~/", "./", "../"):
        return None
    if not any(c.isalpha() for c in p):
        return None
    if "\\" in p:
        return p
    segments = [s for s in p.split("/") if s]
    anchored = p.startswith(("/", "./", "../", "~/"))
    has_ext = bool(pat.EXT_RX.search(p)) or (segments and "." in segments[-1][1:])
    if anchored and (len(segments) >= 2 or has_ext or len(segments[0]) > 3):
        return p
    if "/" not in p:
        return p if pat.EXT_RX.search(p) else None
    if has_ext or len(segments) >= 3 or (p.endswith("/") and len(segments) >= 1):
        # "and/or", "I/O", "TCP/IP", "km/h": two short segments without an extension are words.
        return p
    return None


# The named kinds are read as streams of (position, value) in position order, each pattern
# run only as far as a reader takes it: a note of a few names stops reading a 30 KB output
# where its names are. `_merged` orders them as a stable sort of all the matches would (ties
# in the order the patterns are given).

Found = Iterator[tuple[int, str]]


def _merged(*found: Iterable[tuple[int, str]]) -> Found:
    return heapq.merge(*found, key=itemgetter(0))


def _paths(text: str, words: list[str] | None = None) -> Found:
    def cleaned() -> Found:
        for at, raw in _path_matches(text, words) if pat.has_path(text) else ():
            p = _clean_path(raw)
            if p:
                yield at, p

    return _merged(cleaned(), ((m.start(1), m.group(1)) for m in pat.PY_LOC.finditer(text)))


def _path_matches(text: str, words: list[str] | None = None) -> Found:
    """`pat.PATH`'s matches in ``text`` (start, text), found word by word (`_word_matches`): the
    pattern run only on the words with a slash, a backslash or a dot."""
    for at, m in _word_matches(text, _path_pattern, words):
        yield at + m.start(), m.group(0)


def _path_pattern(word: str) -> re.Pattern[str] | None:
    if "/" in word or "\\" in word:
        return pat.PATH
    return pat.PATH_IN_NAME if "." in word else None


def _word_matches(text: str, pattern_for: Callable[[str], re.Pattern[str] | None],
                  words: list[str] | None = None) -> Iterator[tuple[int, re.Match[str]]]:
    """(where the word starts, a match in the word) of a pattern none of whose matches holds
    whitespace, run word by word: the words split at whitespace in C (``words``:
    ``text.split()``, when the caller has them), the pattern each word needs, or None where a
    word cannot hold a match. A pattern that starts with a look-behind is tried at every
    character (most of the facts' time on a long output); a word's edges are whitespace, which
    no look-around of these patterns accepts, so a word alone matches as it does in the text
    (property tests hold each to the whole run). ``pattern_for`` must give a pattern to every
    word that holds one it gives a pattern to (a test of the characters a word holds)."""
    at, find = 0, text.find
    for word in text.split() if words is None else words:
        rx = pattern_for(word)
        if rx is None:
            continue
        # the first occurrence past the last word searched is this one: a word between them
        # that held it would have been given a pattern too
        at = find(word, at)
        for m in rx.finditer(word):
            yield at, m
        at += len(word)


def _line_numbers(text: str, words: list[str] | None = None) -> Found:
    if not pat.has_digit(text):
        return iter(())
    in_py_loc = _span_checker([m.span() for m in pat.PY_LOC.finditer(text)])

    def said() -> Found:
        for m in pat.LINE_WORD.finditer(text):
            if in_py_loc(m.start()):
                continue
            if m.group(1):
                yield m.start(), "line " + re.sub(r"\s", "", m.group(1)).replace("–", "-")
            else:
                yield m.start(), "line " + m.group(2) + (f"-{m.group(3)}" if m.group(3) else "")

    return _merged(
        ((m.start(), f"{m.group(1)} line {m.group(2)}") for m in pat.PY_LOC.finditer(text)),
        ((at + m.start(), f"{m.group(1)}:{m.group(2)}")
         for at, m in _word_matches(text, _file_loc_pattern, words)
         if m.group(1).strip("./\\")),
        said(),
        ((m.start(), "line " + m.group(1)) for m in pat.LINE_ZH.finditer(text)))


def _file_loc_pattern(word: str) -> re.Pattern[str] | None:
    return pat.FILE_LOC if ":" in word and "." in word else None


def _error_codes(text: str) -> Found:
    found: list[Iterable[tuple[int, str]]] = []
    if pat.ERRNO_START.search(text):
        found.append((m.start(), m.group(0)) for m in pat.ERRNO.finditer(text))
    found.append((m.start(), m.group(0)) for m in pat.in_lines(pat.EXCEPTION, text, pat.EXCEPTION_WORDS))
    if pat.has_digit(text):
        found.append((m.start(), m.group(0)) for m in pat.ERROR_CODE.finditer(text)
                     if m.group(0).rstrip("0123456789") not in pat.ERROR_CODE_STOP)
        low = text.lower() if text.isascii() else None
        if low is None or any(w in low for w in pat.HTTP_WORDS):
            found.append((m.start(), f"HTTP {m.group(1) or m.group(2)}")
                         for m in (pat.HTTP.finditer(text) if low is None else
                                   pat.HTTP_LOWER.finditer(low)))
        if any(w in text for w in pat.ORA_WORDS):
            found.append((m.start(), m.group(0)) for m in pat.ORA.finditer(text))
        if any(w in text for w in pat.JOINED_CODE_GATE):
            found.append((m.start(), m.group(0)) for m in pat.JOINED_CODE.finditer(text)
                         if _names_an_error(m.group(0)))
        if low is None or "exit" in low:
            found.append((m.start(), f"exit {m.group(1)}")
                         for m in (pat.EXIT.finditer(text) if low is None else
                                   pat.EXIT_LOWER.finditer(low)))
    return _merged(*found)


def _names_an_error(code: str) -> bool:
    """Whether a joined code (`fact_patterns.JOINED_CODE`) is an error's: the word before its
    number names one (`ZEBRA-ERR-4411`, `AUTH_ERROR_17`, `DBERR-12`). Any word but the number
    read names that are no error's: `ERROR-REPORT-2024`, `MAX_ERROR_RETRIES_10`,
    `MIRROR_ERR_BACKUP_01`, and a word ending in ERROR took `TERROR-2023`."""
    word = re.split(r"[-_]", code)[-2]
    return word in pat.JOINED_CODE_WORDS or word.endswith(pat.JOINED_CODE_ENDS)


def _looks_like_command(line: str) -> bool:
    words = line.split()
    if not words:
        return False
    first = words[0]
    if first in ("sudo", "env", "time") and len(words) > 1:
        first = words[1]
    return (
        first in pat.PROGRAMS
        or first.startswith(("./", "bin/", ".venv/bin/"))
        or (
            len(words) > 1
            and any(w.startswith("--") and len(w) > 2 for w in words[1:])
            and first.replace("-", "").replace("_", "").isalnum()
        )
    )


def _commands(text: str) -> tuple[list[tuple[int, str]], list[tuple[int, int]]]:
    """Commands, and the spans of fenced blocks (so inline patterns skip code)."""
    out: list[tuple[int, str]] = []
    fences: list[tuple[int, int]] = []
    has_fence = "```" in text or "~~~" in text
    for m in pat.FENCE.finditer(text) if has_fence else ():
        fences.append((m.start(), m.end()))
        lang = m.group(2).lower()
        body = m.group(3)
        base = m.start(3)
        has_prompts = any(pm for pm in pat.PROMPT_LINE.finditer(body))
        if lang in pat.SHELL_LANGS or not lang:
            offset = 0
            for line in body.split("\n"):
                stripped = line.strip()
                if has_prompts:
                    pm = pat.PROMPT_LINE.match(line)
                    if pm:
                        out.append((base + offset, pm.group(1).strip()))
                elif (
                    stripped
                    and not stripped.startswith("#")
                    and (lang in pat.SHELL_LANGS or _looks_like_command(stripped))
                ):
                    out.append((base + offset, stripped))
                offset += len(line) + 1
    in_fence = _span_checker(fences)
    for m in pat.PROMPT_LINE.finditer(text) if any(p in text for p in pat.PROMPTS) else ():
        if not in_fence(m.start()):
            out.append((m.start(), m.group(1).strip()))
    for m in pat.TICKED.finditer(text) if "`" in text else ():
        inner = m.group(1).strip()
        if not in_fence(m.start()) and _looks_like_command(inner):
            out.append((m.start(), inner))
    return out, fences


def _span_checker(spans: list[tuple[int, int]]) -> Callable[[int], bool]:
    starts = [s for s, _ in spans]

    def inside(pos: int) -> bool:
        i = bisect.bisect_right(starts, pos) - 1
        return i >= 0 and pos < spans[i][1]

    return inside


def _identifiers(text: str, exclude: set[str]) -> list[tuple[int, str]]:
    out: list[tuple[int, str]] = []
    for m in pat.DOTTED.finditer(text) if pat.DOT_NAME.search(text) else ():
        name = m.group(0)
        last = name.rsplit(".", 1)[-1]
        segments = name.split(".")
        if (
            name.lower() in pat.DOTTED_STOP
            or last.lower() in pat.DOMAIN_END
            or pat.EXT_RX.search(name)
            or any(len(s) < 2 for s in segments)
        ):
            continue
        out.append((m.start(), name))
    for m in pat.in_lines(pat.CALL, text, ("(",)):
        name = m.group(1)
        if name.lower() in pat.CALL_STOP or len(name) < 2:
            continue
        out.append((m.start(), name + "()"))
    for m in pat.CAMEL.finditer(text):
        if m.group(0) not in pat.CAMEL_STOP:
            out.append((m.start(), m.group(0)))
    for m in pat.in_lines(pat.SNAKE, text, ("_",)):
        out.append((m.start(), m.group(0)))
    for m in pat.TICKED.finditer(text) if "`" in text else ():
        inner = m.group(1).strip()
        if pat.TICKED_NAME.fullmatch(inner) and not inner.isdigit():
            out.append((m.start(), inner))
    called = {v[:-2] for _, v in out if v.endswith("()")}
    return [
        (p, v)
        for p, v in out
        if v not in exclude and v.rstrip("()") not in exclude and v not in called
    ]


def _tests(text: str) -> Found:
    if "test" not in text and "Test" not in text:
        return iter(())
    return ((m.start(), m.group(0)) for m in pat.in_lines(pat.TEST, text, ("test_", ".py::", "Test")))


def _numbers(text: str) -> list[tuple[int, str]]:
    out: list[tuple[int, str]] = []
    if not pat.has_digit(text):
        return out
    for rx in (pat.NUM_UNIT, pat.VERSION):
        out.extend((m.start(), " ".join(m.group(0).split())) for m in rx.finditer(text))
    context = (pat.NUM_CONTEXT_LOWER.finditer(text.lower()) if text.isascii()
               else pat.NUM_CONTEXT.finditer(text))
    out.extend((m.start(), " ".join(text[m.start():m.end()].split())) for m in context)
    out.extend((m.start(), " ".join(m.group(0).split())) for m in pat.ASSIGN_NUM.finditer(text))
    return out


def _ordered(found: list[tuple[int, str]], limit: int = 500) -> tuple[str, ...]:
    found.sort(key=lambda pv: pv[0])
    return _dedup([v for _, v in found if v])[:limit]


def _firsts(found: Found, limit: int = 500) -> Iterator[str]:
    """`_ordered` of a stream in position order, value by value as a reader takes them."""
    seen: set[str] = set()
    for _, v in found:
        if v and v not in seen:
            seen.add(v)
            yield v
            if len(seen) == limit:
                return


def named_facts(text: str) -> Facts:
    """What `extract_facts` finds of the kinds a later step looks up by their exact text
    (paths, commands, error codes, line numbers, tests), without identifiers and numbers,
    which cost most to read: what a shortened message names of its cut part."""
    if not isinstance(text, str) or not text:
        return Facts()
    return _named(text, _blank_urls(text))


def _named(text: str, plain: str) -> Facts:
    return NamedFacts(text, plain).read()


#: the kinds `named_facts` reads
_NAMED_KINDS = ("paths", "commands", "error_codes", "line_numbers", "tests")


class _Kind:
    """One named kind of a `NamedFacts` as an attribute, like the Facts field of that name:
    read to its end when asked."""

    def __set_name__(self, owner: type, name: str) -> None:
        self.name = name

    def __get__(self, obj: NamedFacts | None, owner: type | None = None):
        return self if obj is None else obj._kind(self.name)


class NamedFacts:
    """`named_facts` of a text, each kind read when first asked and kept: a note of a few
    names (`facts_cut`, errors first) that is full after the errors and tests never reads the
    paths and lines of a 30 KB output. Reads as a Facts of the named kinds (the same
    attributes, the same values); `read` gives the Facts itself."""

    __slots__ = ("_kinds", "_plain", "_streams", "_words", "text")

    def __init__(self, text: str, plain: str | None = None) -> None:
        self.text = text if isinstance(text, str) else ""
        self._plain = plain
        self._words: list[str] | None = None  # the plain text's words, once a kind needs them
        self._kinds: dict[str, tuple[str, ...]] = {}  # kinds read to their end
        # kinds being read: the values so far, and the pump that reads one more into them
        self._streams: dict[str, tuple[list[str], Iterator[None]]] = {}

    def _found(self, kind: str) -> Iterator[str]:
        """A stream of the values of ``kind`` of its own, from the start."""
        text = self.text
        if not text:
            return iter(())
        if kind == "commands":  # these two from the text as it came
            return _firsts(iter(sorted(_commands(text)[0], key=itemgetter(0))))
        if kind == "error_codes":
            return _firsts(_error_codes(text))
        if self._plain is None:  # the others from the text with its URLs blanked
            self._plain = _blank_urls(text)
        plain = self._plain
        if kind == "tests":
            return _firsts(_tests(plain))
        words = self._words
        if words is None:  # split once for the two kinds read word by word
            words = self._words = plain.split()
        return _firsts(_paths(plain, words) if kind == "paths" else _line_numbers(plain, words))

    def _stream(self, kind: str) -> tuple[list[str], Iterator[None]]:
        got = self._streams.get(kind)
        if got is None:
            seen: list[str] = []

            def pump(found: Iterator[str]) -> Iterator[None]:
                # the value is added inside the generator: while one thread runs it, another
                # gets ValueError from next(), never the value after and a list out of order
                for value in found:
                    seen.append(value)
                    yield

            got = self._streams.setdefault(kind, (seen, pump(self._found(kind))))
        return got

    def __deepcopy__(self, memo: dict) -> NamedFacts:
        """A copy with what is read so far (a stream in progress is read again by the copy)."""
        copy = NamedFacts(self.text, self._plain)
        copy._kinds = dict(self._kinds)
        return copy

    def values(self, kind: str) -> Iterator[str]:
        """The values of ``kind`` in order, read only as far as the caller takes them. The
        core takes no locks: a conversation's state may be read on two threads at once (its
        facts read ahead on a worker while its next request arrives), and the one that finds
        the stream being read by the other reads a stream of its own past what it has."""
        whole = self._kinds.get(kind)
        if whole is not None:
            yield from whole
            return
        seen, pump = self._stream(kind)
        k = 0
        while True:
            while k >= len(seen):
                try:
                    next(pump)
                except StopIteration:
                    if k >= len(seen):
                        self._kinds[kind] = tuple(seen)
                        if "paths" in self._kinds and "line_numbers" in self._kinds:
                            self._words = None  # both read: not kept for as long as the facts
                        return
                except ValueError:  # being read on another thread right now
                    yield from itertools.islice(self._found(kind), k, None)
                    return
            yield seen[k]
            k += 1

    def _kind(self, kind: str) -> tuple[str, ...]:
        got = self._kinds.get(kind)
        # the values as read, not the kept tuple: a reader that read a stream of its own (the
        # shared one busy on another thread) may end before that one is kept
        return got if got is not None else tuple(self.values(kind))

    paths = _Kind()
    commands = _Kind()
    error_codes = _Kind()
    line_numbers = _Kind()
    tests = _Kind()

    def read(self) -> Facts:
        """Every named kind, read now where not read yet."""
        return Facts(**{kind: self._kind(kind) for kind in _NAMED_KINDS})


#: what a caller holds of a text's named facts: read, or being read kind by kind
Named = Facts | NamedFacts


def named_part(facts: Facts) -> Facts:
    """Of facts `extract_facts` read, what `named_facts` reads of the same text."""
    return Facts(paths=facts.paths, commands=facts.commands, error_codes=facts.error_codes,
                 line_numbers=facts.line_numbers, tests=facts.tests)


def extract_facts(text: str, named: Named | None = None) -> Facts:
    """Paths, commands, error codes, line numbers, identifiers and numbers found in `text`.
    ``named``: `named_facts(text)`, when an outline read them already: only identifiers and
    numbers are read then (the same result, for a little more than half the time)."""
    if not isinstance(text, str) or not text:
        return Facts()
    plain = _blank_urls(text)
    if named is None:
        named = _named(text, plain)
    exclude = set(named.error_codes) | set(named.paths)
    return Facts(
        paths=named.paths,
        commands=named.commands,
        error_codes=named.error_codes,
        line_numbers=named.line_numbers,
        identifiers=_ordered(_identifiers(plain, exclude)),
        numbers=_ordered(_numbers(plain)),
        tests=named.tests,
    )


# ---------------------------------------------------------------------------------------------
# Ledger

#: Order in the ledger, and the order items are admitted when space is short.
_LEDGER = (
    ("error_codes", "errors"),
    ("line_numbers", "lines"),
    ("tests", "tests"),
    ("paths", "paths"),
    ("commands", "commands"),
    ("identifiers", "identifiers"),
    ("numbers", "numbers"),
)
_ITEM_MAX = 120
_CODE_KINDS = frozenset({"paths", "commands", "identifiers"})


def format_item(value: str, code: bool, item_max: int = _ITEM_MAX) -> str:
    """One ledger item on one line, cut to ``item_max`` characters; code in backticks."""
    value = " ".join(value.split())
    if len(value) > item_max:
        value = value[: item_max - 1] + "…"
    return "`" + value.replace("`", "'") + "`" if code else value


def _item(kind: str, value: str, item_max: int = _ITEM_MAX) -> str:
    return format_item(value, kind in _CODE_KINDS, item_max)


def _render(chosen: dict[str, list[str]], totals: dict[str, int]) -> str:
    lines = []
    for kind, label in _LEDGER:
        items = chosen.get(kind) or []
        if not items:
            continue
        more = totals[kind] - len(items)
        lines.append(f"- {label}: " + ", ".join(items) + (f" (+{more} more)" if more else ""))
    return "\n".join(lines)


def format_ledger(facts: Facts, max_chars: int = 1200, item_max: int = _ITEM_MAX) -> str:
    """The facts as a compact markdown list within `max_chars`.

    One line per kind (errors, lines, paths, commands, identifiers, numbers). When space is
    short, items are admitted round-robin across kinds in that order, and each line says how
    many of its items were left out. An item over ``item_max`` characters is cut to it; one
    that does not fit is left out whole (a ledger of whole facts passes ``max_chars``).
    """
    if max_chars <= 0 or not isinstance(facts, Facts):
        return ""
    pending = {kind: [_item(kind, v, item_max) for v in getattr(facts, kind)]
               for kind, _ in _LEDGER}
    totals = {kind: len(v) for kind, v in pending.items()}
    chosen: dict[str, list[str]] = {kind: [] for kind, _ in _LEDGER}
    # Exact length bookkeeping: a line costs "- label: " + items joined by ", " + "\n", and the
    # "(+N more)" suffix is reserved at its widest for every line that may need it.
    size = 0
    index = {kind: 0 for kind, _ in _LEDGER}
    labels = dict(_LEDGER)
    progress = True
    while progress:
        progress = False
        for kind, _ in _LEDGER:
            i = index[kind]
            if i >= totals[kind]:
                continue
            item = pending[kind][i]
            cost = len(item) + (2 if chosen[kind] else len(labels[kind]) + 5)
            suffix = len(f" (+{totals[kind]} more)") if i + 1 < totals[kind] else 0
            if size + cost + suffix <= max_chars:
                chosen[kind].append(item)
                size += cost
                index[kind] = i + 1
                progress = True
            else:
                index[kind] = totals[kind]  # this kind is full; others may still fit
    text = _render(chosen, totals)
    while len(text) > max_chars and any(chosen.values()):
        for kind, _ in reversed(_LEDGER):
            if chosen[kind]:
                chosen[kind].pop()
                break
        text = _render(chosen, totals)
    return text if len(text) <= max_chars else ""


# ---------------------------------------------------------------------------------------------
# Commands named in prose: "Please look at pytest -k test_retry_5851", "then run make lint".
# A program word alone is not enough (English says "make sure", "go to", "git gud"): each shape
# names what must follow it, and the word must open a clause (a line, a sentence, a bracket, or
# a lead-in such as "run" or "look at").

_GIT_SUB = frozenset(
    "add am apply bisect blame branch checkout cherry-pick clean clone commit config describe "
    "diff fetch grep init log ls-files merge mv pull push rebase reflog remote reset restore "
    "revert rev-parse rm show stash status submodule switch tag worktree".split())
_CARGO_SUB = frozenset("add bench build check clippy doc fmt install run test tree update".split())
_GO_SUB = frozenset("build fmt generate get install mod run test vet".split())
_NPM_SUB = frozenset("ci exec i install run start test".split())
#: make targets a project names in words; any other target must look like code (a digit, `-`,
#: `_`, `:`, `/`, `.`), so "make things faster" is English
_MAKE_TARGETS = frozenset(
    "all bench build check ci clean compile coverage demo deps dev dist docs e2e fmt format "
    "help install lint migrate release run serve setup start test tests typecheck watch".split())
#: words before a program that say a command follows ("please run pytest", "look at git log")
_LEAD_INS = frozenset(
    "run runs ran running rerun re-run try use using with via execute type call see check at "
    "then and also please first now just".split())
#: English words that end a command's arguments ("pytest -k retry before you go on")
_ARG_STOP = frozenset(
    "a an and after again also as at because before breaks but crashes did does errors fails "
    "failed first for from gives hangs if in is it its later next now of on once or passes "
    "please prints returns said says shows since so soon than that the then this to today "
    "tomorrow tonight too until was when which while why with without works you yourself"
    .split())
_CLAUSE_PUNCT = ".!?;:(\"'"
#: the programs a person names in prose (`python` also as `python3`), each followed by a space
PROSE_PROGRAMS = ("pytest", "python", "npm", "make", "git", "cargo", "go")
_ARG = re.compile(r"'[^'\n]{0,200}'|\"[^\"\n]{0,200}\"|[^\s`]+")
_CODE_CHARS = frozenset("0123456789-_:/.=*[]'\"")
_ARG_MAX = 12
#: plain words a program takes after its head (git's subcommand, npm's, cargo's, go's; a
#: python script or `-m module`): a branch or a remote, a test filter or a crate, a script.
#: Any other plain word is the sentence going on ("pytest -k test_case_2 next")
_OPERANDS = {"git": 2, "cargo": 1, "npm": 1, "python": 2}
#: git subcommands that take no name ("git status today's way" is the sentence going on)
_GIT_NO_NAMES = frozenset("clean init ls-files status".split())
#: flags whose value may be a plain word (`-p core`, `-run TestRetry`, `--features serde`)
_VALUE_FLAGS = frozenset(
    "-k -m -p -n -b -c -C -e -j -o -r -t -w -F -W -run -bench -tags -count -timeout --package "
    "--features --bin --test --example --target --message --branch --workspace --grep --author "
    "--format --filter --config --profile --reporter".split())


def program_words(text: str) -> list[tuple[int, int]]:
    """(start, end) of each program word of PROSE_PROGRAMS followed by a space and not inside
    a word, a path or a flag (no word character, `.`, `/`, backtick or `-` before it), in
    order: what ``(?<![\\w./`-])(pytest|python3?|npm|make|git|cargo|go)(?= )`` finds, found by
    substring search (the pattern, tried at every character, was a fifth of the first
    assembly of a 1M-token session)."""
    found = []
    for word in PROSE_PROGRAMS:
        i = text.find(word)
        while i >= 0:
            end = i + len(word)
            if word == "python" and text.startswith("3 ", end):
                end += 1
            before = text[i - 1] if i else " "
            if text.startswith(" ", end) and not (before.isalnum() or before in "_./`-"):
                found.append((i, end))
            i = text.find(word, end)
    found.sort()
    return found


def _opens_clause(text: str, start: int) -> bool:
    """Whether a word at ``start`` opens a clause: a line (a bullet's too), a sentence, a
    bracket or a quote, or follows a lead-in ("run", "look at")."""
    before = text[max(0, start - 40):start].rstrip(" \t")
    if before.endswith(("- ", "* ", "> ", "-", "*", ">")):
        before = before.rstrip("-*> \t")
        if not before or before.endswith("\n"):
            return True
    if not before or before[-1] in _CLAUSE_PUNCT or before[-1] in "\n,":
        return True
    return before.rsplit(None, 1)[-1].lstrip("(\"'").lower() in _LEAD_INS


def _arguments(text: str, pos: int, program: str) -> list[str]:
    """The words after a program that are its arguments, to the end of its clause: a
    sentence's punctuation, a line's end, or a word that is not an argument. An argument looks
    like one (a flag, a path, a test id, a value with `=`, a quoted string: `_code_like`), is
    the value of the flag before it, or is a plain word where the program's grammar puts a
    name (its head and `_OPERANDS`); any other plain word is English ("tomorrow", "next")."""
    end = text.find("\n", pos)
    line = text[pos:end if end >= 0 else len(text)]
    out: list[str] = []
    operands = 0  # plain words taken after the head
    for m in _ARG.finditer(line):
        word = m.group(0)
        bare = word if word.endswith("...") else word.rstrip(".,;:!?)")
        if not bare or bare.lower() in _ARG_STOP:
            break
        if not _is_argument(program, out, bare, operands):
            break
        if (not bare.startswith("-") and len(out) >= _head(program, out)
                and not (out and out[-1] in _VALUE_FLAGS)):
            operands += 1  # a word in a name's place: `npm run build:prod` has its script
        out.append(bare)
        if bare != word or len(out) >= _ARG_MAX:
            break
    return out


def _head(program: str, taken: list[str]) -> int:
    """How many words open ``program``'s arguments as its name for what to do: a subcommand
    (git, cargo, go, npm), a script or `-m module` (python); make's targets all are."""
    if program.startswith("python"):
        return 2 if taken[:1] == ["-m"] else 1 if taken and not taken[0].startswith("-") else 0
    return 1 if program in ("git", "cargo", "go", "npm") else _ARG_MAX if program == "make" else 0


def _is_argument(program: str, taken: list[str], word: str, operands: int) -> bool:
    if _code_like(word) or word[0] in "'\"":
        return True
    if taken and taken[-1] in _VALUE_FLAGS:
        return True  # `-p core`, `-run TestRetry`
    if word[0].isupper():
        return False  # "Then", "It": a new sentence
    if len(taken) < _head(program, taken + [word]):
        return True  # `git status`, `make lint test`, `python -m pip`
    if any(w.startswith("-") for w in taken[_head(program, taken):]):
        return False  # after a flag a plain word is a flag's value or the sentence
    limit = 0 if program == "git" and taken[0] in _GIT_NO_NAMES else _OPERANDS.get(
        program.rstrip("3"), 0)
    return operands < limit  # `git push origin main`, `cargo test retry`


def _code_like(word: str) -> bool:
    # an apostrophe inside a word is English ("it's"); quotes around words are a string
    return bool(set(word) & _CODE_CHARS - {"'"}) or word[:1] in ("'", '"')


def _shape_ok(program: str, args: list[str]) -> bool:
    """Whether the words after ``program`` are what that program takes."""
    if not args:
        return False
    first = args[0]
    if program == "pytest":
        return True
    if program.startswith("python"):
        return first.startswith("-") or "/" in first or first.endswith(".py")
    if program == "npm":
        return first in _NPM_SUB and (first != "run" or len(args) > 1)
    if program == "git":
        return first in _GIT_SUB
    if program == "cargo":
        return first in _CARGO_SUB
    if program == "go":
        return first in _GO_SUB
    # make: every word a known target, an option or code-like
    return all(a in _MAKE_TARGETS or _code_like(a) for a in args)


def prose_commands(text: str) -> list[str]:
    """Commands a person names in their own words, outside code blocks and backticks (those are
    read by ``extract_facts``): `pytest ...`, `python ...`, `npm run ...`, `make ...`, `git ...`,
    `cargo ...`, `go test ...` opening a clause, with their arguments to its end."""
    words = program_words(text) if isinstance(text, str) else []
    if not words:
        return []
    _, fences = _commands(text)
    ticks = [m.span() for m in pat.TICKED.finditer(text)] if "`" in text else []
    skip = _span_checker(sorted(fences + ticks))
    out: list[str] = []
    for start, end in words:
        if skip(start) or not _opens_clause(text, start):
            continue
        program = text[start:end]
        args = _arguments(text, end, program)
        if _shape_ok(program, args):
            command = " ".join([program, *args])
            if len(command) <= 200:
                out.append(command)
    return list(dict.fromkeys(out))
