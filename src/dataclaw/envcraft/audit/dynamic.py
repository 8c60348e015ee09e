"""Dynamic audit (EnvCraft §3.3 (2)): the package, copied into a fresh workspace, runs in the sandbox.

One sandboxed run imports the copy (never the original: the import name is pointed at the workspace),
instantiates every scenario from S0, then runs the contract checks one at a time and reports each with its
time. A second run executes the package's own ``tests/`` with pytest, when it has some. A run that ends
in a timeout, a resource limit or a sandbox violation marks the check it was in with that outcome (the
checks after it are ``not_run``); results already reported are kept.

Each package gets a fresh workspace and a fresh one-shot sandbox: a package cannot touch another's copy.
"""

from __future__ import annotations

import json
import secrets
import shutil
import tempfile
import time
import xml.etree.ElementTree as ET
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from dataclaw.envcraft.archetypes import compiler_file
from dataclaw.envcraft.audit.model import CheckStatus, DynamicCheck
from dataclaw.envcraft.runtime.contract import CHECKS
from dataclaw.sandbox import Limits, Outcome, SandboxPolicy, Status, run

PROBE_SOURCE = (Path(__file__).parent / "_probe.py").read_text(encoding="utf-8")
INSTANTIATE = "instantiate_from_s0"
PACKAGE_TESTS = "package_tests"
_STATUS = {
    Status.TIMEOUT: CheckStatus.TIMEOUT,
    Status.RESOURCE_LIMIT: CheckStatus.RESOURCE_LIMIT,
    Status.VIOLATION: CheckStatus.VIOLATION,
    Status.ERROR: CheckStatus.CRASHED,
}
_CACHES = shutil.ignore_patterns("__pycache__", "*.pyc", ".pytest_cache", ".git")


def _copy_ignore(root: Path) -> Callable[[str, list[str]], set[str]]:
    """What the workspace copy of the package at ``root`` leaves out: caches, and an archetype folder's
    compiler files (``archetype.yaml``, ``mechanic.py``): they are synthesis's, not the environment's, so the
    audited package must run without them."""

    def ignore(folder: str, names: list[str]) -> set[str]:
        out = set(_CACHES(folder, names))
        if Path(folder) == root:
            out |= {n for n in names if compiler_file(root / n)}
        return out

    return ignore


@dataclass(frozen=True)
class DynamicOptions:
    """Limits of the sandboxed runs and whether to run the package's tests."""

    timeout_s: float = 300.0
    tests_timeout_s: float = 300.0
    memory_mb: int = 4096
    run_tests: bool = True
    unsafe: bool = False

    def limits(self, wall_s: float) -> Limits:
        """Sandbox limits of one run: ``wall_s`` of wall clock and twice that in CPU seconds."""
        return Limits(cpu_s=2 * wall_s, memory_mb=self.memory_mb, wall_s=wall_s)


def dynamic_audit(
    path: str | Path, import_name: str, options: DynamicOptions | None = None
) -> tuple[list[DynamicCheck], bool]:
    """Audit the package folder ``path`` in the sandbox; returns the checks and whether it was sandboxed."""
    opts = options or DynamicOptions()
    src = Path(path).resolve()
    policy = SandboxPolicy(unsafe=opts.unsafe)
    with tempfile.TemporaryDirectory(prefix="envcraft-audit-") as tmp:
        ws = Path(tmp)
        dst = ws.joinpath("src", *import_name.split("."))
        shutil.copytree(src, dst, ignore=_copy_ignore(src), symlinks=True)
        names = list(CHECKS)
        nonce = secrets.token_hex(8)
        args = ["contract", "src", import_name, *names]
        env = {"DATACLAW_AUDIT_NONCE": nonce}
        outcome = run(PROBE_SOURCE, ws, opts.limits(opts.timeout_s), env=env, policy=policy, args=args)
        checks = _collect(outcome, [INSTANTIATE, *names], f"@@audit-{nonce} ")
        tests_dir = next((d for d in ("tests", "test") if (dst / d).is_dir()), None)
        if tests_dir is None:
            checks.append(
                DynamicCheck(name=PACKAGE_TESTS, status=CheckStatus.SKIPPED, detail="no tests/ folder")
            )
        elif not opts.run_tests:
            checks.append(DynamicCheck(name=PACKAGE_TESTS, status=CheckStatus.SKIPPED, detail="--no-tests"))
        else:
            checks.append(_package_tests(ws, import_name, tests_dir, opts, policy))
    return checks, not opts.unsafe


def _collect(outcome: Outcome, expected: list[str], mark: str) -> list[DynamicCheck]:
    """Reported results in order; the check running when the process ended gets the outcome's status."""
    got: dict[str, DynamicCheck] = {}
    for line in outcome.stdout.splitlines():
        if line.startswith(mark):
            try:
                rec = json.loads(line[len(mark) :])
                check = DynamicCheck(
                    name=rec["name"],
                    status=CheckStatus(rec["status"]),
                    detail=str(rec.get("detail", ""))[:2000],
                    seconds=round(float(rec.get("seconds", 0.0)), 3),
                )
            except (ValueError, KeyError, TypeError):
                continue  # not a line our probe wrote (the package printed something that looks like one)
            if check.name in expected and check.name not in got:
                got[check.name] = check
    failed_load = INSTANTIATE in got and not got[INSTANTIATE].ok
    out: list[DynamicCheck] = []
    ended = False
    for name in expected:
        if name in got:
            out.append(got[name])
        elif failed_load:
            out.append(_not_run(name, "the package did not load"))
        elif ended:
            out.append(_not_run(name, "an earlier check ended the run"))
        else:
            ended = True  # this check was running when the sandboxed process ended
            status = _STATUS.get(outcome.status, CheckStatus.CRASHED)
            detail = outcome.message
            if outcome.ok:
                detail = f"the process ended before the check reported (exit {outcome.exit_code})"
            elif outcome.status is Status.ERROR:
                detail += f": {_last_line(outcome.stderr)}"
            out.append(DynamicCheck(name=name, status=status, detail=detail))
    return out


def _not_run(name: str, why: str) -> DynamicCheck:
    return DynamicCheck(name=name, status=CheckStatus.NOT_RUN, detail=why)


def _last_line(text: str) -> str:
    lines = [ln for ln in text.strip().splitlines() if ln.strip()]
    return lines[-1][:300] if lines else ""


def _package_tests(
    ws: Path, import_name: str, tests_dir: str, opts: DynamicOptions, policy: SandboxPolicy
) -> DynamicCheck:
    """The package's own tests under pytest in the sandbox, summarised from pytest's JUnit XML."""
    rel = "/".join(import_name.split(".")) + "/" + tests_dir
    limits = opts.limits(opts.tests_timeout_s)
    t0 = time.monotonic()
    outcome = run(PROBE_SOURCE, ws, limits, policy=policy, args=["tests", "src", import_name, rel])
    seconds = round(time.monotonic() - t0, 3)
    junit = ws / "junit.xml"
    if outcome.status not in (Status.OK, Status.ERROR) or not junit.is_file():
        status = _STATUS.get(outcome.status, CheckStatus.CRASHED)
        detail = (
            outcome.message
            if outcome.status is not Status.ERROR
            else _last_line(outcome.stdout + outcome.stderr)
        )
        return DynamicCheck(name=PACKAGE_TESTS, status=status, detail=detail, seconds=seconds)
    return _junit_summary(junit, seconds)


def _junit_summary(junit: Path, seconds: float) -> DynamicCheck:
    try:
        root = ET.parse(junit).getroot()
    except ET.ParseError as exc:
        return DynamicCheck(name=PACKAGE_TESTS, status=CheckStatus.CRASHED, detail=f"bad JUnit XML: {exc}")
    cases = list(root.iter("testcase"))
    failed = [
        f"{c.get('classname', '')}.{c.get('name', '')}".strip(".")
        for c in cases
        if c.find("failure") is not None or c.find("error") is not None
    ]
    skipped = sum(1 for c in cases if c.find("skipped") is not None)
    passed = len(cases) - len(failed) - skipped
    summary = f"{passed} passed, {len(failed)} failed, {skipped} skipped"
    if not cases:
        return DynamicCheck(
            name=PACKAGE_TESTS, status=CheckStatus.FAILED, detail="tests/ holds no tests", seconds=seconds
        )
    if failed:
        return DynamicCheck(
            name=PACKAGE_TESTS,
            status=CheckStatus.FAILED,
            detail=f"{summary}: {', '.join(failed[:5])}",
            seconds=seconds,
        )
    return DynamicCheck(name=PACKAGE_TESTS, status=CheckStatus.PASSED, detail=summary, seconds=seconds)
