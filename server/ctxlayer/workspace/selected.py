"""The `files` part: selected files included whole, README first, under a character budget.

Owns: matching the config globs against the workspace's file list (a glob-free pattern may also
name an ignored file directly), the order (README first, then pattern order), refusing any path
that leaves the workspace (`..`, absolute, or a symlink resolving outside; loops too), never
including lockfiles, minified or binary files, or files that hold secrets (`.env`, keys), and
the character budget, and how many it names left out (MAX_LEFT_OUT, the rest counted in one
line). Reads the chosen files only, and none that its size says is over the budget.
"""

from __future__ import annotations

import os
import re
import stat
from collections import Counter
from dataclasses import dataclass
from pathlib import Path, PurePath, PurePosixPath

from ctxlayer import userfiles
from ctxlayer.core.text import counted, path_line
from ctxlayer.protocol import LeftOut
from ctxlayer.workspace.ignore import GLOB_CHARS, IgnoreRules, compile_globs
from ctxlayer.workspace.tree import MAX_LEFT_OUT

HEADER = "# Selected files"

LOCKFILES = {
    "package-lock.json", "npm-shrinkwrap.json", "yarn.lock", "pnpm-lock.yaml", "bun.lockb",
    "bun.lock", "Cargo.lock", "poetry.lock", "uv.lock", "Pipfile.lock", "pdm.lock",
    "composer.lock", "Gemfile.lock", "go.sum", "flake.lock", "mix.lock", "pubspec.lock",
    "Podfile.lock", "packages.lock.json", "gradle.lockfile",
}
LANG = {".py": "python", ".toml": "toml", ".json": "json", ".md": "markdown", ".mdc": "markdown",
        ".yml": "yaml", ".yaml": "yaml", ".js": "javascript", ".ts": "typescript",
        ".rs": "rust", ".rst": "rst", ".txt": "text", ".cfg": "ini", ".ini": "ini"}
#: what separates the plain runs of a glob's part before any bracket expression: wildcards,
#: escapes, negation and folder separators (`**/` may match no folder: a run never spans a `/`)
NOT_PLAIN = re.compile(r"[*?\\/!]")


@dataclass(frozen=True, slots=True)
class FilesText:
    text: str
    left_out: list[LeftOut]
    used: tuple[str, ...]  # workspace-relative paths included


#: file names that hold secrets (keys, tokens, passwords): never sent, whatever selects them
#: (a project's ctxlayer.toml naming `.env` sent the user's keys to the provider)
SECRET_NAMES = {".env", ".envrc", ".netrc", ".npmrc", ".pypirc", ".pgpass", ".git-credentials",
                "id_rsa", "id_dsa", "id_ecdsa", "id_ed25519", "credentials", ".htpasswd"}
#: folders whose files hold secrets: git's own (`config` keeps a remote's token, as
#: actions/checkout writes it), and the keys and logins of ssh, AWS, GnuPG, Docker, kubectl
SECRET_FOLDERS = {".git", ".ssh", ".aws", ".gnupg", ".docker", ".kube"}
SECRET_SUFFIXES = (".pem", ".key", ".p12", ".pfx", ".keystore", ".jks")
#: `.env.<x>` files that are templates, without the values
ENV_TEMPLATES = {".env.example", ".env.sample", ".env.template", ".env.dist"}


#: why a file that may hold secrets is left out
SECRETS = "may hold secrets (keys, tokens, passwords): never sent"


def secret_link(real: Path, root: Path) -> str | None:
    """Why a file that resolves to ``real`` is never sent, if it is not (a link a cloned
    repo ships, README.txt -> .env or AGENTS.md -> .git/config, to the user's own secrets).
    ``root``: the workspace, whose own path says nothing of its files."""
    if may_hold_secrets(real.name):
        return f"a link to {real.name}, which {SECRETS}"
    folder = in_secret_folder(real.relative_to(root) if real.is_relative_to(root) else real)
    return f"a link into {folder}/, whose files {SECRETS}" if folder else None


def in_secret_folder(path: PurePath) -> str | None:
    """The folder of ``path`` that holds secrets (SECRET_FOLDERS), if any."""
    return next((part for part in path.parts[:-1] if part in SECRET_FOLDERS), None)


def may_hold_secrets(name: str) -> bool:
    lower = name.lower()
    if lower in ENV_TEMPLATES:
        return False
    return (lower in SECRET_NAMES or lower.startswith(".env.") or lower.endswith(".env")
            or lower.endswith(SECRET_SUFFIXES))


def looks_binary(data: bytes) -> bool:
    """Whether a file's bytes are not text: a NUL byte in its first 8 KB (UTF-16 without a
    BOM, an image, an archive)."""
    return b"\0" in data[:8192]


#: why a selected or agent file that is no regular file is left out
NOT_READ = f"{userfiles.NOT_A_FILE_SAID}: never read"


def is_lockfile(name: str) -> bool:
    return name in LOCKFILES or name.endswith((".lock", ".lockb"))


def is_minified(name: str, content: str) -> bool:
    if ".min." in name or name.endswith(".min"):
        return True
    lines = content.count("\n") + 1
    return len(content) > 2000 and len(content) / lines > 300


def _fence(content: str) -> str:
    longest = max((len(m) for m in re.findall(r"`+", content)), default=0)
    return "`" * max(3, longest + 1)


def _lang(name: str) -> str:
    if name == "Makefile":
        return "make"
    return LANG.get(PurePosixPath(name).suffix.lower(), "")


def _outside_pattern(pattern: str) -> bool:
    p = PurePosixPath(pattern)
    return p.is_absolute() or pattern.startswith("~") or ".." in p.parts


def named_paths(patterns: list[str]) -> list[str]:
    """The patterns that name one file (no glob, inside the workspace), as relative paths:
    read whether or not the file is ignored, so the watcher keeps their folders."""
    return [clean for pattern in patterns
            if not _outside_pattern(pattern) and (clean := pattern.strip("/"))
            and not GLOB_CHARS.search(clean)]


def select_paths(patterns: list[str], files: list[str]) -> tuple[list[str], list[LeftOut]]:
    """The candidate paths in inclusion order, and the patterns refused outright."""
    left_out: list[LeftOut] = []
    chosen: list[str] = []
    for pattern in patterns:
        if _outside_pattern(pattern):
            left_out.append(LeftOut(part="files", path=pattern,
                                    reason="pattern points outside the workspace"))
            continue
        clean = pattern.strip("/")
        if not clean:
            continue
        if GLOB_CHARS.search(clean):
            regex = compile_globs([clean])
            if regex is None:  # not a pattern git can read: matches nothing
                continue
            plain = max(NOT_PLAIN.split(clean.split("[", 1)[0]), key=len)
            # every match holds the glob's longest plain run: the list is narrowed by a
            # substring test first (the glob itself on each of 20k files took 18 ms a save)
            pool = [f for f in files if plain in f] if plain else files
            chosen += [f for f in pool if regex.match(f)]
        else:
            chosen.append(clean)
    chosen = list(dict.fromkeys(chosen))
    # names by string: a PurePosixPath each took 0.5 s of a glob's 20,000 matches
    readme = [p for p in chosen if p.rsplit("/", 1)[-1].lower().startswith("readme")]
    first = set(readme)
    rest = [p for p in chosen if p not in first]
    return sorted(readme, key=lambda p: (p.count("/"), p)) + rest, left_out


def _refused_by_name(rel: str) -> str | None:
    """Why the selected file ``rel`` is left out by its path alone, if it is: known before
    anything about it is read from the disk."""
    name = rel.rsplit("/", 1)[-1]
    if is_lockfile(name):
        return "lockfile"
    if may_hold_secrets(name):
        return SECRETS
    folder = next((part for part in rel.split("/")[:-1] if part in SECRET_FOLDERS), None)
    return None if folder is None else f"in {folder}/, whose files {SECRETS}"


def _never_read(real: Path, root: Path, skip: frozenset[Path],
                included: dict[Path, str]) -> str | None:
    """Why a selected file resolving to ``real`` is left out unread, if it is."""
    if real in skip:
        return "already included as an agent file"
    if real in included:  # `self/README.md` through a `self -> .` link
        return f"the same file as {included[real]}"
    return secret_link(real, root)


def _cannot_fit(size: int, remaining: int) -> bool:
    """Whether a file of ``size`` bytes is over what is left of the budget whatever its text
    (a UTF-8 character is 4 bytes at most), so reading it would tell nothing more."""
    return size > remaining * 4


def _over_budget(size: int, remaining: int) -> str:
    return (f"over the character budget ({counted(size, 'byte')}, "
            f"{counted(remaining, 'character')} left)")


def _capped(left_out: list[LeftOut]) -> list[LeftOut]:
    """The first MAX_LEFT_OUT files left out, in the order they were selected, and one line
    counting the rest by reason: a glob matching 20,000 files named each of them (2.5 MB of
    segment for the client at every change)."""
    if len(left_out) <= MAX_LEFT_OUT:
        return left_out
    rest = Counter(item.reason.split(" (", 1)[0] for item in left_out[MAX_LEFT_OUT:])
    why = ", ".join(f"{n:,} {reason}" for reason, n in
                    sorted(rest.items(), key=lambda kv: (-kv[1], kv[0])))
    more = len(left_out) - MAX_LEFT_OUT
    return [*left_out[:MAX_LEFT_OUT], LeftOut(
        part="files", path=".", reason=f"{counted(more, 'more selected file')} left out: {why}")]


def _readable(path: Path, root_real: Path) -> tuple[Path | None, str | None]:
    """(the file ``path`` resolves to, or None; why it is left out, if it is said)."""
    try:
        real = path.resolve(strict=True)
    except RuntimeError:
        return None, "symlink loop"
    except OSError:
        return None, "broken symlink"
    if real != root_real and root_real not in real.parents:
        return None, f"resolves outside the workspace ({real})"
    if not real.is_file():
        if real.is_dir():  # a folder a glob matched says nothing; a pipe is said
            return None, None
        return None, NOT_READ
    return real, None


def _text_of(rel: str, real: Path, remaining: int) -> tuple[str | None, str | None]:
    """(the text of the selected file ``rel``, or None; why it is left out)."""
    try:
        size = real.stat().st_size
        if _cannot_fit(size, remaining):
            return None, _over_budget(size, remaining)
        data = userfiles.read(real)
    except OSError as e:
        return None, f"cannot be read ({e.strerror})"
    if looks_binary(data):
        return None, "binary"
    try:
        content = data.decode("utf-8")
    except UnicodeDecodeError:
        return None, "binary (not UTF-8 text)"
    if is_minified(rel.rsplit("/", 1)[-1], content):
        return None, "minified"
    return content, None


def render_files(root: Path, patterns: list[str], files: list[str], char_budget: int,
                 extra: IgnoreRules | None, skip: frozenset[Path] = frozenset()) -> FilesText:
    """The files part's text ('' when nothing is selected). `skip`: resolved paths already
    included elsewhere (agent files). A plain file over what is left of the budget is told by
    its size alone (one lstat), never resolved or read: a glob matching 20,000 files took 3.6 s
    a change to go through them all once the budget was used."""
    paths, left_out = select_paths(patterns, files)
    root_real = root.resolve()
    remaining = char_budget
    sections: list[str] = []
    used: list[str] = []
    included: dict[Path, str] = {}  # resolved path -> the path it was included as

    def leave(path: str, reason: str) -> None:
        left_out.append(LeftOut(part="files", path=path, reason=reason))

    for rel in paths:
        if extra is not None and extra.ignored_with_parents(rel, False):
            continue
        try:
            st = os.lstat(f"{root}/{rel}")
        except OSError:  # gone since the file list was made
            continue
        why = _refused_by_name(rel)
        if why is None and stat.S_ISREG(st.st_mode) and _cannot_fit(st.st_size, remaining):
            why = _over_budget(st.st_size, remaining)
        if why is not None:
            leave(rel, why)
            continue
        real, why = _readable(root / rel, root_real)
        if real is not None:
            why = _never_read(real, root_real, skip, included)
        if real is None or why is not None:
            if why is not None:
                leave(rel, why)
            continue
        content, why = _text_of(rel, real, remaining)
        if content is not None and len(content) > remaining:
            content, why = None, (f"over the character budget ({len(content):,} characters, "
                                  f"{remaining:,} left of files_char_budget {char_budget:,})")
        if content is None:
            leave(rel, why or "cannot be read")
            continue
        remaining -= len(content)
        included[real] = rel
        fence = _fence(content)
        body = content if content.endswith("\n") else content + "\n"
        sections.append(f"## {path_line(rel)}\n\n{fence}{_lang(rel.rsplit('/', 1)[-1])}\n"
                        f"{body}{fence}")
        used.append(rel)
    left_out = _capped(left_out)
    if not sections:
        return FilesText("", left_out, ())
    return FilesText("\n\n".join([HEADER, *sections]), left_out, tuple(used))
