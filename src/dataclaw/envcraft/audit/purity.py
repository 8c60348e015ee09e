"""Code-level static rules (Table 15 #2, #3, #5, #6, #8, #10, #11): what package code may call and mutate.

Names are resolved through the module's imports (``import time as _t; _t.time()`` is ``time.time``), so
``from datetime import time`` (a class) is not a clock read and ``str.replace`` is not file I/O: path
methods count only on expressions built from ``pathlib.Path`` (directly or via a name bound to one).
"""

from __future__ import annotations

import ast
import builtins
import functools
from collections.abc import Iterator

from dataclaw.envcraft.audit.model import Finding
from dataclaw.envcraft.audit.package import Module, PackageSource, Role, is_dimension_def, is_tool_def
from dataclaw.envcraft.audit.rules import finding, rule

FuncNode = ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda

_CLOCK_ALWAYS = {
    "time.time",
    "time.time_ns",
    "time.monotonic",
    "time.monotonic_ns",
    "time.perf_counter",
    "time.perf_counter_ns",
    "time.process_time",
    "datetime.datetime.now",
    "datetime.datetime.utcnow",
    "datetime.datetime.today",
    "datetime.date.today",
}
# these read the clock only when no time is passed: max positional args that still means "now"
_CLOCK_DEFAULT_NOW = {
    "time.localtime": 0,
    "time.gmtime": 0,
    "time.ctime": 0,
    "time.asctime": 0,
    "time.strftime": 1,
}
_RANDOM_PREFIXES = ("random.", "secrets.", "numpy.random.")
_RANDOM_CALLS = {"uuid.uuid1", "uuid.uuid4", "os.urandom", "os.getrandom"}
_READ_CALLS = {
    "io.open",
    "os.open",
    "os.listdir",
    "os.scandir",
    "os.walk",
    "os.stat",
    "os.path.exists",
    "os.path.isfile",
    "os.path.isdir",
    "os.path.getsize",
    "json.load",
    "pickle.load",
    "glob.glob",
    "glob.iglob",
    "shelve.open",
    "sqlite3.connect",
}
_WRITE_CALLS = {
    "os.remove",
    "os.unlink",
    "os.rename",
    "os.replace",
    "os.makedirs",
    "os.mkdir",
    "os.rmdir",
    "os.write",
    "os.truncate",
    "os.chmod",
    "json.dump",
    "pickle.dump",
}
_WRITE_PREFIXES = ("shutil.", "tempfile.")
_PATH_READ = {"read_text", "read_bytes", "iterdir", "glob", "rglob", "exists", "is_file", "is_dir", "stat"}
_PATH_WRITE = {"write_text", "write_bytes", "unlink", "mkdir", "rmdir", "touch", "rename", "replace", "chmod"}
_PATH_TYPES = {"pathlib.Path", "pathlib.PosixPath", "pathlib.WindowsPath"}
_CLI_MODULES = {"argparse", "optparse", "getopt", "click", "typer", "fire", "docopt"}
_LOCK_MODULES = {"fcntl", "msvcrt", "filelock", "portalocker", "lockfile"}
_LOCK_CALLS = {
    "threading.Lock",
    "threading.RLock",
    "threading.Semaphore",
    "threading.BoundedSemaphore",
    "threading.Condition",
    "multiprocessing.Lock",
    "multiprocessing.RLock",
    "asyncio.Lock",
}
_ENV_NAMES = {"os.environ", "os.environb", "os.getenv", "os.putenv", "os.unsetenv"}
_NET_MODULES = {
    "socket",
    "ssl",
    "http",
    "urllib",
    "urllib3",
    "requests",
    "httpx",
    "aiohttp",
    "ftplib",
    "smtplib",
    "poplib",
    "imaplib",
    "telnetlib",
    "xmlrpc",
    "websocket",
    "websockets",
    "grpc",
    "paramiko",
    "subprocess",
    "multiprocessing",
    "pty",
}
_NET_CALLS = {"os.system", "os.popen", "os.fork", "os.kill", "asyncio.create_subprocess_exec"}
_NET_CALLS |= {"asyncio.create_subprocess_shell", "asyncio.open_connection"}
_NET_PREFIXES = ("os.exec", "os.spawn", "os.posix_spawn")
_DYNAMIC_BUILTINS = {"eval", "exec", "compile", "__import__"}
_MUTATORS = {
    "append",
    "extend",
    "insert",
    "pop",
    "popitem",
    "remove",
    "clear",
    "update",
    "setdefault",
    "add",
    "discard",
    "sort",
    "reverse",
    "appendleft",
    "extendleft",
    "popleft",
    "difference_update",
    "intersection_update",
    "symmetric_difference_update",
    "__setitem__",
    "__delitem__",
}
_MUTABLE_CONSTRUCTORS = {
    "dict",
    "list",
    "set",
    "bytearray",
    "collections.defaultdict",
    "collections.OrderedDict",
    "collections.Counter",
    "collections.deque",
}


# ---- per-module analysis -------------------------------------------------------------------------------


class _Index:
    """Parents, enclosing functions and module-level bindings of one module (built once per audit)."""

    def __init__(self, mod: Module, pkg: PackageSource) -> None:
        assert mod.tree is not None
        self.mod = mod
        self.parent = _index_parents(mod)
        self.defined = _module_bindings(mod.tree)
        self.tools = {n for n in mod.tree.body if is_tool_def(n, mod) is not None}
        self.dimensions = {n for n in mod.tree.body if is_dimension_def(n)}
        self.pathish_names = _pathish_names(mod)
        self.import_time = _import_time_functions(mod, pkg, self.parent)

    def enclosing(self, node: ast.AST) -> list[FuncNode]:
        """Functions around ``node``, innermost first."""
        out = []
        while node in self.parent:
            node = self.parent[node]
            if isinstance(node, FuncNode):
                out.append(node)
        return out

    def in_any(self, node: ast.AST, fns: set[ast.AST]) -> bool:
        return any(f in fns for f in self.enclosing(node))

    def builtin_call(self, call: ast.Call, names: set[str]) -> str | None:
        """The builtin ``call`` invokes, when its name is one of ``names`` and is not shadowed."""
        fn = call.func
        if isinstance(fn, ast.Name) and fn.id in names and fn.id not in self.mod.imports:
            if fn.id not in self.defined and hasattr(builtins, fn.id):
                return fn.id
        return None


def _index_parents(mod: Module) -> dict[ast.AST, ast.AST]:
    parent: dict[ast.AST, ast.AST] = {}
    for node in mod.nodes:
        for child in ast.iter_child_nodes(node):
            parent[child] = node
    return parent


def _module_bindings(tree: ast.Module) -> set[str]:
    out = set()
    for node in tree.body:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            out.add(node.name)
        elif isinstance(node, ast.Import | ast.ImportFrom):
            out |= {(a.asname or a.name).split(".")[0] for a in node.names}
        else:
            for sub in ast.walk(node):
                if isinstance(sub, ast.Name) and isinstance(sub.ctx, ast.Store):
                    out.add(sub.id)
    return out


def _pathish(node: ast.expr, mod: Module, names: set[str]) -> bool:
    """Whether an expression evaluates to a ``pathlib.Path`` (as far as names and operators show)."""
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Div):
        return _pathish(node.left, mod, names)
    if isinstance(node, ast.Call):
        return (mod.qualname(node.func) or "") in _PATH_TYPES or (
            isinstance(node.func, ast.Attribute) and _pathish(node.func.value, mod, names)
        )
    if isinstance(node, ast.Attribute):
        return (mod.qualname(node) or "") in _PATH_TYPES or _pathish(node.value, mod, names)
    if isinstance(node, ast.Name):
        return node.id in names or (mod.qualname(node) or "") in _PATH_TYPES
    return False


def _pathish_names(mod: Module) -> set[str]:
    """Names ever bound to a path in this module (module level or any function): a cheap flow analysis."""
    assert mod.tree is not None
    names: set[str] = set()
    assigns = [n for n in mod.nodes if isinstance(n, ast.Assign | ast.AnnAssign)]
    for _ in range(3):  # chains like DATA = ROOT / "data"
        for node in assigns:
            if node.value is not None:
                targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                if _pathish(node.value, mod, names):
                    names |= {t.id for t in targets if isinstance(t, ast.Name)}
    return names


def _import_time_functions(mod: Module, pkg: PackageSource, parent: dict[ast.AST, ast.AST]) -> set[ast.AST]:
    """Module-level functions used only by import-time code (registries filled by ``_register(...)`` or a
    decorator at module level), plus the functions nested in them. Mutating globals there is setup."""
    assert mod.tree is not None
    here = pkg.qualified(mod)
    imported_elsewhere = {v for m in pkg.code_modules() if m is not mod for v in m.imports.values()}
    top = {n.name: n for n in mod.tree.body if isinstance(n, ast.FunctionDef)}
    at_module, in_function = set(), set()
    for node in mod.nodes:
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load) and node.id in top:
            prev, inside, shadowed = node, False, False
            while prev in parent:
                cur = parent[prev]
                if isinstance(cur, FuncNode) and prev not in getattr(cur, "decorator_list", []):
                    shadowed = shadowed or node.id in _locals(cur)[0]
                    inside = True
                prev = cur
            if not shadowed:
                (in_function if inside else at_module).add(node.id)
    names = {n for n in at_module - in_function if f"{here}.{n}" not in imported_elsewhere}
    out: set[ast.AST] = set()
    for name in names:
        out |= {n for n in ast.walk(top[name]) if isinstance(n, FuncNode)}
    return out


def _index(mod: Module, pkg: PackageSource) -> _Index:
    """The module's analysis, built once per audit and kept on the parsed module."""
    if "index" not in mod.cache:
        mod.cache["index"] = _Index(mod, pkg)
    return mod.cache["index"]


def _calls(mod: Module) -> Iterator[ast.Call]:
    return (n for n in mod.nodes if isinstance(n, ast.Call))


def _imported_modules(mod: Module) -> Iterator[tuple[ast.stmt, str]]:
    for node in mod.nodes:
        if isinstance(node, ast.Import):
            for a in node.names:
                yield node, a.name
        elif isinstance(node, ast.ImportFrom) and not node.level and node.module:
            yield node, node.module


# ---- call classification -------------------------------------------------------------------------------


def clock_read(call: ast.Call, mod: Module) -> str | None:
    name = mod.qualname(call.func) or ""
    if name in _CLOCK_ALWAYS:
        return name
    if name in _CLOCK_DEFAULT_NOW and len(call.args) <= _CLOCK_DEFAULT_NOW[name] and not call.keywords:
        return name
    return None


def random_use(call: ast.Call, ix: _Index) -> str | None:
    name = ix.mod.qualname(call.func) or ""
    if name == "random.Random" and call.args:
        return None  # an explicitly seeded generator is deterministic
    if name.startswith(_RANDOM_PREFIXES) or name in _RANDOM_CALLS:
        return name
    if ix.builtin_call(call, {"hash"}):
        return "hash() (salted per process)"
    return None


def file_access(call: ast.Call, ix: _Index) -> tuple[str, str] | None:
    """``(kind, what)`` with kind "read" or "write" when ``call`` touches the file system."""
    mod = ix.mod
    if ix.builtin_call(call, {"open"}) or (mod.qualname(call.func) or "") in ("io.open",):
        mode = (
            call.args[1]
            if len(call.args) > 1
            else next((k.value for k in call.keywords if k.arg == "mode"), None)
        )
        writes = isinstance(mode, ast.Constant) and any(c in str(mode.value) for c in "wax+")
        return ("write" if writes else "read", "open()")
    name = mod.qualname(call.func) or ""
    if name in _READ_CALLS:
        return "read", name
    if name in _WRITE_CALLS or name.startswith(_WRITE_PREFIXES):
        return "write", name
    fn = call.func
    if isinstance(fn, ast.Attribute) and _pathish(fn.value, mod, ix.pathish_names):
        if fn.attr in _PATH_WRITE:
            return "write", f"Path.{fn.attr}()"
        if fn.attr in _PATH_READ or fn.attr == "open":
            return "read", f"Path.{fn.attr}()"
    return None


# ---- rules ---------------------------------------------------------------------------------------------


def _skip_evaluator(mod: Module) -> bool:
    return Role.EVALUATOR in mod.roles  # covered by S060


@rule("S020", "wall-clock", "no clock reads; timestamps come from base_time + action_index (Table 15 #6)")
def _wall_clock(pkg: PackageSource) -> Iterator[Finding]:
    for mod in pkg.code_modules():
        if _skip_evaluator(mod):
            continue
        for call in _calls(mod):
            name = clock_read(call, mod)
            if name:
                yield finding(
                    "S020", mod.rel, call.lineno, f"reads the clock ({name}); use runtime.now(session)"
                )


@rule("S021", "randomness", "no randomness: tools are replayed and must be deterministic")
def _randomness(pkg: PackageSource) -> Iterator[Finding]:
    for mod in pkg.code_modules():
        if _skip_evaluator(mod):
            continue
        ix = _index(mod, pkg)
        for call in _calls(mod):
            name = random_use(call, ix)
            if name:
                yield finding(
                    "S021", mod.rel, call.lineno, f"uses randomness ({name}); results must be replayable"
                )


def _is_mutable_value(node: ast.expr | None, mod: Module) -> str | None:
    if isinstance(node, ast.Dict | ast.DictComp):
        return "dict"
    if isinstance(node, ast.List | ast.ListComp):
        return "list"
    if isinstance(node, ast.Set | ast.SetComp):
        return "set"
    if isinstance(node, ast.Call):
        name = mod.qualname(node.func) or ""
        if name in _MUTABLE_CONSTRUCTORS:
            return name.rsplit(".", 1)[-1]
    return None


def _constant_name(name: str) -> bool:
    core = name.lstrip("_")
    return bool(core) and core == core.upper() and any(c.isalpha() for c in core)


@rule("S030", "mutable-global", "no module-level mutable values except UPPER_CASE constants (Table 15 #2)")
def _mutable_global(pkg: PackageSource) -> Iterator[Finding]:
    for mod in pkg.code_modules():
        assert mod.tree is not None
        for node in mod.tree.body:
            if isinstance(node, ast.Assign):
                targets, value = node.targets, node.value
            elif isinstance(node, ast.AnnAssign) and node.value is not None:
                targets, value = [node.target], node.value
            else:
                continue
            kind = _is_mutable_value(value, mod)
            for t in targets:
                if kind and isinstance(t, ast.Name) and t.id != "__all__" and not _constant_name(t.id):
                    yield finding(
                        "S030",
                        mod.rel,
                        node.lineno,
                        f"module-level mutable {kind} `{t.id}`: mutable data belongs in the session state "
                        "(a constant is named in UPPER_CASE and never mutated)",
                    )


def _root_name(node: ast.expr) -> ast.Name | None:
    while isinstance(node, ast.Subscript | ast.Attribute):
        node = node.value
    return node if isinstance(node, ast.Name) else None


def _own_nodes(fn: FuncNode) -> Iterator[ast.AST]:
    """Nodes of ``fn``'s body, not descending into nested functions or classes."""
    stack: list[ast.AST] = [fn.body] if isinstance(fn, ast.Lambda) else list(fn.body)
    while stack:
        node = stack.pop()
        yield node
        if not isinstance(node, FuncNode | ast.ClassDef):
            stack.extend(ast.iter_child_nodes(node))


@functools.lru_cache(maxsize=8192)
def _locals(fn: FuncNode) -> tuple[set[str], set[str]]:
    """(local names, names declared global) of one function."""
    a = fn.args
    names = {p.arg for p in [*a.posonlyargs, *a.args, *a.kwonlyargs]}
    names |= {p.arg for p in (a.vararg, a.kwarg) if p is not None}
    declared: set[str] = set()
    for node in _own_nodes(fn):
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store | ast.Del):
            names.add(node.id)
        elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            names.add(node.name)
        elif isinstance(node, ast.Import | ast.ImportFrom):
            names |= {(x.asname or x.name).split(".")[0] for x in node.names}
        elif isinstance(node, ast.Global | ast.Nonlocal):
            declared |= set(node.names)
        elif isinstance(node, ast.arg):
            names.add(node.arg)
    return names - declared, declared


def mutations(fn: FuncNode) -> Iterator[tuple[ast.AST, str, str]]:
    """``(node, name, how)`` for every in-place change ``fn``'s own code makes to a named object."""
    for node in _own_nodes(fn):
        targets: list[ast.expr] = []
        if isinstance(node, ast.Assign):
            targets = node.targets
        elif isinstance(node, ast.AugAssign | ast.AnnAssign):
            targets = [node.target]
        elif isinstance(node, ast.Delete):
            targets = node.targets
        for t in targets:
            if isinstance(t, ast.Subscript | ast.Attribute) and (root := _root_name(t)) is not None:
                yield node, root.id, "assigns into it"
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr in _MUTATORS
        ):
            root = _root_name(node.func.value)
            if root is not None:
                yield node, root.id, f"calls .{node.func.attr}()"


@rule("S031", "global-mutation", "module-level state is never changed after import (Table 15 #2)")
def _global_mutation(pkg: PackageSource) -> Iterator[Finding]:
    for mod in pkg.code_modules():
        assert mod.tree is not None
        ix = _index(mod, pkg)
        for fn in (n for n in mod.nodes if isinstance(n, FuncNode)):
            if fn in ix.import_time:
                continue
            scopes = [fn, *ix.enclosing(fn)]
            local: set[str] = set()
            for scope in scopes:
                local |= _locals(scope)[0]
            declared = _locals(fn)[1]
            label = getattr(fn, "name", "<lambda>")
            for name in sorted(declared & ix.defined):
                if any(
                    isinstance(n, ast.Name) and n.id == name and isinstance(n.ctx, ast.Store)
                    for n in _own_nodes(fn)
                ):
                    yield finding(
                        "S031", mod.rel, fn.lineno, f"{label} rebinds module-level `{name}` (global)"
                    )
            for node, name, how in mutations(fn):
                if (name in ix.defined and name not in local) or name in declared:
                    yield finding(
                        "S031",
                        mod.rel,
                        getattr(node, "lineno", fn.lineno),
                        f"{label} changes module-level `{name}` ({how}); keep mutable data in the session",
                    )


@rule("S040", "domain-file-io", "only the repository reads files, never inside tools (Table 15 #3, #10)")
def _domain_file_io(pkg: PackageSource) -> Iterator[Finding]:
    for mod in pkg.code_modules():
        if _skip_evaluator(mod):
            continue
        ix = _index(mod, pkg)
        repository = Role.REPOSITORY in mod.roles
        for call in _calls(mod):
            access = file_access(call, ix)
            if access is None:
                continue
            in_tool = ix.in_any(call, ix.tools)
            if repository and not in_tool:
                continue  # reads are the repository's job; writes are S041
            where = "a tool" if in_tool else "a module other than the repository"
            yield finding("S040", mod.rel, call.lineno, f"file access ({access[1]}) in {where}")


@rule("S041", "data-write", "package code never writes files: data/ is immutable (Table 15 #3, #4)")
def _data_write(pkg: PackageSource) -> Iterator[Finding]:
    for mod in pkg.with_role(Role.REPOSITORY):
        if mod.tree is None or mod.is_test:
            continue
        ix = _index(mod, pkg)
        for call in _calls(mod):
            access = file_access(call, ix)
            if access and access[0] == "write" and not ix.in_any(call, ix.tools):
                yield finding("S041", mod.rel, call.lineno, f"writes files ({access[1]}): data/ is read-only")


def _import_rule(pkg: PackageSource, rule_id: str, modules: set[str], what: str) -> Iterator[Finding]:
    for mod in pkg.code_modules():
        for node, name in _imported_modules(mod):
            if name.split(".")[0] in modules:
                yield finding(rule_id, mod.rel, node.lineno, f"imports {name}: {what}")


@rule("S042", "cli-parsing", "no argument parsing in package code: the runtime owns the CLI (#7, #8, #10)")
def _cli_parsing(pkg: PackageSource) -> Iterator[Finding]:
    yield from _import_rule(pkg, "S042", _CLI_MODULES, "the runtime CLI parses arguments")
    for mod in pkg.code_modules():
        for node in mod.nodes:
            if isinstance(node, ast.Attribute) and mod.qualname(node) == "sys.argv":
                yield finding(
                    "S042", mod.rel, node.lineno, "reads sys.argv: the runtime CLI parses arguments"
                )


@rule("S043", "locking", "no locks in package code: the runtime store serialises sessions (#5, #10)")
def _locking(pkg: PackageSource) -> Iterator[Finding]:
    yield from _import_rule(pkg, "S043", _LOCK_MODULES, "the runtime store owns locking")
    for mod in pkg.code_modules():
        for call in _calls(mod):
            name = mod.qualname(call.func) or ""
            if name in _LOCK_CALLS:
                yield finding(
                    "S043", mod.rel, call.lineno, f"creates a lock ({name}): the runtime serialises"
                )


@rule("S044", "environment-read", "no environment variables: session bindings come from the runtime (#8)")
def _env_read(pkg: PackageSource) -> Iterator[Finding]:
    for mod in pkg.code_modules():
        for node in mod.nodes:
            if isinstance(node, ast.Attribute | ast.Name) and (mod.qualname(node) or "") in _ENV_NAMES:
                yield finding(
                    "S044", mod.rel, node.lineno, f"uses {mod.qualname(node)}: bindings are the runtime's"
                )


@rule("S050", "network-subprocess", "no network or subprocess access from package code")
def _network(pkg: PackageSource) -> Iterator[Finding]:
    yield from _import_rule(pkg, "S050", _NET_MODULES, "environments run offline, in-process")
    for mod in pkg.code_modules():
        for call in _calls(mod):
            name = mod.qualname(call.func) or ""
            if name in _NET_CALLS or name.startswith(_NET_PREFIXES):
                yield finding("S050", mod.rel, call.lineno, f"calls {name}")


@rule("S051", "dynamic-code", "no eval/exec/compile/__import__/importlib in package code")
def _dynamic_code(pkg: PackageSource) -> Iterator[Finding]:
    yield from _import_rule(pkg, "S051", {"importlib"}, "no dynamic imports")
    for mod in pkg.code_modules():
        ix = _index(mod, pkg)
        for call in _calls(mod):
            name = ix.builtin_call(call, _DYNAMIC_BUILTINS)
            if name:
                yield finding("S051", mod.rel, call.lineno, f"calls {name}(): no dynamic code")


@rule("S060", "evaluator-impure", "the evaluator is deterministic and side-effect free (Table 15 #11)")
def _evaluator_impure(pkg: PackageSource) -> Iterator[Finding]:
    for mod in pkg.with_role(Role.EVALUATOR):
        if mod.tree is None:
            continue
        ix = _index(mod, pkg)
        for call in _calls(mod):
            what = clock_read(call, mod) or random_use(call, ix)
            access = file_access(call, ix)
            if access:
                what = f"file access ({access[1]})"
            elif ix.builtin_call(call, {"print", "input"}):
                what = "console I/O"
            if what:
                yield finding("S060", mod.rel, call.lineno, f"evaluator uses {what}")
        for fn in ix.dimensions:
            assert isinstance(fn, ast.FunctionDef | ast.AsyncFunctionDef)
            params = {p.arg for p in fn.args.args}
            for node, name, how in mutations(fn):
                if name in params:
                    yield finding(
                        "S060",
                        mod.rel,
                        getattr(node, "lineno", fn.lineno),
                        f"dimension {fn.name} changes its input `{name}` ({how})",
                    )
