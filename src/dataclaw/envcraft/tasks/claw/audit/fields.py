"""Output fields and numbers in a verifier's source: the keys it reads from or expects in the output, the
answer sets, thresholds and constants it compares against."""

from __future__ import annotations

import ast
import re

from dataclaw.envcraft.tasks.claw.audit.static import _parse
from dataclaw.envcraft.tasks.claw.workspace import (
    WorkspaceTask,
)


def _answer_sets(tree: ast.AST | None) -> list[list[str]]:
    """Literal collections of two or more strings in the verifier (an expected selection, dict keys)."""
    if tree is None:
        return []
    out = []
    for node in ast.walk(tree):
        elts = node.keys if isinstance(node, ast.Dict) else getattr(node, "elts", None)
        if not isinstance(node, ast.List | ast.Tuple | ast.Set | ast.Dict) or not elts:
            continue
        strs = [e.value for e in elts if isinstance(e, ast.Constant) and isinstance(e.value, str)]
        if len(strs) >= 2 and len(strs) == len(elts):
            out.append(strs)
    return out


def _key_strings(tree: ast.AST | None) -> set[str]:
    """Strings the verifier uses as keys: ``data["k"]``, ``.get("k")``, ``"k" in data``, dict-literal keys
    — output field names the prompt must state, not answers."""
    if tree is None:
        return set()
    out: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Subscript) and isinstance(node.slice, ast.Constant):
            out.add(str(node.slice.value))
        elif (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr
            in (
                "get",
                "pop",
                "setdefault",
            )
        ):
            if node.args and isinstance(node.args[0], ast.Constant):
                out.add(str(node.args[0].value))
        elif isinstance(node, ast.Compare) and any(isinstance(op, ast.In | ast.NotIn) for op in node.ops):
            if isinstance(node.left, ast.Constant):
                out.add(str(node.left.value))
    return out


_SCORE_VOCABULARY = frozenset(
    {"total_score", "details", "score", "max_score", "item", "passed", "reason", "name", "message", "field"}
)
"""Keys of the score file and its detail items (and the words verifiers name them by): never output fields."""
_DETAIL_KEYS = frozenset({"score", "max_score", "total_score", "details", "item", "passed"})
_IDENTIFIER = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_LISTED_FIELDS = re.compile(r"field|key|required|column", re.IGNORECASE)


def _alternative_keys(tree: ast.AST) -> set[str]:
    """Keys tested by ``if "k" in data:`` in an ``if``/``elif`` chain: one accepted shape among several
    (``{"denied_ids": [...]}`` or a bare list), not a field the output must have."""
    out: set[str] = set()
    for node in ast.walk(tree):
        if not (isinstance(node, ast.If) and node.orelse and isinstance(node.orelse[0], ast.If)):
            continue
        chain: list[ast.If] = [node]
        while chain[-1].orelse and len(chain[-1].orelse) == 1 and isinstance(chain[-1].orelse[0], ast.If):
            chain.append(chain[-1].orelse[0])  # type: ignore[arg-type]
        for branch in chain:
            for sub in ast.walk(branch.test):
                if (
                    isinstance(sub, ast.Compare)
                    and isinstance(sub.left, ast.Constant)
                    and isinstance(sub.left.value, str)
                    and all(isinstance(op, ast.In) for op in sub.ops)
                ):
                    out.add(sub.left.value)
    return out


def required_output_keys(source: str) -> set[str]:
    """Field names the verifier *reads or expects*: ``data["k"]``, ``.get("k")``, the keys of an expected
    record literal, the strings of a ``required_fields``/``keys`` list. Not ``"k" in text`` alone (that is
    as often a substring test on free text), not the score file's own vocabulary, not the detail items'
    keys, not one accepted alternative among several (:func:`_alternative_keys`)."""
    tree = _parse(source)
    if tree is None:
        return set()
    out: set[str] = set()

    transcript = _transcript_names(tree)
    score_dicts = _grade_score_dicts(tree)

    def environ(n: ast.AST) -> bool:  # os.environ["WORKSPACE"] is a setting, not an output field
        return (isinstance(n, ast.Attribute) and n.attr == "environ") or (
            isinstance(n, ast.Name) and n.id == "environ"
        )

    def not_output(n: ast.AST) -> bool:  # a setting, or an event of the agent's transcript (PinchBench)
        return environ(n) or any(isinstance(x, ast.Name) and x.id in transcript for x in ast.walk(n))

    for node in ast.walk(tree):
        if isinstance(node, ast.Subscript) and isinstance(node.slice, ast.Constant):
            # scores["k"] = 1.0 is the verifier's own bookkeeping, not a field it reads
            if (
                isinstance(node.slice.value, str)
                and isinstance(node.ctx, ast.Load)
                and not not_output(node.value)
            ):
                out.add(node.slice.value)
        elif (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr in ("get", "pop", "setdefault")
            and not not_output(node.func.value)
            and node.args
            and isinstance(node.args[0], ast.Constant)
            and isinstance(node.args[0].value, str)
        ):
            out.add(node.args[0].value)
        elif isinstance(node, ast.Dict) and id(node) not in score_dicts:
            keys = {k.value for k in node.keys if isinstance(k, ast.Constant) and isinstance(k.value, str)}
            if not keys & _DETAIL_KEYS:
                out |= keys
        elif isinstance(node, ast.Assign) and isinstance(node.value, ast.List | ast.Tuple | ast.Set):
            if any(isinstance(t, ast.Name) and _LISTED_FIELDS.search(t.id) for t in node.targets):
                elts = node.value.elts
                out |= {e.value for e in elts if isinstance(e, ast.Constant) and isinstance(e.value, str)}
    out -= _alternative_keys(tree)
    return {k for k in out if _IDENTIFIER.match(k) and k not in _SCORE_VOCABULARY}


def _grade_score_dicts(tree: ast.AST) -> set[int]:
    """Ids of the dict literals a PinchBench ``grade(transcript, workspace_path)`` returns (``return {...}``,
    or ``scores = {...}`` … ``return scores``): its criteria and their scores, the score file's own
    vocabulary, not fields the agent writes."""
    out: set[int] = set()
    for f in ast.walk(tree):
        if not isinstance(f, ast.FunctionDef) or f.name != "grade":
            continue
        returns = [n.value for n in ast.walk(f) if isinstance(n, ast.Return) and n.value is not None]
        names = {r.id for r in returns if isinstance(r, ast.Name)}
        out |= {id(r) for r in returns if isinstance(r, ast.Dict)}
        for n in ast.walk(f):
            if isinstance(n, ast.Assign) and isinstance(n.value, ast.Dict):
                if any(isinstance(t, ast.Name) and t.id in names for t in n.targets):
                    out.add(id(n.value))
    return out


def _transcript_names(tree: ast.AST) -> set[str]:
    """Names bound to the agent's transcript or to parts of it: a ``transcript`` parameter (PinchBench's
    ``grade(transcript, workspace_path)``), then every name assigned or iterated from one of those."""
    names = {
        a.arg
        for f in ast.walk(tree)
        if isinstance(f, ast.FunctionDef | ast.AsyncFunctionDef)
        for a in f.args.args + f.args.kwonlyargs
        if a.arg == "transcript"
    }
    if not names:
        return names

    def derived(n: ast.AST) -> bool:
        return any(isinstance(x, ast.Name) and x.id in names for x in ast.walk(n))

    def bound(target: ast.AST) -> set[str]:
        return {x.id for x in ast.walk(target) if isinstance(x, ast.Name)}

    while True:
        before = len(names)
        for node in ast.walk(tree):
            if isinstance(node, ast.For | ast.comprehension) and derived(node.iter):
                names |= bound(node.target)
            elif isinstance(node, ast.Assign) and derived(node.value):
                for t in node.targets:
                    names |= bound(t)
            elif (
                isinstance(node, ast.AnnAssign | ast.NamedExpr)
                and node.value is not None
                and derived(node.value)
            ):
                names |= bound(node.target)
        if len(names) == before:
            return names


def _unstated_fields(task: WorkspaceTask, inputs: dict[str, bytes]) -> list[str]:
    """Keys the verifier requires that neither the prompt names (as a word, or with spaces for ``_``) nor
    any built input holds (a key of the input data is the verifier reading its inputs)."""
    words = {w.lower() for w in re.findall(r"[A-Za-z0-9_]+", task.prompt)}
    prose = task.prompt.lower()
    held: set[str] = set()
    for data in inputs.values():
        held |= set(re.findall(r"[A-Za-z0-9_]+", data.decode("utf-8", "replace")))
    return sorted(
        k
        for k in required_output_keys(task.verifier)
        if k.lower() not in words and k.replace("_", " ").lower() not in prose and k not in held
    )


def _threshold_numbers(tree: ast.AST | None) -> set[float]:
    """Numbers the verifier compares with ``<``/``>``/``<=``/``>=`` (rule thresholds the request must
    state), and the points of its detail items: parameters, not answers."""
    if tree is None:
        return set()
    out: set[float] = set()
    ordering = (ast.Lt, ast.LtE, ast.Gt, ast.GtE)
    for node in ast.walk(tree):
        if isinstance(node, ast.Compare) and any(isinstance(op, ordering) for op in node.ops):
            for side in (node.left, *node.comparators):
                if isinstance(side, ast.Constant) and isinstance(side.value, int | float):
                    out.add(float(side.value))
        if isinstance(node, ast.Dict):
            for k, v in zip(node.keys, node.values, strict=False):
                if (
                    isinstance(k, ast.Constant)
                    and k.value in ("score", "max_score", "points", "weight")
                    and isinstance(v, ast.Constant)
                    and isinstance(v.value, int | float)
                ):
                    out.add(float(v.value))
    return out


def _number_constants(tree: ast.AST | None) -> list[float]:
    if tree is None:
        return []
    return [
        float(n.value)
        for n in ast.walk(tree)
        if isinstance(n, ast.Constant) and isinstance(n.value, int | float) and not isinstance(n.value, bool)
    ]


def _as_number(tok: str) -> float | None:
    try:
        return float(tok.replace(",", ""))
    except ValueError:
        return None


def _answer_like_number(x: float) -> bool:
    """Amounts and fractions, not small counts, points or calendar years."""
    if x != int(x):
        return True
    return abs(x) >= 1000 and not 1900 <= x <= 2100
