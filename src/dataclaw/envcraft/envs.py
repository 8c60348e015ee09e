"""Environments as a user names them (``dataclaw env list|show|call|contract``), for Python callers too.

A name is an archetype (run in-process: dataclaw's own code), an import name or a package folder (run in
its sandboxed env worker: its code never runs in this process); a synthesised or imported library lists
its passing packages from its index, without importing or running any of them.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from dataclaw.core.errors import ConfigError


def open_package(name: str) -> Any:
    """An archetype's package by name (in-process), else a package folder or import name opened in its
    sandboxed env worker (:func:`dataclaw.envcraft.worker.open_environment`)."""
    from dataclaw.envcraft import archetypes
    from dataclaw.envcraft.runtime.resolve import resolve_env
    from dataclaw.envcraft.worker import open_environment

    ref = resolve_env(name)
    return archetypes.get(ref.archetype) if ref.archetype else open_environment(ref)


@dataclass
class EnvRow:
    """One built-in archetype at a glance. An archetype that fails to load has no tools or scenarios and
    says why in its description (one broken package does not hide the others)."""

    name: str
    tools: int
    scenarios: int
    description: str


def archetype_rows() -> list[EnvRow]:
    """One :class:`EnvRow` per built-in archetype, with its whole docstring summary as description."""
    from dataclaw.envcraft import archetypes

    rows = []
    for name in archetypes.names():
        try:
            pkg = archetypes.get(name)
            n_scenarios, n_tools = len(pkg.env_cls.scenarios()), len(pkg.env_cls.tools)
        except Exception as exc:  # noqa: BLE001 - shown to the user as that archetype's status
            rows.append(EnvRow(name, 0, 0, f"failed to load: {exc}"))
            continue
        rows.append(EnvRow(pkg.name, n_tools, n_scenarios, " ".join((pkg.env_cls.__doc__ or "").split())))
    return rows


@dataclass
class LibraryRow:
    """One environment of a library, from its index row: passing, floor or failed (with why)."""

    name: str
    path: str
    """How it was made: compile or codegen."""
    tools: int | None
    scenarios: int | None
    archetypes: list[str]
    scenario: str
    package: str
    """The package folder, relative to the library ("" when none was built)."""
    folder: str
    description: str
    status: str = "passing"
    """passing (every gate passed), floor (an invalid spec compiled, smoke tests only) or failed."""
    reasons: str = ""
    codes: list[str] = field(default_factory=list)
    """The reasons' codes (floor, meaning, unsound, invalid_spec, an audit code …)."""


@dataclass
class LibraryListing:
    """A library's passing environments, its floor ones and its failed rows (listed apart)."""

    rows: list[LibraryRow]
    failed: int
    floor: list[LibraryRow] = field(default_factory=list)
    failures: list[LibraryRow] = field(default_factory=list)

    def all(self) -> list[LibraryRow]:
        """Passing, then floor, then failed."""
        return [*self.rows, *self.floor, *self.failures]


def library_rows(library: Path) -> LibraryListing:
    """The environments of a library by status, from its index (nothing of theirs is imported or run)."""
    from dataclaw.envcraft.synth.library import library_packages, read_index, status_of

    def as_row(r: dict[str, Any], folder: Path | None) -> LibraryRow:
        return LibraryRow(
            name=r["env"] or r["scenario_id"] or "(request)", path=r["path"], tools=r["tools"],
            scenarios=r["scenarios"], archetypes=r["archetypes"], scenario=r["scenario_id"],
            package=r["package"] or "", folder=str(folder) if folder else "", description=r["scenario_name"],
            status=status_of(r), reasons="; ".join(f"{x['code']}: {x['message']}" for x in r["reasons"]),
            codes=list(dict.fromkeys(x["code"] for x in r["reasons"])),
        )  # fmt: skip

    index = read_index(library)
    rows = [as_row(r, folder) for r, folder in library_packages(library)]
    floor = [as_row(r, Path(library) / r["package"]) for r in index if status_of(r) == "floor"]
    failures = [as_row(r, None) for r in index if status_of(r) == "failed"]
    return LibraryListing(rows, len(failures), floor, failures)


def describe_env(name: str) -> dict[str, Any]:
    """An environment's bindings, scenarios, evaluator dimensions and tools (``dataclaw env show``)."""
    pkg = open_package(name)
    env_cls = pkg.env_cls
    prefix = env_cls.prefix()
    return {
        "name": pkg.name,
        "module": pkg.module,
        "description": " ".join((env_cls.__doc__ or "").split()),
        "cli": f"python -m {pkg.module} <command>",
        "bindings": [f"{prefix}_SESSION_ID", f"{prefix}_STATE_ROOT", f"{prefix}_SCENARIO_ID"],
        "scenarios": {sid: sc.title for sid, sc in env_cls.scenarios().items()},
        "evaluator": {d.name: d.weight for d in env_cls.evaluator.dimensions},
        "tools": {s.name: s.side_effect for s in env_cls.tools},
        "layout_problems": pkg.layout_problems(),
    }


def parse_tool_args(spec: Any, pairs: list[str]) -> dict[str, Any]:
    """``key=value`` pairs → a tool's typed params: JSON for non-strings, raw text for string parameters
    (``spec``: the tool's :class:`~dataclaw.envcraft.runtime.tools.ToolSpec`)."""
    params: dict[str, Any] = {}
    by_name = {p.name: p for p in spec.params}
    for pair in pairs:
        key, sep, raw = pair.partition("=")
        if not sep:
            raise ConfigError(f"--arg {pair!r}: expected key=value")
        param = by_name.get(key)
        if param is not None and param.schema.get("type") == "string":
            params[key] = raw
            continue
        try:
            params[key] = json.loads(raw)
        except json.JSONDecodeError:
            params[key] = raw  # let the tool's validation name what is wrong
    return params


def poke(
    name: str,
    tool: str,
    args: list[str] | None = None,
    *,
    state_root: Path,
    scenario: str | None = None,
    session: str | None = None,
    fresh: bool = False,
    evaluate: bool = False,
) -> dict[str, Any]:
    """Call one tool (``args``: ``key=value`` pairs) in a persistent poke session under ``state_root``,
    created from ``scenario`` (default: the first) on first use; ``fresh`` starts it again from the
    scenario, ``evaluate`` adds the session's evaluation. Returns the tool's answer."""
    from dataclaw.envcraft.worker import persistent_env

    env_cls = open_package(name).env_cls
    scenarios = env_cls.scenarios()
    scenario_id = scenario or next(iter(scenarios))
    with persistent_env(env_cls, state_root / env_cls.name) as env:
        sid = session or f"poke-{scenario_id}"
        if fresh and env.store.exists(sid):
            env.delete_session(sid)
        if not env.store.exists(sid):
            env.create_session(scenario_id, sid)
        tool = tool if tool in env_cls.tools else tool.replace("-", "_")  # accept CLI spelling too
        params = parse_tool_args(env_cls.tools.get(tool), args or []) if tool in env_cls.tools else {}
        out = dict(env.call(sid, tool, **params))
        if evaluate:
            out = {**out, "evaluation": env.evaluate_session(sid)}
    return out


@dataclass
class ContractCheck:
    name: str
    passed: bool
    detail: str


@dataclass
class ContractOutcome:
    """The runtime contract suite on one package: each check, the one-line summary, the verdict."""

    checks: list[ContractCheck]
    summary: str
    passed: bool


def check_contract(name: str) -> ContractOutcome:
    """Run the runtime contract test-suite against an environment package: an archetype in-process, any
    other package in the sandbox (not our code), where instantiating it is one more check."""
    from dataclaw.envcraft.runtime.contract import run_contract

    pkg = open_package(name)
    if getattr(pkg, "builtin", True):
        report = run_contract(pkg)
        checks = [ContractCheck(c.name, c.passed, c.detail) for c in report.checks]
        return ContractOutcome(checks, report.summary().splitlines()[0], report.passed)
    from dataclaw.envcraft.audit import DynamicOptions, audit_package
    from dataclaw.envcraft.audit.dynamic import INSTANTIATE
    from dataclaw.envcraft.audit.model import CheckStatus

    found = audit_package(pkg.folder, options=DynamicOptions(run_tests=False)).checks
    checks = [ContractCheck(c.name, c.ok, c.detail) for c in found if c.status is not CheckStatus.SKIPPED]
    suite = [c for c in checks if c.name != INSTANTIATE]
    summary = (
        f"{pkg.name}: {sum(c.passed for c in suite)}/{len(suite)} contract checks passed (in the sandbox)"
    )
    return ContractOutcome(checks, summary, all(c.passed for c in checks))
