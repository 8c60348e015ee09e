"""What every trainer export shares: reading a task set, checking it, locating its environment's code,
naming its tools, and writing the export folder's manifest and tasks.

An export serves **one environment group** (one environment, or one cross-environment group ``a+b``): a
trainer's environment class (TRL) or tool config (VERL) offers one tool set. A task set that mixes groups
is refused with the groups listed; ``group=`` picks one. Built-in archetypes are loaded from the installed
dataclaw (light core); any other environment package is statically audited and copied into
``envs/<package>/`` so the export does not depend on where it was made.
"""

from __future__ import annotations

import json
import keyword
import shutil
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

from dataclaw import __version__
from dataclaw.core.errors import ConfigError
from dataclaw.core.moved import keep_old_names
from dataclaw.core.review import review_filter
from dataclaw.envcraft.export.episode import MANIFEST, REWARD_MODES, TASKS_FILE
from dataclaw.envcraft.runtime.task import CLAW_KIND, TaskRowError, ToolTask, read_task_rows, write_tool_tasks

RESERVED_METHODS = frozenset({"reset", "get_reward"})


class ExportError(ConfigError):
    """The task set cannot be exported as asked (one clear line: which input, what is wrong)."""


def read_tasks(path: str | Path) -> tuple[Path, list[ToolTask]]:
    """Tool tasks from a ``tasks.jsonl`` (or a run folder holding one), checked for the keys an export
    needs; claw workspace tasks are refused (they run in a sandboxed workspace, not a session)."""
    src = Path(path)
    if src.is_dir():
        src = src / TASKS_FILE
    if not src.is_file():
        raise ExportError(f"{path}: no tasks file (give a tasks.jsonl or a run folder holding one)")
    tasks = []
    try:
        for where, row in read_task_rows(src):
            if row.get("kind") == CLAW_KIND:
                raise ExportError(
                    f"{where}: task {row.get('id')!r} is a claw workspace task; only tool tasks (from "
                    "`dataclaw tasks synth`) export to trainers"
                )
            task = ToolTask.from_row(row, where)
            if not (task.instruction or task.user_turns):
                raise ExportError(f"{where}: task {task.id!r} has no instruction and no user turns")
            tasks.append(task)
    except TaskRowError as exc:
        raise ExportError(str(exc)) from None
    if not tasks:
        raise ExportError(f"{src}: no tasks")
    ids = Counter(t.id for t in tasks)
    dup = [i for i, c in ids.items() if c > 1]
    if dup:
        raise ExportError(f"{src}: task id {dup[0]!r} appears {ids[dup[0]]} times")
    return src, tasks


def select_group(tasks: list[ToolTask], group: str | None, source: Path) -> list[ToolTask]:
    """The tasks of one environment group: ``group``, or the only one present."""
    counts = Counter(t.group for t in tasks)
    listed = ", ".join(f"{g} ({n} tasks)" for g, n in counts.most_common())
    if group is not None:
        if group not in counts:
            raise ExportError(f"{source}: no task runs in environment group {group!r}; it holds {listed}")
        return [t for t in tasks if t.group == group]
    if len(counts) > 1:
        raise ExportError(
            f"{source} mixes environment groups: {listed}. A trainer environment serves one tool set: "
            "export one group at a time with --env GROUP"
        )
    return tasks


@dataclass
class EnvCode:
    """Where the export finds an environment's code: a built-in archetype, or a package it copies."""

    env: str
    archetype: str | None = None
    package: Path | None = None
    imported: str | None = None
    """The format an importer wrote the package from (its code is the publisher's), else None."""

    def manifest(self) -> dict[str, str]:
        if self.archetype:
            return {"archetype": self.archetype}
        assert self.package is not None
        where = {"path": f"envs/{self.package.name}"}
        return {**where, "imported": self.imported} if self.imported else where


def locate_env(task: ToolTask, env: str) -> EnvCode:
    """The code of ``env`` as named by ``task`` (``env_module`` / ``env_modules``). A package other than
    an archetype is described by its sandboxed env worker, never imported here: an export copies files,
    and generated or imported code runs in dataclaw's process nowhere."""
    from dataclaw.envcraft.runtime.resolve import resolve_env
    from dataclaw.envcraft.worker import env_class

    module = task.module_of(env)
    try:
        ref = resolve_env(env, module)
        if ref.archetype == env:
            return EnvCode(env, archetype=env)
        name, folder = env_class(ref).name, ref.folder
    except Exception as exc:  # noqa: BLE001 - whatever stops it loading, the user needs to know which env
        raise ExportError(
            f"task {task.id!r}: cannot load environment {env!r} from {module or env!r}: {exc}"
        ) from None
    if name != env:
        raise ExportError(f"task {task.id!r}: {module!r} holds environment {name!r}, not {env!r}")
    from dataclaw.envcraft.importers.base import imported_from

    marker = imported_from(folder)
    return EnvCode(env, package=folder, imported=marker["format"] if marker else None)


def audit_env(code: EnvCode) -> None:
    """Refuse a non-built-in package that fails the static audit (Table 15 rules, contract layout). An
    imported package is the publisher's code behind dataclaw's wrapper, not generated code: those rules do
    not apply to it (it is loaded and its gold chains replayed like any other)."""
    if code.package is None or code.imported:
        return
    from dataclaw.envcraft.audit import audit_package

    report = audit_package(code.package, dynamic=False)
    if not report.passed:
        reasons = "; ".join(report.reasons()[:3])
        raise ExportError(
            f"environment {code.env!r} ({code.package}) fails its audit: {reasons} "
            f"(see `dataclaw env audit {code.package}`)"
        )


def method_name(tool: str) -> str:
    """The agent-facing name of an environment tool: ``env.tool`` → ``env__tool`` (a Python identifier,
    a valid OpenAI function name)."""
    name = tool.replace(".", "__")
    if not name.isidentifier() or keyword.iskeyword(name) or name.startswith("_"):
        raise ExportError(f"tool {tool!r} has no valid method name ({name!r} is not a Python identifier)")
    if name in RESERVED_METHODS:
        raise ExportError(f"tool {tool!r} clashes with the trainer's reserved method {name}()")
    return name


def flat_schema(schema: dict[str, Any]) -> dict[str, Any]:
    """A parameter schema with its ``anyOf`` folded in, for trainer formats that read ``type``/``enum``/
    ``items`` at the top (an imported tool wraps its type in ``anyOf`` so the runtime passes values through
    unconverted: BFCL's ``{"anyOf": [{"type": "integer"}]}`` is an integer to the agent). Several members
    become a type list; an enum is kept only when every member has one."""
    members = schema.get("anyOf")
    if not isinstance(members, list) or not members:
        return schema
    flat = [flat_schema(m) for m in members if isinstance(m, dict)]
    out = {k: v for k, v in schema.items() if k != "anyOf"}
    if len(flat) == 1:
        return {**flat[0], **out}
    kinds: list[str] = []
    for m in flat:
        kind = m.get("type")
        for k in kind if isinstance(kind, list) else [kind] if kind else []:
            if k not in kinds:
                kinds.append(k)
    if kinds and all(m.get("type") for m in flat):
        out["type"] = kinds[0] if len(kinds) == 1 else kinds
    if all("enum" in m for m in flat):
        out["enum"] = list(dict.fromkeys(v for m in flat for v in m["enum"]))
    arrays = [m["items"] for m in flat if m.get("type") == "array" and "items" in m]
    if len(arrays) == 1:
        out["items"] = arrays[0]
    return out


def param_description(param: Any) -> str:
    """A parameter's description for a trainer schema, one line; an object parameter whose schema names its
    fields (BFCL's ``edit_ticket(updates)``) lists them, since neither a Python ``dict`` hint (TRL) nor
    VERL's property schema can carry them."""
    text = " ".join((param.description or "").split())
    fields = flat_schema(param.schema).get("properties")
    if isinstance(fields, dict) and fields:
        listed = []
        for name, sub in fields.items():
            sub = flat_schema(sub) if isinstance(sub, dict) else {}
            kind = sub.get("type", "value")
            kind = " or ".join(kind) if isinstance(kind, list) else kind
            note = " ".join(str(sub.get("description", "")).split())
            listed.append(f"{name} ({kind}){': ' + note if note else ''}")
        text = f"{text} Fields: {'; '.join(listed)}".strip()
        text += "" if text.endswith(".") else "."
    return text


def check_gold(env_cls: Any, tasks: list[ToolTask]) -> None:
    """Replay every task's gold chain from S0: the verifier must score it 1.0 (a stale task set — the
    environment changed since synthesis — would otherwise train on rewards nobody can earn)."""
    from dataclaw.envcraft.tasks.tool.execute import run_calls
    from dataclaw.envcraft.tasks.tool.verifier import evaluate

    bad = []
    for t in tasks:
        if not t.gold_chain:
            continue
        _, final = run_calls(env_cls, t.scenario_id, t.initial_state, t.gold_chain)
        if not evaluate(t.verifier, final)["passed"]:
            bad.append(t.id)
    if bad:
        more = f" and {len(bad) - 3} more" if len(bad) > 3 else ""
        raise ExportError(
            f"the gold chain of {len(bad)} task(s) no longer passes its verifier "
            f"({', '.join(bad[:3])}{more}): the environment changed since the tasks were made; "
            "resynthesise them (or pass --no-check)"
        )


def soundness_summary(reports: list[Any], settings: Any = None) -> dict[str, Any]:
    """What the export's manifest and printed summary say of the suite it ran: tasks and tasks per reason
    (:func:`~dataclaw.envcraft.quality.soundness.summarize`), the settings, and per policy the tasks it
    scored, its runs, the tasks it found sound, and the lowest, mean and highest of the tasks' figures
    (gold, untouched: the score; collateral, wrong_last_write, skip_write: the highest run; random: the
    mean)."""
    from dataclaw.envcraft.quality.soundness import Policy, SoundnessSettings, summarize

    out = {"checked": True, **summarize(reports)}
    out["settings"] = (settings or SoundnessSettings()).to_dict()
    policies: dict[str, Any] = {}
    for policy in Policy:
        figs = [f for rep in reports for f in rep.figures if f.policy == policy]
        scores = [f.score for f in figs if f.score is not None]
        policies[str(policy)] = {
            "tasks": len(scores),
            "runs": sum(f.runs for f in figs),
            "sound": sum(f.ok for f in figs if f.score is not None),
            "min": round(min(scores), 4) if scores else None,
            "mean": round(sum(scores) / len(scores), 4) if scores else None,
            "max": round(max(scores), 4) if scores else None,
        }
    out["policies"] = policies
    return out


def soundness_lines(summary: dict[str, Any] | None) -> list[str]:
    """The soundness summary in words, one line per policy (what ``tasks export`` prints)."""
    if not summary:
        return []
    if not summary.get("checked"):
        return [f"soundness: not checked ({summary.get('why', 'skipped')})"]
    lines = [f"soundness: {summary['passed']}/{summary['tasks']} tasks sound"]
    for policy, f in summary["policies"].items():
        if not f["tasks"]:
            lines.append(f"  {policy:<17} not tried (no run applies)")
            continue
        lines.append(
            f"  {policy:<17} {f['sound']}/{f['tasks']} sound over {f['runs']} runs; "
            f"score min {f['min']:.3f} mean {f['mean']:.3f} max {f['max']:.3f}"
        )
    return lines


def check_soundness(env_cls: Any, tasks: list[ToolTask], settings: Any = None) -> dict[str, Any]:
    """Run the soundness suite (:mod:`dataclaw.envcraft.quality.soundness`) on every task and refuse the
    set when any fails it (a reward a policy games by doing nothing, harm or extra must not reach a
    trainer); returns the suite's figures (:func:`soundness_summary`) for the export manifest."""
    from dataclaw.envcraft.quality.soundness import run_soundness

    reports = [run_soundness(t, settings, env_cls) for t in tasks]
    bad = [r for r in reports if not r.passed]
    if bad:
        named = "; ".join(f"{r.task_id} ({', '.join(map(str, r.reasons))})" for r in bad[:3])
        more = f" and {len(bad) - 3} more" if len(bad) > 3 else ""
        raise ExportError(
            f"{len(bad)} task(s) fail the soundness suite: {named}{more}. A policy that games a reward "
            "learns the gaming: audit them (`dataclaw tasks audit`), resynthesise them, or pass --no-check"
        )
    return soundness_summary(reports, settings)


def has_scenario(env_cls: Any, scenario_id: str) -> bool:
    """Whether ``scenario_id`` names a scenario of the environment (one per member for a group, whose
    combined catalogue is capped)."""
    members = getattr(env_cls, "members", None)
    if not members:
        return scenario_id in env_cls.scenarios()
    try:
        parts = env_cls.split_scenario(scenario_id)
    except ValueError:
        return False
    return all(sc in members[env].scenarios() for env, sc in parts.items())


@dataclass
class Prepared:
    """A checked task set of one group, ready to be written in a trainer's format."""

    source: Path
    group: str
    tasks: list[ToolTask]
    env_cls: Any
    envs: list[EnvCode]
    tools: dict[str, str]  # agent-facing name -> environment tool name
    reward: str
    soundness: dict[str, Any] | None = None
    """The soundness suite's figures (:func:`soundness_summary`), or why it was not run."""
    left_out: dict[str, int] = field(default_factory=dict)
    """Tasks the run's human verdicts kept out, by reason (``human_rejected``, ``unreviewed``)."""


def prepare(
    tasks_path: str | Path,
    *,
    group: str | None = None,
    reward: str = "binary",
    check: bool = True,
    soundness: Any = True,
    reviewed_only: bool = False,
) -> Prepared:
    """Read, select one group, locate and audit its environments, name its tools, check gold chains and
    (with ``check``) the soundness suite of every task not imported from a published set: ``soundness``
    True (its default settings), a :class:`~dataclaw.envcraft.quality.soundness.SoundnessSettings`, or
    False to skip it. Tasks a reviewer rejected in ``dataclaw view`` are left out, and with
    ``reviewed_only`` those nobody decided on (:func:`reviewed_tasks`)."""
    from dataclaw.envcraft.tasks.tool.stages import record_env

    if reward not in REWARD_MODES:
        raise ExportError(f"reward must be one of {', '.join(REWARD_MODES)}, not {reward!r}")
    source, tasks = read_tasks(tasks_path)
    tasks, left_out = reviewed_tasks(source, tasks, reviewed_only)
    tasks = select_group(tasks, group, source)
    first = tasks[0]
    envs = [locate_env(first, e) for e in first.member_envs]
    for code in envs:
        audit_env(code)
    try:
        env_cls = record_env(first)
    except Exception as exc:  # noqa: BLE001 - name the task and the environment, not a traceback
        where = f"task {first.id!r}: cannot load environment {first.group!r}"
        raise ExportError(f"{where}: {exc}") from None
    for t in tasks:
        if not has_scenario(env_cls, t.scenario_id):
            raise ExportError(f"task {t.id!r}: environment {t.group!r} has no scenario {t.scenario_id!r}")
    tools = {method_name(spec.name): spec.name for spec in env_cls.tools}
    if len(tools) != len(env_cls.tools):
        raise ExportError(f"environment {first.group!r}: two tools map to the same method name")
    figures: dict[str, Any] = {"checked": False, "why": "--no-check: gold chains and soundness not checked"}
    if check:
        check_gold(env_cls, tasks)
        # tasks of imported sets carry their publisher's verifiers, which dataclaw cannot remake: their
        # figures are `tasks audit`'s to report, not a reason to refuse the publisher's own benchmark
        from dataclaw.envcraft.importers.base import publisher_set

        ours = [t for t in tasks if publisher_set(t) is None]
        if soundness is False:
            figures = {"checked": False, "why": "soundness=False: the suite was skipped"}
        elif not ours:
            figures = {
                "checked": False,
                "why": "an imported publisher set: its own verifiers (`dataclaw tasks audit` reports them)",
            }
        else:
            figures = check_soundness(env_cls, ours, None if soundness is True else soundness)
            figures["publisher_tasks"] = len(tasks) - len(ours)
    return Prepared(source, first.group, tasks, env_cls, envs, tools, reward, figures, left_out)


def reviewed_tasks(
    source: Path, tasks: list[ToolTask], reviewed_only: bool
) -> tuple[list[ToolTask], dict[str, int]]:
    """``tasks`` less those the human verdicts of the run holding ``source`` keep out, and the counts by
    reason; nothing left is an error that says why."""
    why = review_filter(source.parent, "task", reviewed_only)
    kept, left_out = [], Counter[str]()
    for t in tasks:
        reason = why(t.id)
        if reason is None:
            kept.append(t)
        else:
            left_out[reason] += 1
    if not kept:
        counts = ", ".join(f"{n} {r}" for r, n in left_out.items())
        raise ExportError(f"{source}: no task left to export after the review ({counts})")
    return kept, dict(left_out)


@dataclass
class ExportResult:
    """What an exporter wrote."""

    format: str
    out: Path
    group: str
    tasks: int
    files: list[str] = field(default_factory=list)
    usage: str = ""
    soundness: dict[str, Any] | None = None
    """What the export checked of the rewards (:func:`soundness_summary`, or why it did not)."""
    left_out: dict[str, int] = field(default_factory=dict)
    """Tasks left out by the run's human verdicts, by reason."""


class Exporter:
    """A trainer format: ``write(prepared, out)`` fills ``out`` and returns the files it wrote."""

    name: ClassVar[str]
    description: ClassVar[str]

    def write(self, prep: Prepared, out: Path) -> ExportResult:  # pragma: no cover - interface
        raise NotImplementedError


def write_common(prep: Prepared, out: Path, fmt: str, extra: dict[str, Any] | None = None) -> list[str]:
    """The manifest, the tasks and copies of non-built-in environment packages; the manifest's
    ``rollouts`` holds pass^k and the components of rollouts beside the tasks (:mod:`.rollouts`)."""
    from dataclaw.envcraft.export.rollouts import rollout_stats, unscored_basis

    out.mkdir(parents=True, exist_ok=True)
    files = [MANIFEST, TASKS_FILE]
    for code in prep.envs:
        if code.package is not None:
            dest = out / "envs" / code.package.name
            if dest.exists():
                shutil.rmtree(dest)
            shutil.copytree(code.package, dest, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
            files.append(f"envs/{code.package.name}/")
    write_tool_tasks(out / TASKS_FILE, prep.tasks)
    manifest = {
        "format": fmt,
        "dataclaw_version": __version__,
        "group": prep.group,
        "envs": [c.env for c in prep.envs],
        "sources": {c.env: c.manifest() for c in prep.envs},
        "reward": prep.reward,
        "tools": prep.tools,
        "tasks": len(prep.tasks),
        "source": str(prep.source),
        "soundness": prep.soundness,
        "rollouts": rollout_stats(prep.source.parent, [t.id for t in prep.tasks]),
        "unscored_basis": unscored_basis(prep.tasks),
        **(extra or {}),
    }
    (out / MANIFEST).write_text(json.dumps(manifest, indent=2) + "\n", encoding="utf-8")
    return files


def class_name(group: str) -> str:
    """``transactional_workspace`` → ``TransactionalWorkspaceEnv``; ``a+b`` → ``APlusBEnv``."""
    parts = [p for chunk in group.split("+") for p in ("plus", *chunk.replace("-", "_").split("_"))][1:]
    name = "".join(p[:1].upper() + p[1:] for p in parts if p) + "Env"
    return name if name.isidentifier() else "DataclawEnv"


def docstring_literal(text: str, indent: str) -> str:
    """``text`` as a docstring literal indented by ``indent`` (triple-quoted when that is safe)."""
    if '"""' in text or "\\" in text or text.endswith('"'):
        return indent + repr(text)
    lines = text.splitlines()
    body = "\n".join((indent + ln) if ln else "" for ln in lines[1:])
    return f'{indent}"""{lines[0]}\n{body}\n{indent}"""' if len(lines) > 1 else f'{indent}"""{text}"""'


# names that moved out of this module in 0.x, readable here for one release
keep_old_names(
    __name__,
    {
        "REQUIRED": "dataclaw.envcraft.runtime.task",
    },
)
