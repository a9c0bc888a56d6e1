"""The `files` part: selected files included whole, README first, under a character budget.

Owns: matching the config globs against the workspace's file list (a glob-free pattern may also
name an ignored file directly), the order (README first, then pattern order), refusing any path
that leaves the workspace (`..`, absolute, or a symlink resolving outside; loops too), never
including lockfiles, minified or binary files, or files that hold secrets (`.env`, keys), and
the character budget. Reads the chosen files only.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path, PurePath, PurePosixPath

from ctxlayer import userfiles
from ctxlayer.core.text import path_line
from ctxlayer.protocol import LeftOut
from ctxlayer.workspace.ignore import IgnoreRules, compile_globs

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
GLOB_CHARS = re.compile(r"[*?\[]")
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
    readme = [p for p in chosen if PurePosixPath(p).name.lower().startswith("readme")]
    first = set(readme)
    rest = [p for p in chosen if p not in first]
    return sorted(readme, key=lambda p: (p.count("/"), p)) + rest, left_out


def _never_read(rel: str, real: Path, root: Path, skip: frozenset[Path],
                included: dict[Path, str]) -> str | None:
    """Why the selected file ``rel`` (resolving to ``real``) is left out unread, if it is."""
    name = PurePosixPath(rel).name
    if real in skip:
        return "already included as an agent file"
    if real in included:  # `self/README.md` through a `self -> .` link
        return f"the same file as {included[real]}"
    if is_lockfile(name):
        return "lockfile"
    if may_hold_secrets(name):
        return SECRETS
    if (folder := in_secret_folder(PurePosixPath(rel))) is not None:
        return f"in {folder}/, whose files {SECRETS}"
    return secret_link(real, root)


def render_files(root: Path, patterns: list[str], files: list[str], char_budget: int,
                 extra: IgnoreRules | None, skip: frozenset[Path] = frozenset()) -> FilesText:
    """The files part's text ('' when nothing is selected). `skip`: resolved paths already
    included elsewhere (agent files)."""
    paths, left_out = select_paths(patterns, files)
    root_real = root.resolve()
    remaining = char_budget
    sections: list[str] = []
    used: list[str] = []
    included: dict[Path, str] = {}  # resolved path -> the path it was included as

    def leave(path: str, reason: str) -> None:
        left_out.append(LeftOut(part="files", path=path, reason=reason))

    for rel in paths:
        name = PurePosixPath(rel).name
        if extra is not None and extra.ignored_with_parents(rel, False):
            continue
        path = root / rel
        if not path.is_symlink() and not path.exists():
            continue
        try:
            real = path.resolve(strict=True)
        except RuntimeError:
            leave(rel, "symlink loop")
            continue
        except OSError:
            leave(rel, "broken symlink")
            continue
        if real != root_real and root_real not in real.parents:
            leave(rel, f"resolves outside the workspace ({real})")
            continue
        if not real.is_file():
            if not real.is_dir():  # a folder a glob matched says nothing; a pipe is said
                leave(rel, f"{userfiles.NOT_A_FILE} (a named pipe, a device or a socket): "
                      "never read")
            continue
        refused = _never_read(rel, real, root_real, skip, included)
        if refused is not None:
            leave(rel, refused)
            continue
        try:
            size = real.stat().st_size
            if size > remaining * 4 + 4096:
                leave(rel, f"over the character budget ({size:,} bytes, {remaining:,} "
                      "characters left)")
                continue
            data = userfiles.read(real)
        except OSError as e:
            leave(rel, f"cannot be read ({e.strerror})")
            continue
        if b"\0" in data[:8192]:
            leave(rel, "binary")
            continue
        try:
            content = data.decode("utf-8")
        except UnicodeDecodeError:
            leave(rel, "binary (not UTF-8 text)")
            continue
        if is_minified(name, content):
            leave(rel, "minified")
            continue
        if len(content) > remaining:
            leave(rel, f"over the character budget ({len(content):,} characters, "
                  f"{remaining:,} left of files_char_budget {char_budget:,})")
            continue
        remaining -= len(content)
        included[real] = rel
        fence = _fence(content)
        body = content if content.endswith("\n") else content + "\n"
        sections.append(f"## {path_line(rel)}\n\n{fence}{_lang(name)}\n{body}{fence}")
        used.append(rel)
    if not sections:
        return FilesText("", left_out, ())
    return FilesText("\n\n".join([HEADER, *sections]), left_out, tuple(used))
