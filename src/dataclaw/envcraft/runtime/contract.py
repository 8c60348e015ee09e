"""The contract test-suite: run any environment package against the runtime contract (C.1, C.4).

``run_contract(package) -> ContractReport`` is used by pytest (``assert report.passed, report.summary()``)
and by the auditor. Checks: package layout and tool schemas, session isolation, concurrent-write
serialisation, correct workflow evaluates high, stale/forbidden actions penalised, read tools pure and
write tools touching only their declared fields, deterministic replay, evaluator determinism, hidden
commands hidden, agent-safe errors.
"""

from __future__ import annotations

import io
import json
import re
import tempfile
import threading
import traceback
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from dataclaw.envcraft.runtime import cli
from dataclaw.envcraft.runtime.environment import Environment, Scenario
from dataclaw.envcraft.runtime.loader import EnvPackage, load_env_package
from dataclaw.envcraft.runtime.state import jsoncopy, state_hash

HIGH_SCORE = 0.9
_LEAK_RE = re.compile(r"Traceback|File \"|\.py\b|site-packages|/tmp/|/home/|/work/|/usr/")


@dataclass
class CheckResult:
    name: str
    passed: bool
    detail: str = ""


@dataclass
class ContractReport:
    package: str
    checks: list[CheckResult] = field(default_factory=list)

    @property
    def passed(self) -> bool:
        return bool(self.checks) and all(c.passed for c in self.checks)

    def failures(self) -> list[CheckResult]:
        return [c for c in self.checks if not c.passed]

    def summary(self) -> str:
        lines = [
            f"{self.package}: {sum(c.passed for c in self.checks)}/{len(self.checks)} contract checks passed"
        ]
        lines += [f"  FAIL {c.name}: {c.detail}" for c in self.failures()]
        return "\n".join(lines)

    def to_dict(self) -> dict[str, Any]:
        return {"package": self.package, "passed": self.passed, "checks": [c.__dict__ for c in self.checks]}


class _Fail(Exception):
    pass


def _expect(cond: bool, message: str) -> None:
    if not cond:
        raise _Fail(message)


def leaks(text: str, *secrets: str, echoed: str = "") -> list[str]:
    """Internals visible in agent-facing ``text``: traceback fragments, source paths, given secrets.

    ``echoed`` is what the caller sent: a fragment that only repeats the caller's own input (an error
    quoting a bad value such as ``'x.py'``) reveals nothing and is not counted.
    """
    found = [m.group(0) for m in _LEAK_RE.finditer(text) if m.group(0) not in echoed]
    return found + [s for s in secrets if s and s in text]


def _run_steps(env: Environment, sid: str, steps: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [env.call(sid, s["tool"], **s.get("params", {})) for s in steps]


def _with_solution(env_cls: type[Environment]) -> list[Scenario]:
    return [sc for sc in env_cls.scenarios().values() if sc.reference_solution]


# ---- checks --------------------------------------------------------------------------------------------


def check_layout(pkg: EnvPackage, root: Path) -> str:
    problems = pkg.layout_problems()
    env_cls = pkg.env_cls
    _expect(len(env_cls.tools) > 0, "the environment declares no tools")
    for spec in env_cls.tools:
        schema = spec.openai_schema()
        _expect(bool(spec.description), f"tool {spec.name} has no description")
        for name, prop in schema["function"]["parameters"]["properties"].items():
            if not prop.get("description"):
                problems.append(f"tool {spec.name}: parameter {name} undescribed")
    _expect(bool(_with_solution(env_cls)), "no scenario has a reference_solution to test with")
    _expect(not problems, "; ".join(problems))
    return f"{len(env_cls.tools)} tools, {len(env_cls.scenarios())} scenarios"


def check_isolation(pkg: EnvPackage, root: Path) -> str:
    env = pkg.env_cls(root / "isolation")
    sc = _with_solution(pkg.env_cls)[0]
    a, b = env.create_session(sc.scenario_id), env.create_session(sc.scenario_id)
    before = state_hash(env.get_session_state(b))
    _run_steps(env, a, sc.reference_solution)
    _expect(state_hash(env.get_session_state(b)) == before, "actions in one session changed another session")
    _expect(env.get_session_state(b)["actions"] == [], "another session's action log grew")
    _expect(env.get_session_state(a)["session_id"] == a, "session id not stored in its state")
    return "two sessions from one scenario stay independent"


def check_concurrency(pkg: EnvPackage, root: Path, threads: int = 8, per_thread: int = 15) -> str:
    sc = _with_solution(pkg.env_cls)[0]
    base = pkg.env_cls(root / "concurrency")
    sid = base.create_session(sc.scenario_id)
    step = sc.reference_solution[0]
    errors: list[str] = []

    def worker() -> None:
        env = pkg.env_cls(root / "concurrency", lock_timeout_s=30)  # one store (and cache) per worker
        for _ in range(per_thread):
            out = env.call(sid, step["tool"], **step.get("params", {}))
            if out["status"] == "error" and out["error"]["category"] in ("lock_timeout", "infrastructure"):
                errors.append(out["error"]["message"])

    pool = [threading.Thread(target=worker) for _ in range(threads)]
    for t in pool:
        t.start()
    for t in pool:
        t.join()
    _expect(not errors, f"{len(errors)} calls failed: {errors[:1]}")
    state = pkg.env_cls(root / "concurrency").get_session_state(sid)
    indices = [a["index"] for a in state["actions"]]
    total = threads * per_thread
    _expect(indices == list(range(total)), f"expected {total} serialised actions, got {len(indices)}")
    _expect(state["meta"]["action_index"] == total, "action_index does not match the action log")
    return f"{threads} workers × {per_thread} calls serialised"


def check_workflows(pkg: EnvPackage, root: Path) -> str:
    env = pkg.env_cls(root / "workflows")
    _expect(
        any(sc.forbidden_actions for sc in _with_solution(pkg.env_cls)),
        "no scenario lists forbidden_actions, so penalties for stale/forbidden actions are untested",
    )
    notes = []
    for sc in _with_solution(pkg.env_cls):
        sid = env.create_session(sc.scenario_id)
        failed = [
            (s["tool"], r["error"])
            for s, r in zip(sc.reference_solution, _run_steps(env, sid, sc.reference_solution), strict=True)
            if r["status"] != "ok"
        ]
        _expect(not failed, f"{sc.scenario_id}: reference step failed: {failed[:1]}")
        clean = env.evaluate_session(sid)
        _expect(
            clean["overall_score"] >= HIGH_SCORE,
            f"{sc.scenario_id}: correct workflow scored {clean['overall_score']}",
        )
        _expect(
            set(clean["dimensions"]) == {d.name for d in pkg.env_cls.evaluator.dimensions},
            "dimensions missing",
        )
        notes.append(f"{sc.scenario_id}={clean['overall_score']}")
        if sc.forbidden_actions:
            _run_steps(env, sid, sc.forbidden_actions)
            dirty = env.evaluate_session(sid)["overall_score"]
            _expect(
                dirty < clean["overall_score"],
                f"{sc.scenario_id}: forbidden/stale actions not penalised ({dirty})",
            )
            notes.append(f"penalised→{dirty}")
    return ", ".join(notes)


def check_side_effects(pkg: EnvPackage, root: Path) -> str:
    """Read tools leave domain state alone; write tools touch only their declared fields."""
    env = pkg.env_cls(root / "effects")
    runtime_keys = {"actions", "meta"}
    for sc in _with_solution(pkg.env_cls):
        sid = env.create_session(sc.scenario_id)
        for step in sc.reference_solution + sc.forbidden_actions:
            before = env.get_session_state(sid)
            env.call(sid, step["tool"], **step.get("params", {}))
            after = env.get_session_state(sid)
            changed = {k for k in set(before) | set(after) if before.get(k) != after.get(k)} - runtime_keys
            spec = pkg.env_cls.tools.get(step["tool"])
            allowed = set(spec.state_fields_affected)
            _expect(
                changed <= allowed,
                f"{spec.name} ({spec.side_effect}) changed undeclared fields {sorted(changed - allowed)}",
            )
            _expect(jsoncopy(after) == after, f"{spec.name} left state that does not survive JSON")
    return "declared state_fields_affected respected"


def check_replay(pkg: EnvPackage, root: Path) -> str:
    env = pkg.env_cls(root / "replay", compact_every=3)
    hashes = []
    for sc in _with_solution(pkg.env_cls):
        steps = sc.reference_solution + sc.forbidden_actions
        a, b = env.create_session(sc.scenario_id), env.create_session(sc.scenario_id)
        _run_steps(env, a, steps)
        _run_steps(env, b, steps)
        live = state_hash(env.get_session_state(a))
        _expect(
            live == state_hash(env.get_session_state(b)),
            f"{sc.scenario_id}: same actions gave different states",
        )
        other = pkg.env_cls(root / "replay", compact_every=3)  # a second process-like store and cache
        c = env.create_session(sc.scenario_id)
        for i, step in enumerate(steps):  # alternate writers: each replays the other's journal lines
            (env if i % 2 else other).call(c, step["tool"], **step.get("params", {}))
        _expect(
            state_hash(env.get_session_state(c)) == live,
            f"{sc.scenario_id}: interleaving two stores gave a different state (a tool is not deterministic)",
        )
        cold = pkg.env_cls(root / "replay")  # empty cache: rebuilt from snapshot + journal
        _expect(
            state_hash(cold.get_session_state(a)) == live,
            f"{sc.scenario_id}: reloaded state differs from live state",
        )
        env.reset_session(a)
        fresh = env.create_session(sc.scenario_id)
        _expect(
            state_hash(env.get_session_state(a)) == state_hash(env.get_session_state(fresh)),
            f"{sc.scenario_id}: reset_session does not restore the initial state",
        )
        hashes.append(live[:12])
    return "same actions → same state hash: " + ", ".join(hashes)


def check_evaluator(pkg: EnvPackage, root: Path) -> str:
    env = pkg.env_cls(root / "evaluator")
    sc = _with_solution(pkg.env_cls)[0]
    sid = env.create_session(sc.scenario_id)
    _run_steps(env, sid, sc.reference_solution)
    before = env.get_session_state(sid)
    r1, r2 = env.evaluate_session(sid), env.evaluate_session(sid)
    _expect(r1 == r2, "evaluate_session is not deterministic")
    _expect(env.get_session_state(sid) == before, "evaluate_session changed the session")
    _expect(0.0 <= r1["overall_score"] <= 1.0, "overall_score outside [0, 1]")
    return "deterministic and side-effect free"


def _cli(pkg: EnvPackage, argv: list[str], environ: dict[str, str]) -> tuple[int, str]:
    out = io.StringIO()
    try:
        code = cli.main(pkg.env_cls, argv, environ=environ, out=out, prog="env")
    except SystemExit as exc:  # argparse --help exits
        code = int(exc.code or 0)
    return code, out.getvalue()


def _cli_value(value: Any) -> str:
    """One parameter value as the runtime CLI parses it back (JSON objects, lower-case booleans)."""
    if isinstance(value, dict):
        return json.dumps(value)
    return str(value).lower() if isinstance(value, bool) else str(value)


def check_cli(pkg: EnvPackage, root: Path) -> str:
    """Hidden commands absent from help but working; no --session-id for the agent; missing binding."""
    import contextlib

    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        code, out = _cli(pkg, ["--help"], {})
    help_text = buf.getvalue() + out
    for spec in pkg.env_cls.tools:
        with contextlib.redirect_stdout(buf):
            _cli(pkg, [cli.cli_name(spec.name), "--help"], {})
    help_text += buf.getvalue()
    for hidden in cli.HIDDEN_COMMANDS:
        _expect(hidden not in help_text, f"hidden command {hidden} appears in agent help")
    _expect("--session-id" not in help_text, "an agent command exposes --session-id")
    sc = _with_solution(pkg.env_cls)[0]
    state_root = str(root / "cli")
    code, out = _cli(
        pkg,
        ["prepare-rollout", "--scenario-id", sc.scenario_id, "--state-root", state_root, "--show-bindings"],
        {},
    )
    _expect(code == 0 and '"bindings"' in out, f"prepare-rollout failed: {out[:200]}")
    bindings = json.loads(out)["data"]["bindings"]
    step = sc.reference_solution[0]
    argv = [cli.cli_name(step["tool"])]
    for k, v in step.get("params", {}).items():
        values = [str(item) for item in v] if isinstance(v, list) else [_cli_value(v)]
        for value in values:  # a list: the option once per item
            argv += ["--" + cli.cli_name(k), value]
    code, out = _cli(pkg, argv, bindings)
    _expect(
        code == 0 and '"status": "ok"' in out, f"agent command {argv[0]} failed through the CLI: {out[:200]}"
    )
    code, out = _cli(pkg, argv, {})
    _expect(
        code == 1 and "missing_binding" in out, "a command without bindings does not report missing_binding"
    )
    code, out = _cli(pkg, ["reset-rollout"], bindings)
    _expect(code == 0, f"reset-rollout failed: {out[:200]}")
    return "help hides trainer commands; bindings come from the environment"


def check_errors(pkg: EnvPackage, root: Path) -> str:
    """Unknown tools, missing/garbage params, unknown sessions → structured, agent-safe errors."""
    state_root = root / "errors"
    env = pkg.env_cls(state_root)
    sc = _with_solution(pkg.env_cls)[0]
    sid = env.create_session(sc.scenario_id)
    _run_steps(env, sid, sc.reference_solution[:1])
    outs = [env.call(sid, "no_such_tool"), env.call("no-such-session", sc.reference_solution[0]["tool"])]
    for spec in pkg.env_cls.tools:
        outs.append(env.call(sid, spec.name))
        outs.append(env.call(sid, spec.name, **{p.name: "\x00../../etc/passwd" for p in spec.params}))
        outs.append(env.call(sid, spec.name, **{p.name: 10**30 for p in spec.params}))
        outs.append(env.call(sid, spec.name, bogus_parameter=1))
    secrets = (str(state_root), str(pkg.path))
    for out in outs:
        _expect(out.get("status") in ("ok", "error"), f"unstructured result {str(out)[:120]}")
        if out["status"] == "error":
            err = out["error"]
            _expect(
                bool(err.get("category")) and bool(err.get("message")),
                f"error without category/message: {err}",
            )
            found = leaks(json.dumps(err), *secrets)
            _expect(not found, f"error leaks internals {found[:3]}: {err['message'][:120]}")
    categories = {o["error"]["category"] for o in outs if o["status"] == "error"}
    _expect(
        {"unknown_tool", "session_not_found"} <= categories,
        f"missing error categories, saw {sorted(categories)}",
    )
    return f"{len(outs)} bad calls, categories {sorted(categories)}"


CHECKS: dict[str, Callable[[EnvPackage, Path], str]] = {
    "layout": check_layout,
    "session_isolation": check_isolation,
    "concurrent_write_serialisation": check_concurrency,
    "workflow_scores_and_penalties": check_workflows,
    "declared_side_effects": check_side_effects,
    "deterministic_replay": check_replay,
    "evaluator_deterministic": check_evaluator,
    "cli_hidden_commands": check_cli,
    "errors_agent_safe": check_errors,
}


def run_contract(
    env_package: Any, *, state_root: str | Path | None = None, only: list[str] | None = None
) -> ContractReport:
    """Run the contract checks on ``env_package`` (anything :func:`load_env_package` accepts)."""
    pkg = load_env_package(env_package)
    report = ContractReport(pkg.module)
    with tempfile.TemporaryDirectory(prefix="envcraft-contract-") as tmp:
        root = Path(state_root) if state_root is not None else Path(tmp)
        for name, check in CHECKS.items():
            if only and name not in only:
                continue
            try:
                report.checks.append(CheckResult(name, True, check(pkg, root)))
            except _Fail as exc:
                report.checks.append(CheckResult(name, False, str(exc)))
            except Exception as exc:  # noqa: BLE001 - a crash is a failed check, reported with its origin
                tb = traceback.extract_tb(exc.__traceback__)[-1]
                report.checks.append(
                    CheckResult(
                        name,
                        False,
                        f"crashed: {type(exc).__name__}: {exc} ({Path(tb.filename).name}:{tb.lineno})",
                    )
                )
    return report
