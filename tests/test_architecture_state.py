"""The architecture's checks for "the state owns all live state" (issue 21, part 1): the
store only reads and writes SQLite, no session memory is kept outside the session service, a
workspace opens in one place and the state alone follows its changes, and the seams between
the state's modules are typed rather than `Any`. `ast` walks over server/, each with a test
that the walk finds what it looks for."""

from __future__ import annotations

import ast
from pathlib import Path

SERVER = Path(__file__).resolve().parents[1] / "server"
CTX = SERVER / "ctxlayer"


def classes(root: Path) -> dict[str, str]:
    """Every class defined under `root`: its name -> its module path."""
    found = {}
    for path in sorted(root.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text("utf-8"))):
            if isinstance(node, ast.ClassDef):
                found[node.name] = path.relative_to(root).as_posix()
    return found


def test_the_store_only_reads_and_writes_sqlite() -> None:
    """Open sessions, prefix sums and calibration live in state/session_service.py; store/
    is the database, the reads and writes of its rows (the sessions', the live conversations'),
    its errors, its schema, where it lives and its clean-close note (import-linter forbids
    store/ the engines: "the store only reads and writes SQLite")."""
    assert sorted(p.name for p in (CTX / "store").glob("*.py")) == [
        "__init__.py", "closed.py", "conversations.py", "db.py", "errors.py", "paths.py",
        "schema.py", "sessions.py"]
    everywhere = classes(CTX)
    for name in ("SessionService", "LiveSession", "SessionSettings", "SystemLayers"):
        assert everywhere[name] == "state/session_service.py", name


def session_keys(root: Path, skip: set[str]) -> list[str]:
    """Where a module builds a (workspace, session id) pair, the key of a session's memory,
    as "module:line"; and a `dict`/`set` of tuples annotated on an attribute of state.py."""
    found = []
    for path in sorted(root.rglob("*.py")):
        rel = path.relative_to(root).as_posix()
        if rel in skip:
            continue
        for node in ast.walk(ast.parse(path.read_text("utf-8"))):
            if isinstance(node, ast.Tuple) and len(node.elts) == 2:
                first, second = (ast.unparse(e) for e in node.elts)
                if first.endswith("workspace") and second.endswith(("session_id", "sid")):
                    found.append(f"{rel}:{node.lineno}")
            if isinstance(node, ast.AnnAssign) and rel == "state.py":
                text = ast.unparse(node.annotation)
                if text.startswith(("dict[tuple", "set[tuple")):
                    found.append(f"{rel}:{node.lineno}")
    return found


def test_no_session_memory_is_kept_outside_the_session_service() -> None:
    """What the process remembers of a session is a field of its LiveSession, reached through
    the service under its lock, so closing the session forgets it."""
    assert session_keys(CTX / "state", {"session_service.py"}) == []


def test_the_session_key_check_finds_a_key(tmp_path: Path) -> None:
    (tmp_path / "state.py").write_text(
        "class State:\n    def __init__(self):\n"
        "        self.specs: dict[tuple[str, str], int] = {}\n"
        "def f(caller, p):\n    return caller.state.specs.get((caller.workspace, p.session_id))\n")
    (tmp_path / "ok.py").write_text(
        "def g(caller, p):\n    return ('session', caller.workspace, p.session_id)\n")
    assert session_keys(tmp_path, set()) == ["state.py:3", "state.py:5"]


def calls_of(root: Path, attr: str, receiver_end: str = "") -> list[str]:
    """Modules (relative to `root`) that read `<receiver>.attr`, receiver ending as given."""
    found = set()
    for path in sorted(root.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text("utf-8"))):
            if isinstance(node, ast.Attribute) and node.attr == attr \
                    and ast.unparse(node.value).endswith(receiver_end):
                found.add(path.relative_to(root).as_posix())
    return sorted(found)


def test_a_workspace_opens_in_one_place_and_the_state_follows_it() -> None:
    """`open_workspace` (state/opening.py) acquires and starts a caller's live workspace and
    is the only subscriber of its changes: the faces forward `Events.segment`, never
    subscribe or re-measure the sessions themselves."""
    assert calls_of(CTX, "acquire", "workspaces") == ["state/opening.py"]
    assert calls_of(CTX, "subscribers") == ["state/live.py", "state/opening.py"]
    names = {n.id for p in CTX.rglob("*.py") if p.parts[-2] in ("lsp", "gateway")
             for n in ast.walk(ast.parse(p.read_text("utf-8"))) if isinstance(n, ast.Name)}
    assert "on_segment_changed" not in names
    assert calls_of(CTX / "lsp", "segment_listeners") == ["server.py"]


def any_seams(root: Path) -> list[str]:
    """A name made an alias of `Any` (`State = Any`), or an attribute of an object annotated
    `Any` (`self.x: Any`): a seam typed away, as "module:line"."""
    found = []
    for path in sorted(root.rglob("*.py")):
        rel = path.relative_to(root).as_posix()
        for node in ast.walk(ast.parse(path.read_text("utf-8"))):
            if isinstance(node, ast.Assign) and ast.unparse(node.value) == "Any":
                found.append(f"{rel}:{node.lineno}")
            if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Attribute) \
                    and ast.unparse(node.annotation) in ("Any", "Any | None"):
                found.append(f"{rel}:{node.lineno}")
    return found


def test_the_seams_are_typed() -> None:
    assert any_seams(CTX) == []


def test_the_seam_check_finds_an_any(tmp_path: Path) -> None:
    (tmp_path / "m.py").write_text("State = Caller = Any\nclass C:\n    def __init__(self):\n"
                                   "        self.sessions: Any = None\n        self.n: int = 0\n")
    assert any_seams(tmp_path) == ["m.py:1", "m.py:4"]


def test_the_seams_protocols_name_what_exists(tmp_path: Path) -> None:
    """Each attribute the protocols of state/seams.py name exists on what they stand for."""
    from ctxlayer import protocol
    from ctxlayer.state import Caller, State, seams
    from ctxlayer.state.chat import Conversation

    state = State(tmp_path)
    try:
        stands_for = {seams.Host: state, seams.Asker: Caller(state),
                      seams.Chat: Conversation("", "c", "gpt-4o", "prepare")}
        for proto, thing in stands_for.items():
            names = {n for n in vars(proto) if not n.startswith("_")} | set(
                proto.__annotations__)
            missing = [n for n in sorted(names) if not hasattr(thing, n)]
            assert missing == [], (proto.__name__, missing)
        assert isinstance(state.gateway_urls, protocol.GatewayUrls | None)
    finally:
        state.close()
