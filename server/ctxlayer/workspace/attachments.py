"""Files attached to messages (`Message.files`): read for the trim's enrich stage.

Owns: resolving each attached path against the workspace (relative paths from its root;
absolute paths only when inside it), refusing any path that resolves outside it, `..` and
symlinks included (ContextError "outside_workspace", -32003 on the wire, naming the field),
refusing a path no file can have (a NUL byte: "invalid", -32602, naming the field), and reading
the text. A file that is not read says why in its place: missing, a directory, a named pipe
(never opened: it would wait for a writer), one that cannot be read (each was left out without
a word, the message showing its bare text); a binary file is described, not read; a huge one
is cut; one that may hold secrets (`.env`, a private key, anything in `.git/`, a link to one)
is never read, as in the workspace segment. Reads files; never imports the lsp layer.
"""

from __future__ import annotations

import stat
from collections.abc import Iterable
from pathlib import Path

from ctxlayer import userfiles
from ctxlayer.core.errors import ContextError
from ctxlayer.workspace.agents import is_inside
from ctxlayer.workspace.selected import SECRETS, in_secret_folder, may_hold_secrets, secret_link

MAX_BYTES = 1_000_000


def read_attachments(
    root: Path, attached: Iterable[tuple[str, str]], max_bytes: int = MAX_BYTES
) -> dict[str, str]:
    """{path as given: text} for `attached` = (field, path) pairs, e.g.
    ("messages[2].files[0]", "src/app.py")."""
    root_real = root.resolve()
    out: dict[str, str] = {}
    for field, given in attached:
        if given in out:
            continue
        if "\0" in given:  # the OS refuses it before any check of ours could (ValueError)
            raise ContextError("invalid", f"{given!r} holds a NUL byte, which no file name "
                               "can hold", field=field)
        path = Path(given)
        path = path if path.is_absolute() else root_real / path
        try:
            real = path.resolve(strict=True)
        except FileNotFoundError:
            real = path.resolve()
            if not is_inside(real, root_real):
                raise ContextError("outside_workspace", f"{given} is outside the workspace "
                                   f"{root_real}", field=field) from None
            out[given] = "(not shown: no such file in the workspace)"
            continue
        except (RuntimeError, OSError) as exc:
            raise ContextError("invalid", f"{given}: cannot be resolved ({exc})",
                               field=field) from None
        if not is_inside(real, root_real):
            raise ContextError("outside_workspace", f"{given} resolves outside the workspace "
                               f"{root_real} (to {real})", field=field)
        if not real.is_file():
            out[given] = f"(not shown: {_not_a_file(real)})"
            continue
        secret = _secret(path, real, root_real)
        if secret is not None:  # as the workspace segment: never sent, whatever names it
            out[given] = f"(not shown: {secret})"
            continue
        try:
            data = userfiles.read(real, max_bytes + 1)
        except OSError as exc:
            out[given] = f"(not shown: it cannot be read: {exc.strerror or exc})"
            continue
        if b"\0" in data[:8192]:
            out[given] = f"(binary file, {real.stat().st_size:,} bytes, not shown)"
            continue
        text = data[:max_bytes].decode("utf-8", errors="replace")
        if len(data) > max_bytes:
            text += f"\n[... cut at {max_bytes:,} bytes ...]"
        out[given] = text
    return out


def _not_a_file(real: Path) -> str:
    """Why an attached path that is there is not read: what it is instead of a file (a named
    pipe is never opened: reading one waits for a writer)."""
    try:
        mode = real.stat().st_mode
    except OSError as exc:
        return f"it cannot be read: {exc.strerror or exc}"
    if stat.S_ISDIR(mode):
        return "a directory, not a file (attach the files in it)"
    kind = ("a named pipe" if stat.S_ISFIFO(mode) else "a socket" if stat.S_ISSOCK(mode)
            else "a device" if stat.S_ISCHR(mode) or stat.S_ISBLK(mode) else "not a file")
    return f"{kind}, not a regular file"


def _secret(path: Path, real: Path, root: Path) -> str | None:
    """Why an attached file that may hold secrets is not read (its own name or folder, or the
    file a link of it leads to: `.env`, `id_ed25519`, `.git/config`), else None."""
    if may_hold_secrets(path.name):
        return f"{path.name} {SECRETS}"
    folder = in_secret_folder(path.relative_to(root) if path.is_relative_to(root) else path)
    if folder is not None:
        return f"the files of {folder}/ {SECRETS}"
    return secret_link(real, root)


def attached_paths(messages) -> list[tuple[str, str]]:
    """(field, path) for every file attached to a list of protocol Messages."""
    return [(f"messages[{i}].files[{j}]", p)
            for i, m in enumerate(messages) for j, p in enumerate(m.files or ())]
