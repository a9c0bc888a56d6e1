"""The architecture's mechanical checks that import-linter does not make: no import circles
between our modules, and one declaration per request (the protocol's table, the state's table
and what the daemon registers are the same set)."""

from __future__ import annotations

import grimp

from ctxlayer import protocol


def circles(graph: grimp.ImportGraph, package: str) -> list[list[str]]:
    """Strongly connected sets of more than one module (Tarjan), imports inside functions and
    under TYPE_CHECKING included: a circle is a circle to a reader either way."""
    modules = sorted(m for m in graph.modules if m == package or m.startswith(package + "."))
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    counter = 0

    def visit(start: str) -> None:
        nonlocal counter
        work = [(start, iter(sorted(graph.find_modules_directly_imported_by(start))))]
        index[start] = low[start] = counter
        counter += 1
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            for child in children:
                if not child.startswith(package):
                    continue
                if child not in index:
                    index[child] = low[child] = counter
                    counter += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph.find_modules_directly_imported_by(child)))))
                    break
                if child in on_stack:
                    low[node] = min(low[node], index[child])
            else:
                work.pop()
                if work:
                    parent = work[-1][0]
                    low[parent] = min(low[parent], low[node])
                if low[node] == index[node]:
                    group = []
                    while True:
                        member = stack.pop()
                        on_stack.discard(member)
                        group.append(member)
                        if member == node:
                            break
                    if len(group) > 1:
                        found.append(sorted(group))

    for module in modules:
        if module not in index:
            visit(module)
    return found


def package_inits(graph: grimp.ImportGraph) -> set[str]:
    return {m for m in graph.modules if graph.find_children(m)}


def test_no_import_circles_between_modules() -> None:
    graph = grimp.build_graph("ctxlayer", include_external_packages=False)
    # a package's __init__ re-exporting its modules is not a circle a reader trips over:
    # leave out the edges from a package to its own children
    for package in package_inits(graph):
        for child in graph.find_children(package):
            if graph.direct_import_exists(importer=package, imported=child):
                graph.remove_import(importer=package, imported=child)
    assert circles(graph, "ctxlayer") == []


def test_the_circle_finder_finds_a_circle() -> None:
    graph = grimp.ImportGraph()
    for m in ("p", "p.a", "p.b", "p.c"):
        graph.add_module(m)
    graph.add_import(importer="p.a", imported="p.b")
    graph.add_import(importer="p.b", imported="p.a")
    graph.add_import(importer="p.c", imported="p.a")
    assert circles(graph, "p") == [["p.a", "p.b"]]


def test_every_protocol_request_has_one_state_function() -> None:
    from ctxlayer.state.requests import REQUESTS

    assert set(REQUESTS) == set(protocol.REQUESTS)
