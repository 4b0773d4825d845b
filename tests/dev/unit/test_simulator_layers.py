"""The flow simulator's modules depend one way: no module imports, however indirectly, a module that imports it back
(every import counts, also one made only for the type checker), and no family of actions imports the engine."""

from __future__ import annotations

import ast
from collections.abc import Mapping
from pathlib import Path

from tests.fixtures import ROOT

PACKAGE = "voicebridge_dev.simulator"
SOURCE = ROOT / "src" / "dev" / "voicebridge_dev" / "simulator"


def import_graph(folder: Path, package: str) -> dict[str, set[str]]:
    """Each module of the package under ``folder`` and the package's modules it imports anywhere in its source."""
    modules = {_module_name(path, folder, package): path for path in sorted(folder.rglob("*.py"))}
    graph: dict[str, set[str]] = {}
    for name, path in modules.items():
        imported: set[str] = set()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                imported |= {alias.name for alias in node.names}
            elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                # ``from package import module`` imports the module; ``from module import name`` the module.
                imported |= {f"{node.module}.{alias.name}" for alias in node.names} | {node.module}
        graph[name] = {target for target in imported if target in modules and target != name}
    return graph


def _module_name(path: Path, folder: Path, package: str) -> str:
    parts = path.relative_to(folder).with_suffix("").parts
    return ".".join((package, *parts[:-1])) if parts[-1] == "__init__" else ".".join((package, *parts))


def circles(graph: Mapping[str, set[str]]) -> list[list[str]]:
    """The modules of each circle in ``graph`` (its strongly connected parts of more than one module)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        for target in sorted(graph[node]):
            if target not in index:
                visit(target)
                low[node] = min(low[node], low[target])
            elif target in stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            part = [stack.pop()]
            while part[-1] != node:
                part.append(stack.pop())
            if len(part) > 1:
                found.append(sorted(part))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found


def test_the_simulator_has_no_circle_of_imports() -> None:
    assert circles(import_graph(SOURCE, PACKAGE)) == []


def test_no_family_of_actions_imports_the_engine() -> None:
    graph = import_graph(SOURCE, PACKAGE)
    importers = sorted(name for name, targets in graph.items() if f"{PACKAGE}.engine" in targets)
    assert [name for name in importers if name.startswith(f"{PACKAGE}.actions")] == []


def test_a_circle_of_two_modules_is_found() -> None:
    assert circles({"a": {"b"}, "b": {"a"}, "c": {"a"}}) == [["a", "b"]]
