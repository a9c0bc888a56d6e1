"""The workspace segment: agent files, skills, selected files, tree and git, kept fresh.

Reads the world (files, git, watchdog); never imports pygls or the lsp layer. The stable API
that the daemon (lsp/) and the CLI use:

    from ctxlayer.config import load_config, default_user_config_dir
    from ctxlayer.workspace import Workspace, render_inspect

    config, problems = load_config(root, default_user_config_dir(), init_options.config)
    ws = Workspace(root, config, counter.count, home=None, user_config_dir=None)
    seg = ws.scan()                  # first full scan -> protocol.WorkspaceSegment
    ws.segment                       # current immutable snapshot (scans if never scanned)
    ws.refresh([path, ...])          # -> changed part names, e.g. ["git"]; None = everything
    ws.start_watching(on_change, on_config=None)
                                     # on_change(segment, changed) on a watcher thread;
                                     # on_config([ctxlayer.toml paths]) when one changed
    ws.reconfigure(new_config)       # -> changed part names (after config.reload_config)
    ws.skills                        # the skills found: core.prompt.Skill, for a PromptSpec
    ws.config_files                  # (user's ctxlayer.toml, workspace's ctxlayer.toml)
    ws.watch_count()                 # inotify watches held (None: not watching / not Linux)
    ws.stop()
    render_inspect(seg)              # -> str, the `ctxlayer inspect` table

Workspace(root, config, count, home=None, user_config_dir=None)
    root: the workspace folder. config: `Config` or its `WorkspaceConfig`. count: text ->
    tokens. home / user_config_dir: where agent files are looked up first (default: the real
    home and `default_user_config_dir()`; tests pass their own).

Semantics:
- Parts, in order (most stable first): "agentFiles", "skills", "files", "tree", "git". Every
  part is always present in `segment.parts` (empty text when there is nothing, e.g. "git"
  outside a repository). `segment.text` joins the non-empty parts with a blank line.
- `segment.hash` = content_hash(segment.text); `segment.version` starts at 1 and increments
  exactly when the hash changes; `updated_at` (ISO 8601, UTC) is when it last changed.
- `refresh()` and the watcher call `on_change(segment, changed)` only when some part's text
  changed (`changed` lists those parts) or `segment.left_out` did (`changed` may be empty). Both hold one lock, so calls from any thread are safe.
  `on_change` runs on the thread that did the refresh (the watcher's worker, or the caller
  of `refresh()`): keep it short (hop onto the event loop) and do not call `stop()` from it.
- The watcher holds one inotify watch per folder the tree keeps (not ignored, or holding a
  listed file, or leading to a skill root), plus the repository's folder, info/ and refs/;
  new kept folders are watched as they appear, and the set is recomputed when an ignore
  file changes. Not Linux: one recursive watchdog observer.
- Bad config never reaches here: load_config already fell back to defaults.
"""

from ctxlayer.workspace.inspect import render_inspect
from ctxlayer.workspace.segment import PART_ORDER
from ctxlayer.workspace.workspace import Workspace

__all__ = ["PART_ORDER", "Workspace", "render_inspect"]
