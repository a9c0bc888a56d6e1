"""Workspace benchmarks: first scan vs git, write -> on_change latency, peak RSS.

    .venv/bin/python bench/workspace_bench.py [--files 50000] [--latency-files 20000]

Generates git repositories in a temp folder (a few untracked and modified files each),
then prints:
- the first full scan of the large repo against `git ls-files -co --exclude-standard -z` +
  `git status --porcelain=v2 --branch -z` run one after the other (target: <= 2x);
- the latency from a file write to on_change with the watcher running in process on the
  smaller repo, p50 / p99 (target: p50 <= debounce + 50 ms);
- the peak RSS of a fresh process that scanned and watches the large repo (target: 150 MB).
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


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--files", type=int, default=50_000)
    ap.add_argument("--latency-files", type=int, default=20_000)
    ap.add_argument("--samples", type=int, default=60)
    ap.add_argument("--rss-child", type=Path, help=argparse.SUPPRESS)
    args = ap.parse_args()
    os.environ.update(GIT_ENV)
    if args.rss_child:
        rss_child(args.rss_child)
        return
    from ctxlayer.tokenizers import counter_for

    count = counter_for("gpt-4o").count
    with tempfile.TemporaryDirectory(prefix="ctxlayer-wsbench-") as tmp:
        big, small = Path(tmp) / "big", Path(tmp) / "small"
        t0 = time.perf_counter()
        generate(big, args.files)
        generate(small, args.latency_files)
        print(f"generated {args.files:,} + {args.latency_files:,} file repos in "
              f"{time.perf_counter() - t0:.1f} s")
        scan_vs_git(big, count)
        latency(small, count, args.samples)
        out = subprocess.run([sys.executable, __file__, "--rss-child", str(big)],
                             capture_output=True, text=True, check=True, env=os.environ)
        peak, before = out.stdout.split()
        print(f"peak RSS, a process that scanned and watches the {args.files:,}-file repo: "
              f"{peak} MB (target <= 150 MB; {before} MB of it before the scan: Python, "
              "the gpt-4o encoding)")


if __name__ == "__main__":
    main()
