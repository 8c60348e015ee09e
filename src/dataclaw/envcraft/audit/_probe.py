"""Runs INSIDE the sandbox (as the program's source, not imported by dataclaw): import the package copy
from the workspace, instantiate it from S0, run the contract checks one by one, or run its own tests.

argv: ``MODE REL_SRC IMPORT_NAME [CHECK…]`` with MODE ``contract`` or ``tests``. Every result is one line
``@@audit-<nonce> {json}`` on stdout (the nonce comes from the host in ``DATACLAW_AUDIT_NONCE``, so package
output cannot pass for a result by accident), flushed at once, so a timeout still keeps what finished.
"""

import importlib
import json
import os
import sys
import tempfile
import time
import traceback
from pathlib import Path

# the host's per-run marker, taken out of the environment before any package code runs
MARK = "@@audit-" + os.environ.pop("DATACLAW_AUDIT_NONCE", "") + " "


def emit(**record):
    print(MARK + json.dumps(record), flush=True)


def crash_text(exc, src):
    """The exception and where in the package it happened (file name and line only, no host paths)."""
    frames = [f for f in traceback.extract_tb(exc.__traceback__) if f.filename.startswith(str(src))]
    where = f" ({Path(frames[-1].filename).name}:{frames[-1].lineno})" if frames else ""
    return f"{type(exc).__name__}: {exc}{where}"


def expose(src, import_name):
    """Make ``import_name`` resolve to the copy under ``src`` (before any installed package of that name)."""
    sys.path.insert(0, str(src))
    parts = import_name.split(".")
    for i in range(len(parts) - 1, 0, -1):
        parent = ".".join(parts[:i])
        try:
            module = importlib.import_module(parent)
        except ImportError:
            continue
        if hasattr(module, "__path__"):
            module.__path__.insert(0, str(src.joinpath(*parts[:i])))
        break
    module = importlib.import_module(import_name)
    origin = Path(module.__file__).resolve()
    if not origin.is_relative_to(src.resolve()):
        raise ImportError(f"{import_name} resolved outside the audited copy")
    return module


TEMPLATE = ("session_id", "scenario_id", "created_at", "workspace_account", "actions", "meta")


def instantiate(pkg, root):
    """Every scenario → a session from S0 with the C.1 template; the harness interface agrees with it."""
    from dataclaw.envcraft.runtime import state_hash

    env_cls = pkg.env_cls
    problems = []
    scenarios = env_cls.scenarios()
    for sid_name in scenarios:
        env = env_cls(root / "s0")
        sid = env.create_session(sid_name)
        state = env.get_session_state(sid)
        missing = [k for k in TEMPLATE if k not in state]
        meta = state.get("meta", {})
        if missing or meta.get("action_index") != 0 or "base_time" not in meta or state.get("actions"):
            problems.append(
                f"{sid_name}: initial state lacks the C.1 template ({', '.join(missing) or 'meta'})"
            )
            continue
        harness = env_cls(root / "harness")
        harness._load_scenario(sid_name)
        if state_hash(harness.get_env_state()) != state_hash(state):
            problems.append(f"{sid_name}: _load_scenario gives a different S0 than create_session")
        env.create_session(sid_name, long_context=True)
    if problems:
        raise AssertionError("; ".join(problems))
    return f"{len(scenarios)} scenarios instantiated from S0, {len(env_cls.tools)} tools"


def run_contract_mode(src, import_name, checks):
    t0 = time.monotonic()
    try:
        module = expose(src, import_name)
        from dataclaw.envcraft.runtime.loader import load_env_package

        pkg = load_env_package(module)
        with tempfile.TemporaryDirectory() as tmp:
            detail = instantiate(pkg, Path(tmp))
    except AssertionError as exc:
        emit(name="instantiate_from_s0", status="failed", detail=str(exc), seconds=time.monotonic() - t0)
        return 1
    except BaseException as exc:  # noqa: BLE001 - anything the package throws is its failure
        emit(
            name="instantiate_from_s0",
            status="crashed",
            detail=crash_text(exc, src),
            seconds=time.monotonic() - t0,
        )
        return 1
    emit(name="instantiate_from_s0", status="passed", detail=detail, seconds=time.monotonic() - t0)
    from dataclaw.envcraft.runtime.contract import run_contract

    for name in checks:
        t0 = time.monotonic()
        report = run_contract(pkg, only=[name])
        check = report.checks[0]
        status = "passed" if check.passed else "crashed" if check.detail.startswith("crashed:") else "failed"
        emit(name=name, status=status, detail=check.detail, seconds=time.monotonic() - t0)
    return 0


def run_tests_mode(src, import_name, tests_dir):
    expose(src, import_name)
    import pytest

    ws = Path.cwd()
    (ws / "pytest.ini").write_text("[pytest]\n", encoding="utf-8")
    args = ["-q", "-p", "no:cacheprovider", "--rootdir", str(ws), "-c", str(ws / "pytest.ini")]
    return int(pytest.main([*args, "--junitxml", str(ws / "junit.xml"), str(src / tests_dir)]))


def main():
    mode, rel_src, import_name, *rest = sys.argv[1:]
    src = Path.cwd() / rel_src
    if mode == "contract":
        return run_contract_mode(src, import_name, rest)
    return run_tests_mode(src, import_name, rest[0])


if __name__ == "__main__":
    sys.exit(main())
