"""A pattern that cannot be read (a class whose range runs backwards, `[z-a]`, which git reads
and matches nothing with) in the `ignore` or `files` setting, or in a .gitignore outside git:
pathspec's `re.error` failed the workspace's scan, so ctx/segment and every ctx/assemble
answered -32603 with a traceback, and an edit of ctxlayer.toml logged only a traceback. Now
the setting's pattern is named once and skipped; the .gitignore's line matches nothing, as
in git."""

from __future__ import annotations

import pytest
from conftest import RawDaemon, hermetic_env, make_repo, result, write

pytestmark = pytest.mark.e2e


async def _segment_and_assembly(daemon: RawDaemon) -> str:
    """The segment's text, after asserting that an assembly is answered too."""
    segment = await result(daemon, "ctx/segment", {})
    opened = await result(daemon, "ctx/session/open", {})
    await result(daemon, "ctx/assemble", {"sessionId": opened["sessionId"]})
    return segment["text"]


@pytest.mark.parametrize("setting, said", [
    ('ignore = ["*.log", "src/[z-a].py"]', "`workspace.ignore`: 'src/[z-a].py'"),
    ('files = ["README*", "docs/[z-a]*.md"]', "`workspace.files`: 'docs/[z-a]*.md'"),
])
async def test_a_setting_pattern_that_cannot_be_read_is_named_and_skipped(
        tmp_path, setting, said):
    root = make_repo(tmp_path / "repo")
    write(root, "ctxlayer.toml", f"[workspace]\n{setting}\n")
    daemon = await RawDaemon.start(env=hermetic_env(tmp_path / "world"))
    try:
        await daemon.initialize(root)
        text = await _segment_and_assembly(daemon)
        assert "# Demo" in text and "app.py" in text  # the other patterns still apply
        shown = await daemon.shown("is not a pattern")
        assert said in shown and "bad character range z-a" in shown
    finally:
        assert await daemon.close() == 0


async def test_a_gitignore_line_that_cannot_be_read_matches_nothing_outside_git(tmp_path):
    root = tmp_path / "folder"  # no git repository: ctxlayer reads the .gitignore itself
    write(root, "README.md", "# Demo\n")
    write(root, "app.py", "print(1)\n")
    write(root, "build/out.txt", "x\n")
    write(root, ".gitignore", "build/\n*.py[z-a]\n")
    daemon = await RawDaemon.start(env=hermetic_env(tmp_path / "world"))
    try:
        await daemon.initialize(root)
        text = await _segment_and_assembly(daemon)
        assert "app.py" in text and "out.txt" not in text  # the line before still applies
    finally:
        assert await daemon.close() == 0


async def test_a_pattern_that_cannot_be_read_on_reload_is_said_in_the_reload(tmp_path):
    root = make_repo(tmp_path / "repo")
    daemon = await RawDaemon.start(env=hermetic_env(tmp_path / "world"))
    try:
        await daemon.initialize(root)
        await result(daemon, "ctx/segment", {})  # the watcher runs
        write(root, "ctxlayer.toml", '[workspace]\nignore = ["src/[z-a].py", "*.md"]\n')
        shown = await daemon.shown("reloaded")
        assert "workspace.ignore [] -> [\"*.md\"]" in shown
        assert "'src/[z-a].py' is not a pattern" in shown
        text = await _segment_and_assembly(daemon)
        assert "app.py" in text and "README.md" not in text
    finally:
        assert await daemon.close() == 0
