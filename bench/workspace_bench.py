"""Workspace benchmarks: first scan vs git, write -> on_change latency, peak RSS.

    .venv/bin/python bench/workspace_bench.py [--files 50000] [--latency-files 20000]

Generates git repositories in a temp folder (a few untracked and modified files each),
then prints:
- the first full scan of the large repo against `git ls-files -co --exclude-standard -z` +
  `git status --porcelain=v2 --branch -z` run one after the other (target: <= 2x);
- the latency from a file write to on_change with the watcher running in process on the
  smaller repo, p50 / p99 (target: p50 <= debounce + 50 ms);
- the peak RSS of a fresh process that scanned and watches the large repo (target: 150 MB);
- git both ways on the large repo: the git CLI against GitPython for finding the repository,
  reading HEAD / branch / upstream, status and the file list, and GitPython's import
  (`--only git`);
- the inotify watches held for a repo with an ignored 20,000-file node_modules: the
  folder-by-folder watcher against a watchdog recursive watch (`--only watches`).
Counts tokens with the production counter (`tokenizers.counter_for("gpt-4o")`).
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

GIT_ENV = {
    "GIT_CONFIG_NOSYSTEM": "1", "GIT_CONFIG_GLOBAL": os.devnull,
    "GIT_AUTHOR_NAME": "bench", "GIT_AUTHOR_EMAIL": "bench@example.invalid",
    "GIT_COMMITTER_NAME": "bench", "GIT_COMMITTER_EMAIL": "bench@example.invalid",
}


def git(root: Path, *args: str) -> None:
    subprocess.run(["git", *args], cwd=root, check=True, capture_output=True)


def generate(root: Path, n: int) -> None:
    """n files in ~15-file folders, three levels deep, committed; then a little churn."""
    root.mkdir(parents=True)
    per_dir, i = 15, 0
    while i < n:
        d = root / f"pkg{i // 3000:02d}" / f"mod{(i // 300) % 10}" / f"sub{(i // per_dir) % 20}"
        d.mkdir(parents=True, exist_ok=True)
        for _ in range(min(per_dir, n - i)):
            (d / f"file_{i:06d}.py").write_text(f"VALUE = {i}\n")
            i += 1
    (root / "README.md").write_text("# Bench repo\n\nGenerated.\n")
    (root / ".gitignore").write_text("build/\n*.log\n")
    git(root, "init", "-q", "-b", "main")
    git(root, "add", "-A")
    git(root, "commit", "-qm", "generated")
    for k in range(50):
        (root / f"pkg00/mod0/sub0/file_{k % 15:06d}.py").write_text(f"CHANGED = {k}\n")
    (root / "scratch").mkdir()
    for k in range(100):
        (root / "scratch" / f"new_{k}.txt").write_text("x\n")


def timed(fn, runs: int) -> float:
    times = []
    for _ in range(runs):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def git_baseline(root: Path) -> None:
    subprocess.run(["git", "ls-files", "-co", "--exclude-standard", "-z"], cwd=root,
                   check=True, capture_output=True)
    subprocess.run(["git", "status", "--porcelain=v2", "--branch", "-z"], cwd=root,
                   check=True, capture_output=True)


def scan_vs_git(root: Path, count) -> None:
    from ctxlayer.config import Config
    from ctxlayer.workspace import Workspace

    def scan():
        Workspace(root, Config(), count, home=root.parent, user_config_dir=root.parent).scan()

    scan()  # warm caches (page cache, the counter's encoding)
    git_s = timed(lambda: git_baseline(root), 7)
    scan_s = timed(scan, 7)
    n = len(subprocess.run(["git", "ls-files"], cwd=root, capture_output=True).stdout.split())
    print(f"scan ({n:,} files): {scan_s * 1000:.0f} ms; git ls-files + status "
          f"{git_s * 1000:.0f} ms; ratio {scan_s / git_s:.2f}x (target <= 2x)")


def latency(root: Path, count, samples: int) -> None:
    from ctxlayer.config import Config
    from ctxlayer.workspace import Workspace

    ws = Workspace(root, Config(), count, home=root.parent, user_config_dir=root.parent)
    ws.scan()
    got = threading.Event()
    stamp: list[float] = []

    def on_change(segment, changed):
        stamp.append(time.perf_counter())
        got.set()

    ws.start_watching(on_change)
    target = root / "pkg00" / "mod1" / "sub0" / "file_000300.py"
    original = target.read_text()
    lat = []
    try:
        for k in range(samples):
            got.clear()
            stamp.clear()
            t0 = time.perf_counter()
            # alternate modified / original: git status flips, so each write is a real change
            target.write_text("EDITED = 1\n" if k % 2 == 0 else original)
            if not got.wait(10):
                print(f"  sample {k}: no change seen within 10 s")
                continue
            lat.append(stamp[0] - t0)
            time.sleep(0.05)
    finally:
        ws.stop()
    lat.sort()
    p50 = lat[len(lat) // 2] * 1000
    p99 = lat[min(len(lat) - 1, int(len(lat) * 0.99))] * 1000
    debounce = Config().workspace.debounce_ms
    print(f"write -> on_change ({samples} writes): p50 {p50:.0f} ms, p99 {p99:.0f} ms "
          f"(debounce {debounce} ms; target p50 <= {debounce + 50} ms)")


def rss_child(root: Path) -> None:
    """Run in a fresh process: scan, watch, touch a file, report peak RSS."""
    from ctxlayer.config import Config
    from ctxlayer.tokenizers import counter_for
    from ctxlayer.workspace import Workspace

    count = counter_for("gpt-4o").count
    count("warm up the encoding")
    before_kb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    ws = Workspace(root, Config(), count, home=root.parent, user_config_dir=root.parent)
    ws.scan()
    done = threading.Event()
    ws.start_watching(lambda seg, changed: done.set())
    (root / "touched.txt").write_text("x\n")
    done.wait(30)
    ws.stop()
    peak_kb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    print(f"{peak_kb / 1024:.0f} {before_kb / 1024:.0f}")


def git_both_ways(root: Path) -> None:
    """Each git question asked through the CLI and through GitPython (medians)."""
    from ctxlayer.workspace import gitrefs

    def cli(*args: str) -> None:
        subprocess.run(["git", *args], cwd=root, capture_output=True, check=False)

    import_s = statistics.median(float(subprocess.run(
        [sys.executable, "-c", "import time; t = time.perf_counter(); import git; "
         "print(time.perf_counter() - t)"], capture_output=True, text=True,
        check=True).stdout) for _ in range(5))
    import git

    repo = git.Repo(root)
    rows = [
        ("find the repository", lambda: cli("rev-parse", "--show-toplevel", "--absolute-git-dir",
                                            "--show-prefix"),
         lambda: gitrefs.find_repo(root / "pkg00"), 51),
        ("HEAD, branch, upstream", lambda: (cli("rev-parse", "HEAD"),
                                            cli("symbolic-ref", "-q", "--short", "HEAD"),
                                            cli("rev-parse", "--abbrev-ref", "@{u}")),
         lambda: gitrefs.read_head(root), 51),
        ("status --porcelain=v2", lambda: cli("--no-optional-locks", "status", "--porcelain=v2",
                                              "--branch", "-z", "--untracked-files=all"),
         lambda: repo.git(c="core.fsmonitor=false").execute(
             ["git", "--no-optional-locks", "status", "--porcelain=v2", "--branch", "-z",
              "--untracked-files=all"]), 7),
        ("untracked files", lambda: cli("ls-files", "-o", "--exclude-standard", "-z"),
         lambda: repo.untracked_files, 7),
        ("ls-files", lambda: cli("ls-files", "-c", "-z"), lambda: repo.git.ls_files("-c", "-z"),
         7),
    ]
    print(f"git both ways on {root.name} (median): import git (GitPython) "
          f"{import_s * 1000:.0f} ms in a fresh interpreter")
    for label, by_cli, by_gitpython, runs in rows:
        by_cli()
        by_gitpython()
        pairs = [(timed(by_cli, 1), timed(by_gitpython, 1)) for _ in range(runs)]  # interleaved
        c = statistics.median(p[0] for p in pairs)
        g = statistics.median(p[1] for p in pairs)
        print(f"  {label:24s} CLI {c * 1000:8.2f} ms   GitPython {g * 1000:8.2f} ms   "
              f"GitPython / CLI {g / c:.2f}x")
    repo.close()


def kernel_watches() -> int:
    """inotify watches this process holds, over all its inotify descriptors."""
    total = 0
    for fdinfo in Path("/proc/self/fdinfo").iterdir():
        try:
            text = fdinfo.read_text()
        except OSError:
            continue
        total += sum(1 for line in text.splitlines() if line.startswith("inotify wd:"))
    return total


def watches_with_node_modules(base: Path, count, files: int) -> None:
    from watchdog.observers import Observer

    from ctxlayer.config import Config
    from ctxlayer.workspace import Workspace
    from ctxlayer.workspace.watcher import EVENT_FILTER, _Handler

    root = base / "nm"
    generate(root, 2000)
    (root / ".gitignore").write_text("build/\n*.log\nnode_modules/\n")
    for i in range(files):
        d = root / "node_modules" / f"pkg{i // 50:04d}" / "lib"
        d.mkdir(parents=True, exist_ok=True)
        (d / f"m{i % 50}.js").write_text("module.exports = 1;\n")
    folders = sum(1 for _ in os.walk(root))
    before = kernel_watches()
    ws = Workspace(root, Config(), count, home=base, user_config_dir=base / "cfg")
    ws.scan()
    ws.start_watching(lambda seg, changed: None)
    ours = kernel_watches() - before
    ws.stop()
    observer = Observer()
    observer.schedule(_Handler(None, lambda p: False), str(root), recursive=True,
                      event_filter=EVENT_FILTER)
    observer.start()
    theirs = kernel_watches() - before
    observer.stop()
    observer.join()
    print(f"inotify watches, {files:,}-file ignored node_modules + 2,000 files ({folders:,} "
          f"folders): folder-by-folder {ours}, watchdog recursive {theirs} "
          f"({ours / theirs:.3f}x)")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--files", type=int, default=50_000)
    ap.add_argument("--latency-files", type=int, default=20_000)
    ap.add_argument("--samples", type=int, default=60)
    ap.add_argument("--only", choices=["scan", "latency", "rss", "git", "watches"])
    ap.add_argument("--rss-child", type=Path, help=argparse.SUPPRESS)
    args = ap.parse_args()
    os.environ.update(GIT_ENV)
    if args.rss_child:
        rss_child(args.rss_child)
        return
    from ctxlayer.tokenizers import counter_for

    count = counter_for("gpt-4o").count
    only = args.only
    with tempfile.TemporaryDirectory(prefix="ctxlayer-wsbench-") as tmp:
        big, small = Path(tmp) / "big", Path(tmp) / "small"
        t0 = time.perf_counter()
        if only in (None, "scan", "rss", "git"):
            generate(big, args.files)
        if only in (None, "latency"):
            generate(small, args.latency_files)
        print(f"generated the repos in {time.perf_counter() - t0:.1f} s")
        if only in (None, "scan"):
            scan_vs_git(big, count)
        if only in (None, "latency"):
            latency(small, count, args.samples)
        if only in (None, "rss"):
            out = subprocess.run([sys.executable, __file__, "--rss-child", str(big)],
                                 capture_output=True, text=True, check=True, env=os.environ)
            peak, before = out.stdout.split()
            print(f"peak RSS, a process that scanned and watches the {args.files:,}-file "
                  f"repo: {peak} MB (target <= 150 MB; {before} MB of it before the scan: "
                  "Python, the gpt-4o encoding)")
        if only in (None, "git"):
            git_both_ways(big)
        if only in (None, "watches") and sys.platform == "linux":
            watches_with_node_modules(Path(tmp), count, 20_000)


if __name__ == "__main__":
    main()
