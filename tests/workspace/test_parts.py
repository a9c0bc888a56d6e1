"""Each part on real folders and real git repositories, without the watcher."""

from __future__ import annotations

import os

from ws_helpers import count, git, make_ws, part, write

from ctxlayer.config import WorkspaceConfig
from ctxlayer.core.text import content_hash
from ctxlayer.workspace import PART_ORDER, Workspace
from ctxlayer.workspace.tree import render_tree


def reasons(seg, part_name):
    return {lo.path: lo.reason for lo in seg.left_out or [] if lo.part == part_name}


# --- the whole -----------------------------------------------------------------------------


def test_segment_order_hash_and_version(repo, home):
    ws = make_ws(repo, home)
    seg = ws.scan()
    assert [p.name for p in seg.parts] == list(PART_ORDER)
    assert seg.text == "\n\n".join(p.text for p in seg.parts if p.text)
    assert seg.hash == content_hash(seg.text) and seg.version == 1
    assert seg.tokens == count(seg.text)
    for p in seg.parts:
        assert p.hash == content_hash(p.text) and p.tokens == count(p.text)
    # nothing changed: same hash, same version, nothing reported
    assert ws.refresh() == [] and ws.segment.version == 1 and ws.segment.hash == seg.hash
    # a content edit of an untracked-and-ignored file changes nothing, so the provider's
    # cached prefix stays valid
    write(repo, "build/out.txt", "1")
    assert ws.refresh([repo / "build/out.txt"]) == [] and ws.segment.version == 1
    # a tracked file modified is a real git change
    write(repo, "src/app.py", "print('changed')\n")
    assert ws.refresh([repo / "src/app.py"]) == ["git"]
    assert ws.segment.version == 2 and ws.segment.hash != seg.hash
    assert "M src/app.py" in part(ws.segment, "git").text
    assert part(ws.segment, "tree").hash == part(seg, "tree").hash


# --- git -----------------------------------------------------------------------------------


def test_git_part_states(repo, home, tmp_path):
    ws = make_ws(repo, home)
    g = part(ws.scan(), "git").text
    sha = git(repo, "rev-parse", "--short=7", "HEAD").strip()
    assert "Branch: main" in g and f"HEAD: {sha}" in g and "Working tree clean." in g

    write(repo, "src/app.py", "changed\n")
    write(repo, "new/a.txt")
    write(repo, "new/b.txt")
    write(repo, "src/extra.py")
    git(repo, "add", "src/util.py")  # unchanged: nothing staged
    git(repo, "mv", "src/util.py", "src/tools.py")
    ws.refresh()
    g = part(ws.segment, "git").text
    assert "Staged (1):\n  R src/util.py -> src/tools.py" in g
    assert "Changed (1):\n  M src/app.py" in g
    assert "Untracked (2):\n  new/ (2 files)\n  src/extra.py" in g

    # upstream distance, through a local bare remote
    remote = tmp_path / "remote.git"
    git(tmp_path, "init", "-q", "--bare", str(remote))
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "two")
    git(repo, "remote", "add", "origin", str(remote))
    git(repo, "push", "-q", "-u", "origin", "main")
    write(repo, "c.txt")
    git(repo, "add", "c.txt")
    git(repo, "commit", "-qm", "three")
    ws.refresh()
    assert "Upstream: origin/main (ahead 1, behind 0)" in part(ws.segment, "git").text

    git(repo, "checkout", "-q", "--detach", "HEAD~1")
    ws.refresh()
    assert "Branch: (detached HEAD)" in part(ws.segment, "git").text


def test_git_paths_with_bytes_not_utf8_are_the_files_they_name(repo, home):
    """git writes a name's bytes as they are; read as the file system's names are, a tracked
    file so named is the file the tree lists and the selected files read (it was a name with
    U+FFFD that matched no file), and its byte is written as its escape."""
    name = os.fsdecode(b"caf\xe9.md")
    (repo / name).write_text("tracked, not UTF-8 in its name\n")
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "latin-1 name")
    (repo / name).write_text("changed\n")
    seg = make_ws(repo, home, files=["*.md"]).scan()
    assert 'M "caf\\xe9.md"' in part(seg, "git").text
    assert part(seg, "tree").text.count("caf\\xe9.md") == 1
    assert "## \"caf\\xe9.md\"" in part(seg, "files").text
    assert "changed" in part(seg, "files").text


def test_git_max_files_and_no_repo(repo, home, tmp_path):
    for i in range(5):
        write(repo, f"src/n{i}.py")
    ws = make_ws(repo, home, git_max_files=2)
    g = part(ws.scan(), "git").text
    assert "Untracked (5):" in g and "… 3 more" in g
    plain = tmp_path / "plain"
    write(plain, "a.txt")
    seg = make_ws(plain, home).scan()
    assert part(seg, "git").text == "" and "a.txt" in part(seg, "tree").text


def test_git_refusing_the_repository_still_lists_the_files_on_disk(repo, home):
    """A broken index (or a repository another user owns: git's "dubious ownership", common on
    Docker volumes) made the tree "(no files)" and took the selected files with it: the model
    was told the project is empty. The files come from the folders, the git part says why."""
    write(repo, "build/out.js")  # ignored by the .gitignore, as git would
    (repo / ".git" / "index").write_bytes(b"not an index")
    seg = make_ws(repo, home, files=["README.md"]).scan()
    tree_text = part(seg, "tree").text
    assert "app.py" in tree_text and "README.md" in tree_text and "out.js" not in tree_text
    assert "A test project." in part(seg, "files").text
    assert "index" in part(seg, "git").text and reasons(seg, "git")

def test_workspace_in_a_repo_subfolder(repo, home):
    write(repo, "src/new.py")
    write(repo, "outside.txt")
    ws = make_ws(repo / "src", home)
    seg = ws.scan()
    tree_text = part(seg, "tree").text
    assert "app.py" in tree_text and "README.md" not in tree_text
    g = part(seg, "git").text
    assert "new.py" in g and "outside.txt" not in g


# --- tree ----------------------------------------------------------------------------------


def test_tree_uses_gits_list_and_folds(repo, home):
    for i in range(30):
        write(repo, f"src/gen/f{i}.py")
    write(repo, "build/ignored.js")
    write(repo, "debug.log")
    seg = make_ws(repo, home, fold_threshold=20).scan()
    t = part(seg, "tree").text
    assert "gen/ (30 files)" in t and "f1.py" not in t
    assert "build" not in t and "debug.log" not in t and ".gitignore" in t
    assert "src/gen/" in reasons(seg, "tree")


def test_tree_budget_folds_deepest_first():
    files = [f"top{i}.txt" for i in range(3)]
    files += [f"a/b/c/deep{i}.py" for i in range(40)]
    files += [f"a/mid{i}.py" for i in range(10)]
    files += [f"z/y{i}.py" for i in range(10)]
    full = render_tree(sorted(files), count, 10_000, 1000)
    assert "deep3.py" in full.text and not full.left_out
    small = render_tree(sorted(files), count, 60, 1000)
    assert count(small.text) <= 60
    assert "c/ (40 files)" in small.text or "b/ (40 files)" in small.text
    assert "top0.txt" in small.text  # the top level stays visible
    tiny = render_tree(sorted(files), count, 5, 1000)
    assert count(tiny.text) <= 5 or "more entries" in tiny.text
    # deterministic
    assert render_tree(sorted(files), count, 60, 1000).text == small.text


def test_tree_outside_git_respects_gitignore_and_survives_symlink_loops(home, tmp_path):
    root = tmp_path / "plain"
    write(root, ".gitignore", "secret/\n")
    write(root, "secret/key.pem")
    write(root, "src/a.py")
    os.symlink(root / "src", root / "src" / "loop")  # a folder symlinked into itself
    os.symlink(tmp_path, root / "up")  # a symlink out of the workspace
    seg = make_ws(root, home).scan()
    t = part(seg, "tree").text
    assert "a.py" in t and "secret" not in t
    assert "  loop\n" in t + "\n" and "up" in t  # listed as entries, never followed
    assert t.count("a.py") == 1


# --- selected files --------------------------------------------------------------------------


def test_selected_files_order_refusals_and_budget(repo, home, tmp_path):
    write(repo, "pyproject.toml", "[project]\nname = 'p'\n")
    write(repo, "Makefile", "all:\n\ttrue\n")
    write(repo, "package-lock.json", "{}\n")
    write(repo, "Cargo.toml", "a" * 40 + "\n")
    (repo / "package.json").write_bytes(b"{\x00}")
    write(repo, "app.min.js", "x")
    (tmp_path / "secret.txt").write_text("TOP SECRET\n")
    os.symlink(tmp_path / "secret.txt", repo / "README.secret")
    os.symlink(repo / "loop2", repo / "loop1")
    os.symlink(repo / "loop1", repo / "loop2")
    patterns = ["README*", "pyproject.toml", "package.json", "package-lock.json", "Makefile",
                "Cargo.toml", "*.min.js", "../secret.txt", "/etc/passwd", "loop1"]
    seg = make_ws(repo, home, files=patterns, files_char_budget=90).scan()
    f = part(seg, "files").text
    assert f.index("## README.md") < f.index("## pyproject.toml") < f.index("## Makefile")
    assert "TOP SECRET" not in seg.text
    why = reasons(seg, "files")
    assert "outside the workspace" in why["README.secret"]
    assert why["../secret.txt"] == why["/etc/passwd"] == "pattern points outside the workspace"
    assert why["package-lock.json"] == "lockfile"
    assert why["package.json"] == "binary"
    assert why["app.min.js"] == "minified"
    assert "symlink loop" in why["loop1"]
    assert "over the character budget" in why["Cargo.toml"]
    assert make_ws(repo, home, files=[]).scan().parts[1].text == ""


def test_files_that_hold_secrets_are_never_selected(repo, home):
    """A project's ctxlayer.toml naming `.env` (git-ignored, so the user's own) sent the keys
    in it to the provider with every prompt."""
    write(repo, ".env", "OPENAI_API_KEY=sk-live-123\n")
    write(repo, ".env.production", "DB_PASSWORD=hunter2\n")
    write(repo, ".env.example", "OPENAI_API_KEY=\n")
    write(repo, "deploy/server.pem", "-----BEGIN PRIVATE KEY-----\n")
    write(repo, "config/credentials", "[default]\naws_secret_access_key = abc\n")
    seg = make_ws(repo, home, files=[".env", ".env.*", "deploy/*", "config/credentials"]).scan()
    assert "sk-live-123" not in seg.text and "hunter2" not in seg.text
    assert "PRIVATE KEY" not in seg.text and "aws_secret" not in seg.text
    assert "## .env.example" in part(seg, "files").text  # a template holds no values
    why = reasons(seg, "files")
    for name in (".env", ".env.production", "deploy/server.pem", "config/credentials"):
        assert why[name].startswith("may hold secrets"), why


def test_a_link_the_project_ships_to_the_users_secrets_is_never_followed(repo, home):
    """A cloned repo committing `README.txt -> .env` and `CLAUDE.md -> config/id_rsa` (both
    git-ignored, written by the user after cloning) sent the keys with every prompt, by
    default: the secret check read the link's own name."""
    write(repo, ".gitignore", ".env\nconfig/id_rsa\n")
    write(repo, ".env", "OPENAI_API_KEY=sk-live-123\n")
    write(repo, "config/id_rsa", "-----BEGIN OPENSSH PRIVATE KEY-----\n")
    os.symlink(".env", repo / "README.txt")
    os.symlink("config/id_rsa", repo / "CLAUDE.md")
    write(repo, ".claude/skills/deploy/.env", "TOKEN=sk-skill-456\n")
    os.symlink(".env", repo / ".claude/skills/deploy/SKILL.md")
    seg = make_ws(repo, home, files=["README*"]).scan()
    assert "sk-live-123" not in seg.text and "PRIVATE KEY" not in seg.text
    assert "sk-skill-456" not in seg.text
    assert reasons(seg, "files")["README.txt"] == (
        "a link to .env, which may hold secrets (keys, tokens, passwords): never sent")
    assert "a link to id_rsa" in reasons(seg, "agentFiles")["CLAUDE.md"]
    assert "a link to .env" in reasons(seg, "skills")[".claude/skills/deploy/SKILL.md"]


def test_a_link_into_git_or_to_an_envrc_and_a_selected_git_file_are_never_read(repo, home):
    """The secret check read a file's name only: `AGENTS.md -> .git/config` (a remote's token,
    as actions/checkout keeps it) and `README.md -> .envrc` (direnv's exported keys) went out in
    the default prompt, and a project's `files = [".git/config"]` named it directly."""
    git(repo, "remote", "add", "origin", "https://x-access-token:ghp_s3cret@github.com/o/r.git")
    write(repo, ".envrc", "export AWS_SECRET_ACCESS_KEY=AKIA_ENVRC\n")
    (repo / "README.md").unlink()
    os.symlink(".envrc", repo / "README.md")
    os.symlink(".git/config", repo / "AGENTS.md")
    seg = make_ws(repo, home, files=["README*", ".git/config"]).scan()
    assert "ghp_s3cret" not in seg.text and "AKIA_ENVRC" not in seg.text
    assert reasons(seg, "agentFiles")["AGENTS.md"].startswith("a link into .git/")
    files = reasons(seg, "files")
    assert files["README.md"].startswith("a link to .envrc")
    assert files[".git/config"].startswith("in .git/")


def test_a_file_selected_twice_through_a_link_is_included_once(repo, home):
    os.symlink(".", repo / "self")
    seg = make_ws(repo, home, files=["README.md", "self/README.md"]).scan()
    assert part(seg, "files").text.count("A test project.") == 1
    assert reasons(seg, "files")["self/README.md"] == "the same file as README.md"


# --- agent files -------------------------------------------------------------------------------


def test_agent_files_chain_order_dedup_and_flags(repo, home, tmp_path):
    cfg = home / ".config" / "ctxlayer"
    write(cfg, "AGENTS.md", "config-level rule\n")
    write(home, "AGENTS.md", "home rule\n")
    write(repo, "CLAUDE.md", "project claude rule\n")
    write(repo, "AGENTS.md", "project rule\n")
    write(repo, ".github/copilot-instructions.md", "copilot rule\n")
    os.symlink(repo / "AGENTS.md", repo / "GEMINI.md")  # same file twice: kept once
    write(tmp_path, "elsewhere.md", "outside rule\n")
    os.symlink(tmp_path / "elsewhere.md", repo / ".cursorrules")
    seg = make_ws(repo, home).scan()
    a = part(seg, "agentFiles").text
    order = ["config-level rule", "home rule", "project rule", "project claude rule",
             "copilot rule"]
    assert [a.index(s) for s in order] == sorted(a.index(s) for s in order)
    assert a.count("project rule") == 1 and "outside rule" not in a
    assert "## ~/.config/ctxlayer/AGENTS.md" in a and "## ~/AGENTS.md" in a
    assert "## CLAUDE.md (written for Claude Code" in a
    assert "## .github/copilot-instructions.md (written for GitHub Copilot" in a
    assert "follow them" in a
    assert "outside the workspace" in reasons(seg, "agentFiles")[".cursorrules"]
    # agent files are not repeated among the selected files
    seg2 = make_ws(repo, home, files=["*.md"]).scan()
    assert "already included as an agent file" in reasons(seg2, "files")["AGENTS.md"]


def test_agent_files_on_the_way_through_a_symlinked_folder_keep_the_workspace_checks(
        home, tmp_path):
    """~/work a symlink to another disk and the workspace ~/work/proj, given resolved with the
    name it was opened by: ~/work/AGENTS.md was passed over. The workspace's own files are
    still the workspace's: a link in it to a file outside is refused, its name relative."""
    disk = tmp_path / "otherdisk" / "work"
    write(disk, "proj/README.md", "# Proj\n")
    os.symlink(disk, home / "work")
    write(home, "work/AGENTS.md", "work rule\n")
    write(tmp_path, "elsewhere.md", "outside rule\n")
    os.symlink(tmp_path / "elsewhere.md", disk / "proj" / "AGENTS.md")
    ws = Workspace(disk / "proj", WorkspaceConfig(), count, home=home,
                   user_config_dir=home / ".config" / "ctxlayer",
                   opened_as=home / "work" / "proj")
    seg = ws.scan()
    text = part(seg, "agentFiles").text
    assert "## ~/work/AGENTS.md\n\nwork rule" in text and "outside rule" not in text
    assert "resolves outside the workspace" in reasons(seg, "agentFiles")["AGENTS.md"]
    # a name that does not lead to the workspace is no way to it: nothing else is read
    write(home, "other/AGENTS.md", "other rule\n")
    (home / "other" / "proj").mkdir()
    ws = Workspace(disk / "proj", WorkspaceConfig(), count, home=home,
                   user_config_dir=home / ".config" / "ctxlayer",
                   opened_as=home / "other" / "proj")
    assert "other rule" not in part(ws.scan(), "agentFiles").text


def test_a_broken_or_looping_agent_file_link_is_said(repo, home):
    """Both were skipped without a word: the check for a file came before the one that says
    why a link cannot be followed."""
    os.symlink("docs/missing.md", repo / "AGENTS.md")
    os.symlink("CLAUDE.md", repo / "CLAUDE.md")
    why = reasons(make_ws(repo, home).scan(), "agentFiles")
    assert why["AGENTS.md"] == why["CLAUDE.md"] == "broken symlink or symlink loop"


def test_an_agent_file_over_its_characters_is_left_out_reading_no_more_than_it_may_hold(
        repo, home):
    """A character is at most 4 bytes: a file of more bytes than 4 per character allowed is
    left out from its first bytes (a 2 GB AGENTS.md took 17 s and 4.2 GB to refuse, read
    whole), one within them is read whole and measured in characters."""
    for name, text in (("AGENTS.md", "😀" * 10), ("CLAUDE.md", "é" * 11),
                       ("GEMINI.md", "x" * 41)):
        write(repo, name, text)
    seg = make_ws(repo, home, agent_file_max_chars=10).scan()
    assert "😀" * 10 in part(seg, "agentFiles").text  # 40 bytes, 10 characters: kept
    why = reasons(seg, "agentFiles")
    assert why["CLAUDE.md"] == "too long: 11 characters, agent_file_max_chars 10"
    assert why["GEMINI.md"] == "too long: over 40 bytes, agent_file_max_chars 10"


def test_agent_files_take_the_binary_rule_of_selected_files_and_lose_a_bom(repo, home):
    """UTF-16 without a BOM (NUL bytes) went into the prompt as it was, where a selected file
    with those bytes is left out as binary; a UTF-8 BOM went in as U+FEFF."""
    (repo / "CLAUDE.md").write_bytes(b"\xef\xbb\xbfUse spaces.\r\n")
    (repo / "COPILOT.md").write_bytes("Use tabs.\n".encode("utf-16-le"))
    (repo / "GEMINI.md").write_bytes(b"Be brief.\x00\n")
    (repo / "README.md").write_bytes("Readme.\n".encode("utf-16-le"))
    seg = make_ws(repo, home, files=["README.md"]).scan()
    text = part(seg, "agentFiles").text
    assert "\x00" not in text and "\ufeff" not in text
    assert "## CLAUDE.md (written for Claude Code" in text
    assert "itself)\n\nUse spaces." in text  # the BOM gone, the text right after the title
    why = reasons(seg, "agentFiles")
    assert why == {"COPILOT.md": "binary", "GEMINI.md": "binary"}
    assert reasons(seg, "files")["README.md"] == "binary"  # the same rule


def test_no_agent_files_means_empty_part(repo, home):
    assert part(make_ws(repo, home).scan(), "agentFiles").text == ""


def test_a_name_with_dotdot_is_no_way_to_the_workspace(home, tmp_path):
    """~/x/link -> disk/a/b, the workspace disk/a/proj named ~/x/link/../proj: the name,
    folded by its text to ~/x/proj, put ~/x on the way and ~/x/AGENTS.md was read, though the
    system never leads from ~/x to the workspace. A name with `..` is not used."""
    disk = tmp_path / "disk"
    write(disk, "a/proj/README.md", "# Proj\n")
    (disk / "a" / "b").mkdir()
    write(home, "x/AGENTS.md", "x rule\n")
    os.symlink(disk / "a" / "b", home / "x" / "link")
    ws = Workspace(disk / "a" / "proj", WorkspaceConfig(), count, home=home,
                   user_config_dir=home / ".config" / "ctxlayer",
                   opened_as=home / "x" / "link" / ".." / "proj")
    assert ws.opened_as is None
    assert "x rule" not in part(ws.scan(), "agentFiles").text
