"""τ²-bench (sierra-research/tau2-bench) domains → task records and environments, run by tau2's own code.

The source is a tau2-bench checkout (``data/tau2/domains/<d>/{db.json, tasks.json, policy.md, …}`` and
the domain's Python in ``src/tau2/domains/<d>/``) or one domain folder holding ``db.json`` and
``tasks.json`` (its code then comes from a checkout above it, or a ``src/tau2`` tree beside it). A domain
without its code cannot run: each of its tasks is a ``missing_tools`` reject that names the file it looked
for (dataclaw does not re-implement tau2's domains).

Each domain becomes an environment package (``tau2_<domain>``: the checkout's ``src/tau2`` under
``vendor/``, the domain's data under ``data/tau2/domains/<d>/`` as tau2 lays it out, dataclaw's wrapper
``env.py``, a scenario per task). It runs only in the sandboxed env worker, on the ``tau2`` side venv
(``runtime.json``; ``make tau2-setup``): tau2's environment, tools, database hash and evaluators, with
tau2's own dependencies, never imported into dataclaw's process. A task record carries the user scenario
(the simulated user's instructions, as the user turn), the tau2 task itself, and a verifier on
``tau2_reward``: the product, over the task's reward basis, of the components the environment scores
(``db``: tau2's DB check; ``env_assertions``). ``ACTION``, ``COMMUNICATE`` and ``NL_ASSERTION`` need the
transcript (and a judge): listed as ``not_scored``, scored by the rollout. A task is imported only when
its gold actions score 1 and doing nothing scores 0; a task whose gold changes nothing the environment
scores (doing nothing already passes) is an ``unsupported`` reject flagged ``gold_noop``, as is a task
whose basis leaves nothing to score here or whose gold needs the user's own tools. A gold action that
tau2's own tools refuse (retail has reads of ids that do not exist; tau2's evaluator skips them too) is
left out of the task's gold chain and listed in ``metadata.gold_errors``.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any, ClassVar

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

TEMPLATE = Path(__file__).resolve().parent / "tau2_package" / "env.py"
PYTHON_ENV = "tau2"
"""The side venv the packages run on (``.venv-tau2``: tau2's runtime dependencies; ``make tau2-setup``)."""
DOMAIN_FILES = ("environment.py", "tools.py", "data_model.py")
"""What a domain's code must have: tau2's ``get_environment`` and the toolkit and database it builds."""
DATA_FILES = ("db.json", "user_db.json", "policy.md", "policy_solo.md")
BASE_TIME = "2025-01-01T00:00:00Z"
DEFAULT_REWARD_BASIS = ["DB", "COMMUNICATE"]  # tau2's EvaluationCriteria default
MISSING_TOOLS = ImportReason.MISSING_TOOLS
GOLD_FAILS = ImportReason.GOLD_FAILS


class Domain:
    """One domain of a source: where its data and its tools are."""

    def __init__(self, name: str, data: Path, src: Path | None) -> None:
        self.name = name
        self.data = data  # holds db.json, tasks.json, policy.md
        self.src = src  # the ``src/tau2`` tree (None when not found)

    def tools_problem(self) -> str | None:
        """Why the domain's tau2 code cannot run (None: it is all there)."""
        if self.src is None:
            return (
                f"domain {self.name!r} has no tools: expected a tau2-bench checkout with "
                f"src/tau2/domains/{self.name}/tools.py around {self.data}"
            )
        for name in DOMAIN_FILES:
            path = self.src / "domains" / self.name / name
            if not path.is_file():
                return f"domain {self.name!r} has no {name[:-3]} module {path}"
        return None

    def tasks(self) -> list[Any]:
        return json.loads((self.data / "tasks.json").read_text(encoding="utf-8"))


def _find_src(start: Path) -> Path | None:
    """``src/tau2`` of the checkout that holds ``start`` (or beside it)."""
    for folder in [start, *start.parents]:
        cand = folder / "src" / "tau2"
        if (cand / "domains").is_dir():
            return cand
    return None


def domains(src: Path) -> list[Domain]:
    """The domains of a checkout (``data/tau2/domains/*``), a ``domains`` folder, or one domain folder."""
    if (src / "tasks.json").is_file() and (src / "db.json").is_file():
        return [Domain(src.name, src, _find_src(src))]
    for base in (src / "data" / "tau2" / "domains", src / "domains", src):
        found = sorted(
            d
            for d in base.glob("*")
            if d.is_dir() and (d / "tasks.json").is_file() and (d / "db.json").is_file()
        )
        if found:
            return [Domain(d.name, d, _find_src(d) or _find_src(src)) for d in found]
    return []


def _write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    if not path.is_file() or path.read_text(encoding="utf-8") != text:
        path.write_text(text, encoding="utf-8")


def _copy_tree(src: Path, dst: Path) -> None:
    """The checkout's Python sources (and nothing else) into ``dst``, rewritten only when changed."""
    for f in sorted(src.rglob("*.py")):
        if "__pycache__" in f.parts:
            continue
        _write(dst / f.relative_to(src), f.read_text(encoding="utf-8"))


class ScenarioError(ValueError):
    def __init__(self, reason: ImportReason, message: str) -> None:
        super().__init__(message)
        self.reason = reason


def _user_turn(scenario: Any) -> str:
    """The simulated user's instructions as the task's user turn (tau2 plays them with an LLM user)."""
    if not isinstance(scenario, dict):
        raise ScenarioError(ImportReason.MALFORMED, "user_scenario must be an object")
    ins = scenario.get("instructions")
    if isinstance(ins, str) and ins.strip():
        return ins.strip()
    if isinstance(ins, dict):
        parts = [
            str(ins[k]).strip() for k in ("reason_for_call", "known_info", "task_instructions") if ins.get(k)
        ]
        if parts:
            return "\n".join(parts)
    raise ScenarioError(ImportReason.MALFORMED, "user_scenario has no instructions")


def _actions(items: Any, what: str) -> list[dict[str, Any]]:
    out = []
    for i, a in enumerate(items or []):
        if not isinstance(a, dict) or not isinstance(a.get("name") or a.get("func_name"), str):
            raise ScenarioError(ImportReason.MALFORMED, f"{what}[{i}] has no name")
        who = a.get("requestor") or a.get("env_type") or "assistant"
        if who != "assistant":
            raise ScenarioError(
                ImportReason.UNSUPPORTED,
                f"{what}[{i}] uses the {who}'s tools (the user side is not imported)",
            )
        args = a.get("arguments") or {}
        if not isinstance(args, dict):
            raise ScenarioError(ImportReason.MALFORMED, f"{what}[{i}] arguments must be an object")
        out.append({"name": a.get("name") or a["func_name"], "arguments": args})
    return out


def convert_task(domain: str, task: Any) -> dict[str, Any]:
    """One ``tasks.json`` entry → the scenario data of its task (raises :class:`ScenarioError`). The task
    itself goes to tau2 as it is; what is checked here is what dataclaw needs of it: an id, the user's
    instructions, well-formed actions, and gold actions the agent can take (not the user's tools)."""
    if not isinstance(task, dict) or not isinstance(task.get("id"), str) or not task["id"]:
        raise ScenarioError(ImportReason.MALFORMED, "task has no id")
    turn = _user_turn(task.get("user_scenario"))
    crit = task.get("evaluation_criteria") or {}
    if not isinstance(crit, dict):
        raise ScenarioError(ImportReason.MALFORMED, "evaluation_criteria must be an object")
    init = task.get("initial_state") or {}
    if not isinstance(init, dict):
        raise ScenarioError(ImportReason.MALFORMED, "initial_state must be an object")
    gold = _actions(crit.get("actions"), "evaluation_criteria.actions")
    basis = list(crit.get("reward_basis") or DEFAULT_REWARD_BASIS)
    for i, a in enumerate(crit.get("env_assertions") or []):
        if isinstance(a, dict) and a.get("env_type") == "user" and "ENV_ASSERTION" in basis:
            raise ScenarioError(
                ImportReason.UNSUPPORTED,
                f"env_assertions[{i}] checks the user's side ({a.get('func_name')}): only the user's own "
                "tools can meet it (the user side is not imported)",
            )
    return {
        "id": task["id"],
        "turn": turn,
        "setup": {"domain": domain, "task": task},
        "gold": [{"tool": a["name"], "params": a["arguments"]} for a in gold],
        "reward_basis": basis,
        "criteria": crit,
        "user_scenario": task.get("user_scenario"),
        "description": task.get("description"),
        "ticket": task.get("ticket"),
    }


def write_package(domain: Domain, folder: Path, scenarios: list[dict[str, Any]]) -> None:
    """The environment package of a domain: vendor/tau2 (the checkout's sources), the domain's data in
    tau2's layout (data/tau2/domains/<d>/), the side venv it runs on (runtime.json), dataclaw's wrapper,
    README/SKILL and a scenario per task."""
    assert domain.src is not None
    name = folder.name
    _copy_tree(domain.src, folder / "vendor" / "tau2")
    data = folder / "data" / "tau2" / "domains" / domain.name
    data.mkdir(parents=True, exist_ok=True)
    for fname in DATA_FILES:
        src, dst = domain.data / fname, data / fname
        if src.is_file() and (not dst.is_file() or dst.stat().st_size != src.stat().st_size):
            shutil.copyfile(src, dst)
    policy = domain.data / "policy.md"
    _write(folder / "data" / "policy.md", policy.read_text(encoding="utf-8") if policy.is_file() else "")
    _write(folder / "runtime.json", json.dumps({"python_env": PYTHON_ENV}) + "\n")
    _write(
        folder / "data" / "domain.json", json.dumps({"name": name, "domain": domain.name}, indent=1) + "\n"
    )
    _write(folder / "env.py", TEMPLATE.read_text(encoding="utf-8"))
    doc = f'"""τ²-bench domain {domain.name} (imported by dataclaw)."""\n\n'
    _write(folder / "__init__.py", doc + 'from .env import ENVIRONMENT\n\n__all__ = ["ENVIRONMENT"]\n')
    _write(
        folder / "__main__.py",
        "from dataclaw.envcraft.runtime.cli import main\n\nfrom . import ENVIRONMENT\n\n"
        "raise SystemExit(main(ENVIRONMENT))\n",
    )
    _write(folder / "README.md", _readme(domain, name))
    skill = "Follow the domain policy (data/policy.md); look records up with the read tools before any write."
    _write(folder / "SKILL.md", f"# {name}\n\n{skill}\n")
    mark_imported(folder, "tau2", domain.name)
    for sc in scenarios:
        _write(
            folder / "data" / "scenarios" / f"{_file(sc['id'])}.json",
            json.dumps(_scenario(sc), indent=1) + "\n",
        )


def _file(task_id: str) -> str:
    return "".join(c if c.isalnum() or c in "-_." else "_" for c in task_id)


def _scenario(sc: dict[str, Any]) -> dict[str, Any]:
    return {
        "scenario_id": sc["id"],
        "title": f"tau2 {sc['setup']['domain']} task {sc['id']}",
        "task_prompt": sc["turn"],
        "base_time": BASE_TIME,
        "overrides": {"tau2": sc["setup"]},
        "reference_solution": sc["gold"],
        "evaluation": {"db_hash": sc.get("db_hash", "")},
    }


def _readme(domain: Domain, name: str) -> str:
    return f"""# {name}

τ²-bench domain `{domain.name}` (sierra-research/tau2-bench, MIT), imported by dataclaw. `vendor/tau2` is
the checkout's `src/tau2` as shipped and `data/tau2/domains/{domain.name}/` the domain's data in tau2's
layout; `env.py` is dataclaw's wrapper onto the EnvCraft runtime: tau2's own environment, tools and
evaluators. It runs only in dataclaw's sandboxed env worker, on the `tau2` side venv (`runtime.json`).

Session model: one scenario per tau2 task (`data/scenarios/`); the state holds the tau2 task, every
state-mutating tool call with tau2's response, the database hashes and `reward_components` (`db`,
`env_assertions`; weight 1 when in the task's reward basis) with `tau2_reward` their product.

Trainer bootstrap: `dataclaw env call <this folder> <tool> --scenario <task id>`; tasks come from
`dataclaw tasks import tau2 <checkout> -o RUN`.

Agent commands: the domain's tools (`dataclaw env tools <this folder>`); the agent policy is
`data/policy.md`.

Stress procedure: `dataclaw env contract <this folder>`.
"""


def replay(folder: Path, scenario_id: str, calls: list[dict[str, Any]]) -> tuple[dict, dict, list[dict]]:
    """Initial state, final state and failed calls of ``calls`` replayed in a fresh session."""
    session = package_handle(folder).session(scenario_id)
    try:
        initial = session.state()
        errors = []
        for i, c in enumerate(calls):
            out = session.call(c["tool"], **c["params"])
            if out.get("status") != "ok":
                errors.append({"index": i, "tool": c["tool"], "error": out.get("error")})
        return initial, session.state(), errors
    finally:
        session.close()


VERIFIER = {
    "version": 1,
    "assertions": [
        {
            "path": "/tau2_reward",
            "op": "eq",
            "value": 1.0,
            "why": "tau2's reward: every component in the task's reward basis (reward_components) scores 1",
        }
    ],
}


def _weighted(state: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {k: c for k, c in (state.get("reward_components") or {}).items() if c.get("weight", 0) > 0}


@IMPORTERS.add
class Tau2Importer(Importer):
    """τ²-bench: tasks (``tasks import tau2``) and domain environments (``env import tau2``)."""

    name: ClassVar[str] = "tau2"
    produces: ClassVar[frozenset[Produces]] = frozenset({Produces.TASKS, Produces.ENVIRONMENTS})
    description: ClassVar[str] = "τ²-bench checkout (data/tau2/domains/<d> + src/tau2/domains/<d>/)"
    version: ClassVar[int] = 3

    def sniff(self, src: Path) -> str | None:
        if not src.is_dir():
            return "not a folder"
        if not domains(src):
            return "no tau2 domain (a folder with db.json and tasks.json, or data/tau2/domains/<d>/) inside"
        return None

    def _plan(self, src: Path) -> list[tuple[Domain, list[tuple[str, Any, Any]]]]:
        """Per domain: (key, scenario data or None, error or None) of each task."""
        out = []
        for d in domains(src):
            rows: list[tuple[str, Any, Any]] = []
            try:
                tasks = d.tasks()
                if not isinstance(tasks, list):
                    raise ValueError("tasks.json must be a list")
            except (OSError, ValueError) as exc:
                rows.append((f"{d.name}/tasks.json", None, ScenarioError(ImportReason.UNREADABLE, str(exc))))
                out.append((d, rows))
                continue
            seen: set[str] = set()
            for i, t in enumerate(tasks):
                tid = t.get("id") if isinstance(t, dict) else None
                key = f"{d.name}/{tid if isinstance(tid, str) else f'#{i}'}"
                try:
                    sc = convert_task(d.name, t)
                    if sc["id"] in seen:
                        raise ScenarioError(ImportReason.DUPLICATE, f"task id {sc['id']!r} appears twice")
                    seen.add(sc["id"])
                    rows.append((key, sc, None))
                except ScenarioError as exc:
                    rows.append((key, None, exc))
            out.append((d, rows))
        return out

    def prepare(self, src: Path, ctx: ImportContext) -> None:
        for d, rows in self._plan(src):
            if d.tools_problem() is None:
                write_package(d, ctx.out / "envs" / f"tau2_{d.name}", [sc for _, sc, _ in rows if sc])

    def items(self, src: Path, ctx: ImportContext) -> Iterator[SourceItem]:
        for d, rows in self._plan(src):
            problem = d.tools_problem()
            fp_domain = stable_hash([(d.data / "db.json").stat().st_size, problem])
            if ctx.produce is Produces.ENVIRONMENTS:
                payload = {"package": f"tau2_{d.name}", "missing": problem}
                yield SourceItem(d.name, fp_domain, payload)
                continue
            for key, sc, err in rows:
                fp = stable_hash([fp_domain, sc or str(err)])
                if err is not None:
                    yield SourceItem(key, fp, {"reject": [str(err.reason), str(err)]})
                elif problem is not None:
                    yield SourceItem(key, fp, {"reject": [str(MISSING_TOOLS), problem]})
                else:
                    yield SourceItem(key, fp, {"package": f"tau2_{d.name}", "scenario": sc})

    def convert(self, item: SourceItem, ctx: ImportContext) -> list[Record] | ImportReject:
        payload = item.payload or {}
        if "reject" in payload:
            reason, message = payload["reject"]
            return ImportReject(ImportReason(reason), message)
        folder = ctx.out / "envs" / payload["package"]
        if ctx.produce is Produces.ENVIRONMENTS:
            if payload["missing"]:
                return ImportReject(MISSING_TOOLS, payload["missing"])
            try:
                tools = [t["name"] for t in package_handle(folder).tools()]
            except Exception as exc:  # noqa: BLE001 - a domain whose tools will not load is its reject
                return ImportReject(ImportReason.IMPORT_ERROR, f"environment {payload['package']}: {exc}")
            rid = root_id("import-env", payload["package"], [payload["package"], item.fingerprint])
            return [
                library_row(
                    "tau2",
                    rid,
                    item.key,
                    payload["package"],
                    package=str(folder.relative_to(ctx.out)),
                    passed=True,
                    tools=len(tools),
                    tool_names=tools,
                    scenarios=len(list((folder / "data" / "scenarios").glob("*.json"))),
                )
            ]
        sc = payload["scenario"]
        try:
            initial, final, errors = replay(folder, sc["id"], sc["gold"])
        except Exception as exc:  # noqa: BLE001 - a domain whose tools will not load is this item's reject
            return ImportReject(ImportReason.IMPORT_ERROR, f"environment {payload['package']}: {exc}")
        unknown = [e for e in errors if (e.get("error") or {}).get("category") == "unknown_tool"]
        if unknown:
            return ImportReject(
                ImportReason.UNKNOWN_TOOL, f"gold action calls unknown tool {unknown[0]['tool']!r}"
            )
        scored = _weighted(final)
        if not scored:
            return ImportReject(
                ImportReason.UNSUPPORTED,
                f"nothing the environment can score: reward basis {sc['reward_basis']} (ACTION, COMMUNICATE "
                "and NL_ASSERTION need the transcript and a judge)",
            )
        if final.get("tau2_reward") != 1.0:
            failing = {k: c["detail"] for k, c in scored.items() if c["score"] != 1.0}
            return ImportReject(
                GOLD_FAILS,
                "the gold actions do not score 1: " + "; ".join(f"{k}: {d}" for k, d in failing.items()),
                {"errors": errors, "components": final.get("reward_components")},
            )
        if initial.get("tau2_reward") == 1.0:
            return ImportReject(
                ImportReason.UNSUPPORTED,
                "gold_noop: doing nothing already scores 1 (the gold actions change nothing the "
                f"environment scores on {sorted(scored)}), so a pass cannot tell a solution from no attempt",
                {"flag": "gold_noop", "components": initial.get("reward_components")},
            )
        failed = {e["index"] for e in errors}
        return [
            ToolTask(
                id=root_id("tau2", sc["id"], [item.key, item.fingerprint]),
                env=payload["package"],
                env_module=str(folder),
                scenario_id=sc["id"],
                instruction=sc["turn"],
                user_turns=[sc["turn"]],
                initial_state=initial,
                verifier=VERIFIER,
                gold_chain=[c for i, c in enumerate(sc["gold"]) if i not in failed],
                metadata={
                    "source": "tau2",
                    "domain": sc["setup"]["domain"],
                    "tau2_id": sc["id"],
                    "reward_basis": sc["reward_basis"],
                    "scored": sorted(scored),
                    "not_scored": [b for b in sc["reward_basis"] if b not in ("DB", "ENV_ASSERTION")],
                    "evaluation_criteria": sc["criteria"],
                    "user_scenario": sc["user_scenario"],
                    "description": sc["description"],
                    "ticket": sc["ticket"],
                    "gold_errors": errors,  # dropped from the chain: tau2 skips them, they change nothing
                },
            ).to_row()
        ]
