"""The house's layering, checked on the source: dependencies point inward and no module imports itself back.

The graph is built from the AST of every module under src/dataclaw, with every import counted wherever it
stands (a lazy import inside a function hides a cycle from the interpreter, not from the reader); imports
under ``if TYPE_CHECKING:`` are type-only and left out. An import of a package's name counts as an edge to
its ``__init__``; ``from pkg import mod`` to the submodule.
"""

from __future__ import annotations

import ast
from pathlib import Path

import networkx as nx

SRC = Path(__file__).resolve().parents[1] / "src"

LAYERS: dict[str, int] = {
    "core": 0,
    "models": 1,
    "pipeline": 1,
    "media": 1,
    "sandbox": 1,
    "train": 1,
    "tailor": 2,
    "envcraft": 2,
    "viewer": 3,
    "cli": 4,
}
"""Each top-level package's layer: a package imports only packages of a lower layer, or of its own layer
without a cycle between them; the two engines (layer 2) never import each other."""


def _modules() -> dict[str, Path]:
    mods = {}
    for path in sorted((SRC / "dataclaw").rglob("*.py")):
        parts = list(path.relative_to(SRC).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        mods[".".join(parts)] = path
    return mods


def _type_only(node: ast.If) -> bool:
    test = node.test
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _imported(module: str, path: Path, mods: dict[str, Path]) -> set[str]:
    """The dataclaw modules ``module`` imports (resolved to the deepest module that exists)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    skip = {
        id(n)
        for block in ast.walk(tree)
        if isinstance(block, ast.If) and _type_only(block)
        for n in ast.walk(block)
    }
    names: list[str] = []
    for node in ast.walk(tree):
        if id(node) in skip:
            continue
        if isinstance(node, ast.Import):
            names += [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join(parts + ([node.module] if node.module else []))
            for alias in node.names:
                full = f"{base}.{alias.name}"
                names.append(full if full in mods else base)
    found = set()
    for name in names:
        if not name.startswith("dataclaw"):
            continue
        while name and name not in mods:
            name = name.rpartition(".")[0]
        if name and name != module:
            found.add(name)
    return found


def _graph() -> nx.DiGraph:
    mods = _modules()
    graph = nx.DiGraph()
    graph.add_nodes_from(mods)
    for module, path in mods.items():
        for target in _imported(module, path, mods):
            graph.add_edge(module, target)
    return graph


def _top(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else ""


def test_no_import_cycles() -> None:
    graph = _graph()
    cycles = [sorted(c) for c in nx.strongly_connected_components(graph) if len(c) > 1]
    described = []
    for component in cycles:
        cycle = nx.find_cycle(graph.subgraph(component))
        loop = " → ".join([a for a, _ in cycle] + [cycle[0][0]])
        described.append(
            loop if len(cycle) == len(component) else f"{loop} (one loop of: {', '.join(component)})"
        )
    assert not described, "import cycles (lazy imports count, TYPE_CHECKING ones do not):\n" + "\n".join(
        described
    )


def test_every_package_has_a_layer() -> None:
    tops = {_top(m) for m in _modules()} - {""}
    assert tops <= set(LAYERS), f"top-level packages without a layer in LAYERS: {sorted(tops - set(LAYERS))}"


def test_dependencies_point_inward() -> None:
    graph = _graph()
    wrong = []
    packages = nx.DiGraph()
    for a, b in graph.edges:
        pa, pb = _top(a), _top(b)
        if not pb or pa == pb:
            continue
        packages.add_edge(pa, pb)
        if not pa:
            wrong.append(f"{a} → {b}: dataclaw/__init__.py imports nothing of the package")
        elif LAYERS[pb] > LAYERS[pa] or (LAYERS[pa] == LAYERS[pb] == LAYERS["tailor"]):
            wrong.append(f"{a} → {b}: {pa} (layer {LAYERS[pa]}) may not import {pb} (layer {LAYERS[pb]})")
    for component in nx.strongly_connected_components(packages):
        if len(component) > 1:
            wrong.append(f"packages import each other: {sorted(component)}")
    assert not wrong, "layering violations:\n" + "\n".join(sorted(wrong))


def test_the_checks_see_cycles_and_violations(tmp_path: Path, monkeypatch) -> None:
    """The graph builder finds a lazy import cycle and an outward import in a tree made for it."""
    pkg = tmp_path / "dataclaw"
    for sub in ("core", "tailor"):
        (pkg / sub).mkdir(parents=True)
        (pkg / sub / "__init__.py").write_text("")
    (pkg / "__init__.py").write_text("")
    (pkg / "core" / "a.py").write_text("def f():\n    from dataclaw.core import b\n")
    (pkg / "core" / "b.py").write_text("from . import a\nfrom dataclaw.tailor.x import y\n")
    (pkg / "tailor" / "x.py").write_text(
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from dataclaw.core import a\ny = 1\n"
    )
    monkeypatch.setitem(globals(), "SRC", tmp_path)
    graph = _graph()
    assert set(graph.successors("dataclaw.core.a")) == {"dataclaw.core.b"}
    assert set(graph.successors("dataclaw.core.b")) == {"dataclaw.core.a", "dataclaw.tailor.x"}
    assert set(graph.successors("dataclaw.tailor.x")) == set()


def test_the_map_names_every_package() -> None:
    """docs/architecture.md's layout names every package folder (archetype and import-template packages,
    which are environments rather than dataclaw code, excepted), so a new folder cannot go unmapped."""
    doc = (SRC.parent / "docs" / "architecture.md").read_text(encoding="utf-8")
    layout = doc.split("## Layout", 1)[1].split("\n## ", 1)[0]
    missing = []
    for init in sorted((SRC / "dataclaw").rglob("__init__.py")):
        rel = init.parent.relative_to(SRC / "dataclaw")
        if rel.parts and (rel.parts[:2] == ("envcraft", "archetypes") and len(rel.parts) > 2):
            continue
        if any(part.endswith("_package") for part in rel.parts):
            continue
        if rel.parts and f"{rel.name}/" not in layout:
            missing.append(str(rel))
    assert not missing, f"packages missing from docs/architecture.md's layout: {missing}"
