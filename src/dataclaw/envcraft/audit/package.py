"""Read an environment package from disk without importing it: parsed modules, resolved imports, roles.

The static audit never runs package code. Roles (EnvCraft C.2 ``files[].role``) are inferred from what a
module *contains*, not from its file name, so a generated package that calls its repository ``world.py``
is audited like one that calls it ``state.py``.

An archetype folder's compiler files (``archetype.yaml`` and the ``mechanic.py`` beside it, see
:func:`dataclaw.envcraft.archetypes.compiler_file`) are not part of the package read: synthesis imports the
mechanic, the environment never does, and it is compiler code the environment rules (Table 15) do not
apply to. The dynamic audit does not copy them either, so an environment that imported one fails there.
"""

from __future__ import annotations

import ast
import functools
from dataclasses import dataclass, field
from enum import StrEnum
from pathlib import Path
from typing import Any

from dataclaw.core import pyast
from dataclaw.core.errors import ConfigError
from dataclaw.envcraft.archetypes import compiler_file

RUNTIME = "dataclaw.envcraft.runtime"
SKIP_DIRS = {"__pycache__", ".pytest_cache", ".git"}


class Role(StrEnum):
    """What a file is for in the package (paper C.2 output schema, adapted to the shared runtime)."""

    PACKAGE_INIT = "package_init"  # __init__.py exporting ENVIRONMENT
    CLI = "cli"  # __main__.py: runs the runtime CLI
    ENVIRONMENT_CLASS = "environment_class"  # defines the Environment subclass
    DOMAIN_MODULE = "domain_module"  # defines @tool functions
    EVALUATOR = "evaluator"  # builds EVALUATOR = Evaluator() / registers dimensions
    REPOSITORY = "repository"  # builds DEFAULT_STATE (the only module that may read data/)
    HELPER = "helper"  # any other package module (pure domain logic)
    TEST = "test"  # under tests/
    DOC = "doc"  # README.md, SKILL.md
    DATA_SCENARIO = "data_scenario"  # data/scenarios/*.json


@dataclass
class Module:
    """One parsed ``.py`` file of the package."""

    rel: str  # path relative to the package folder, posix
    path: Path
    source: str
    tree: ast.Module | None  # None when it does not parse
    syntax_error: SyntaxError | None = None
    imports: dict[str, str] = field(default_factory=dict)  # local name -> fully qualified dotted name
    roles: set[Role] = field(default_factory=set)
    cache: dict[str, Any] = field(default_factory=dict, repr=False, compare=False)  # per-audit analyses

    @functools.cached_property
    def nodes(self) -> list[ast.AST]:
        """Every node of the module (parsed once, walked once)."""
        return list(ast.walk(self.tree)) if self.tree is not None else []

    @property
    def is_test(self) -> bool:
        return Role.TEST in self.roles

    @property
    def local_name(self) -> str:
        """The file's dotted path inside the package (``sub/x.py`` → ``sub.x``)."""
        return self.rel[: -len(".py")].replace("/", ".")

    def qualname(self, node: ast.expr) -> str | None:
        """The fully qualified dotted name an expression refers to (``_time.time`` → ``time.time``)."""
        parts: list[str] = []
        while isinstance(node, ast.Attribute):
            parts.append(node.attr)
            node = node.value
        if not isinstance(node, ast.Name):
            return None
        head = self.imports.get(node.id, node.id)
        return ".".join([head, *reversed(parts)])


@dataclass
class PackageSource:
    """Every file of an environment package folder, parsed."""

    root: Path
    modules: list[Module]
    import_name: str  # the dotted name the package imports itself by (folder name when it never does)

    def with_role(self, role: Role) -> list[Module]:
        return [m for m in self.modules if role in m.roles]

    def module(self, rel: str) -> Module | None:
        return next((m for m in self.modules if m.rel == rel), None)

    def qualified(self, mod: Module) -> str:
        """The fully qualified dotted name of ``mod`` (``<import_name>.sub.x``)."""
        return f"{self.import_name}.{mod.local_name}"

    def code_modules(self) -> list[Module]:
        """Parsed package modules that are not tests."""
        return [m for m in self.modules if m.tree is not None and not m.is_test]

    def local_module(self, dotted: str) -> Module | None:
        """The package module a fully qualified name points into (``pkg.tickets.close`` → tickets.py)."""
        prefix = self.import_name + "."
        if not dotted.startswith(prefix):
            return None
        parts = dotted[len(prefix) :].split(".")
        for n in range(len(parts), 0, -1):
            rel = "/".join(parts[:n])
            found = self.module(rel + ".py") or self.module(rel + "/__init__.py")
            if found is not None:
                return found
        return None


def _resolve_imports(tree: ast.Module, module_name: str, is_package: bool) -> dict[str, str]:
    out: dict[str, str] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.asname:
                    out[alias.asname] = alias.name
                else:
                    head = alias.name.split(".")[0]
                    out[head] = head
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = module_name.split(".")
                keep = len(parts) - node.level + (1 if is_package else 0)
                base = ".".join([*parts[: max(keep, 0)], *([base] if base else [])])
            for alias in node.names:
                out[alias.asname or alias.name] = f"{base}.{alias.name}" if base else alias.name
    return out


def _guess_import_name(folder: str, modules: list[Module]) -> str:
    """The package's own dotted name: what its top-level files import themselves as (``a.b.<folder>``)."""
    for mod in modules:
        if "/" in mod.rel:
            continue
        for node in mod.nodes:
            if isinstance(node, ast.ImportFrom) and not node.level and node.module:
                parts = node.module.split(".")
                if folder in parts:
                    return ".".join(parts[: parts.index(folder) + 1])
    return folder


def is_tool_def(node: ast.AST, mod: Module) -> ast.Call | None:
    """The ``@tool(...)`` decorator call of a function (resolved to the runtime's ``tool``), if any."""
    if not isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
        return None
    for dec in node.decorator_list:
        target = dec.func if isinstance(dec, ast.Call) else dec
        name = mod.qualname(target) or ""
        if name in (f"{RUNTIME}.tool", f"{RUNTIME}.tools.tool"):
            return dec if isinstance(dec, ast.Call) else ast.Call(func=dec, args=[], keywords=[])
    return None


def is_dimension_def(node: ast.AST) -> bool:
    """A function decorated with ``@<evaluator>.dimension(...)``."""
    if not isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
        return False
    return any(
        isinstance(d, ast.Call) and isinstance(d.func, ast.Attribute) and d.func.attr == "dimension"
        for d in node.decorator_list
    )


def env_classes(mod: Module) -> list[ast.ClassDef]:
    """Classes of ``mod`` deriving from the runtime ``Environment``."""
    if mod.tree is None:
        return []
    names = (f"{RUNTIME}.Environment", f"{RUNTIME}.environment.Environment")
    return [
        n
        for n in mod.tree.body
        if isinstance(n, ast.ClassDef) and any(mod.qualname(b) in names for b in n.bases)
    ]


def class_attrs(cls: ast.ClassDef) -> dict[str, ast.expr]:
    """Names a class body binds by (annotated) assignment → the assigned value."""
    out: dict[str, ast.expr] = {}
    for node in cls.body:
        if isinstance(node, ast.Assign):
            for t in node.targets:
                if isinstance(t, ast.Name):
                    out[t.id] = node.value
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name) and node.value:
            out[node.target.id] = node.value
    return out


def module_assigns(tree: ast.Module) -> dict[str, ast.stmt]:
    """Top-level names bound by (annotated) assignment → the statement."""
    out: dict[str, ast.stmt] = {}
    for node in tree.body:
        targets = (
            node.targets
            if isinstance(node, ast.Assign)
            else [node.target]
            if isinstance(node, ast.AnnAssign) and node.value is not None
            else []
        )
        for t in targets:
            for name in ast.walk(t):
                if isinstance(name, ast.Name):
                    out[name.id] = node
    return out


def _roles(mod: Module) -> set[Role]:
    parts = mod.rel.split("/")
    if parts[0] in ("tests", "test") or parts[-1].startswith("test_") or parts[-1].endswith("_test.py"):
        return {Role.TEST}
    roles: set[Role] = set()
    if mod.rel == "__init__.py":
        roles.add(Role.PACKAGE_INIT)
    if mod.rel == "__main__.py":
        roles.add(Role.CLI)
    tree = mod.tree
    if tree is None:
        return roles or {Role.HELPER}
    if env_classes(mod):
        roles.add(Role.ENVIRONMENT_CLASS)
    if any(is_tool_def(n, mod) for n in tree.body):
        roles.add(Role.DOMAIN_MODULE)
    assigns = module_assigns(tree)
    evaluator_names = (f"{RUNTIME}.Evaluator", f"{RUNTIME}.evaluation.Evaluator")
    if any(
        isinstance(v := getattr(s, "value", None), ast.Call) and mod.qualname(v.func) in evaluator_names
        for s in assigns.values()
    ) or any(is_dimension_def(n) for n in tree.body):
        roles.add(Role.EVALUATOR)
    if "DEFAULT_STATE" in assigns or any(
        isinstance(n, ast.FunctionDef) and n.name == "initial_session" for n in tree.body
    ):
        roles.add(Role.REPOSITORY)
    return roles or {Role.HELPER}


def read_package(path: str | Path) -> PackageSource:
    """Parse every Python file of the package folder ``path`` (nothing is imported or executed)."""
    root = Path(path).resolve()
    if not root.is_dir():
        raise ConfigError(f"environment package {str(path)!r} is not a directory")
    if not (root / "__init__.py").is_file():
        raise ConfigError(f"{str(path)!r} is not an environment package (no __init__.py)")
    modules = []
    for file in sorted(root.rglob("*.py")):
        rel_parts = file.relative_to(root).parts
        if any(p in SKIP_DIRS or p.startswith(".") for p in rel_parts):
            continue
        if file.parent == root and compiler_file(file):
            continue  # an archetype's mechanic.py: the compiler's code, not the environment's
        rel = "/".join(rel_parts)
        source = file.read_text(encoding="utf-8", errors="replace")
        mod = Module(rel, file, source, None)
        try:
            mod.tree = pyast.parse(source, filename=rel)
        except SyntaxError as exc:
            mod.syntax_error = exc
        modules.append(mod)
    import_name = _guess_import_name(root.name, modules)  # from the parsed files: each is parsed once
    for mod in modules:
        dotted = f"{import_name}.{mod.local_name}"
        is_pkg = mod.rel.endswith("__init__.py")
        if is_pkg:
            dotted = dotted.rsplit(".", 1)[0]
        if mod.tree is not None:
            mod.imports = _resolve_imports(mod.tree, dotted, is_pkg)
        mod.roles = _roles(mod)
    return PackageSource(root, modules, import_name)
