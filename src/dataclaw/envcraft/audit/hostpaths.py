"""S045 host-path: environment code opens only its own package data, never a path of the host.

An environment reads its world from ``data/`` beside its code (a path built from ``__file__``'s folder and
a relative data path, or the runtime's loader). A path that is absolute (``/etc/shadow``), home-relative
(``~/.ssh``, ``expanduser``, ``Path.home()``), climbs out with ``..`` or ``.parent`` past the package root,
or is built from the process environment (``os.environ``, ``getenv``, ``expandvars``) or the working
directory reaches the host: the sandbox stops it at run time, and this rule names it before the package is
ever run. Paths the code cannot show (a function parameter) are not guessed at: the sandbox still guards
them.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import PurePosixPath

from dataclaw.envcraft.audit.model import Finding
from dataclaw.envcraft.audit.package import Module, PackageSource
from dataclaw.envcraft.audit.purity import _index, file_access
from dataclaw.envcraft.audit.rules import finding, rule

_HOST_CALLS = {
    "os.path.expanduser": "expands ~ to the host user's home",
    "os.path.expandvars": "expands environment variables",
    "pathlib.Path.home": "the host user's home",
    "pathlib.Path.cwd": "the host's working directory",
    "os.getcwd": "the host's working directory",
    "os.getcwdb": "the host's working directory",
    "tempfile.gettempdir": "the host's temp folder",
}
_HOST_METHODS = {"expanduser": "expands ~ to the host user's home"}
_ENV = {"os.environ", "os.environb", "os.getenv", "os.environ.get", "os.environb.get"}
_ENV_REASON = "built from an environment variable"
# calls that keep a path where it is (for how far a path climbs from __file__)
_SAME_PLACE = {
    "pathlib.Path", "pathlib.PurePath", "pathlib.PosixPath", "pathlib.PurePosixPath", "os.path.abspath",
    "os.path.realpath", "os.path.normpath", "os.fspath", "str",
}  # fmt: skip
_SAME_PLACE_METHODS = {"resolve", "absolute"}
_PATH_KEYWORDS = ("file", "path", "pathname", "top", "database", "filename")


Place = tuple[int, int]
"""Where a ``__file__``-built path points: (height above the package folder, the most it ever reached).
The package folder is height 0, its files and folders below; a path that once rose above it and came
back down by name is in another folder, so the peak is what tells."""


class _Paths:
    """Where the paths of one module lead: how high above the package folder a ``__file__``-built path
    climbs, and which names hold host paths (a cheap flow analysis over the module's assignments)."""

    def __init__(self, mod: Module) -> None:
        self.mod = mod
        self.file_height = -(mod.rel.count("/") + 1)  # state.py: -1, so Path(__file__).parent is 0
        self.places: dict[str, Place] = {}
        self.host: dict[str, str] = {}
        assigns = [n for n in mod.nodes if isinstance(n, ast.Assign | ast.AnnAssign) and n.value is not None]
        for _ in range(3):  # chains like ROOT = …; DATA = ROOT / "data"
            for node in assigns:
                targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                names = [t.id for t in targets if isinstance(t, ast.Name)]
                assert node.value is not None
                place, why = self.place(node.value), self.why(node.value)
                for name in names:
                    if place is not None:
                        self.places[name] = place
                    if why is not None:
                        self.host[name] = why

    def place(self, e: ast.expr) -> Place | None:
        """Where ``e`` points when it is built from ``__file__`` (see :data:`Place`); None otherwise."""
        q = self.mod.qualname(e.func) if isinstance(e, ast.Call) else None
        if isinstance(e, ast.Name):
            return (self.file_height, self.file_height) if e.id == "__file__" else self.places.get(e.id)
        if isinstance(e, ast.Attribute) and e.attr == "parent":
            return _up(self.place(e.value), 1)
        if isinstance(e, ast.Subscript) and isinstance(e.value, ast.Attribute) and e.value.attr == "parents":
            k = e.slice
            if isinstance(k, ast.Constant) and isinstance(k.value, int):
                return _up(self.place(e.value.value), k.value + 1)
            return None
        if isinstance(e, ast.Call) and len(e.args) == 1 and q in (*_SAME_PLACE, "os.path.dirname"):
            return _up(self.place(e.args[0]), int(q == "os.path.dirname"))
        if isinstance(e, ast.Call) and isinstance(e.func, ast.Attribute) and not e.args:
            if e.func.attr in _SAME_PLACE_METHODS:
                return self.place(e.func.value)
        if isinstance(e, ast.BinOp) and isinstance(e.op, ast.Div):
            return _join(self.place(e.left), e.right)
        if isinstance(e, ast.BinOp) and isinstance(e.op, ast.Add):  # str + "/data/x.json": "/" separates
            right = e.right
            if isinstance(right, ast.Constant) and isinstance(right.value, str):
                right = ast.Constant(right.value.lstrip("/"))
            return _join(self.place(e.left), right)
        if isinstance(e, ast.Call) and q == "os.path.join" and e.args:
            place = self.place(e.args[0])
            for part in e.args[1:]:
                place = _join(place, part)
            return place
        return None

    def why(self, e: ast.expr | None) -> str | None:
        """Why the path ``e`` reaches the host, or None (package data, or nothing the code shows)."""
        if e is None:
            return None
        place = self.place(e)
        if place is not None:
            return f"climbs {place[1]} level(s) above the package from __file__" if place[1] > 0 else None
        if isinstance(e, ast.Constant):
            return _literal(e.value) if isinstance(e.value, str) else None
        if isinstance(e, ast.JoinedStr):
            head = e.values[0] if e.values else None
            if isinstance(head, ast.Constant) and isinstance(head.value, str) and _literal(head.value):
                return _literal(head.value)
            return next((r for v in e.values if (r := self._tail(v)) is not None), None)
        if isinstance(e, ast.BinOp):
            if isinstance(e.op, ast.Div):  # an absolute right-hand part replaces the left
                return self.why(e.left) or self.why(e.right)
            return self.why(e.left) or self._tail(e.right)
        q = self.mod.qualname(e.func if isinstance(e, ast.Call) else e) if isinstance(
            e, ast.Call | ast.Attribute | ast.Name
        ) else None  # fmt: skip
        if q in _ENV:
            return _ENV_REASON
        if isinstance(e, ast.Call):
            if q in _HOST_CALLS:
                return _HOST_CALLS[q]
            if isinstance(e.func, ast.Attribute) and e.func.attr in _HOST_METHODS:
                return _HOST_METHODS[e.func.attr]
            parts = [*e.args, *(k.value for k in e.keywords)]
            if isinstance(e.func, ast.Attribute):
                parts.insert(0, e.func.value)
            return next((r for p in parts if (r := self.why(p)) is not None), None)
        if isinstance(e, ast.Subscript):
            if self.mod.qualname(e.value) in _ENV:
                return _ENV_REASON
            return self.why(e.value)
        if isinstance(e, ast.Attribute):
            return self.why(e.value)
        if isinstance(e, ast.Name):
            return self.host.get(e.id)
        kids = [c for c in ast.iter_child_nodes(e) if isinstance(c, ast.expr)]
        return next((r for c in kids if (r := self.why(c)) is not None), None)

    def _tail(self, e: ast.expr) -> str | None:
        """A part appended to a path by ``+`` or inside an f-string: a literal only counts for ``..``."""
        if isinstance(e, ast.Constant):
            text = e.value if isinstance(e.value, str) else ""
            return "'..' leaves the package" if ".." in PurePosixPath(text).parts else None
        if isinstance(e, ast.FormattedValue):
            return self.why(e.value)
        return self.why(e)


def _up(place: Place | None, steps: int) -> Place | None:
    if place is None:
        return None
    height = place[0] + steps
    return height, max(place[1], height)


def _join(place: Place | None, part: ast.expr) -> Place | None:
    """``place`` after joining a literal relative path (``..`` climbs, a name descends); None when the
    part is no literal or is absolute (the path is then no longer anchored at ``__file__``)."""
    if place is None or not (isinstance(part, ast.Constant) and isinstance(part.value, str)):
        return None
    if part.value.startswith(("/", "~")):
        return None
    for piece in PurePosixPath(part.value).parts:
        place = _up(place, 1 if piece == ".." else 0 if piece == "." else -1)
    return place


def _literal(text: str) -> str | None:
    """Why a literal path (at the start of a path expression) is the host's."""
    if text.startswith("/"):
        return f"the absolute path {text[:60]!r}"
    if text.startswith("~"):
        return f"the home path {text[:60]!r}"
    if ".." in PurePosixPath(text).parts:
        return f"{text[:60]!r} climbs out with '..'"
    return None


def _path_argument(call: ast.Call, what: str) -> ast.expr | None:
    """The path a file-system call opens: a path method's receiver (``what`` is ``Path.x()``), else its
    first argument or the keyword that names it."""
    if what.startswith("Path.") and isinstance(call.func, ast.Attribute):
        return call.func.value
    if call.args:
        return call.args[0]
    return next((k.value for k in call.keywords if k.arg in _PATH_KEYWORDS), None)


@rule(
    "S045",
    "host-path",
    "code opens only its package data: no absolute, ~, '..', cwd or environment-derived paths (#3)",
)
def _host_path(pkg: PackageSource) -> Iterator[Finding]:
    for mod in pkg.code_modules():
        ix = _index(mod, pkg)
        paths = _Paths(mod)
        seen: set[int] = set()
        for call in (n for n in mod.nodes if isinstance(n, ast.Call)):
            access = file_access(call, ix)
            if access is not None:
                why = paths.why(_path_argument(call, access[1]))
                if why is not None and call.lineno not in seen:
                    seen.add(call.lineno)
                    yield finding(
                        "S045", mod.rel, call.lineno,
                        f"{access[0]}s a host path ({access[1]}): {why}; an environment opens only its "
                        "package data (a path from its __file__ folder)",
                    )  # fmt: skip
                continue
            q = mod.qualname(call.func) or ""
            method = call.func.attr if isinstance(call.func, ast.Attribute) else ""
            what = _HOST_CALLS.get(q) or (_HOST_METHODS.get(method) if q not in _SAME_PLACE else None)
            if what is not None and call.lineno not in seen:
                seen.add(call.lineno)
                yield finding("S045", mod.rel, call.lineno, f"calls {q or method}(): {what}, a host path")
