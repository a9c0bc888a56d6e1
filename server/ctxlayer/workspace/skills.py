"""The `skills` part: the skills the model may read on demand, one line each.

A skill is a folder holding a `SKILL.md` (Claude Code's layout): `<root>/<name>/SKILL.md`.
Skill roots, most general first: the user's config folder (`skills/`), the home folder
(`.claude/skills/`), then the workspace (`.claude/skills/`, `skills/`). A skill of the same
name found later (more specific) replaces the earlier one. Each skill gives its name and
one-line description from the YAML front matter (`name:`, `description:`), else the folder's
name and the first line of text, and the path to read it from; the text is the prompt core's
skills summary. Reads only the head of each SKILL.md; never writes. A SKILL.md inside the
workspace that resolves outside it (a symlink) is refused, as agent files are.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from ctxlayer import userfiles
from ctxlayer.core.prompt import Skill
from ctxlayer.core.prompt.texts import SKILLS
from ctxlayer.core.text import path_line
from ctxlayer.protocol import LeftOut
from ctxlayer.workspace.agents import is_inside, shown_path
from ctxlayer.workspace.selected import secret_link

SKILL_FILE = "SKILL.md"
#: skill roots inside the workspace, relative to it
WORKSPACE_ROOTS = (".claude/skills", "skills")
#: bytes read from the top of a SKILL.md: the front matter and first line are there
HEAD_BYTES = 8192
MAX_SKILLS = 100
MAX_DESCRIPTION = 300


@dataclass(frozen=True, slots=True)
class SkillsText:
    text: str
    skills: tuple[Skill, ...]
    left_out: list[LeftOut]


def roots(root: Path, home: Path | None, user_config_dir: Path | None) -> list[Path]:
    """The skill roots searched, most general first (existing or not)."""
    found: list[Path] = []
    if user_config_dir is not None:
        found.append(user_config_dir / "skills")
    if home is not None:
        found.append(home / ".claude" / "skills")
    found += [root / rel for rel in WORKSPACE_ROOTS]
    return list(dict.fromkeys(found))


def parse_head(text: str, fallback_name: str) -> tuple[str, str]:
    """(name, description) from a SKILL.md's head: front matter first, else the folder's name
    and the first non-empty line (a heading's marks removed)."""
    name, description = "", ""
    lines = text.splitlines()
    body_start = 0
    if lines and lines[0].strip() == "---":
        current = ""
        for i, line in enumerate(lines[1:], start=1):
            if line.strip() == "---":
                body_start = i + 1
                break
            if line[:1] in (" ", "\t") and current == "description":
                description += " " + line.strip()  # a folded continuation line
                continue
            key, sep, value = line.partition(":")
            current = key.strip() if sep else ""
            value = value.strip()
            if value in (">", "|", ">-", "|-"):
                value = ""  # a block scalar: its lines follow, indented
            value = value.strip("\"'")
            if current == "name":
                name = value
            elif current == "description":
                description = value
    if not description:
        for line in lines[body_start:]:
            stripped = line.strip().lstrip("#").strip()
            if stripped:
                description = stripped
                break
    description = " ".join(description.split())
    if len(description) > MAX_DESCRIPTION:
        description = description[:MAX_DESCRIPTION - 1].rstrip() + "…"
    return (" ".join(name.split()) or fallback_name), description


def find_skills(root: Path, home: Path | None,
                user_config_dir: Path | None) -> tuple[list[Skill], list[LeftOut]]:
    """Every skill, most general root first, a later one replacing an earlier of its name."""
    root_real = root.resolve()
    by_name: dict[str, Skill] = {}
    left_out: list[LeftOut] = []
    for skill_root in roots(root, home, user_config_dir):
        try:
            with os.scandir(skill_root) as it:
                folders = sorted(e.name for e in it if e.is_dir())
        except OSError:
            continue
        for folder in folders:
            path = skill_root / folder / SKILL_FILE
            shown = shown_path(path, root, home)
            try:
                real = path.resolve(strict=True)
                head = userfiles.read(real, HEAD_BYTES)
            except FileNotFoundError:
                continue
            except (OSError, RuntimeError) as e:
                left_out.append(LeftOut(part="skills", path=shown,
                                        reason=f"cannot be read ({getattr(e, 'strerror', e)})"))
                continue
            if is_inside(path, root) and not is_inside(real, root_real):
                left_out.append(LeftOut(part="skills", path=shown,
                                        reason=f"resolves outside the workspace ({real})"))
                continue
            if (secret := secret_link(real, root_real)) is not None:
                left_out.append(LeftOut(part="skills", path=shown, reason=secret))
                continue
            try:
                text = head.decode("utf-8")
            except UnicodeDecodeError as e:
                if e.start < len(head) - 4:  # not just a character cut by the head's end
                    left_out.append(LeftOut(part="skills", path=shown, reason="not UTF-8 text"))
                    continue
                text = head[:e.start].decode("utf-8")
            name, description = parse_head(text, folder)
            by_name.pop(name, None)  # the more specific one goes where it was found
            by_name[name] = Skill(name=name, description=description, path=shown)
    skills = list(by_name.values())
    if len(skills) > MAX_SKILLS:
        for s in skills[MAX_SKILLS:]:
            left_out.append(LeftOut(part="skills", path=s.path,
                                    reason=f"more than {MAX_SKILLS} skills"))
        skills = skills[:MAX_SKILLS]
    return skills, left_out


def render_skills(root: Path, home: Path | None, user_config_dir: Path | None) -> SkillsText:
    """The skills part's text ('' when there is no skill)."""
    skills, left_out = find_skills(root, home, user_config_dir)
    if not skills:
        return SkillsText("", (), left_out)
    lines = [f"- {s.name}: {s.description or '(no description)'} (read `{path_line(s.path)}`)"
             for s in skills]
    return SkillsText(SKILLS.full + "\n\n" + "\n".join(lines), tuple(skills), left_out)
