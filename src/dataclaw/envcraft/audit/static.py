"""Static audit: AST rules over an environment package (EnvCraft §3.3 (1), C.1, C.3, Table 15).

Nothing of the package is imported or run. Each rule has a stable id and checks the parsed package; the
full table, with the Table 15 constraint each one enforces, is in ``README.md`` beside this file:

=====  ======================  ===========================================================================
S001   missing-artifact        required files and roles: README.md, SKILL.md, __main__.py, data/,
                               data/scenarios/*.json, an Environment class, a domain module (@tool), an
                               evaluator, a repository (DEFAULT_STATE)
S002   missing-interface       ENVIRONMENT export, Environment class attributes, every domain module in
                               ``ToolSet.from_modules``, __main__ runs the runtime CLI, evaluator
                               dimensions, readable scenarios (Table 15 #12)
S003   skill-too-long          SKILL.md has fewer than 50 lines (C.1 item 4)
S004   syntax-error            every module parses
S010   tool-schema             @tool functions: side effect + fields, ``session`` first, typed parameters,
                               ``-> dict``, documented parameters, every return gives a dict (C.3, #1)
S011   undecorated-tool        a public ``(session, …) -> dict`` function with Args docs that nothing calls
                               and that lacks @tool: the agent never sees it
S012   agent-unsafe-error      tools raise builtin exceptions or assert (generic infrastructure errors
                               instead of Table 16 domain errors); ``traceback``; ``__file__`` in tools
S020   wall-clock              no clock reads (Table 15 #6): use ``runtime.now(session)``
S021   randomness              no randomness or per-process ``hash()``: tools are replayed (#11 for tools)
S030   mutable-global          no module-level mutable value under a non-constant name (#2)
S031   global-mutation         no module-level name mutated or rebound by code that runs after import (#2)
S040   domain-file-io          file access only in the repository module, never in tools/dimensions (#3, #10)
S041   data-write              nothing writes files: data/ is immutable, storage is the runtime's (#3, #4)
S042   cli-parsing             no argument parsing in package code: the runtime owns the CLI (#7, #8, #10)
S043   locking                 no locks: the runtime's store serialises sessions (#5, #10)
S044   environment-read        no environment variables: bindings come from the runtime (#8)
S045   host-path               files opened only under the package: no absolute, ``~``, ``..``, cwd or
                               environment-derived paths (``hostpaths.py``)
S050   network-subprocess      no network or subprocess modules/calls
S051   dynamic-code            no eval/exec/compile/__import__/importlib
S060   evaluator-impure        evaluator: no randomness, clock, file or console I/O, no mutation of its
                               inputs (#11)
S061   evaluator-no-goal       a generated package's evaluator marks the dimensions that measure the goal
                               (``goal=True``), so doing nothing and destructive moves score 0
=====  ======================  ===========================================================================

Rules are registered with :func:`~dataclaw.envcraft.audit.rules.rule` in the rule registry
(:data:`~dataclaw.envcraft.audit.rules.RULES`: ids and names unique, more through the ``dataclaw.audit_rules``
entry points); :func:`static_audit` runs them all.
"""

from __future__ import annotations

import ast
import json
from collections.abc import Iterator
from pathlib import Path

from dataclaw.core import pyast
from dataclaw.core.moved import keep_old_names
from dataclaw.envcraft.audit.model import Finding
from dataclaw.envcraft.audit.package import (
    RUNTIME,
    Module,
    PackageSource,
    Role,
    class_attrs,
    env_classes,
    is_dimension_def,
    is_tool_def,
    module_assigns,
    read_package,
)
from dataclaw.envcraft.audit.rules import RULES, finding, rule
from dataclaw.envcraft.runtime.environment import REQUIRED_SCENARIO_KEYS
from dataclaw.envcraft.runtime.loader import SKILL_MAX_LINES
from dataclaw.envcraft.runtime.tools import parse_docstring


def static_audit(package: str | Path | PackageSource, *, only: list[str] | None = None) -> list[Finding]:
    """Run every registered rule (or ``only`` those ids) over a package folder; findings sorted by place."""
    pkg = package if isinstance(package, PackageSource) else read_package(package)
    out: list[Finding] = []
    for rule_id, registered in RULES.items():
        if only is None or rule_id in only:
            out.extend(registered.check(pkg))
    return sorted(out, key=lambda f: (f.file, f.line, f.rule))


# ---- structure -----------------------------------------------------------------------------------------

_REQUIRED_FILES = ("README.md", "SKILL.md", "__main__.py")
_REQUIRED_ROLES = {
    Role.ENVIRONMENT_CLASS: "an Environment subclass",
    Role.DOMAIN_MODULE: "a domain module with @tool functions",
    Role.EVALUATOR: "an evaluator (EVALUATOR = Evaluator() with dimensions)",
    Role.REPOSITORY: "a repository module building DEFAULT_STATE",
}


@rule("S001", "missing-artifact", "required artifacts and roles are present (C.1)")
def _missing_artifact(pkg: PackageSource) -> Iterator[Finding]:
    for name in _REQUIRED_FILES:
        if not (pkg.root / name).is_file():
            yield finding("S001", name, 0, f"missing {name}")
    if not (pkg.root / "data").is_dir():
        yield finding("S001", "data", 0, "missing data/ (immutable world data)")
    elif not any((pkg.root / "data" / "scenarios").glob("*.json")):
        yield finding("S001", "data/scenarios", 0, "no scenario files data/scenarios/*.json")
    for role, what in _REQUIRED_ROLES.items():
        if not pkg.with_role(role):
            yield finding("S001", ".", 0, f"no module is {what}")


def _interface_env(pkg: PackageSource) -> Iterator[Finding]:
    init = pkg.module("__init__.py")
    if init is not None and init.tree is not None:
        if "ENVIRONMENT" not in set(module_assigns(init.tree)) | set(init.imports):
            yield finding("S002", "__init__.py", 1, "does not define ENVIRONMENT = <Environment subclass>")
    domain = {m.rel for m in pkg.with_role(Role.DOMAIN_MODULE)}
    added = _tools_added_in(init, pkg) if init is not None and init.tree is not None else set()
    for mod in pkg.with_role(Role.ENVIRONMENT_CLASS):
        for cls in env_classes(mod):
            attrs = class_attrs(cls)
            for attr in ("name", "DEFAULT_STATE", "tools", "evaluator"):
                if attr not in attrs:
                    yield finding("S002", mod.rel, cls.lineno, f"{cls.name} does not set `{attr}`")
            name = attrs.get("name")
            if name is not None and not (isinstance(name, ast.Constant) and isinstance(name.value, str)):
                yield finding("S002", mod.rel, cls.lineno, f"{cls.name}.name must be a string literal")
            tools = attrs.get("tools")
            if tools is None:
                continue
            registered = set(added)
            for node in ast.walk(tools):
                if isinstance(node, ast.Name) and node.id == "__name__":  # sys.modules[__name__]
                    registered.add(mod.rel)
                elif isinstance(node, ast.Name | ast.Attribute):
                    target = pkg.local_module(mod.qualname(node) or "")
                    if target is not None:
                        registered.add(target.rel)
            for rel in sorted(domain - registered):
                yield finding(
                    "S002",
                    mod.rel,
                    cls.lineno,
                    f"domain module {rel} defines tools but is not in {cls.name}.tools",
                )


def _tools_added_in(init: Module, pkg: PackageSource) -> set[str]:
    """Modules whose tools ``__init__.py`` adds with ``<Environment>.tools.add(...)`` (how a generated
    claw package gets the built-in bash tool): registered like those named in ``tools``."""
    out: set[str] = set()
    for call in ast.walk(init.tree):
        func = call.func if isinstance(call, ast.Call) else None
        if not (isinstance(func, ast.Attribute) and func.attr == "add"):
            continue
        if not (isinstance(func.value, ast.Attribute) and func.value.attr == "tools"):
            continue
        for node in (n for arg in call.args for n in ast.walk(arg)):
            if isinstance(node, ast.Name | ast.Attribute):
                target = pkg.local_module(init.qualname(node) or "")
                if target is not None:
                    out.add(target.rel)
    return out


def _interface_main(pkg: PackageSource) -> Iterator[Finding]:
    main = pkg.module("__main__.py")
    if main is None or main.tree is None:
        return
    calls = {main.qualname(n.func) for n in ast.walk(main.tree) if isinstance(n, ast.Call)}
    if not calls & {f"{RUNTIME}.cli.main", f"{RUNTIME}.main"}:
        yield finding("S002", "__main__.py", 1, f"does not run the runtime CLI ({RUNTIME}.cli.main)")


def _interface_evaluator(pkg: PackageSource) -> Iterator[Finding]:
    for mod in pkg.with_role(Role.EVALUATOR):
        assert mod.tree is not None
        if not any(is_dimension_def(n) for n in mod.tree.body):
            yield finding("S002", mod.rel, 1, "the evaluator registers no @EVALUATOR.dimension")


def _interface_scenarios(pkg: PackageSource) -> Iterator[Finding]:
    for path in sorted((pkg.root / "data" / "scenarios").glob("*.json")):
        rel = path.relative_to(pkg.root).as_posix()
        try:
            raw = json.loads(path.read_text(encoding="utf-8"))
        except (ValueError, UnicodeDecodeError) as exc:
            yield finding("S002", rel, 0, f"scenario is not valid JSON: {exc}")
            continue
        if not isinstance(raw, dict):
            yield finding("S002", rel, 0, "a scenario must be a JSON object")
            continue
        missing = [k for k in REQUIRED_SCENARIO_KEYS if k not in raw]
        if missing:
            yield finding("S002", rel, 0, f"scenario lacks {', '.join(missing)}")


@rule("S002", "missing-interface", "environment interfaces are declared (C.1 items 1, 8; Table 15 #12)")
def _missing_interface(pkg: PackageSource) -> Iterator[Finding]:
    yield from _interface_env(pkg)
    yield from _interface_main(pkg)
    yield from _interface_evaluator(pkg)
    yield from _interface_scenarios(pkg)


GENERATED_MARKERS = ("data/compile.json", "data/codegen.json")
"""Files synthesis writes into the packages it generates (spec compilation, code generation)."""


def _goal_marked(node: ast.AST) -> bool:
    """A dimension definition whose ``.dimension(...)`` decorator says ``goal=True``."""
    return any(
        isinstance(d, ast.Call)
        and isinstance(d.func, ast.Attribute)
        and d.func.attr == "dimension"
        and any(k.arg == "goal" and isinstance(k.value, ast.Constant) and k.value.value is True
                for k in d.keywords)
        for d in getattr(node, "decorator_list", [])
    )  # fmt: skip


@rule(
    "S061",
    "evaluator-no-goal",
    "a generated package's evaluator marks its goal dimensions (goal=True): the Evaluator guarantee",
)
def _evaluator_goal(pkg: PackageSource) -> Iterator[Finding]:
    """Without a goal dimension the evaluator is a plain weighted mean, which pays an idle agent every
    "nothing broken" dimension: a package synthesis generates must mark what measures the goal (an
    out-of-tree package may keep the plain mean; the guarantee is documented for ours)."""
    if not any((pkg.root / m).is_file() for m in GENERATED_MARKERS):
        return
    evaluators = [m for m in pkg.with_role(Role.EVALUATOR) if m.tree is not None]
    if not evaluators or any(_goal_marked(n) for m in evaluators for n in m.tree.body):
        return
    yield finding(
        "S061",
        evaluators[0].rel,
        1,
        "no dimension is marked goal=True: the untouched state and destructive moves score above 0; mark "
        'the dimensions that measure the scenario\'s goal, e.g. @EVALUATOR.dimension("goal_state", 0.5, '
        '"...", goal=True)',
    )


@rule("S003", "skill-too-long", f"SKILL.md has fewer than {SKILL_MAX_LINES} lines (C.1 item 4)")
def _skill_length(pkg: PackageSource) -> Iterator[Finding]:
    skill = pkg.root / "SKILL.md"
    if skill.is_file():
        n = len(skill.read_text(encoding="utf-8", errors="replace").splitlines())
        if n >= SKILL_MAX_LINES:
            yield finding(
                "S003", "SKILL.md", n, f"{n} lines; SKILL.md must have fewer than {SKILL_MAX_LINES}"
            )


@rule("S004", "syntax-error", "every module parses")
def _syntax(pkg: PackageSource) -> Iterator[Finding]:
    for mod in pkg.modules:
        if mod.syntax_error is not None:
            err = mod.syntax_error
            yield finding("S004", mod.rel, err.lineno or 0, f"does not parse: {err.msg}")


# ---- tools ---------------------------------------------------------------------------------------------

_SCALAR_HINTS = {"str", "int", "float", "bool", "dict", "list"}
_BUILTIN_EXCEPTIONS = {
    "Exception",
    "BaseException",
    "ValueError",
    "KeyError",
    "TypeError",
    "RuntimeError",
    "AssertionError",
    "LookupError",
    "IndexError",
    "NotImplementedError",
    "OSError",
    "AttributeError",
    "ZeroDivisionError",
}


def _aliases(pkg: PackageSource) -> set[str]:
    """Names of package-level type aliases (``Status = Literal[...]``), by qualified name."""
    out = set()
    for mod in pkg.code_modules():
        assert mod.tree is not None
        module_name = mod.local_name
        for name, stmt in module_assigns(mod.tree).items():
            value = getattr(stmt, "value", None)
            if isinstance(value, ast.Subscript | ast.BinOp) or (
                isinstance(value, ast.Name) and value.id in _SCALAR_HINTS
            ):
                out |= {f"{pkg.import_name}.{module_name}.{name}", f"{module_name}.{name}"}
    return out


def _hint_ok(node: ast.expr, mod: Module, aliases: set[str], here: str) -> bool:
    """Whether a parameter annotation is a type the runtime turns into a JSON schema."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        try:
            node = pyast.parse(node.value, mode="eval").body
        except SyntaxError:
            return False
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.BitOr):
        parts = [node.left, node.right]
        none = [p for p in parts if isinstance(p, ast.Constant) and p.value is None]
        return len(none) == 1 and all(_hint_ok(p, mod, aliases, here) for p in parts if p not in none)
    if isinstance(node, ast.Subscript):
        base = mod.qualname(node.value) or ""
        if base in ("typing.Literal", "Literal", "typing.Optional"):
            return True
        if base in ("list", "dict", "typing.List", "typing.Dict"):
            args = node.slice.elts if isinstance(node.slice, ast.Tuple) else [node.slice]
            return base.endswith(("dict", "Dict")) or all(_hint_ok(a, mod, aliases, here) for a in args)
        return False
    name = mod.qualname(node) or ""
    return name in _SCALAR_HINTS or name in aliases or f"{here}.{name}" in aliases


def _returns(fn: ast.FunctionDef | ast.AsyncFunctionDef) -> Iterator[ast.Return]:
    stack: list[ast.AST] = list(fn.body)
    while stack:
        node = stack.pop()
        if isinstance(node, ast.Return):
            yield node
        if not isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda | ast.ClassDef):
            stack.extend(ast.iter_child_nodes(node))


def _resolve_constant(node: ast.expr | None, mod: Module, pkg: PackageSource) -> ast.expr | None:
    """A name bound to a module-level value (here or in another package module) → that value."""
    if not isinstance(node, ast.Name):
        return node
    qual = mod.qualname(node) or node.id
    target = pkg.local_module(qual) if "." in qual else mod
    if target is None or target.tree is None:
        return node
    stmt = module_assigns(target.tree).get(qual.rsplit(".", 1)[-1])
    return getattr(stmt, "value", None) or node


def _decorator_problems(dec: ast.Call, mod: Module, pkg: PackageSource) -> list[str]:
    side = dec.args[0] if dec.args else next((k.value for k in dec.keywords if k.arg == "side_effect"), None)
    fields = (
        dec.args[1] if len(dec.args) > 1 else next((k.value for k in dec.keywords if k.arg == "fields"), None)
    )
    side, fields = _resolve_constant(side, mod, pkg), _resolve_constant(fields, mod, pkg)
    if not (isinstance(side, ast.Constant) and side.value in ("read", "write")):
        return ['side_effect must be the literal "read" or "write"']
    declared = isinstance(fields, ast.List | ast.Tuple) and bool(fields.elts)
    if side.value == "write" and not declared:
        return ["a write tool must list the state fields it affects (fields=[...])"]
    if side.value == "read" and fields is not None and declared:
        return ["a read tool cannot declare affected state fields"]
    return []


def _tool_problems(
    fn: ast.FunctionDef | ast.AsyncFunctionDef, mod: Module, aliases: set[str]
) -> Iterator[str]:
    args = fn.args
    if args.vararg or args.kwarg or args.posonlyargs:
        yield "parameters must be plain named parameters (no *args, **kwargs or positional-only)"
    params = [*args.args, *args.kwonlyargs]
    if not params or params[0].arg != "session":
        yield "the first parameter must be `session: dict`"
    here = mod.local_name
    doc = ast.get_docstring(fn)
    _, documented, _ = parse_docstring(doc)
    if not doc:
        yield "no docstring: its first paragraph is the tool description the agent sees"
    for p in params[1:]:
        if p.annotation is None:
            yield f"parameter `{p.arg}` has no type hint"
        elif not _hint_ok(p.annotation, mod, aliases, here):
            yield f"parameter `{p.arg}` has an unsupported type {ast.unparse(p.annotation)}"
        if p.arg not in documented:
            yield f"parameter `{p.arg}` is not described under Args:"
    ret = fn.returns
    if ret is None or (mod.qualname(ret.value if isinstance(ret, ast.Subscript) else ret) or "") not in (
        "dict",
        "typing.Dict",
    ):
        yield "the return type must be `dict`"
    for r in _returns(fn):
        if r.value is None or isinstance(
            r.value, ast.Constant | ast.List | ast.Tuple | ast.Set | ast.JoinedStr | ast.ListComp
        ):
            yield f"line {r.lineno}: every return must give a dict"


@rule("S010", "tool-schema", "tools are declared with @tool, typed and documented (C.3; Table 15 #1)")
def _tool_schema(pkg: PackageSource) -> Iterator[Finding]:
    aliases = _aliases(pkg)
    for mod in pkg.with_role(Role.DOMAIN_MODULE):
        assert mod.tree is not None
        for fn in mod.tree.body:
            dec = is_tool_def(fn, mod)
            if dec is None:
                continue
            assert isinstance(fn, ast.FunctionDef | ast.AsyncFunctionDef)
            for problem in [*_decorator_problems(dec, mod, pkg), *_tool_problems(fn, mod, aliases)]:
                yield finding("S010", mod.rel, fn.lineno, f"tool {fn.name}: {problem}")


def _referenced_names(pkg: PackageSource) -> set[str]:
    """Qualified names referenced anywhere in package code (calls, imports, decorators, values)."""
    out = set()
    for mod in pkg.code_modules():
        assert mod.tree is not None
        here = pkg.qualified(mod)
        for node in mod.nodes:
            if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load):
                q = mod.qualname(node) or node.id
                out.add(q if q in mod.imports.values() else f"{here}.{node.id}")
            elif isinstance(node, ast.Attribute):
                out.add(mod.qualname(node) or "")
        out.update(mod.imports.values())
    return out


@rule("S011", "undecorated-tool", "functions shaped like tools carry @tool")
def _undecorated(pkg: PackageSource) -> Iterator[Finding]:
    used = _referenced_names(pkg)
    for mod in pkg.with_role(Role.DOMAIN_MODULE):
        assert mod.tree is not None
        here = pkg.qualified(mod)
        for fn in mod.tree.body:
            if not isinstance(fn, ast.FunctionDef) or fn.name.startswith("_") or is_tool_def(fn, mod):
                continue
            first = fn.args.args[0].arg if fn.args.args else ""
            returns_dict = fn.returns is not None and ast.unparse(fn.returns).startswith("dict")
            has_args_doc = "Args:" in (ast.get_docstring(fn) or "")
            if first == "session" and returns_dict and has_args_doc and f"{here}.{fn.name}" not in used:
                yield finding(
                    "S011",
                    mod.rel,
                    fn.lineno,
                    f"{fn.name} looks like a tool but has no @tool decorator, so no agent can call it",
                )


@rule("S012", "agent-unsafe-error", "tools fail with Table 16 domain errors, never internals")
def _unsafe_errors(pkg: PackageSource) -> Iterator[Finding]:
    for mod in pkg.code_modules():
        assert mod.tree is not None
        for node in mod.nodes:
            if isinstance(node, ast.Import | ast.ImportFrom):
                names = [a.name for a in node.names] if isinstance(node, ast.Import) else [node.module or ""]
                if any(n.split(".")[0] == "traceback" for n in names):
                    yield finding("S012", mod.rel, node.lineno, "imports traceback: errors must not show one")
        if Role.DOMAIN_MODULE not in mod.roles:
            continue
        for fn in mod.tree.body:
            if is_tool_def(fn, mod) is None:
                continue
            for node in ast.walk(fn):
                if isinstance(node, ast.Raise) and node.exc is not None:
                    exc = node.exc.func if isinstance(node.exc, ast.Call) else node.exc
                    name = mod.qualname(exc) or ""
                    if name in _BUILTIN_EXCEPTIONS:
                        yield finding(
                            "S012",
                            mod.rel,
                            node.lineno,
                            f"tool {fn.name} raises {name}: the agent gets a generic infrastructure error; "
                            "raise EnvError or a helper (invalid_reference, missing_field, …)",
                        )
                elif isinstance(node, ast.Assert):
                    yield finding(
                        "S012", mod.rel, node.lineno, f"tool {fn.name} uses assert: check and raise EnvError"
                    )
                elif isinstance(node, ast.Name) and node.id == "__file__":
                    yield finding("S012", mod.rel, node.lineno, f"tool {fn.name} uses __file__ (a host path)")


# names that moved out of this module in 0.x, readable here for one release
keep_old_names(
    __name__,
    {
        "Checker": "dataclaw.envcraft.audit.rules",
        "Rule": "dataclaw.envcraft.audit.rules",
    },
)
