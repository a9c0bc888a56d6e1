"""`ctxlayer inspect PATH` on a real repository: the table of parts and what was left out."""

from __future__ import annotations

import json
import os
import subprocess
import sys

from ws_helpers import make_ws, write

from ctxlayer.workspace import render_inspect


def test_render_inspect_lists_parts_and_reasons(repo, home):
    write(repo, "package-lock.json", "{}\n")
    seg = make_ws(repo, home, files=["README*", "package-lock.json"]).scan()
    table = render_inspect(seg)
    for p in seg.parts:
        assert p.name in table
        if p.text:
            assert p.hash in table and f"{p.tokens:,}" in table
    assert "package-lock.json" in table and "lockfile" in table
    assert f"version {seg.version}" in table and seg.hash in table


def test_a_left_out_path_or_reason_with_a_newline_is_one_row(repo, home, tmp_path):
    write(tmp_path, "else\nwhere/SKILL.md", "---\ndescription: outside\n---\n")
    for folder in ("plain", "new\nline"):  # each refused: it resolves outside the workspace,
        (repo / "skills" / folder).mkdir(parents=True)  # the reason naming where
        os.symlink(tmp_path / "else\nwhere" / "SKILL.md", repo / "skills" / folder / "SKILL.md")
    rows = render_inspect(make_ws(repo, home).scan()).split("Left out (2):\n")[1].splitlines()
    assert len(rows) == 4 and all("else\\nwhere" in row for row in rows[2:])
    assert [r.split()[1] for r in rows[2:]] == ['"skills/new\\nline/SKILL.md"',
                                                "skills/plain/SKILL.md"]


def test_cli_inspect(repo, home):
    write(repo, "ctxlayer.toml", "[workspace]\ndebounce_ms = 'slow'\n")
    write(home, "AGENTS.md", "home rule\n")
    env = dict(os.environ, HOME=str(home), XDG_CONFIG_HOME=str(home / ".config"))
    out = subprocess.run([sys.executable, "-m", "ctxlayer", "inspect", str(repo)], env=env,
                         capture_output=True, text=True, timeout=120, check=False)
    assert out.returncode == 0, out.stderr
    assert "agentFiles" in out.stdout and "tree" in out.stdout and "git" in out.stdout
    assert "workspace.debounce_ms" in out.stderr  # a bad config value is reported, not fatal
    js = subprocess.run([sys.executable, "-m", "ctxlayer", "inspect", str(repo), "--json"],
                        env=env, capture_output=True, text=True, timeout=120, check=False)
    seg = json.loads(js.stdout)
    assert "home rule" in seg["text"] and seg["version"] == 1 and "updatedAt" in seg
    bad = subprocess.run([sys.executable, "-m", "ctxlayer", "inspect", str(repo / "nope")],
                         env=env, capture_output=True, text=True, timeout=120, check=False)
    assert bad.returncode == 2 and "not a folder" in bad.stderr
