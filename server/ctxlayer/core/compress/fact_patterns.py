"""The patterns the facts reader runs (`facts.py`), and the cheap tests that decide whether one
can match at all.

Each pattern is bounded and written for speed: a leading ``\\b`` or lookbehind checked after
the first character, alternatives ordered so the engine fails early (tests/core/
test_fast_patterns.py checks each against its plain spelling). The triggers are necessary
conditions: a pattern whose trigger is absent from a text is not run, which changes no result.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

EXT = (
    r"py|pyi|pyx|js|mjs|cjs|jsx|ts|tsx|json|jsonc|toml|yaml|yml|md|mdx|rst|txt|cfg|ini|conf|env|"
    r"lock|rs|go|java|kt|kts|scala|c|h|cc|cpp|cxx|hpp|hh|cs|rb|php|swift|m|mm|sh|bash|zsh|fish|"
    r"ps1|bat|lua|vim|sql|html|htm|css|scss|sass|less|vue|svelte|xml|csv|tsv|log|proto|gradle|"
    r"dockerfile|tf|hcl|ipynb|r|jl|ex|exs|erl|hs|ml|dart|zig|nim|cmake|mk|gitignore|patch|diff"
)
URL = re.compile(r"\b[a-zA-Z][a-zA-Z0-9+.-]{1,15}://[^\s<>\"'`)\]]+")
#: a path: one with slashes, a file name with a known extension, a Windows path. No match holds
#: a space, so `_path_matches` runs it word by word; a word without a slash or a backslash can
#: only hold a file name, which `FILE_NAME` alone finds.
FILE_NAME = rf"(?<![\w/.-])[\w-][\w.-]*\.(?:{EXT})(?![\w-])"
PATH = re.compile(
    r"(?<![\w/:.@-])(?:~|\.{1,2})?/?(?:[\w.@+-]+/)+[\w.@+-]*"
    rf"|{FILE_NAME}"
    r"|\b[A-Za-z]:\\(?:[\w.-]+\\)*[\w.-]+"
)
PATH_IN_NAME = re.compile(FILE_NAME)
EXT_RX = re.compile(rf"\.(?:{EXT})$", re.IGNORECASE)
TRAIL = ".,;:!?)]}'\"`"

PY_LOC = re.compile(r'File "([^"\n]{1,400})", line (\d+)')
FILE_LOC = re.compile(
    rf"(?<![\w/.-])((?:[A-Za-z]:)?[\w./\\@+-]*\.(?:{EXT})):(\d+)(?::(\d+))?(?!\d)"
)
# `[Ll](?<!\w.)` is `\b[Ll]` written so the engine jumps to the letters (see ERROR_CODE)
LINE_WORD = re.compile(r"[Ll](?<!\w.)(?:ines?|n)\s?(\d+(?:\s?[-–]\s?\d+)?)\b|#L(\d+)(?:-L?(\d+))?")
LINE_ZH = re.compile(r"第\s?(\d+)\s?行")

# `\b[A-Z]{1,4}\d{3,5}\b`, the leading `\b` checked after the first letter as "no word
# character before it" (`(?<!\w.)`): a pattern that starts with a character set or a literal
# is searched for by the regex engine's fast scan; one that starts with an assertion is tried
# at every position, three to twenty times slower on a long output
ERROR_CODE = re.compile(r"[A-Z](?<!\w.)[A-Z]{0,3}\d{3,5}\b")
ERROR_CODE_STOP = frozenset({"ISO", "UTF", "SHA", "MD", "CP", "RFC", "PEP", "X", "V", "Q", "W"})
#: a code of upper-case words joined by hyphens or underscores and ending in its number, the
#: word before the number naming an error (`JOINED_CODE_WORDS`): `ZEBRA-ERR-4411`,
#: `AUTH_ERROR_17`, `ERR-503`. No
#: kind read them (the letters before the number are more than 4, or not next to it); a
#: ticket, a serial or a standard (`JIRA-1234`, `SHA-256`, `ISO-8859-1`) names no error. The
#: `\b` before it checked after its first letter, as in ERROR_CODE, a hyphen counted a word
#: character (`X-ZEBRA-ERR-4411` is read whole, never from its second word)
JOINED_CODE = re.compile(r"[A-Z](?<![\w-].)[A-Z0-9]*(?:[-_][A-Z][A-Z0-9]*)*[-_]\d{2,6}(?![\w-])")
#: the words that make a joined code an error's (the word before its number), and the end
#: such a word may have (`DBERR`)
JOINED_CODE_WORDS = frozenset({"ERR", "ERROR", "ERRNO", "FAIL", "FAILED", "FAILURE", "FATAL",
                               "EXC", "EXCEPTION", "PANIC"})
JOINED_CODE_ENDS = ("ERR",)
#: a text holds a joined code only where one of these is (the pattern is not run otherwise)
JOINED_CODE_GATE = ("ERR", "FAIL", "FATAL", "EXC", "PANIC")
HTTP = re.compile(
    r"\bHTTP(?:/\d(?:\.\d)?)?\s?([1-5]\d\d)\b"
    r"|\b(?:status(?:\s?code)?|returned|response)[\s:=]{1,3}([1-5]\d\d)\b",
    re.IGNORECASE,
)
ERRNO = re.compile(  # `\bE(?:...)`, the `\b` after the E (see ERROR_CODE)
    r"E(?<!\wE)(?:NOENT|ACCES|PERM|EXIST|NOTDIR|ISDIR|INVAL|AGAIN|WOULDBLOCK|PIPE|CONNREFUSED|"
    r"CONNRESET|CONNABORTED|TIMEDOUT|ADDRINUSE|ADDRNOTAVAIL|NOSPC|NOMEM|BADF|BUSY|MFILE|NFILE|"
    r"NOTEMPTY|HOSTUNREACH|NETUNREACH|NETDOWN|ROFS|XDEV|NOTCONN|INTR|NOTSUP|OPNOTSUPP|SRCH|"
    r"CHILD|DEADLK|LOOP|NAMETOOLONG|NOEXEC|NOSYS|PROTO|ILSEQ|DQUOT|FBIG|NOTTY|RANGE|DOM|"
    r"OVERFLOW|CANCELED|ALREADY|INPROGRESS|MSGSIZE|NOTSOCK|SHUTDOWN|STALE|TXTBSY|2BIG)\b"
)
EXCEPTION = re.compile(
    r"\b(?:[a-z_][\w]*\.)*[A-Z]\w*(?:Error|Exception|Warning|Exit|Interrupt|Fault|Failure)\b"
    r"|\b(?:StopIteration|StopAsyncIteration|KeyboardInterrupt|SystemExit|GeneratorExit)\b"
)
ORA = re.compile(r"\b(?:ORA|PLS|SQLSTATE)[-\s]?\d{5}\b")
EXIT = re.compile(
    r"\bexit(?:ed)?(?:\s(?:with|code|status)){0,3}[\s:=]{1,3}(\d{1,3})\b", re.IGNORECASE
)
# the two above for ASCII text lowered: a literal first, the `\b` after it (see ERROR_CODE),
# so the engine jumps to the letters instead of trying a case-blind pattern at every character
HTTP_LOWER = re.compile(
    r"h(?<!\wh)ttp(?:/\d(?:\.\d)?)?\s?([1-5]\d\d)\b"
    r"|(?:s(?<!\ws)tatus(?:\s?code)?|r(?<!\wr)e(?:turned|sponse))[\s:=]{1,3}([1-5]\d\d)\b")
EXIT_LOWER = re.compile(r"e(?<!\we)xit(?:ed)?(?:\s(?:with|code|status)){0,3}[\s:=]{1,3}(\d{1,3})\b")

DOTTED = re.compile(r"(?<![\w.@/-])[a-z_][a-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)+(?!\.?[\w(/-])")
DOMAIN_END = frozenset(
    "com org net io dev edu gov co uk de fr cn jp ru app ai me info biz us ca eu local internal".split()
)
DOTTED_STOP = frozenset({"e.g", "i.e", "etc.al", "vs.", "a.m", "p.m"})
CALL = re.compile(r"(?<![\w.])([A-Za-z_][\w]*(?:\.[A-Za-z_]\w*)*)\((?=[^\n]{0,200}\))")
CALL_STOP = frozenset(
    [
        "if",
        "for",
        "while",
        "switch",
        "return",
        "print",
        "e.g",
        "i.e",
        "and",
        "or",
        "not",
        "in",
        "is",
        "with",
        "elif",
        "except",
        "assert",
        "yield",
        "lambda",
        "def",
        "class",
        "function",
        "catch",
        "see",
        "fig",
        "note",
        "step",
        "etc",
        "s",
        # Python's builtins: a ledger listed len(), enumerate(), isinstance() and super() of
        # every file read, and they say nothing of which code the chat is about
        *("abs all any bool bytes callable chr dict dir enumerate eval exec filter float format "
          "frozenset getattr globals hasattr hash id int isinstance issubclass iter len list "
          "locals map max min next object open ord range repr reversed round set setattr "
          "sorted str sum super tuple type vars zip").split(),
    ]
)
CAMEL = re.compile(r"[A-Z](?<!\w.)[a-z0-9]+(?:[A-Z][a-z0-9]+)+\b")  # `\b[A-Z]...`
CAMEL_STOP = frozenset(
    [
        "JavaScript",
        "TypeScript",
        "GitHub",
        "GitLab",
        "BitBucket",
        "PowerShell",
        "YouTube",
        "LinkedIn",
        "WordPress",
        "PayPal",
        "DevOps",
        "MacBook",
        "WhatsApp",
        "OpenAI",
        "DeepSeek",
        "ChatGpt",
        "iPhone",
        "FastApi",
    ]
)
SNAKE = re.compile(r"(?<![\w./-])[a-z][a-z0-9]*(?:_[a-z0-9]+)+(?!\.?[\w(/-])")
TICKED = re.compile(r"`([^`\n]{1,300})`")
TEST = re.compile(
    r"(?<![\w/.-])(?:[\w./-]+\.py::)?(?:Test\w+::)?test_\w+(?:\[[^\]\s]{1,80}\])?"
    r"|(?<![\w/.-])[\w./-]+\.py::\w+(?:::\w+)?|\bTest[A-Z]\w+\b"
)
TICKED_NAME = re.compile(r"[A-Za-z_][\w.]*(?:\(\))?")

# The opening line's runs are possessive: giving characters back never finds its line feed
# (a line without one is no opening), and tried so, a 20 KB line of backticks took 160 ms, the
# time growing with the square of its length
FENCE = re.compile(
    r"^[ \t]{0,3}(```++|~~~++)[ \t]*+([\w+-]*+)[^\n]*+\n(.*?)(?:^[ \t]{0,3}\1[ \t]*$|\Z)",
    re.MULTILINE | re.DOTALL,
)
SHELL_LANGS = frozenset(
    [
        "bash",
        "sh",
        "shell",
        "console",
        "zsh",
        "fish",
        "powershell",
        "ps1",
        "pwsh",
        "cmd",
        "bat",
        "terminal",
        "shell-session",
        "shellsession",
    ]
)
PROMPT_LINE = re.compile(
    r"^[ \t]*(?:\$|%|PS>|PS [^>\n]{0,80}>|❯|➜)\s+(\S[^\n]{0,500})", re.MULTILINE
)
PROGRAMS = frozenset(
    [
        "git",
        "python",
        "python3",
        "pip",
        "pip3",
        "pipx",
        "pytest",
        "npm",
        "npx",
        "yarn",
        "pnpm",
        "node",
        "deno",
        "bun",
        "make",
        "cmake",
        "cargo",
        "rustc",
        "rustup",
        "go",
        "gofmt",
        "docker",
        "docker-compose",
        "podman",
        "kubectl",
        "helm",
        "curl",
        "wget",
        "ls",
        "cd",
        "cat",
        "grep",
        "rg",
        "find",
        "sed",
        "awk",
        "chmod",
        "chown",
        "mkdir",
        "rm",
        "mv",
        "cp",
        "ln",
        "touch",
        "uv",
        "uvx",
        "poetry",
        "ruff",
        "mypy",
        "pyright",
        "tox",
        "nox",
        "bash",
        "sh",
        "zsh",
        "sudo",
        "apt",
        "apt-get",
        "dnf",
        "yum",
        "brew",
        "nvim",
        "vim",
        "code",
        "ctxlayer",
        "tsc",
        "eslint",
        "prettier",
        "jest",
        "vitest",
        "java",
        "javac",
        "mvn",
        "gradle",
        "dotnet",
        "terraform",
        "ssh",
        "scp",
        "rsync",
        "tar",
        "unzip",
        "zip",
        "echo",
        "export",
        "source",
        "systemctl",
        "journalctl",
        "psql",
        "mysql",
        "sqlite3",
        "redis-cli",
        "gh",
        "hatch",
        "pdm",
        "pre-commit",
        "black",
        "isort",
        "flake8",
        "pylint",
        "coverage",
        "ps",
        "kill",
        "tail",
        "head",
        "less",
        "diff",
        "patch",
        "env",
        "which",
        "openssl",
        "nc",
        "lsof",
        "strace",
        "gdb",
        "valgrind",
        "pnpx",
        "webpack",
        "vite",
        "esbuild",
        "playwright",
    ]
)

UNITS = (
    r"%|ms|µs|us|ns|s|sec|secs|seconds?|minutes?|mins?|h|hrs?|hours?|days?|[KMGT]i?B|[kmg]b|bytes?"
    r"|tokens?|lines?|chars?|characters?|files?|items?|messages?|requests?|rps|qps|req/s|MB/s|"
    r"GB/s|px|em|rem|x|times|turns?|rounds?|retries|workers?|threads?|cores?|GHz|MHz|°C|"
    r"个|次|秒|毫秒|分钟|字|条"
)
# `\d(?<![\w.]\d)\d*` is `(?<![\w.])\d+` with its first digit first (see ERROR_CODE)
NUM_UNIT = re.compile(rf"\d(?<![\w.]\d)\d*(?:[.,]\d+)?\s?(?:{UNITS})(?![\w/])")
VERSION = re.compile(
    r"(?<![\w.])v?\d+\.\d+\.\d+(?:[-.][\w.]+)?\b|\b(?:[Pp]ython|[Nn]ode|[Vv]ersion|[Gg]o|Rust|Java)\s?v?\d+(?:\.\d+)+\b"
)
# no word is the start of another: at a position at most one of them matches, in any order
CONTEXT_WORDS = (
    "port", "timeout", "budget", "limit", "max", "min", "size", "count", "retries", "workers",
    "threads", "version", "batch", "depth", "width", "height", "cap", "ratio", "threshold",
    "window", "context", "ttl", "weight", "priority", "factor", "rate", "top_k", "top_p",
    "temperature")
CONTEXT_VALUE = r"(?:[\s:=]|\s(?:of|is|to|at)\s){1,3}\d+(?:\.\d+)?\b"
NUM_CONTEXT = re.compile(r"\b(?:" + "|".join(CONTEXT_WORDS) + ")" + CONTEXT_VALUE,
                          re.IGNORECASE)
# The same on lowered ASCII text, case-sensitive, the words grouped by their first letter
# (`p(?<!\w.)(?:ort|riority)` is `\b(?:port|priority)`) so the engine scans for those letters:
# four times faster than the case-blind pattern tried at every character. Lowering ASCII keeps
# every position, and on ASCII a case-blind match is a match of the lowered text.
NUM_CONTEXT_LOWER = re.compile("(?:" + "|".join(
    f"{c}(?<!\\w.)(?:" + "|".join(w[1:] for w in CONTEXT_WORDS if w[0] == c) + ")"
    for c in dict.fromkeys(w[0] for w in CONTEXT_WORDS)) + ")" + CONTEXT_VALUE)
ASSIGN_NUM = re.compile(r"(?<![\w.-])[A-Za-z_][\w.-]{0,60}=\d+(?:\.\d+)?(?![\w.])")


# ---------------------------------------------------------------------------------------------
# Triggers: cheap necessary conditions, so a pattern that cannot match is not run at all (most
# chat prose has no digit, slash, underscore or parenthesis). Exact: skipping changes no result.

DIGIT = re.compile(r"\d")
DOT_NAME = re.compile(r"\.[A-Za-z_]")  # every dotted name and every file extension has one
ERRNO_START = re.compile(r"E[A-Z2]")
PROMPTS = ("$", "%", "PS", "❯", "➜")  # what every PROMPT_LINE starts with
HTTP_WORDS = ("http", "status", "returned", "response")  # what every HTTP match holds
ORA_WORDS = ("ORA", "PLS", "SQLSTATE")  # what every ORA match holds
EXCEPTION_WORDS = ("Error", "Exception", "Warning", "Exit", "Interrupt", "Fault", "Failure",
                    "Iteration")


def has_digit(text: str) -> bool:
    """Any ``\\d`` (ASCII digits by substring search, other Unicode digits by the regex)."""
    return any(d in text for d in "0123456789") or (
        not text.isascii() and DIGIT.search(text) is not None)


#: a needle in fewer characters than this on average: the text is run over whole (a step a
#: line costs about as much as the regex engine on 30 to 40 characters)
DENSE_CHARS = 32


def in_lines(rx: re.Pattern[str], text: str, needles: tuple[str, ...]) -> Iterator[re.Match[str]]:
    """``rx.finditer(text)`` for a pattern whose every match lies within one line and holds one
    of ``needles``, and whose lookarounds and ``\\b`` read a line break as they read either end
    of the text: run on the lines that hold a needle only (the engine tries a pattern that
    starts with an assertion at every character; finding a needle is a plain substring
    search). A run from ``pos`` to ``endpos`` sees the character before ``pos`` and none after
    ``endpos``, which are a line break and the end: the same matches. Where the needles are
    dense (a log of short lines, each with a colon), one run over the text costs less than a
    step a line, and gives the same."""
    if sum(map(text.count, needles)) * DENSE_CHARS > len(text):
        yield from rx.finditer(text)
        return
    spans: set[tuple[int, int]] = set()
    for needle in needles:
        i = text.find(needle)
        while i >= 0:
            end = text.find("\n", i)
            end = len(text) if end < 0 else end
            spans.add((text.rfind("\n", 0, i) + 1, end))
            i = text.find(needle, end)
    for start, end in sorted(spans):
        yield from rx.finditer(text, start, end)


def has_path(text: str) -> bool:
    return "/" in text or "\\" in text or DOT_NAME.search(text) is not None
