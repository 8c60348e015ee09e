"""Audit and self-healing (EnvCraft §3.3): audit a package folder, send failures back to the model with the
findings and logs, rewrite the files it returns, audit again — at most ``repair_rounds`` times.

Used by both generation paths (code generation, :mod:`.codegen`; spec compilation, :mod:`.compile`). The
audit is :mod:`dataclaw.envcraft.audit`: the static AST rules first, and only when they pass the dynamic
audit in the sandbox (instantiation from S0, the contract suite, the package's own tests). Package code
never runs in this process: it is parsed here and executed only inside the sandbox.

A model answer is the C.2 output form, files with roles (:func:`answer_schema`). What the model may not
write is taken out before anything reaches the disk: infrastructure (``store``/``cli`` roles, the package's
``__init__.py`` / ``__main__.py``: the runtime provides those, :func:`write_skeleton` writes the glue) and
unsafe paths (absolute, ``..``, hidden, unknown file types, code under ``data/``). An answer that is not the
schema is a failed round with a reason (``not_output_schema``), never an exception.

    outcome = await audit_and_heal(model, Path("LIB/crm"), repair_rounds=2)
    outcome.passed, outcome.rounds, outcome.reasons, outcome.calls, outcome.audit
"""

from __future__ import annotations

import asyncio
import json
import re
import shutil
from dataclasses import asdict, dataclass, field
from enum import StrEnum
from pathlib import Path
from typing import Any

from dataclaw.core.errors import ConfigError
from dataclaw.envcraft.audit import AuditReport, CheckStatus, DynamicOptions, audit_package
from dataclaw.envcraft.audit.package import Role, env_classes, read_package
from dataclaw.envcraft.audit.rules import RULES
from dataclaw.models import ModelError, ModelOutputError

REPAIR_ROUNDS = 2
MARKER = "data/codegen.json"
"""Written into every package this module writes: says the folder is ours to replace, and which role each
model-written file had."""
DEFAULT_OPTIONS = DynamicOptions(timeout_s=120.0, tests_timeout_s=120.0)
"""Sandbox limits of one dynamic audit (a package that hangs at import is a ``timeout`` after this)."""
ANSWER_TOKENS = 16384
"""Token budget of one generation or repair answer (a whole small package)."""
MAX_FILES = 80
MAX_FILE_CHARS = 200_000
MAX_TOTAL_CHARS = 1_000_000
MAX_DEPTH = 4
PROMPT_FILE_CHARS = 90_000
"""The current files quoted in a repair prompt, at most (larger files are cut, data first)."""
MAX_REASONS = 40

FILE_ROLES = (
    "environment_class",
    "domain_module",
    "evaluator",
    "repository",
    "helper",
    "test",
    "concurrency_test",
    "doc",
    "data_scenario",
    "data_accounts",
    "data_contacts",
    "data_attachment",
    "data_artifact",
    "cli",
    "store",
)
"""C.2 ``files[].role`` (``test``/``helper`` added: any package module, any test file)."""
INFRA_ROLES = frozenset({"cli", "store"})
"""Roles whose files the runtime provides (session store, locks, CLI, error mapping): never written."""
SKELETON = ("__init__.py", "__main__.py", "claw_bash.py")
SUFFIXES = frozenset({".py", ".md", ".json", ".jsonl", ".txt", ".csv", ".yaml", ".yml"})
_PART = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.\-]*$")


class SynthReason(StrEnum):
    """Why a package did not pass (``reasons[].code``)."""

    NOT_OUTPUT_SCHEMA = "not_output_schema"
    """The model's answer was not JSON of the output schema (a failed round)."""
    INVALID_SPEC = "invalid_spec"
    """The spec record given to code generation lacks E_spec/T_spec."""
    MODEL_ERROR = "model_error"
    """The model could not be asked (a non-fatal model error: timeout, server error, replay miss)."""
    PACKAGE_UNREADABLE = "package_unreadable"
    """The folder is not an environment package (no ``__init__.py``)."""
    STATIC_AUDIT = "static_audit"
    """A static rule failed (``rule`` holds its id, e.g. S050)."""
    CHECK_FAILED = "check_failed"
    CHECK_CRASHED = "check_crashed"
    TIMEOUT = "timeout"
    """A sandboxed run ran out of time (e.g. the package hangs at import)."""
    RESOURCE_LIMIT = "resource_limit"
    SANDBOX_VIOLATION = "sandbox_violation"
    PACKAGE_TESTS_FAILED = "package_tests_failed"


_CHECK_CODE = {
    CheckStatus.FAILED: SynthReason.CHECK_FAILED,
    CheckStatus.CRASHED: SynthReason.CHECK_CRASHED,
    CheckStatus.TIMEOUT: SynthReason.TIMEOUT,
    CheckStatus.RESOURCE_LIMIT: SynthReason.RESOURCE_LIMIT,
    CheckStatus.VIOLATION: SynthReason.SANDBOX_VIOLATION,
}


def reason(code: SynthReason, message: str, **extra: Any) -> dict[str, Any]:
    """One ``reasons`` entry: ``{"code", "message", ...}``."""
    return {"code": code.value, "message": message[:1000], **extra}


@dataclass
class SynthOutcome:
    """What one generation (or one audit-and-heal) of an environment package came to."""

    path: str  # "codegen" or "compile"
    package: Path | None  # the folder written (kept even when it failed)
    passed: bool
    rounds: int  # repair rounds used
    reasons: list[dict]  # [{"code": str, "message": str}] when failed
    calls: int  # model calls made
    audit: dict | None  # the last audit report as a dict
    env_name: str = ""
    tokens: dict[str, int] = field(default_factory=lambda: {"prompt": 0, "completion": 0})
    cost_usd: float = 0.0
    history: list[dict[str, Any]] = field(default_factory=list)
    """One entry per step: ``{"step": "generate"|"audit"|"repair", "round", "passed"/"codes", ...}``."""
    stripped: list[dict[str, str]] = field(default_factory=list)
    """Model files not written: ``{"path", "why"}`` (infrastructure, unsafe paths, skeleton)."""

    def to_dict(self) -> dict[str, Any]:
        out = asdict(self)
        out["package"] = str(self.package) if self.package is not None else None
        return out

    def count(self, done: Any) -> None:
        """Add one model call's tokens and cost."""
        self.calls += 1
        self.tokens["prompt"] += done.usage.prompt_tokens
        self.tokens["completion"] += done.usage.completion_tokens
        self.cost_usd = round(self.cost_usd + (done.cost_usd or 0.0), 6)


# ---- the answer schema and writing what it holds ---------------------------------------------------------


def answer_schema(*, repair: bool = False) -> dict[str, Any]:
    """The C.2 output form: ``environment_name``, ``documentation`` (README.md), ``skill_md`` (SKILL.md) and
    ``files`` (path, content, role), plus the evaluator's dimensions and the concurrency tests' intent. A
    repair answer gives only the files to rewrite (and ``delete``: paths to remove)."""
    file_item = {
        "type": "object",
        "properties": {
            "path": {"type": "string", "minLength": 1, "maxLength": 200},
            "content": {"type": "string", "maxLength": MAX_FILE_CHARS},
            "role": {"type": "string", "enum": list(FILE_ROLES)},
        },
        "required": ["path", "content", "role"],
    }
    files = {"type": "array", "items": file_item, "maxItems": MAX_FILES}
    if repair:
        return {
            "type": "object",
            "properties": {
                "files": files,
                "delete": {"type": "array", "items": {"type": "string"}, "maxItems": MAX_FILES},
                "notes": {"type": "string"},
            },
            "required": ["files"],
        }
    dimension = {
        "type": "object",
        "properties": {
            "name": {"type": "string"},
            "weight": {"type": "number"},
            "description": {"type": "string"},
        },
        "required": ["name", "weight"],
    }
    return {
        "type": "object",
        "properties": {
            "environment_name": {"type": "string"},
            "documentation": {"type": "string", "minLength": 1},
            "skill_md": {"type": "string", "minLength": 1},
            "files": {**files, "minItems": 1},
            "evaluator": {
                "type": "object",
                "properties": {"dimensions": {"type": "array", "items": dimension}},
            },
            "concurrency_test": {
                "type": "object",
                "properties": {
                    "scenarios": {"type": "array", "items": {"type": "string"}},
                    "assertions": {"type": "array", "items": {"type": "string"}},
                },
            },
        },
        "required": ["environment_name", "documentation", "skill_md", "files"],
    }


def clean_path(raw: str, env_name: str) -> tuple[str | None, str]:
    """The package-relative path a model file goes to, or (None, why it is refused). A leading
    ``<env_name>/`` or ``claw_envs/<env_name>/`` (the paper's package root) is dropped."""
    path = raw.strip().replace("\\", "/")
    for prefix in (f"claw_envs/{env_name}/", f"{env_name}/", "./"):
        if path.startswith(prefix):
            path = path[len(prefix) :]
    if not path or path.startswith("/") or re.match(r"^[A-Za-z]:", path):
        return None, "absolute or empty path"
    parts = path.split("/")
    if any(p in ("", ".", "..") for p in parts):
        return None, "path leaves the package"
    if any(p.startswith(".") or not _PART.match(p) for p in parts):
        return None, "hidden or unusual file name"
    if "__pycache__" in parts:
        return None, "compiled files are not package sources"
    if len(parts) > MAX_DEPTH:
        return None, f"nested deeper than {MAX_DEPTH} folders"
    if Path(path).suffix.lower() not in SUFFIXES:
        return None, f"file type not allowed (allowed: {', '.join(sorted(SUFFIXES))})"
    if parts[0] == "data" and path.endswith(".py"):
        return None, "code under data/ (data/ holds immutable world data only)"
    if path in SKELETON or path == MARKER:
        return None, "written by dataclaw (the package skeleton), not by the model"
    return path, ""


@dataclass
class Applied:
    """What :func:`apply_answer` did: paths written, files refused (with why), paths deleted."""

    written: list[str] = field(default_factory=list)
    stripped: list[dict[str, str]] = field(default_factory=list)
    deleted: list[str] = field(default_factory=list)


def _is_ours(folder: Path) -> bool:
    return (folder / MARKER).is_file()


def _read_marker(folder: Path) -> dict[str, Any]:
    try:
        return json.loads((folder / MARKER).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}


def apply_answer(
    folder: Path, answer: dict[str, Any], env_name: str, *, fresh: bool, claw: bool | None = None
) -> Applied:
    """Write an answer's files into ``folder`` (``fresh``: replace the folder, which must be one this module
    wrote or absent), then the skeleton and the marker. Infrastructure and unsafe files are not written."""
    done = Applied()
    files: list[tuple[str, str, str]] = []  # (raw path, content, role)
    if answer.get("documentation"):
        files.append(("README.md", answer["documentation"], "doc"))
    if answer.get("skill_md"):
        files.append(("SKILL.md", answer["skill_md"], "doc"))
    files += [(f["path"], f["content"], f["role"]) for f in answer.get("files", [])]
    planned: dict[str, tuple[str, str]] = {}
    total = 0
    for raw, content, role in files:
        path, why = clean_path(raw, env_name)
        if path is not None and role in INFRA_ROLES:
            path, why = None, f"role {role}: the runtime provides sessions, storage, locks and the CLI"
        if path is not None and path in planned:
            path, why = None, "given twice (the first copy is kept)"
        if path is not None and total + len(content) > MAX_TOTAL_CHARS:
            path, why = None, f"the package would exceed {MAX_TOTAL_CHARS} characters"
        if path is None:
            done.stripped.append({"path": raw[:200], "why": why})
            continue
        total += len(content)
        planned[path] = (content, role)
    if fresh:
        if folder.exists():
            if not _is_ours(folder):
                raise ConfigError(
                    f"{folder} exists and was not written by code generation; refusing to replace it"
                )
            shutil.rmtree(folder)
        roles: dict[str, str] = {}
    else:
        roles = dict(_read_marker(folder).get("roles", {}))
        if claw is None:  # a repair round: the package keeps what its first answer was written as
            claw = bool(_read_marker(folder).get("claw"))
        for raw in answer.get("delete", []) or []:
            path, why = clean_path(raw, env_name)
            target = folder / path if path is not None else None
            if target is None or not target.is_file():
                done.stripped.append({"path": f"delete {raw[:200]}", "why": why or "no such file"})
                continue
            target.unlink()
            roles.pop(path, None)
            done.deleted.append(path)
    folder.mkdir(parents=True, exist_ok=True)
    for path, (content, role) in planned.items():
        target = folder / path
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(content if content.endswith("\n") else content + "\n", encoding="utf-8")
        roles[path] = role
        done.written.append(path)
    write_skeleton(folder, env_name, claw=bool(claw))
    marker = {"env_name": env_name, "roles": dict(sorted(roles.items())), "stripped": done.stripped}
    marker["claw"] = bool(claw)
    (folder / MARKER).parent.mkdir(parents=True, exist_ok=True)
    (folder / MARKER).write_text(json.dumps(marker, indent=1) + "\n", encoding="utf-8")
    return done


CLAW_BASH = '''"""The claw ``bash`` tool over the session's state as files (EnvCraft §3.2), by dataclaw."""

from dataclaw.envcraft.runtime import tool
from dataclaw.envcraft.synth.mechanics.claw import bash_over_state


@tool("read", returns=["output", "ok"])
def bash(session: dict, command: str) -> dict:
    """Run a bash command over the workspace: the session's records as files (<key>/<id>.json, see the
    workspace README.md); edits there are discarded, state changes go through the other tools.

    Args:
        command: the bash command line.
    """
    return bash_over_state(session, None, command)
'''
"""The claw extension's ``bash`` tool module, written into a claw scenario's generated package."""


def write_skeleton(folder: Path, env_name: str, *, claw: bool = False) -> str | None:
    """Write ``__init__.py`` (``ENVIRONMENT`` = the package's Environment subclass, found by parsing, never
    importing) and ``__main__.py`` (the runtime CLI); for a claw scenario also ``claw_bash.py``, whose
    ``bash`` tool ``__init__`` adds to the environment's tools. Returns the class name, or None when the
    package has no Environment subclass (then ``__init__`` exports nothing and the static audit says so)."""
    doc = f'"""{env_name}: a generated EnvCraft environment (see README.md). Written by dataclaw."""\n'
    (folder / "__init__.py").write_text(doc, encoding="utf-8")
    pkg = read_package(folder)
    found = [(m, c) for m in pkg.with_role(Role.ENVIRONMENT_CLASS) for c in env_classes(m)]
    cls = None
    if found:
        mod, node = found[0]
        cls = node.name
        init = f"{doc}\nfrom .{mod.local_name} import {cls}\n"
        if claw:
            (folder / "claw_bash.py").write_text(CLAW_BASH, encoding="utf-8")
            init += (
                "from .claw_bash import bash as _bash\n\n"
                f'if "bash" not in {cls}.tools.names():  # the claw extension: the built-in bash tool\n'
                f"    {cls}.tools.add(_bash.__envcraft_tool__)\n"
            )
        init += f'\nENVIRONMENT = {cls}\n\n__all__ = ["ENVIRONMENT", "{cls}"]\n'
    else:
        init = doc
    (folder / "__init__.py").write_text(init, encoding="utf-8")
    (folder / "__main__.py").write_text(
        f'"""``python -m {env_name} <command>``: the environment CLI (dataclaw.envcraft.runtime)."""\n\n'
        "from dataclaw.envcraft.runtime.cli import main\n\nfrom . import ENVIRONMENT\n\n"
        "raise SystemExit(main(ENVIRONMENT))\n",
        encoding="utf-8",
    )
    return cls


# ---- the audit -------------------------------------------------------------------------------------------


def _audit(package: Path, options: DynamicOptions) -> AuditReport:
    """Static rules first; the sandboxed dynamic audit only for a package they pass (no point running code
    that breaks the rules, and it saves the sandbox's time)."""
    static = audit_package(package, dynamic=False)
    if not static.passed:
        return static
    return audit_package(package, options=options)


def audit_reasons(report: AuditReport) -> list[dict[str, Any]]:
    """The report's failures as ``reasons`` (checks not run are left out: an earlier one says why)."""
    out = [reason(SynthReason.STATIC_AUDIT, str(f), rule=f.rule, file=f.file) for f in report.findings]
    for c in report.checks:
        if c.ok or c.status is CheckStatus.NOT_RUN:
            continue
        code = _CHECK_CODE.get(c.status, SynthReason.CHECK_FAILED)
        if c.name == "package_tests" and c.status is CheckStatus.FAILED:
            code = SynthReason.PACKAGE_TESTS_FAILED
        out.append(reason(code, f"{c.name}: {c.status}: {c.detail}", check=c.name))
    return out[:MAX_REASONS]


# ---- talking to the model --------------------------------------------------------------------------------

SYSTEM = (
    "You are an environment generator for reinforcement-learning training. You write the domain logic of "
    "a Python environment package on the dataclaw.envcraft.runtime contract and answer with JSON only."
)


def _schema_message(exc: Exception) -> str:
    """The answer did not parse or fit the schema (the backend's model name cut: recordings replay
    under another name)."""
    text = " ".join(str(exc).split())
    model = getattr(exc, "model", "")
    if model and text.startswith(f"model {model} "):
        text = text[len(f"model {model} ") :]
    return f"the answer is not JSON of the output schema: {text[:300]}"


async def ask(
    model: Any, messages: list[dict[str, str]], schema: dict[str, Any], outcome: SynthOutcome
) -> tuple[dict[str, Any] | None, dict[str, Any] | None]:
    """One schema-constrained call: (answer, None), or (None, a reason). A fatal model error (server
    unreachable, bad key) propagates: it condemns the whole run, not this package."""
    try:
        done = await model.complete(messages, schema=schema, max_tokens=ANSWER_TOKENS, temperature=0.0)
    except ModelOutputError as exc:
        outcome.calls += 1
        return None, reason(SynthReason.NOT_OUTPUT_SCHEMA, _schema_message(exc))
    except ModelError as exc:
        if getattr(exc, "fatal", False):
            raise
        return None, reason(SynthReason.MODEL_ERROR, str(exc))
    outcome.count(done)
    if not isinstance(done.parsed, dict):
        return None, reason(SynthReason.NOT_OUTPUT_SCHEMA, "the answer is not a JSON object")
    return done.parsed, None


def _fence(path: str) -> str:
    return {".py": "python", ".json": "json", ".md": "markdown"}.get(Path(path).suffix, "")


def package_listing(folder: Path, budget: int = PROMPT_FILE_CHARS) -> str:
    """The package's model-written files as a prompt quotes them (skeleton and marker left out; code
    before data, long files cut to fit ``budget``)."""
    roles = _read_marker(folder).get("roles", {})
    files = sorted(
        (p for p in folder.rglob("*") if p.is_file() and "__pycache__" not in p.parts),
        key=lambda p: (p.relative_to(folder).parts[0] == "data", p.suffix != ".py", str(p)),
    )
    blocks: list[str] = []
    left = budget
    for p in files:
        rel = p.relative_to(folder).as_posix()
        if rel in SKELETON or rel == MARKER or p.suffix.lower() not in SUFFIXES:
            continue
        text = p.read_text(encoding="utf-8", errors="replace")
        if len(text) > left:
            text = text[: max(left, 0)] + "\n… (cut here)"
        left -= len(text)
        role = roles.get(rel, "")
        blocks.append(f"### {rel}{f' ({role})' if role else ''}\n```{_fence(rel)}\n{text.rstrip()}\n```")
        if left <= 0:
            blocks.append("(further files not shown)")
            break
    return "\n\n".join(blocks)


REPAIR_TASK = """Fix the package so that it passes the audit. Answer with JSON: "files" holds every file you
change, each with its complete new content (path relative to the package folder, and its role);
"delete" lists files to remove; files you do not mention stay as they are. Do not write __init__.py or
__main__.py (dataclaw writes them: __init__ exports your Environment subclass as ENVIRONMENT) and never
write infrastructure (session storage, locks, CLI parsing): it comes from dataclaw.envcraft.runtime."""


def spec_brief(spec: dict[str, Any] | None) -> str:
    """A short reminder of what the environment is for (scenario line and tool names), for repair prompts."""
    if not spec:
        return ""
    sc = spec.get("scenario") or {}
    tools = [t.get("name", "") for t in spec.get("t_spec") or [] if isinstance(t, dict)]
    line = f"Scenario: {sc.get('name', spec.get('scenario_id', ''))}. {sc.get('description', '')}".strip()
    return line + (f"\nTools of T_spec: {', '.join(tools)}" if tools else "")


def repair_messages(
    folder: Path, env_name: str, reasons: list[dict[str, Any]], context: dict[str, Any]
) -> list[dict[str, str]]:
    """The repair prompt: what the environment is, the audit's findings and logs, the current files."""
    rules = "\n".join(f"- {r.id} {r.name}: {r.summary}" for _, r in RULES.items())
    found = "\n".join(f"- [{r['code']}] {r['message']}" for r in reasons)
    brief = spec_brief(context.get("spec"))
    body = (
        f"The environment package `{env_name}` (importable as `{env_name}`) failed the audit.\n"
        + (f"{brief}\n" if brief else "")
        + f"\n## Audit findings and logs\n{found}\n\n## Static rules\n{rules}\n\n"
        f"## Current files\n{package_listing(folder)}\n\n## Task\n{REPAIR_TASK}"
    )
    return [{"role": "system", "content": SYSTEM}, {"role": "user", "content": body}]


def _retry_note(messages: list[dict[str, str]], failure: dict[str, Any]) -> list[dict[str, str]]:
    """The same request, saying why the previous answer could not be used."""
    note = f"\n\nYour previous answer could not be used ({failure['message']}). Answer again, in the schema."
    return [*messages[:-1], {"role": "user", "content": messages[-1]["content"] + note}]


# ---- the loop --------------------------------------------------------------------------------------------


def _path_of(package: Path) -> str:
    from dataclaw.envcraft.synth.compile.plan import MARKER as COMPILE_MARKER

    return "compile" if (package / COMPILE_MARKER).is_file() else "codegen"


async def heal_loop(
    model: Any,
    package: Path,
    outcome: SynthOutcome,
    *,
    repair_rounds: int,
    context: dict[str, Any],
    options: DynamicOptions,
) -> SynthOutcome:
    """Audit ``package``; while it fails and rounds are left, ask the model for a repair and apply it."""
    env_name = outcome.env_name or package.name
    while True:
        try:
            report = await asyncio.to_thread(_audit, package, options)
        except ConfigError as exc:  # not a package folder at all
            outcome.passed, outcome.audit = False, None
            outcome.reasons = [reason(SynthReason.PACKAGE_UNREADABLE, str(exc))]
            codes = [SynthReason.PACKAGE_UNREADABLE.value]
            outcome.history.append({"step": "audit", "round": outcome.rounds, "codes": codes})
            return outcome
        outcome.audit = report.model_dump(mode="json")
        reasons = audit_reasons(report)
        outcome.history.append(
            {
                "step": "audit",
                "round": outcome.rounds,
                "passed": report.passed,
                "codes": sorted({r["code"] for r in reasons}),
            }
        )
        if report.passed:
            outcome.passed, outcome.reasons = True, []
            return outcome
        outcome.passed, outcome.reasons = False, reasons
        if model is None:
            return outcome
        messages = repair_messages(package, env_name, reasons, context)
        answer = None
        while answer is None:
            if outcome.rounds >= repair_rounds:
                return outcome
            outcome.rounds += 1
            answer, failure = await ask(model, messages, answer_schema(repair=True), outcome)
            step = {"step": "repair", "round": outcome.rounds}
            if failure is not None:
                outcome.history.append({**step, "codes": [failure["code"]]})
                outcome.reasons = [failure, *reasons][:MAX_REASONS]
                if failure["code"] == SynthReason.MODEL_ERROR:
                    return outcome
                messages = _retry_note(messages, failure)
                continue
            applied = apply_answer(package, answer, env_name, fresh=False)
            outcome.stripped += applied.stripped
            outcome.history.append({**step, "written": applied.written, "deleted": applied.deleted})


async def audit_and_heal(
    model: Any,
    package: Path,
    *,
    repair_rounds: int = REPAIR_ROUNDS,
    context: dict[str, Any] | None = None,
    options: DynamicOptions | None = None,
) -> SynthOutcome:
    """Audit the package folder ``package`` and, with a ``model``, repair it at most ``repair_rounds``
    times from the findings and logs (``model=None``: audit only). ``context``: ``spec`` (the spec record,
    quoted briefly in repair prompts), ``path`` ("codegen"/"compile"; default: from the folder's marker).
    Raises only for a fatal model error and :class:`~dataclaw.sandbox.SandboxUnavailable`."""
    ctx = dict(context or {})
    package = Path(package).resolve()
    outcome = SynthOutcome(
        path=ctx.get("path") or _path_of(package),
        package=package,
        passed=False,
        rounds=0,
        reasons=[],
        calls=0,
        audit=None,
        env_name=package.name,
    )
    return await heal_loop(
        model, package, outcome, repair_rounds=repair_rounds, context=ctx, options=options or DEFAULT_OPTIONS
    )
