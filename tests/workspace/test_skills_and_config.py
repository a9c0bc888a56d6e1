"""The skills part (workspace and user skills, front matter or first line, most specific
wins) and ctxlayer.toml changes reaching the config callback, both through the real watcher."""

from __future__ import annotations

import os
import threading
import time
from pathlib import Path

from ws_helpers import Recorder, has, make_ws, part, write

from ctxlayer.config import Config, reload_config
from ctxlayer.workspace.skills import parse_head

SKILL = """---
name: review-diff
description: Review a diff for bugs,
  style and tests
---
# Reviewing

Long body that is never shown.
"""


def test_skills_from_front_matter_or_first_line_most_specific_last(repo, home):
    write(repo, ".claude/skills/review/SKILL.md", SKILL)
    write(repo, "skills/release/SKILL.md", "\n# Cut a release: tag, changelog, upload\n\nBody\n")
    write(repo, "skills/not-a-skill/README.md", "no SKILL.md here\n")
    write(home / ".config" / "ctxlayer", "skills/release/SKILL.md", "---\nname: release\n"
          "description: the user's own release steps\n---\n")
    write(home, ".claude/skills/notes/SKILL.md", "---\ndescription: Keep notes\n---\n")
    seg = make_ws(repo, home).scan()
    assert [p.name for p in seg.parts] == ["agentFiles", "skills", "files", "tree", "git"]
    text = part(seg, "skills").text
    assert text.startswith("# Skills\n\n")
    lines = [line for line in text.splitlines() if line.startswith("- ")]
    assert lines == [
        "- notes: Keep notes (read `~/.claude/skills/notes/SKILL.md`)",
        "- review-diff: Review a diff for bugs, style and tests (read "
        "`.claude/skills/review/SKILL.md`)",
        "- release: Cut a release: tag, changelog, upload (read `skills/release/SKILL.md`)",
    ]
    assert "never shown" not in text
    assert part(seg, "skills").tokens > 0


def test_front_matter_and_first_line_parsing():
    assert parse_head("---\nname: 'x y'\ndescription: \"does z\"\n---\nbody", "f") == (
        "x y", "does z")
    assert parse_head("---\nname: only-name\n---\n\n## Heading line\nmore", "f") == (
        "only-name", "Heading line")
    assert parse_head("", "folder") == ("folder", "")
    assert parse_head("---\nunclosed: front\nmatter", "f")[0] == "f"
    assert parse_head("---\ndescription: >\n  folded\n  text\nname: n\n---\n", "f") == (
        "n", "folded text")


def test_a_skill_that_resolves_outside_the_workspace_is_refused(repo, home, tmp_path):
    write(tmp_path / "elsewhere", "SKILL.md", "---\ndescription: secret\n---\n")
    (repo / "skills" / "evil").mkdir(parents=True)
    os.symlink(tmp_path / "elsewhere" / "SKILL.md", repo / "skills" / "evil" / "SKILL.md")
    write(repo, "skills/latin1/SKILL.md", "")
    (repo / "skills/latin1/SKILL.md").write_bytes(b"caf\xe9 \xe9\xe9\xe9 not utf-8\n")
    seg = make_ws(repo, home).scan()
    assert "secret" not in part(seg, "skills").text
    reasons = {lo.path: lo.reason for lo in seg.left_out if lo.part == "skills"}
    assert "outside the workspace" in reasons["skills/evil/SKILL.md"]
    assert reasons["skills/latin1/SKILL.md"] == "not UTF-8 text"


def test_the_watcher_refreshes_skills(repo, home):
    (home / ".config" / "ctxlayer").mkdir(parents=True)
    ws = make_ws(repo, home)
    ws.scan()
    assert part(ws.segment, "skills").text == ""
    rec = Recorder()
    ws.start_watching(rec)
    try:
        write(repo, ".claude/skills/review/SKILL.md", SKILL)  # .claude did not exist
        calls = rec.wait_for(has("skills", "review-diff"))
        assert "skills" in calls[-1][1]
        assert [s.name for s in ws.skills] == ["review-diff"]
        write(repo, ".claude/skills/review/SKILL.md", "---\ndescription: Reworded\n---\n")
        rec.wait_for(has("skills", "Reworded"))
        write(home / ".config" / "ctxlayer", "skills/mine/SKILL.md", "# Mine\n")
        rec.wait_for(has("skills", "- mine: Mine"))
        write(home / ".config" / "ctxlayer", "skills/mine/SKILL.md", "# Mine, edited\n")
        rec.wait_for(has("skills", "- mine: Mine, edited"))  # the new root is watched
        (repo / ".claude/skills/review/SKILL.md").unlink()
        rec.wait_for(has("skills", "Reworded", present=False))
    finally:
        ws.stop()


def test_skills_under_an_ignored_folder_are_still_watched(repo, home):
    write(repo, ".gitignore", ".claude/\n")
    write(repo, ".claude/settings.json", "{}\n")
    write(repo, ".claude/skills/a/SKILL.md", "# A\n")
    ws = make_ws(repo, home)
    ws.scan()
    rec = Recorder()
    ws.start_watching(rec)
    try:
        assert str(repo / ".claude" / "skills" / "a") in ws.watched_folders()
        write(repo, ".claude/skills/b/SKILL.md", "# Bee\n")
        rec.wait_for(has("skills", "- b: Bee"))
    finally:
        ws.stop()


class ConfigCalls:
    def __init__(self) -> None:
        self.calls: list[list[Path]] = []
        self.lock = threading.Lock()

    def __call__(self, paths: list[Path]) -> None:
        with self.lock:
            self.calls.append(list(paths))

    def wait(self, n: int, timeout: float = 30.0) -> list[list[Path]]:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            with self.lock:
                if len(self.calls) >= n:
                    return list(self.calls)
            time.sleep(0.02)
        raise AssertionError(f"{n} config calls expected, got {self.calls}")


def test_config_changes_reach_the_callback_and_reload(repo, home):
    user_dir = home / ".config" / "ctxlayer"
    user_dir.mkdir(parents=True)
    ws = make_ws(repo, home)
    ws.scan()
    seen = ConfigCalls()
    ws.start_watching(Recorder(), on_config=seen)
    try:
        assert ws.config_files == (user_dir / "ctxlayer.toml", repo / "ctxlayer.toml")
        write(repo, "ctxlayer.toml", "[workspace]\ngit_max_files = 2\n[trim]\nstrategy = 'x'\n")
        assert seen.wait(1)[0] == [repo / "ctxlayer.toml"]
        config, message = reload_config(repo, user_dir, None, Config())
        assert config.workspace.git_max_files == 2
        assert "workspace.git_max_files 50 -> 2" in message
        assert "Rejected:" in message and "trim.strategy" in message

        write(user_dir, "ctxlayer.toml", "[trim]\nhead_lines = 4\n")  # the user's file
        assert seen.wait(2)[1] == [user_dir / "ctxlayer.toml"]
        again, message = reload_config(repo, user_dir, None, config)
        assert again.trim.head_lines == 4
        assert message.startswith("ctxlayer.toml reloaded: trim.head_lines 10 -> 4")

        write(repo, "src/app.py", "print('not config')\n")
        write(repo, "ctxlayer.toml", "[workspace]\ngit_max_files = 2\n")
        assert seen.wait(3)[2] == [repo / "ctxlayer.toml"]
        with seen.lock:
            assert len(seen.calls) == 3  # the source edit did not call it
        assert reload_config(repo, None, None, Config(workspace=config.workspace))[1] == (
            "ctxlayer.toml reloaded: no setting changed")
    finally:
        ws.stop()


def test_reconfigure_applies_new_workspace_settings(repo, home):
    write(repo, "b.txt", "B\n")
    ws = make_ws(repo, home)
    ws.scan()
    assert "Untracked (1)" in part(ws.segment, "git").text
    config, _ = reload_config(repo, None, {"workspace": {"ignore": ["b.txt"], "files": []}},
                              Config())
    changed = ws.reconfigure(config)
    assert set(changed) >= {"files", "tree"}
    assert "b.txt" not in part(ws.segment, "tree").text
    assert part(ws.segment, "files").text == ""
