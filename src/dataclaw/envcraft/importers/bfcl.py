"""BFCL-v3 multi-turn (Berkeley Function-Calling Leaderboard) → task records and environments.

The source is the ``bfcl-eval`` wheel from PyPI (or an unpacked copy): its ``bfcl_eval/data`` holds the
multi-turn task files (``BFCL_v*_multi_turn_{base,miss_func,miss_param,long_context}.json``), the ground
truth per turn (``possible_answer/``) and the function docs (``multi_turn_func_doc/``); its
``eval_checker/multi_turn_eval/func_source_code`` holds the executable backend classes. The wheel is read
as a zip file; nothing from it is installed or imported here. Its backend classes are untrusted code: each
set of classes that tasks involve becomes an environment package (``bfcl_<classes>``: the classes' source
under ``backend/``, dataclaw's wrapper ``env.py``, one scenario per task) that runs only in the sandboxed
env worker. The reward is BFCL's state-based multi-turn check (see ``bfcl_package/env.py``), read by the
task's verifier from ``/check/valid``; on import every task's ground truth is replayed through its
environment and a task whose gold replay does not pass is a ``gold_fails`` reject (never a silent 0).

Get the wheel with ``make bfcl-wheel`` (``pip download --no-deps bfcl-eval==<pinned>`` into
``~/.cache/dataclaw/wheels``).
"""

from __future__ import annotations

import ast
import json
import os
import re
import zipfile
from collections.abc import Iterator
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import Any, ClassVar

from dataclaw.core import pyast
from dataclaw.core.ids import root_id, stable_hash
from dataclaw.envcraft.importers.base import (
    IMPORTERS,
    ImportContext,
    Importer,
    ImportReason,
    ImportReject,
    Produces,
    SourceItem,
    library_row,
    mark_imported,
    package_handle,
)
from dataclaw.envcraft.runtime.task import ToolTask
from dataclaw.pipeline.stage import Record

BFCL_VERSION = "2026.3.23"
"""The ``bfcl-eval`` release the tests and docs use (``make bfcl-wheel`` fetches it)."""
WHEEL_CACHE = Path(os.environ.get("DATACLAW_WHEEL_CACHE", Path.home() / ".cache" / "dataclaw" / "wheels"))
CATEGORIES = ("multi_turn_base", "multi_turn_miss_func", "multi_turn_miss_param", "multi_turn_long_context")
TEMPLATE = Path(__file__).resolve().parent / "bfcl_package" / "env.py"
BACKEND_DIR = "eval_checker/multi_turn_eval/func_source_code"
_BACKEND_IMPORT = re.compile(
    r"^(\s*)from\s+bfcl_eval\.eval_checker\.multi_turn_eval\.func_source_code\.(\w+)\s+import", re.M
)
_OTHER_BFCL_IMPORT = re.compile(r"^\s*(from|import)\s+bfcl_eval\b", re.M)
ADDITIONAL_FUNCTION_PROMPT = "I have updated some more functions you can choose from. What about now?"
BASE_TIME = "2024-01-01T00:00:00Z"
MAIN = (
    "from dataclaw.envcraft.runtime.cli import main\n\nfrom . import ENVIRONMENT\n\n"
    "raise SystemExit(main(ENVIRONMENT))\n"
)
GOLD_FAILS = ImportReason.GOLD_FAILS
"""A task whose own ground truth does not pass its check when replayed (it could never be solved)."""


def default_wheel() -> Path | None:
    """The newest cached ``bfcl_eval`` wheel (the pinned release first), or None."""
    pinned = WHEEL_CACHE / f"bfcl_eval-{BFCL_VERSION}-py3-none-any.whl"
    if pinned.is_file():
        return pinned
    found = sorted(WHEEL_CACHE.glob("bfcl_eval-*.whl"))
    return found[-1] if found else None


class BFCLSource:
    """Read-only access to ``bfcl_eval/`` inside a wheel (zip) or an unpacked folder."""

    def __init__(self, src: Path) -> None:
        self.src = src
        self._zip: zipfile.ZipFile | None = None
        self._root: Path | None = None
        if src.is_file():
            self._zip = zipfile.ZipFile(src)
        elif (src / "bfcl_eval").is_dir():
            self._root = src / "bfcl_eval"
        elif src.name == "bfcl_eval" and src.is_dir():
            self._root = src
        else:
            raise ValueError("not a bfcl-eval wheel or a folder holding bfcl_eval/")

    def names(self) -> list[str]:
        if self._zip is not None:
            return [n[len("bfcl_eval/") :] for n in self._zip.namelist() if n.startswith("bfcl_eval/")]
        assert self._root is not None
        return [p.relative_to(self._root).as_posix() for p in self._root.rglob("*") if p.is_file()]

    def read(self, rel: str) -> str:
        if self._zip is not None:
            return self._zip.read(f"bfcl_eval/{rel}").decode("utf-8")
        assert self._root is not None
        return (self._root / rel).read_text(encoding="utf-8")

    def jsonl(self, rel: str) -> list[dict[str, Any]]:
        return [json.loads(line) for line in self.read(rel).splitlines() if line.strip()]

    @cached_property
    def version(self) -> str:
        if self._zip is not None:
            m = re.match(r"bfcl_eval-([^-]+)-", self.src.name)
            if m:
                return m.group(1)
        return "unknown"

    def task_file(self, category: str, answers: bool = False) -> str | None:
        """``data/BFCL_v<N>_<category>.json`` (or its possible answer), newest N first."""
        prefix = "data/possible_answer/" if answers else "data/"
        pat = re.compile(re.escape(prefix) + r"BFCL_v(\d+)_" + re.escape(category) + r"\.json$")
        found = sorted((int(m.group(1)), n) for n in self.names() if (m := pat.match(n)))
        return found[-1][1] if found else None

    @cached_property
    def backend_config(self) -> dict[str, Any]:
        """``constants/executable_backend_config.py`` read with ``ast`` (never executed): class → module
        and func-doc file, and the stateless classes."""
        tree = pyast.parse(self.read("constants/executable_backend_config.py"))
        out: dict[str, Any] = {}
        for node in tree.body:
            if (
                isinstance(node, ast.Assign)
                and len(node.targets) == 1
                and isinstance(node.targets[0], ast.Name)
            ):
                out[node.targets[0].id] = _literal(node.value)
        modules = {
            k: str(v).rsplit(".", 1)[-1] for k, v in (out.get("CLASS_FILE_PATH_MAPPING") or {}).items()
        }
        return {
            "modules": modules,
            "docs": dict(out.get("MULTI_TURN_FUNC_DOC_FILE_MAPPING") or {}),
            "stateless": list(out.get("STATELESS_CLASSES") or []),
        }

    def func_docs(self, cls: str) -> list[dict[str, Any]]:
        return self.jsonl(f"data/multi_turn_func_doc/{self.backend_config['docs'][cls]}")

    @cached_property
    def license_text(self) -> str:
        meta = ""
        if self._zip is not None:
            metas = [n for n in self._zip.namelist() if n.endswith(".dist-info/METADATA")]
            meta = self._zip.read(metas[0]).decode("utf-8", "replace") if metas else ""
        m = re.search(r"^License: (.+)$", meta, re.M)
        return m.group(1).strip() if m else "Apache 2.0"


def _literal(node: ast.AST) -> Any:
    """A constant expression, with f-strings reduced to their constant parts (module paths)."""
    if isinstance(node, ast.JoinedStr):
        return "".join(str(v.value) for v in node.values if isinstance(v, ast.Constant))
    if isinstance(node, ast.Dict):
        return {
            _literal(k): _literal(v) for k, v in zip(node.keys, node.values, strict=True) if k is not None
        }
    if isinstance(node, ast.List | ast.Tuple):
        return [_literal(v) for v in node.elts]
    try:
        return ast.literal_eval(node)
    except ValueError:
        return None


_NO_LITERAL = object()


def class_signatures(source: str, cls: str) -> dict[str, dict[str, Any]]:
    """Public methods of class ``cls`` in ``source`` (parsed, not run): parameter order, which are
    optional, and their literal defaults."""
    out: dict[str, dict[str, Any]] = {}
    for node in pyast.parse(source).body:
        if not (isinstance(node, ast.ClassDef) and node.name == cls):
            continue
        for fn in node.body:
            if not isinstance(fn, ast.FunctionDef) or fn.name.startswith("_"):
                continue
            a = fn.args
            names = [x.arg for x in a.args][1:]
            optional = names[len(names) - len(a.defaults) :] if a.defaults else []
            defaults = {}
            for name, d in zip(optional, a.defaults, strict=True):
                try:
                    defaults[name] = ast.literal_eval(d)
                except ValueError:
                    pass
            for kw, d in zip(a.kwonlyargs, a.kw_defaults, strict=True):
                names.append(kw.arg)
                if d is not None:
                    optional.append(kw.arg)
                    try:
                        defaults[kw.arg] = ast.literal_eval(d)
                    except ValueError:
                        pass
            out[fn.name] = {"params": names, "optional": optional, "defaults": defaults}
    return out


class GroundTruthError(ValueError):
    def __init__(self, reason: ImportReason, message: str) -> None:
        super().__init__(message)
        self.reason = reason


def parse_call(text: str, signatures: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """One ground-truth call string (``mv(source='a', destination='b')``) → method, positional and keyword
    arguments (literals only), and ``params`` (all by name, for a replay through the runtime)."""
    try:
        node = pyast.parse(text.strip(), mode="eval").body
    except SyntaxError as exc:
        why = f"ground truth call {text!r} does not parse: {exc.msg}"
        raise GroundTruthError(ImportReason.MALFORMED, why) from None
    if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Name)):
        raise GroundTruthError(ImportReason.MALFORMED, f"ground truth {text!r} is not a function call")
    method = node.func.id
    if method not in signatures:
        raise GroundTruthError(
            ImportReason.UNKNOWN_TOOL, f"ground truth calls {method!r}, which none of the task's classes has"
        )
    try:
        args = [ast.literal_eval(a) for a in node.args]
        kwargs = {k.arg: ast.literal_eval(k.value) for k in node.keywords if k.arg is not None}
    except ValueError:
        raise GroundTruthError(
            ImportReason.UNSUPPORTED, f"ground truth call {text!r} has a non-literal argument"
        ) from None
    names = signatures[method]["params"]
    if len(args) > len(names):
        raise GroundTruthError(ImportReason.MALFORMED, f"ground truth call {text!r} has too many arguments")
    params = {**dict(zip(names, args, strict=False)), **kwargs}
    unknown = sorted(set(params) - set(names))
    if unknown:
        raise GroundTruthError(
            ImportReason.MALFORMED, f"ground truth call {text!r} passes unknown argument {unknown[0]!r}"
        )
    return {"method": method, "args": args, "kwargs": kwargs, "params": params}


def package_name(classes: list[str]) -> str:
    return "bfcl_" + "_".join(
        re.sub(r"(?<!^)(?=[A-Z])", "_", c).lower().replace("__", "_") for c in sorted(classes)
    )


@dataclass
class PackagePlan:
    """One environment package: its classes and the scenarios (tasks) it holds."""

    name: str
    classes: list[str]
    scenarios: dict[str, dict[str, Any]]


class BFCLTasks:
    """The multi-turn entries of a source, converted once per process (BFCL's own files are small)."""

    def __init__(
        self, source: BFCLSource, categories: tuple[str, ...], ids: frozenset[str] = frozenset()
    ) -> None:
        self.source = source
        self.categories = categories
        self.ids = ids  # only these task ids (empty: all)
        cfg = source.backend_config
        self.signatures: dict[str, dict[str, dict[str, Any]]] = {}
        self.problems: dict[str, str] = {}  # class -> why it cannot be wrapped
        for cls, mod in cfg["modules"].items():
            if cls not in cfg["docs"]:
                continue
            try:
                self.signatures[cls] = class_signatures(source.read(f"{BACKEND_DIR}/{mod}.py"), cls)
            except SyntaxError as exc:
                self.problems[cls] = f"backend class {cls} does not compile: {exc.msg} (line {exc.lineno})"
            except KeyError:
                self.problems[cls] = f"backend module {mod}.py is missing from the source"

    def entries(self) -> Iterator[tuple[str, dict[str, Any], dict[str, Any] | None]]:
        for cat in self.categories:
            qfile, afile = self.source.task_file(cat), self.source.task_file(cat, answers=True)
            if qfile is None:
                continue
            answers = {a.get("id"): a for a in self.source.jsonl(afile)} if afile else {}
            for q in self.source.jsonl(qfile):
                if not self.ids or q.get("id") in self.ids:
                    yield cat, q, answers.get(q.get("id"))

    def convert(self, category: str, q: dict[str, Any], answer: dict[str, Any] | None) -> dict[str, Any]:
        """One entry → the scenario data of its task (raises :class:`GroundTruthError`)."""
        if not isinstance(q.get("id"), str) or not q["id"]:
            raise GroundTruthError(ImportReason.MALFORMED, "entry has no id")
        classes = q.get("involved_classes")
        if not isinstance(classes, list) or not classes or not all(isinstance(c, str) for c in classes):
            raise GroundTruthError(
                ImportReason.MALFORMED, "involved_classes must be a non-empty list of names"
            )
        for c in classes:
            if c in self.problems:
                raise GroundTruthError(ImportReason.SYNTAX_ERROR, self.problems[c])
            if c not in self.signatures:
                raise GroundTruthError(ImportReason.UNSUPPORTED, f"no backend class {c!r} in this bfcl-eval")
        question = q.get("question")
        if not isinstance(question, list) or not question:
            raise GroundTruthError(ImportReason.MALFORMED, "question must be a non-empty list of turns")
        if answer is None or not isinstance(answer.get("ground_truth"), list):
            raise GroundTruthError(ImportReason.MALFORMED, "no ground truth (possible_answer) for this entry")
        truth = answer["ground_truth"]
        if len(truth) != len(question):
            raise GroundTruthError(
                ImportReason.MALFORMED, f"{len(question)} user turns but {len(truth)} ground-truth turns"
            )
        missed = q.get("missed_function") or {}
        turns: list[str] = []
        for i, turn in enumerate(question):
            if not isinstance(turn, list):
                raise GroundTruthError(ImportReason.MALFORMED, f"turn {i} is not a list of messages")
            text = "\n".join(str(m.get("content", "")) for m in turn if isinstance(m, dict)).strip()
            if not text and str(i) in missed:
                text = ADDITIONAL_FUNCTION_PROMPT  # BFCL's own words when held-out functions come back
            if not text:
                raise GroundTruthError(ImportReason.MALFORMED, f"turn {i} has no user message")
            turns.append(text)
        signatures: dict[str, dict[str, Any]] = {}
        for c in classes:  # a method of a later class wins, as in BFCL's method → instance mapping
            signatures.update(self.signatures[c])
        gt = []
        for i, turn in enumerate(truth):
            if not isinstance(turn, list) or not all(isinstance(c, str) for c in turn):
                raise GroundTruthError(
                    ImportReason.MALFORMED, f"ground truth turn {i} is not a list of calls"
                )
            gt.append([parse_call(c, signatures) for c in turn])
        config = q.get("initial_config") or {}
        if not isinstance(config, dict):
            raise GroundTruthError(ImportReason.MALFORMED, "initial_config must be an object")
        return {
            "id": q["id"],
            "category": category,
            "classes": classes,
            "turns": turns,
            "bfcl": {
                "id": q["id"],
                "classes": classes,
                "initial_config": config,
                "long_context": "long_context" in category or "composite" in category,
                "ground_truth": [[{k: c[k] for k in ("method", "args", "kwargs")} for c in t] for t in gt],
            },
            "gold_turns": [[{"tool": c["method"], "params": c["params"]} for c in t] for t in gt],
            "missed_function": missed,
            "excluded_function": q.get("excluded_function") or [],
            "path": q.get("path") or [],
        }


def _write(path: Path, text: str) -> None:
    """Write only when the content changes (the env worker restarts when its package folder changes)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    if not path.is_file() or path.read_text(encoding="utf-8") != text:
        path.write_text(text, encoding="utf-8")


def write_package(
    source: BFCLSource, folder: Path, classes: list[str], scenarios: list[dict[str, Any]]
) -> None:
    """An environment package for ``classes``: the wheel's backend modules (imports made relative), the
    function docs and signatures as data, dataclaw's wrapper, README/SKILL, and a scenario per task."""
    cfg = source.backend_config
    name = folder.name
    modules: dict[str, str] = {}
    todo = [cfg["modules"][c] for c in classes]
    while todo:
        mod = todo.pop()
        if mod in modules:
            continue
        text = source.read(f"{BACKEND_DIR}/{mod}.py")
        deps = _BACKEND_IMPORT.findall(text)
        text = _BACKEND_IMPORT.sub(lambda m: f"{m.group(1)}from .{m.group(2)} import", text)
        if _OTHER_BFCL_IMPORT.search(text):
            raise GroundTruthError(
                ImportReason.UNSUPPORTED, f"backend module {mod} imports other bfcl_eval code"
            )
        modules[mod] = text
        todo.extend(d for _, d in deps)
    for mod, text in modules.items():
        _write(folder / "backend" / f"{mod}.py", text)
    _write(folder / "backend" / "__init__.py", "")
    docs = [d for c in classes for d in source.func_docs(c)]
    sigs: dict[str, Any] = {}
    for c in classes:
        sigs.update(class_signatures(source.read(f"{BACKEND_DIR}/{cfg['modules'][c]}.py"), c))
    backend = {
        "name": name,
        "bfcl_eval": source.version,
        "modules": {c: cfg["modules"][c] for c in classes},
        "stateless": [c for c in classes if c in cfg["stateless"]],
        "func_docs": docs,
        "signatures": sigs,
    }
    _write(folder / "data" / "backend.json", json.dumps(backend, indent=1, sort_keys=True) + "\n")
    _write(folder / "env.py", TEMPLATE.read_text(encoding="utf-8"))
    doc = f'"""BFCL multi-turn backend {", ".join(classes)} (imported by dataclaw)."""\n\n'
    _write(folder / "__init__.py", doc + 'from .env import ENVIRONMENT\n\n__all__ = ["ENVIRONMENT"]\n')
    _write(folder / "__main__.py", MAIN)
    _write(folder / "README.md", _readme(source, name, classes, docs))
    _write(folder / "SKILL.md", _skill(name, classes))
    mark_imported(folder, "bfcl", name, bfcl_eval=source.version)
    for sc in scenarios:
        _write(folder / "data" / "scenarios" / f"{sc['id']}.json", json.dumps(_scenario(sc), indent=1) + "\n")


def _scenario(sc: dict[str, Any]) -> dict[str, Any]:
    return {
        "scenario_id": sc["id"],
        "title": f"BFCL {sc['category']} {sc['id']}",
        "task_prompt": sc["turns"][0],
        "base_time": BASE_TIME,
        "description": f"{len(sc['turns'])} user turns; classes {', '.join(sc['classes'])}",
        "overrides": {"bfcl": sc["bfcl"]},
        "reference_solution": [c for t in sc["gold_turns"] for c in t],
    }


def _readme(source: BFCLSource, name: str, classes: list[str], docs: list[dict[str, Any]]) -> str:
    def summary(d: dict[str, Any]) -> str:
        return str(d.get("description", "")).split("Tool description:")[-1].strip()

    tools = "\n".join(f"- `{d['name']}`: {summary(d)}" for d in docs)
    return f"""# {name}

BFCL-v3 multi-turn backend classes {", ".join(classes)}, imported by dataclaw from the `bfcl-eval`
wheel {source.version} (Berkeley Function-Calling Leaderboard, ShishirPatil/gorilla;
licence: {source.license_text}).
`backend/` holds the classes' source as shipped (only their package imports made relative); `env.py` is
dataclaw's wrapper onto the EnvCraft runtime. It runs only in dataclaw's sandboxed env worker.

Session model: one scenario per BFCL task (`data/scenarios/<task id>.json`); the state holds the task's
initial config and ground truth, the calls made so far and `check`, BFCL's state-based multi-turn verdict.

Trainer bootstrap: `dataclaw env call <this folder> <tool> --scenario <task id>`; tasks come from
`dataclaw tasks import bfcl <wheel> -o RUN`.

Agent commands (one tool per backend method):
{tools}

Stress procedure: `dataclaw env contract <this folder>`.
"""


def _skill(name: str, classes: list[str]) -> str:
    return f"""# {name}

Workflow: read the user's request, call the tools of {", ".join(classes)} in the order the request
needs, and answer in plain text when done.
Rules: use only the listed tools; arguments are plain JSON values; a failed call returns its error as
the result, so read it before retrying.
"""


def gold_replay(folder: Path, scenario_id: str, calls: list[dict[str, Any]]) -> tuple[dict[str, Any], dict]:
    """Initial state of the scenario and the check after replaying ``calls`` through the env worker."""
    env = package_handle(folder)
    session = env.session(scenario_id)
    try:
        initial = session.state()
        errors = []
        for c in calls:
            out = session.call(c["tool"], **c["params"])
            if out.get("status") != "ok":
                errors.append({"tool": c["tool"], "error": out.get("error")})
        final = session.state()
    finally:
        session.close()
    return initial, {**final.get("check", {}), "errors": errors}


VERIFIER = {
    "version": 1,
    "assertions": [
        {"path": "/check/valid", "op": "eq", "value": True, "why": "BFCL multi-turn state and response check"}
    ],
}


@IMPORTERS.add
class BFCLImporter(Importer):
    """BFCL-v3 multi-turn: tasks (``tasks import bfcl``) and backend environments (``env import bfcl``)."""

    name: ClassVar[str] = "bfcl"
    produces: ClassVar[frozenset[Produces]] = frozenset({Produces.TASKS, Produces.ENVIRONMENTS})
    description: ClassVar[str] = "BFCL-v3 multi-turn from the bfcl-eval wheel (zip) or an unpacked copy"
    version: ClassVar[int] = 1

    def sniff(self, src: Path) -> str | None:
        try:
            source = BFCLSource(src)
            if source.task_file("multi_turn_base") is None:
                return "no bfcl_eval/data/BFCL_v*_multi_turn_base.json inside"
        except (ValueError, zipfile.BadZipFile, OSError) as exc:
            return str(exc) if isinstance(exc, ValueError) else f"not a readable wheel ({exc})"
        return None

    def _tasks(self, src: Path, ctx: ImportContext) -> BFCLTasks:
        cats = tuple(ctx.options.get("categories") or CATEGORIES)
        unknown = sorted(set(cats) - set(CATEGORIES))
        if unknown:
            from dataclaw.core.errors import ConfigError

            raise ConfigError(f"unknown BFCL category {unknown[0]!r} (known: {', '.join(CATEGORIES)})")
        return BFCLTasks(BFCLSource(src), cats, frozenset(ctx.options.get("ids") or ()))

    def _plan(self, tasks: BFCLTasks) -> tuple[dict[str, PackagePlan], dict[str, Any]]:
        """Every entry converted, grouped by package; and the entries that failed (key → error)."""
        plans: dict[str, PackagePlan] = {}
        failed: dict[str, Any] = {}
        for cat, q, answer in tasks.entries():
            key = f"{cat}/{q.get('id')}"
            try:
                sc = tasks.convert(cat, q, answer)
            except GroundTruthError as exc:
                failed[key] = exc
                continue
            name = package_name(sc["classes"])
            plans.setdefault(name, PackagePlan(name, sorted(sc["classes"]), {})).scenarios[sc["id"]] = sc
        return plans, failed

    def prepare(self, src: Path, ctx: ImportContext) -> None:
        tasks = self._tasks(src, ctx)
        plans, _ = self._plan(tasks)
        envs = ctx.out / "envs"
        for plan in plans.values():
            write_package(tasks.source, envs / plan.name, plan.classes, list(plan.scenarios.values()))

    def items(self, src: Path, ctx: ImportContext) -> Iterator[SourceItem]:
        tasks = self._tasks(src, ctx)
        plans, failed = self._plan(tasks)
        if ctx.produce is Produces.ENVIRONMENTS:
            for name, plan in sorted(plans.items()):
                yield SourceItem(name, stable_hash([tasks.source.version, plan.classes]), {"package": name})
            return
        by_id = {sid: (name, sc) for name, plan in plans.items() for sid, sc in plan.scenarios.items()}
        for cat, q, answer in tasks.entries():
            key = f"{cat}/{q.get('id')}"
            fp = stable_hash([tasks.source.version, q, answer])
            if key in failed:
                exc = failed[key]
                yield SourceItem(key, fp, {"reject": [str(exc.reason), str(exc)]})
            else:
                name, sc = by_id[q["id"]]
                yield SourceItem(key, fp, {"package": name, "scenario": sc})

    def convert(self, item: SourceItem, ctx: ImportContext) -> list[Record] | ImportReject:
        payload = item.payload or {}
        if "reject" in payload:
            reason, message = payload["reject"]
            return ImportReject(ImportReason(reason), message)
        folder = ctx.out / "envs" / payload["package"]
        if ctx.produce is Produces.ENVIRONMENTS:
            try:
                tools = [t["name"] for t in package_handle(folder).tools()]  # it loads in its env worker
            except Exception as exc:  # noqa: BLE001 - a package that will not load is this item's reject
                return ImportReject(ImportReason.IMPORT_ERROR, f"environment {payload['package']}: {exc}")
            return [self._env_record(folder, payload["package"], item, ctx, tools)]
        sc = payload["scenario"]
        gold = [c for t in sc["gold_turns"] for c in t]
        try:
            initial, check = gold_replay(folder, sc["id"], gold)
        except Exception as exc:  # noqa: BLE001 - a package that will not load is this item's reject
            return ImportReject(ImportReason.IMPORT_ERROR, f"environment {payload['package']}: {exc}")
        if not check.get("valid"):
            return ImportReject(
                GOLD_FAILS,
                f"BFCL's own ground truth does not pass its check when replayed: {check.get('reason')}",
                {"check": check},
            )
        parent = root_id("bfcl", sc["id"], [item.key, item.fingerprint])
        return [
            ToolTask(
                id=parent,
                env=payload["package"],
                env_module=str(folder),
                scenario_id=sc["id"],
                instruction="\n\n".join(sc["turns"]),
                user_turns=sc["turns"],
                initial_state=initial,
                verifier=VERIFIER,
                gold_chain=gold,
                metadata={
                    "source": "bfcl",
                    "bfcl_eval": BFCLSource(ctx.src).version,
                    "bfcl_id": sc["id"],
                    "category": sc["category"],
                    "involved_classes": sc["classes"],
                    "gold_turns": sc["gold_turns"],
                    "missed_function": sc["missed_function"],
                    "excluded_function": sc["excluded_function"],
                    "path": sc["path"],
                    "gold_replay": {
                        k: check[k] for k in ("valid", "turns_passed", "turns", "calls", "reason")
                    },
                },
            ).to_row()
        ]

    def _env_record(
        self, folder: Path, name: str, item: SourceItem, ctx: ImportContext, tools: list[str]
    ) -> Record:
        backend = json.loads((folder / "data" / "backend.json").read_text(encoding="utf-8"))
        rid = root_id("import-env", name, [name, backend["bfcl_eval"], sorted(backend["modules"])])
        return library_row(
            "bfcl", rid, item.key, name, package=str(folder.relative_to(ctx.out)), passed=True,
            tools=len(tools), tool_names=tools, classes=sorted(backend["modules"]),
            scenarios=len(list((folder / "data" / "scenarios").glob("*.json"))),
            bfcl_eval=backend["bfcl_eval"],
        )  # fmt: skip
