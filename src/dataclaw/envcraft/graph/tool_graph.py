"""Per-environment tool dependency graph (EnvCraft §4.1, bottom level).

Nodes are tools, partitioned into read and write tools; directed edges say "this tool's effect or output
feeds that tool". Edge weights are tiered like ClawForge's released graphs (the paper's code):

* ``gold`` 0.9 — consecutive steps of a scenario's reference solution (ClawForge ``gold_next::<scenario>``);
* ``dataflow`` 0.8 — a tool's output id feeds another's parameter (``produces_<kind>_id_for``);
* ``bridge`` 0.5 — a write tool changes a state field another tool reads (``writes_<field>_read_by``);
* ``llm_weak`` 0.25 — a model-proposed edge from pre/post-conditions (the relationship holds its reason).

An edge keeps its strongest tier. Graphs are NetworkX ``DiGraph`` s stored as node-link JSON
(``links``), the format ClawForge ships, so :func:`load_tool_graph` reads both.
"""

from __future__ import annotations

import ast
import inspect
import json
import re
import textwrap
from collections import Counter
from dataclasses import dataclass, field
from itertools import pairwise
from pathlib import Path
from typing import Any

import networkx as nx

from dataclaw.core import pyast
from dataclaw.core.errors import ConfigError

TIER_WEIGHTS: dict[str, float] = {"gold": 0.9, "dataflow": 0.8, "bridge": 0.5, "llm_weak": 0.25}
# roles of ClawForge nodes that change state ("other" there holds the non-read verbs: add-tags, arm, …)
WRITE_ROLES = frozenset({"write", "produce", "other", "guard"})
SCAFFOLD_LAYER = "scaffold"
_ID_SUFFIXES = ("_ids", "_id")


def singular(word: str) -> str:
    """``tickets`` → ``ticket``, ``entities`` → ``entity``, ``kb_articles`` → ``kb_article``."""
    if word.endswith("ies") and len(word) > 4:
        return word[:-3] + "y"
    if word.endswith(("ses", "xes", "ches", "shes")):
        return word[:-2]
    if word.endswith("s") and not word.endswith("ss"):
        return word[:-1]
    return word


def id_kind(param: str) -> str | None:
    """The entity kind an id parameter refers to: ``ticket_id`` → ``ticket``; ``--contact-id`` →
    ``contact``; None for parameters that are not ids."""
    name = param.lstrip("-").replace("-", "_")
    for suffix in _ID_SUFFIXES:
        if name.endswith(suffix) and len(name) > len(suffix):
            return name[: -len(suffix)]
    return None


def kind_matches(kind: str, noun: str) -> bool:
    """Whether an entity noun (a returned key or state field, singular) names ``kind``:
    ``ticket``/``ticket``, ``article``/``kb_article``."""
    noun = singular(noun)
    return noun == kind or noun.endswith("_" + kind)


@dataclass(frozen=True)
class EdgeRow:
    """One edge of a tool graph as a reader scans it: ``target_writes`` says whether the target is a write
    tool."""

    source: str
    target: str
    target_writes: bool
    tier: str
    weight: float
    relationship: str


@dataclass
class ToolGraph:
    """A tool dependency graph of one environment plus its read/write partition."""

    env: str
    graph: nx.DiGraph
    source: str = "runtime"  # "runtime" (built from a package) or "file" (loaded, e.g. ClawForge)
    meta: dict[str, Any] = field(default_factory=dict)

    def is_write(self, tool: str) -> bool:
        return self.graph.nodes[tool].get("role") in WRITE_ROLES

    def tools(self, *, include_scaffold: bool = False) -> list[str]:
        return [
            n for n, d in self.graph.nodes(data=True) if include_scaffold or d.get("layer") != SCAFFOLD_LAYER
        ]

    def write_tools(self) -> list[str]:
        return [n for n in self.tools() if self.is_write(n)]

    def read_tools(self) -> list[str]:
        return [n for n in self.tools() if not self.is_write(n)]

    def consumed_kinds(self) -> set[str]:
        """Entity kinds the tools take ids of (from parameter names)."""
        out: set[str] = set()
        for _, d in self.graph.nodes(data=True):
            for p in node_params(d):
                kind = id_kind(p)
                if kind:
                    out.add(kind)
        return out

    def produced_kinds(self) -> set[str]:
        """Entity kinds whose ids some tool outputs (dataflow edges and declared returns)."""
        out: set[str] = set()
        for _, _, d in self.graph.edges(data=True):
            m = re.fullmatch(r"produces_(.+)_id_for", str(d.get("relationship", "")))
            if m:
                out.add(m.group(1).replace("-", "_"))
        for _, d in self.graph.nodes(data=True):
            out.update(singular(r) for r in d.get("returns", []) or [])
        return out

    def to_json(self) -> dict[str, Any]:
        data = nx.node_link_data(self.graph, edges="links")
        data["graph"] = {**data.get("graph", {}), "env": self.env, **self.meta}
        return data

    def save(self, path: str | Path) -> Path:
        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(self.to_json(), indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
        return path

    def edge_rows(self) -> list[EdgeRow]:
        """Every edge, heaviest first (then by source and target)."""
        edges = sorted(self.graph.edges(data=True), key=lambda e: (-e[2]["weight"], e[0], e[1]))
        return [
            EdgeRow(a, b, self.is_write(b), d.get("tier", ""), d["weight"], str(d.get("relationship", "")))
            for a, b, d in edges
        ]

    def stats(self) -> dict[str, Any]:
        tiers = Counter(d.get("tier", "?") for _, _, d in self.graph.edges(data=True))
        return {
            "env": self.env,
            "tools": len(self.tools()),
            "read_tools": len(self.read_tools()),
            "write_tools": len(self.write_tools()),
            "edges": self.graph.number_of_edges(),
            "tiers": dict(sorted(tiers.items())),
        }


def node_params(node: dict[str, Any]) -> list[str]:
    """A tool node's parameter names (ClawForge nodes have only ``required_args``)."""
    return node.get("params", node.get("required_args", [])) or []


def add_edge(g: nx.DiGraph, src: str, dst: str, tier: str, relationship: str) -> None:
    """Add ``src → dst`` unless an edge of a stronger (heavier) tier is already there."""
    weight = TIER_WEIGHTS[tier]
    old = g.get_edge_data(src, dst)
    if old is not None and old["weight"] >= weight:
        return
    g.add_edge(src, dst, weight=weight, tier=tier, relationship=relationship)


def session_reads(fn: Any) -> set[str]:
    """Top-level state fields a tool body reads: a static scan of ``session["x"]`` / ``session.get("x")``
    (the source is parsed, never run). Helpers called with the session are not followed."""
    try:
        tree = pyast.parse(textwrap.dedent(inspect.getsource(fn)))
    except (OSError, TypeError, SyntaxError):
        return set()
    out: set[str] = set()
    for node in ast.walk(tree):
        if (
            isinstance(node, ast.Subscript)
            and isinstance(node.value, ast.Name)
            and node.value.id == "session"
            and isinstance(node.slice, ast.Constant)
            and isinstance(node.slice.value, str)
        ):
            out.add(node.slice.value)
        elif (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr == "get"
            and isinstance(node.func.value, ast.Name)
            and node.func.value.id == "session"
            and node.args
            and isinstance(node.args[0], ast.Constant)
            and isinstance(node.args[0].value, str)
        ):
            out.add(node.args[0].value)
    return out


def _reads_of(spec: Any, state_fields: set[str]) -> set[str]:
    """State fields a tool depends on: AST-scanned reads plus fields its id parameters point into."""
    reads = session_reads(spec.fn) & state_fields
    for p in spec.params:
        kind = id_kind(p.name)
        if kind:
            reads.update(f for f in state_fields if kind_matches(kind, f))
    return reads


def build_tool_graph(package: Any) -> ToolGraph:
    """The tool graph of an environment package (an :class:`EnvPackage` or ``Environment`` class):
    data-flow edges from returned entities → id parameters, write → read edges over state fields,
    and gold edges from every scenario's reference solution."""
    env_cls = getattr(package, "env_cls", package)
    g = nx.DiGraph()
    specs = list(env_cls.tools)
    state_fields = set(env_cls.DEFAULT_STATE)
    for s in specs:
        g.add_node(
            s.name,
            layer="tool",
            role=s.side_effect,
            description=s.description,
            params=[p.name for p in s.params],
            required_args=[p.name for p in s.params if p.required],
            returns=list(s.success_keys),
            fields=list(s.state_fields_affected),
        )
    reads = {s.name: _reads_of(s, state_fields) for s in specs}
    for a in specs:
        nouns = {singular(k) for k in a.success_keys}
        for b in specs:
            if a.name == b.name:
                continue
            for p in b.params:
                kind = id_kind(p.name)
                if kind and any(kind_matches(kind, n) for n in nouns):
                    add_edge(g, a.name, b.name, "dataflow", f"produces_{kind}_id_for")
            if a.side_effect == "write":
                shared = sorted(set(a.state_fields_affected) & reads[b.name])
                if shared:
                    add_edge(g, a.name, b.name, "bridge", f"writes_{shared[0]}_read_by")
    for sid, sc in sorted(env_cls.scenarios().items()):
        steps = [st["tool"] for st in sc.reference_solution if st["tool"] in g]
        for x, y in pairwise(steps):
            if x != y:
                add_edge(g, x, y, "gold", f"gold_next::{sid}")
    return ToolGraph(env_cls.name, g, source="runtime")


def load_tool_graph(path: str | Path, env: str | None = None) -> ToolGraph:
    """Read a node-link JSON tool graph (ours or ClawForge's ``*_tool_graph.json``)."""
    path = Path(path)
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise ConfigError(f"tool graph {path}: cannot read node-link JSON ({exc})") from None
    if not isinstance(data, dict) or "nodes" not in data or not ({"links", "edges"} & set(data)):
        raise ConfigError(f"tool graph {path}: expected node-link JSON with 'nodes' and 'links'")
    key = "links" if "links" in data else "edges"
    for i, e in enumerate(data[key]):
        if "weight" not in e or not isinstance(e["weight"], int | float) or e["weight"] <= 0:
            raise ConfigError(f"tool graph {path}: edge {i} has no positive 'weight'")
    g = nx.node_link_graph(data, directed=True, multigraph=False, edges=key)
    meta = dict(data.get("graph") or {})
    stored = meta.pop("env", None)
    name = env or stored or path.name.removesuffix(".json").removesuffix("_tool_graph")
    return ToolGraph(str(name), nx.DiGraph(g), source="file", meta=meta)
