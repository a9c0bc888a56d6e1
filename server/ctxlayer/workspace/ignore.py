"""gitignore rules and path globs, on '/'-separated relative paths, matched by `pathspec`.

Owns: which .gitignore rules apply where (one `pathspec.GitIgnoreSpec` per folder, deeper
folders after shallower ones, as git reads them) and the config's selected-file globs, and
answering "is this path ignored". The pattern syntax itself (negation, dir-only, anchoring,
`**`, classes, escapes, trailing spaces) is pathspec's, which follows git's documentation.
Does no I/O except `IgnoreRules.read`, which only reads one .gitignore file. Used for the tree
outside a git repository (git's own rules apply inside one), for the `ignore` setting, and for
classifying watcher events. Checked against `git ls-files -o --exclude-standard` in the tests.
"""

from __future__ import annotations

import re
import warnings
from pathlib import Path

from pathspec import GitIgnoreSpec
from pathspec.patterns.gitignore import GitIgnorePatternError
from pathspec.patterns.gitignore.spec import GitIgnoreSpecPattern

from ctxlayer import userfiles

#: One compiled line of a .gitignore file (`include` False for a `!` negation).
Rule = GitIgnoreSpecPattern


#: what makes a `files` entry a glob: one without them names a file, read as it is written
GLOB_CHARS = re.compile(r"[*?\[]")


def _compiled(line: str) -> Rule:
    """One pattern compiled, or pathspec's error. A class that opens with a bracket (`[[]`, a
    literal `[` as git reads it) makes Python's `re` warn of a possible nested set, on the
    CLI's stderr with pathspec's file and line: the pattern is read as git reads it, the
    warning says nothing to the user."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)
        return Rule(line)


def _why_unread(line: str) -> str | None:
    """Why `line` is no pattern at all (None when it is one): see `_rule`."""
    try:
        _compiled(line)
    except GitIgnorePatternError:
        return "git reads no pattern in it"
    except re.error as exc:
        return exc.msg
    return None


def _rule(line: str) -> Rule | None:
    """One pattern compiled; None for a line that is none, which matches nothing: git reads no
    pattern in it (`!`, a trailing `\\`), or its regex does not compile (a class whose range
    runs backwards: pathspec's `re.error` failed the workspace's scan and with it every
    assembly). `[z-a]` matches nothing in git too; git reads more of some such lines
    (`[!z-a]x` matches `ax`), which are skipped here whole: a few files git ignores may be
    listed outside a git repository."""
    try:
        return _compiled(line)
    except (GitIgnorePatternError, re.error):
        return None


def _anchored(pattern: str) -> Rule | None:
    """A glob of the `files` setting as a gitignore pattern anchored at the root."""
    return _rule("/" + pattern.strip("/"))


def why_no_pattern(pattern: str, *, glob: bool = False) -> str | None:
    """Why an entry of the `ignore` setting (`glob`: of the `files` setting, whose entries
    without `*`, `?` or `[` name a file and are never compiled) matches nothing because it
    cannot be read as a pattern; None when it can. The settings name it once; the scan skips
    it."""
    if not glob:
        return _why_unread(pattern)
    clean = pattern.strip("/")
    return _why_unread("/" + clean) if GLOB_CHARS.search(clean) else None


def glob_regex(pattern: str) -> str:
    """Regex source for a '/'-separated glob relative to the root: `*` and `?` stay inside one
    name, `**` spans folders (`**/` = zero or more folders), `[...]` classes (`[!...]`
    negated), `\\x` escapes (pathspec's gitignore translation, anchored)."""
    rule = _anchored(pattern)
    return rule.regex.pattern if rule is not None and rule.regex is not None else r"(?!)"


class Globs:
    """The selected-file globs of the config: `match(path)` is true when one glob matches the
    whole path (a gitignore pattern also matches what lies below a folder; a glob does not),
    or, for a glob ending in `**` (`**`, `docs/**`, `**/*`), any path below where it starts:
    pathspec reads those as "everything below" and its match stops there (`docs/`), so they
    matched no file at all."""

    __slots__ = ("_rules",)

    def __init__(self, rules: list[tuple[Rule, bool]]) -> None:
        self._rules = rules

    def match(self, path: str) -> bool:
        for rule, below in self._rules:
            found = rule.match_file(path)
            if found is not None and (below or found.match.end() == len(path)):
                return True
        return False


def _everything_below(pattern: str) -> bool:
    """Whether a glob takes every file below where it starts (`**`, `docs/**`, `**/*`)."""
    clean = pattern.strip("/")
    return clean == "**" or clean.endswith("/**") or clean in ("**/*", "**/**")


def compile_globs(patterns: list[str]) -> Globs | None:
    """A matcher of a relative path against any of the globs (None when no globs)."""
    rules = [(r, _everything_below(p)) for p, r in ((p, _anchored(p)) for p in patterns)
             if r is not None and r.include is not None]
    return Globs(rules) if rules else None


def parse_rules(text: str) -> list[Rule]:
    """The rules of one .gitignore file, in file order (comments, blank lines and lines that
    are no pattern, `_why_unread`, left out: git matches nothing with them either)."""
    rules = []
    for line in text.splitlines():
        rule = _rule(line)
        if rule is not None and rule.include is not None:
            rules.append(rule)
    return rules


def _only_inside(rule: Rule, folder: str) -> bool:
    """Whether `rule` is a `dir/**` that pathspec matched with the folder `dir/` itself: git's
    `dir/**` holds only what is inside dir (a `!keep.txt` in dir/.gitignore can then bring a
    file back), pathspec's regex (`^dir/`) takes the folder too, and the walk never went in."""
    if not rule.pattern.rstrip(" ").endswith("/**") or rule.regex is None:
        return False
    found = rule.regex.match(folder)
    return found is not None and found.end() == len(folder)


def _folder_verdict(rules: list[Rule], folder: str) -> bool | None:
    """The last rule matching the folder `folder` ('x/'), a `dir/**` not matching dir."""
    for rule in reversed(rules):
        if rule.match_file(folder) is not None and not _only_inside(rule, folder):
            return rule.include
    return None


class IgnoreRules:
    """gitignore rules by folder: `add(folder, rules)`, then `ignored(path, is_dir)`.

    Paths and folders are '/'-separated and relative to one root ("" is the root). The last
    matching rule wins, deeper files after shallower ones, as git does. The caller walks top
    down and skips ignored folders, so a file inside an ignored folder is never asked about.
    """

    def __init__(self) -> None:
        self._rules: dict[str, list[Rule]] = {}
        self._specs: dict[str, GitIgnoreSpec] = {}
        #: ignore files `read` found that are not regular files (a named pipe): never waited
        #: on, their rules not applied; the tree part says so
        self.unread: list[str] = []

    def add(self, folder: str, rules: list[Rule]) -> None:
        if rules:
            kept = self._rules.setdefault(folder, [])
            kept.extend(rules)
            self._specs[folder] = GitIgnoreSpec(kept)

    def read(self, root: Path, folder: str, name: str = ".gitignore") -> None:
        try:
            text = userfiles.text(root / folder / name)
        except OSError as exc:
            if exc.strerror == userfiles.NOT_A_FILE and not (root / folder / name).is_dir():
                self.unread.append(f"{folder}/{name}" if folder else name)
            return
        self.add(folder, parse_rules(text))

    def ignored(self, path: str, is_dir: bool) -> bool:
        verdict = False
        parts = path.split("/")
        # pathspec tells a folder by its trailing slash (what `dir/` patterns match)
        tail = "/" if is_dir else ""
        for depth in range(len(parts)):
            folder = "/".join(parts[:depth])
            spec = self._specs.get(folder)
            if spec is None:
                continue
            rel = "/".join(parts[depth:]) + tail
            result = spec.check_file(rel)
            found = result.include
            if (found is not None and is_dir and result.index is not None
                    and _only_inside(self._rules[folder][result.index], rel)):
                found = _folder_verdict(self._rules[folder], rel)
            if found is not None:
                verdict = found
        return verdict

    def ignored_with_parents(self, path: str, is_dir: bool) -> bool:
        """Like `ignored`, but also true when any parent folder is ignored."""
        parts = path.split("/")
        for i in range(1, len(parts)):
            if self.ignored("/".join(parts[:i]), True):
                return True
        return self.ignored(path, is_dir)
