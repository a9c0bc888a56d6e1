"""The `tree` part: the file list drawn as an indented tree, folded to fit a token budget.

Owns: building the folder tree from a sorted file list (a name that would not read as one
entry quoted, `core.text.path_line`), folding folders with more than
`fold_threshold` entries up front (`gen/ (1,234 files)`), then folding the deepest folders
first (largest first within a depth) until the text fits `tree_token_budget`, and reporting
what was folded. Costs are estimated from characters (calibrated with the real counter on a
sample) and checked with the real counter at the end, so a 50k-file list is counted once.
Pure: no I/O; the caller passes the file list and the counter.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from ctxlayer.core.text import counted, path_line
from ctxlayer.protocol import LeftOut

INDENT = "  "
HEADER = "# Project tree"
FOLD_NOTE = "(Folders shown as `name/ (N files)` are folded.)"
MAX_LEFT_OUT = 50


class _Node:
    __slots__ = ("cost", "depth", "dirs", "files", "folded", "name", "parent", "path", "total")

    def __init__(self, name: str, path: str, depth: int, parent: _Node | None) -> None:
        self.name = name
        self.path = path
        self.depth = depth
        self.dirs: dict[str, _Node] = {}
        self.files: list[str] = []
        self.total = 0
        self.folded = False
        self.cost = 0  # characters this node's lines take as currently shown
        self.parent = parent


@dataclass(frozen=True, slots=True)
class TreeText:
    text: str
    left_out: list[LeftOut]


def _build(files: list[str]) -> tuple[_Node, list[_Node]]:
    """The folder tree of ``files`` and its folders in the order they first appear. A file
    finds its folder by the folder's path, one lookup (a walk from the root per file was most
    of a 20k-file tree's time); totals are summed up once, deepest folders first."""
    root = _Node("", "", 0, None)
    nodes: list[_Node] = []
    folders: dict[str, _Node] = {"": root}
    for path in files:
        folder, _, name = path.rpartition("/")
        node = folders.get(folder)
        if node is None:
            node = _folder(folder, folders, nodes)
        node.files.append(path_line(name))
    for node in sorted(nodes, key=lambda n: -n.depth):
        node.total += len(node.files)
        node.parent.total += node.total  # type: ignore[union-attr]
    root.total += len(root.files)
    return root, nodes


def _folder(folder: str, folders: dict[str, _Node], nodes: list[_Node]) -> _Node:
    """The node of ``folder`` (a path without its trailing slash), made with the folders
    above it that are not there yet, from the top down."""
    missing = [folder]
    while (up := missing[-1].rpartition("/")[0]) not in folders:
        missing.append(up)
    parent = folders[up]
    for path in reversed(missing):
        name = path.rpartition("/")[2]
        node = _Node(path_line(name), f"{parent.path}{name}/", parent.depth + 1, parent)
        parent.dirs[name] = node
        folders[path] = node
        nodes.append(node)
        parent = node
    return parent


def _header_len(node: _Node) -> int:
    return len(INDENT) * (node.depth - 1) + len(node.name) + 2


def _folded_len(node: _Node) -> int:
    return _header_len(node) + 3 + len(counted(node.total, "file"))


def _compute_costs(node: _Node) -> int:
    """Bottom-up characters of each node as shown (folded nodes cost one line)."""
    if node.folded:
        node.cost = _folded_len(node)
        return node.cost
    pad = len(INDENT) * node.depth
    cost = _header_len(node) if node.depth else 0
    cost += sum(pad + len(f) + 1 for f in node.files)
    for child in node.dirs.values():
        cost += _compute_costs(child)
    node.cost = cost
    return cost


def _fold(node: _Node) -> None:
    delta = node.cost - _folded_len(node)
    node.folded = True
    node.cost -= delta
    parent = node.parent
    while parent is not None:
        parent.cost -= delta
        parent = parent.parent


class _Enough(Exception):
    """A render asked for its first characters has them."""


def _render(root: _Node, root_limit: int | None, any_folded: bool,
            first: int | None = None) -> str:
    """The tree's text; with ``first``, only its first ``first`` characters (the calibration
    sample: the whole unfolded text of a 20k-file tree took a third of its time)."""
    lines = [f"{HEADER} ({counted(root.total, 'file')})"]
    if any_folded:
        lines.append(FOLD_NOTE)
    size = sum(len(line) + 1 for line in lines)

    def add(line: str) -> None:
        nonlocal size
        lines.append(line)
        size += len(line) + 1
        if first is not None and size > first:
            raise _Enough

    def emit(node: _Node, limit: int | None) -> None:
        pad = INDENT * node.depth
        entries = len(node.dirs) + len(node.files)
        shown = 0
        for name in sorted(node.dirs):
            if limit is not None and shown >= limit:
                break
            child = node.dirs[name]
            if child.folded:
                add(f"{pad}{child.name}/ ({counted(child.total, 'file')})")
            else:
                add(f"{pad}{child.name}/")
                emit(child, None)
            shown += 1
        for name in sorted(node.files):
            if limit is not None and shown >= limit:
                break
            add(f"{pad}{name}")
            shown += 1
        if shown < entries:
            add(f"{pad}… {entries - shown:,} more entries")

    try:
        emit(root, root_limit)
    except _Enough:
        pass
    text = "\n".join(lines)
    return text if first is None else text[:first]


def render_tree(
    files: list[str], count: Callable[[str], int], token_budget: int, fold_threshold: int
) -> TreeText:
    """The tree part's text for a sorted list of '/'-separated relative paths."""
    if not files:
        return TreeText(f"{HEADER} (no files)", [])
    root, nodes = _build(files)
    left_out: list[LeftOut] = []
    thresholded = 0
    for node in nodes:
        if len(node.dirs) + len(node.files) > fold_threshold:
            node.folded = True
            thresholded += 1
            if len(left_out) < MAX_LEFT_OUT:
                left_out.append(LeftOut(
                    part="tree", path=node.path,
                    reason=f"folded: {len(node.dirs) + len(node.files):,} entries, more than "
                    f"fold_threshold {fold_threshold}"))
    if thresholded > MAX_LEFT_OUT:
        left_out.append(LeftOut(part="tree", path=".", reason=f"{thresholded - MAX_LEFT_OUT:,} "
                                "more folders folded for fold_threshold"))
    _compute_costs(root)

    # calibrate characters -> tokens on a sample of the text as it stands
    sample = _render(root, None, thresholded > 0, first=8000)
    ratio = max(count(sample), 1) / max(len(sample), 1)
    target = token_budget / ratio  # in characters
    order = _fold_order(nodes)
    budget_folds = 0
    root_limit: int | None = None
    for _attempt in range(8):
        while root.cost > target:
            node = next(order, None)
            if node is None:
                break
            _fold(node)
            budget_folds += 1
        if root.cost > target:  # everything below the root is folded and it is still too long
            per_entry = root.cost / max(len(root.dirs) + len(root.files), 1)
            root_limit = max(int(target / per_entry), 1)
        text = _render(root, root_limit, thresholded + budget_folds > 0)
        tokens = count(text)
        if tokens <= token_budget or (root_limit == 1):
            break
        target *= token_budget / tokens * 0.97
    if budget_folds:
        noun = "folder" if budget_folds == 1 else "folders"
        left_out.append(LeftOut(part="tree", path=".", reason=f"{budget_folds:,} {noun} folded "
                                f"to fit tree_token_budget {token_budget:,}"))
    if root_limit is not None:
        left_out.append(LeftOut(part="tree", path=".", reason="top-level entries cut to fit "
                                f"tree_token_budget {token_budget:,}"))
    return TreeText(text, left_out)


def _fold_order(nodes: list[_Node]):
    """Deepest level first; within a level the largest (as shown at that time) first."""
    by_depth: dict[int, list[_Node]] = {}
    for node in nodes:
        by_depth.setdefault(node.depth, []).append(node)
    for depth in sorted(by_depth, reverse=True):
        level = [n for n in by_depth[depth] if not n.folded]
        level.sort(key=lambda n: (-n.cost, n.path))
        for node in level:
            if not node.folded and not _under_folded(node):
                yield node


def _under_folded(node: _Node) -> bool:
    parent = node.parent
    while parent is not None:
        if parent.folded:
            return True
        parent = parent.parent
    return False
