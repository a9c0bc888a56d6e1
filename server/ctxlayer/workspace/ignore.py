"""gitignore rules and path globs, as pure matching on '/'-separated relative paths.

Owns: translating gitignore patterns (negation, dir-only, anchoring, `**`, classes) and the
config's selected-file globs into regular expressions, and answering "is this path ignored".
Does no I/O except `IgnoreRules.read`, which only reads one .gitignore file. Used for the tree
outside a git repository (git's own rules apply inside one), for the `ignore` setting, and for
classifying watcher events. Checked against `git check-ignore --no-index` in the tests.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path


def glob_regex(pattern: str) -> str:
    """Regex source for a '/'-separated glob: `*` and `?` stay inside one name, `**` spans
    folders (`**/` = zero or more folders), `[...]` classes (`[!...]` negated), `\\x` escapes."""
    out: list[str] = []
    i, n = 0, len(pattern)
    while i < n:
        c = pattern[i]
        if c == "*":
            if pattern.startswith("**", i):
                before_ok = i == 0 or pattern[i - 1] == "/"
                after = pattern[i + 2 : i + 3]
                if before_ok and after == "/":
                    out.append("(?:.*/)?")
                    i += 3
                    continue
                if before_ok and after == "":
                    out.append(".*")
                    i += 2
                    continue
                out.append("[^/]*")
                i += 2
                continue
            out.append("[^/]*")
        elif c == "?":
            out.append("[^/]")
        elif c == "[":
            j = i + 1
            if j < n and pattern[j] in "!^":
                j += 1
            if j < n and pattern[j] == "]":
                j += 1
            while j < n and pattern[j] != "]":
                j += 1
            if j >= n:
                out.append(re.escape(c))
            else:
                body = pattern[i + 1 : j]
                if body[:1] in ("!", "^"):
                    body = "^" + body[1:]
                body = body.replace("\\", "\\\\")
                out.append(f"(?!/)[{body}]")
                i = j
        elif c == "\\" and i + 1 < n:
            i += 1
            out.append(re.escape(pattern[i]))
        else:
            out.append(re.escape(c))
        i += 1
    return "".join(out)


def compile_globs(patterns: list[str]) -> re.Pattern[str] | None:
    """One regex matching a relative path against any of the globs (None when no globs)."""
    if not patterns:
        return None
    return re.compile("|".join(f"(?:{glob_regex(p.strip('/'))})" for p in patterns) + r"\Z")


@dataclass(frozen=True, slots=True)
class Rule:
    regex: re.Pattern[str]
    negate: bool
    dir_only: bool
    anchored: bool


def parse_rules(text: str) -> list[Rule]:
    """The rules of one .gitignore file, in file order."""
    rules = []
    for raw in text.splitlines():
        line = raw.rstrip("\r")
        if not line or line.startswith("#"):
            continue
        # trailing spaces are dropped unless escaped with a backslash
        stripped = line.rstrip(" ")
        if stripped.endswith("\\") and len(stripped) < len(line):
            stripped += " "
        line = stripped
        negate = line.startswith("!")
        if negate or line.startswith(("\\!", "\\#")):
            line = line[1:]
        dir_only = line.endswith("/")
        line = line.rstrip("/")
        if not line:
            continue
        anchored = "/" in line
        line = line.lstrip("/")
        regex = re.compile(glob_regex(line) + r"\Z")
        rules.append(Rule(regex, negate, dir_only, anchored))
    return rules


class IgnoreRules:
    """gitignore rules by folder: `add(folder, rules)`, then `ignored(path, is_dir)`.

    Paths and folders are '/'-separated and relative to one root ("" is the root). The last
    matching rule wins, deeper files after shallower ones, as git does. The caller walks top
    down and skips ignored folders, so a file inside an ignored folder is never asked about.
    """

    def __init__(self) -> None:
        self._by_folder: dict[str, list[Rule]] = {}

    def add(self, folder: str, rules: list[Rule]) -> None:
        if rules:
            self._by_folder.setdefault(folder, []).extend(rules)

    def read(self, root: Path, folder: str, name: str = ".gitignore") -> None:
        try:
            text = (root / folder / name).read_text("utf-8", errors="replace")
        except OSError:
            return
        self.add(folder, parse_rules(text))

    def ignored(self, path: str, is_dir: bool) -> bool:
        verdict = False
        folder = ""
        parts = path.split("/")
        for depth in range(len(parts)):
            folder = "/".join(parts[:depth])
            rules = self._by_folder.get(folder)
            if not rules:
                continue
            rel = "/".join(parts[depth:])
            name = parts[-1]
            for rule in rules:
                if rule.dir_only and not is_dir:
                    continue
                if (rule.regex.match(rel) if rule.anchored else rule.regex.match(name)):
                    verdict = not rule.negate
        return verdict

    def ignored_with_parents(self, path: str, is_dir: bool) -> bool:
        """Like `ignored`, but also true when any parent folder is ignored."""
        parts = path.split("/")
        for i in range(1, len(parts)):
            if self.ignored("/".join(parts[:i]), True):
                return True
        return self.ignored(path, is_dir)
