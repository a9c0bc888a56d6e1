"""The `agentFiles` part: agent instruction files from the user's folders down to the workspace.

Owns: the folder chain (the user's config folder, then the home folder, then every folder
from home down to the workspace, most general first), gptme's file order inside each folder,
de-duplication by resolved path, the framing as instructions to follow, and the flag on files
written for another tool (CLAUDE.md for Claude Code, .cursorrules for Cursor...). A file found
inside the workspace that resolves outside it (a symlink) is refused. Reads files; never
writes, never reads anything but the candidate files.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path, PurePosixPath, PureWindowsPath

from ctxlayer import userfiles
from ctxlayer.core.assembly.instructions import WRITTEN_FOR  # the core's one list of names
from ctxlayer.core.text import path_line
from ctxlayer.protocol import LeftOut
from ctxlayer.workspace.selected import NOT_READ, looks_binary, secret_link

HEADER = "# Agent instructions"
INTRO = (
    "The files below are standing instructions from the user and the project: follow them. "
    "They are ordered from the most general to the most specific; where they disagree, the "
    "later, more specific file wins."
)


@dataclass(frozen=True, slots=True)
class AgentText:
    text: str
    left_out: list[LeftOut]
    used: tuple[Path, ...]  # resolved paths of the files included


def between(root: Path, home: Path, named: Path | None = None) -> list[Path]:
    """The folders below ``home`` and above the workspace, most general first, under ``home``'s
    name. The workspace is looked for below home as the user named it (``named``: ~/work/proj,
    where ~/work leads to another disk, whose resolved root is not below home), then as
    resolved; home too, as given and resolved (a home that is itself a symlink). Without it,
    ~/work/AGENTS.md was passed over without a word."""
    real_home = Path(os.path.realpath(home))
    for workspace in (named, root):
        for base in dict.fromkeys((home, real_home)):
            if workspace is None or not workspace.is_relative_to(base):
                continue
            parts = workspace.relative_to(base).parts
            return [home.joinpath(*parts[:depth]) for depth in range(1, len(parts))]
    return []


def folder_chain(root: Path, home: Path | None, user_config_dir: Path | None,
                 named: Path | None = None) -> list[Path]:
    """Folders searched, most general first, each once. The workspace itself is ``root``, never
    its name through a link: a file found in it is checked against it."""
    chain: list[Path] = []
    if user_config_dir is not None:
        chain.append(user_config_dir)
    if home is not None:
        chain.append(home)
        chain += between(root, home, named)
    chain.append(root)
    return list(dict.fromkeys(chain))


def leaves_its_folder(name: str) -> bool:
    """Whether an `agent_files` entry names a file outside the folder it is looked up in (an
    absolute path, `~`, `..`): a project's own ctxlayer.toml naming `/etc/passwd` or
    `../../.ssh/id_ed25519` put that file in every prompt, sent to the provider."""
    posix = PurePosixPath(name.replace("\\", "/"))
    return (not name or posix.is_absolute() or PureWindowsPath(name).is_absolute()
            or name.startswith("~") or ".." in posix.parts)


def refused_name(name: str) -> str | None:
    """Why an `agent_files` entry is never looked up, or None. A NUL byte is refused here: the
    OS refuses it with a ValueError no file check expects (it failed every scan, so the
    daemon answered no request of the workspace)."""
    if "\0" in name:
        return "holds a NUL byte, which no file name can hold"
    if leaves_its_folder(name):
        return ("points outside the folders agent files are looked up in (agent_files takes "
                "names such as AGENTS.md)")
    return None


def candidates(root: Path, home: Path | None, user_config_dir: Path | None,
               names: list[str], named: Path | None = None) -> list[Path]:
    """Every path that would be read, in reading order (existing or not)."""
    return [folder / name for folder in folder_chain(root, home, user_config_dir, named)
            for name in names if refused_name(name) is None]


def shown_path(path: Path, root: Path, home: Path | None) -> str:
    """A path as the user reads it: relative to the workspace, else to the home folder."""
    try:
        return path.relative_to(root).as_posix()
    except ValueError:
        pass
    if home is not None:
        try:
            return "~/" + path.relative_to(home).as_posix()
        except ValueError:
            pass
    return path.as_posix()


def is_inside(path: Path, folder: Path) -> bool:
    return path == folder or folder in path.parents


def _instructions(data: bytes, max_chars: int) -> tuple[str | None, str]:
    """(an agent file's text, or None and why it is left out). The rule of selected files:
    bytes with a NUL (UTF-16 without a BOM) are not text, and went into the prompt as NULs.
    A UTF-8 BOM is no instruction: it went in as U+FEFF."""
    if looks_binary(data):
        return None, "binary"
    try:
        content = data.decode("utf-8") if len(data) <= 4 * max_chars else None
    except UnicodeDecodeError:
        return None, "not UTF-8 text"
    if content is not None:
        content = content.removeprefix("\ufeff")
    if content is None or len(content) > max_chars:
        size = (f"{len(content):,} characters" if content is not None
                else f"over {4 * max_chars:,} bytes")
        return None, f"too long: {size}, agent_file_max_chars {max_chars:,}"
    return content, ""


def render_agents(root: Path, home: Path | None, user_config_dir: Path | None,
                  names: list[str], max_chars: int, named: Path | None = None) -> AgentText:
    """The agentFiles part's text ('' when no agent file exists); ``named``: the workspace as
    the user named it (`folder_chain`)."""
    root_real = root.resolve()
    seen: set[Path] = set()
    sections: list[str] = []
    left_out: list[LeftOut] = []
    used: list[Path] = []
    for name in names:
        if (why := refused_name(name)) is not None:
            left_out.append(LeftOut(part="agentFiles", path=name, reason=why))
    names = [name for name in names if refused_name(name) is None]
    for folder in folder_chain(root, home, user_config_dir, named):
        for name in names:
            path = folder / name
            try:
                real = path.resolve(strict=True)
            except (OSError, RuntimeError):  # absent, or a link to nothing or to itself
                if path.is_symlink():
                    left_out.append(LeftOut(part="agentFiles", path=shown_path(path, root, home),
                                            reason="broken symlink or symlink loop"))
                continue
            shown = shown_path(path, root, home)
            if real in seen:
                continue
            seen.add(real)
            if not real.is_file():  # a named pipe where AGENTS.md would be was passed over
                left_out.append(LeftOut(part="agentFiles", path=shown, reason=(
                    f"{userfiles.NOT_A_FILE} (a folder)" if real.is_dir() else NOT_READ)))
                continue
            if is_inside(path, root) and not is_inside(real, root_real):
                left_out.append(LeftOut(part="agentFiles", path=shown,
                                        reason=f"resolves outside the workspace ({real})"))
                continue
            if (secret := secret_link(real, root_real)) is not None:
                left_out.append(LeftOut(part="agentFiles", path=shown, reason=secret))
                continue
            try:  # a character is at most 4 bytes: more bytes than that are too many characters
                data = userfiles.read(real, 4 * max_chars + 1)
            except OSError as e:
                left_out.append(LeftOut(part="agentFiles", path=shown,
                                        reason=f"cannot be read ({e.strerror})"))
                continue
            content, why = _instructions(data, max_chars)
            if content is None:
                left_out.append(LeftOut(part="agentFiles", path=shown, reason=why))
                continue
            if not content.strip():
                continue
            title = f"## {path_line(shown)}"
            tool = WRITTEN_FOR.get(name)
            if tool:
                title += (f" (written for {tool}; follow it where it applies to you, and "
                          f"ignore what only concerns {tool} itself)")
            sections.append(f"{title}\n\n{content.strip()}")
            used.append(real)
    if not sections:
        return AgentText("", left_out, ())
    return AgentText("\n\n".join([HEADER, INTRO, *sections]), left_out, tuple(used))
