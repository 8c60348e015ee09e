"""``run()`` contract: outputs, arguments, environment, caps, ownership, bad input, refusal, unsafe mode."""

from __future__ import annotations

import logging
import os
from pathlib import Path

import pytest

from dataclaw.core.errors import ConfigError
from dataclaw.sandbox import (
    UNSAFE_FLAG,
    Limits,
    OneShotRuntime,
    SandboxPolicy,
    SandboxUnavailable,
    Status,
    bwrap,
    run,
    sandbox_available,
)

needs_bwrap = pytest.mark.usefixtures("require_bwrap")


@needs_bwrap
def test_python_source_gets_args_stdin_env_and_the_workspace(workspace, limits, policy):
    (workspace / "sub").mkdir()
    src = (
        "import os, sys\n"
        "env = os.environ\n"
        "print(sys.argv[1:], sys.stdin.read(), env['GIVEN'], env['DATACLAW_WORKSPACE'], os.getcwd())\n"
        "open('out.txt', 'w').write('written')"
    )
    out = run(
        src, workspace, limits, env={"GIVEN": "v"}, policy=policy, args=["a", "b"], stdin=b"in", cwd="sub"
    )
    assert out.status is Status.OK and out.exit_code == 0 and out.message == "ok"
    assert out.stdout.strip() == "['a', 'b'] in v /workspace /workspace/sub"
    assert (workspace / "sub" / "out.txt").read_text() == "written"
    # the workspace is handed back: files the sandbox wrote belong to the caller again
    assert (workspace / "sub" / "out.txt").stat().st_uid == os.geteuid()
    assert out.duration_s > 0


@needs_bwrap
def test_private_0700_workspace_works_and_keeps_its_mode(tmp_path, limits, policy):
    ws = tmp_path / "private"
    ws.mkdir(mode=0o700)
    out = run(["bash", "-c", "pwd; echo hi > f"], ws, limits, policy=policy)
    assert out.ok, out.stderr
    assert (ws / "f").read_text() == "hi\n"
    assert ws.stat().st_mode & 0o777 == 0o700 and ws.stat().st_uid == os.geteuid()


@needs_bwrap
def test_argv_program_runs_with_the_sandbox_path(workspace, limits, policy):
    out = run(["bash", "-c", "echo $HOME; command -v python; exit 3"], workspace, limits, policy=policy)
    assert out.status is Status.ERROR and out.exit_code == 3
    assert out.message == "the program exited with status 3"
    assert out.stdout.splitlines()[0] == "/workspace"
    assert out.stdout.splitlines()[1].endswith("/bin/python")


@needs_bwrap
def test_missing_command_is_an_error_not_a_crash(workspace, limits, policy):
    out = run(["no-such-command-xyz"], workspace, limits, policy=policy)
    assert out.status is Status.ERROR and out.exit_code == 127
    assert out.message == "command not found or not executable"
    faked = run(["bash", "-c", "echo 'bwrap: fake failure' >&2; exit 1"], workspace, limits, policy=policy)
    assert faked.status is Status.ERROR  # an outcome, not an exception the program could trigger


@needs_bwrap
def test_deliberate_exit_code_above_128_is_not_mistaken_for_a_signal(workspace, limits, policy):
    out = run("import sys\nsys.exit(152)", workspace, limits, policy=policy)
    assert out.status is Status.ERROR and out.exit_code == 152
    out = run("raise SystemExit('bad input')", workspace, limits, policy=policy)
    assert out.status is Status.ERROR and out.exit_code == 1 and "bad input" in out.stderr


@needs_bwrap
def test_uncaught_exception_gives_the_type_but_no_traceback_in_the_message(workspace, limits, policy):
    out = run("def f():\n    raise ValueError('x')\nf()", workspace, limits, policy=policy)
    assert out.status is Status.ERROR and out.message == "the program raised ValueError"
    assert 'File "<program>", line 2, in f' in out.stderr
    assert "dataclaw" not in out.stderr  # the launcher's frames are not shown


@needs_bwrap
def test_output_is_capped_and_marked_truncated(workspace, policy):
    lim = Limits(output_bytes=1000, wall_s=20)
    out = run(
        "import sys\nsys.stdout.write('x' * 100000)\nsys.stderr.write('y' * 5)", workspace, lim, policy=policy
    )
    assert out.ok and out.truncated
    assert out.stdout == "x" * 1000 and out.stderr == "y" * 5


@needs_bwrap
def test_sandboxed_python_can_import_dataclaw(workspace, limits, policy):
    out = run(
        "import dataclaw.core.ids, dataclaw.sandbox._inner\nprint('imported')",
        workspace,
        limits,
        policy=policy,
    )
    assert out.ok, out.stderr
    assert out.stdout.strip() == "imported"


@needs_bwrap
def test_rw_grant_is_writable(workspace, limits, uid, tmp_path):
    shared = tmp_path / "shared"
    shared.mkdir()
    os.chmod(shared, 0o777)
    policy = SandboxPolicy(uid=uid, rw_paths=(shared,))
    out = run(f"open({str(shared / 'x')!r}, 'w').write('ok')", workspace, limits, policy=policy)
    assert out.ok, out.stderr
    assert (shared / "x").read_text() == "ok"


@needs_bwrap
def test_one_shot_runtime_runs_and_cleans_up(workspace, limits, policy):
    with OneShotRuntime(workspace, limits, policy) as rt:
        assert rt.run("print(6 * 7)").stdout.strip() == "42"
    rt.cleanup()  # idempotent


@needs_bwrap
def test_concurrent_runs_stay_separate_and_large_sources_work(tmp_path, limits):
    from concurrent.futures import ThreadPoolExecutor

    def one(i: int) -> str:
        ws = tmp_path / f"ws{i}"
        ws.mkdir()
        padding = "#" + "x" * 100_000 + "\n"  # larger than a pipe buffer: goes through a temp file
        src = f"{padding}import os\nopen('me', 'w').write('{i}')\nprint(sorted(os.listdir('.')), {i})"
        return run(src, ws, limits).stdout.strip()

    with ThreadPoolExecutor(4) as pool:
        outs = list(pool.map(one, range(4)))
    assert outs == [f"['me'] {i}" for i in range(4)]


def test_bad_inputs_are_named(workspace, tmp_path):
    with pytest.raises(ConfigError, match="nope"):
        run("pass", tmp_path / "nope")
    with pytest.raises(ConfigError, match="program"):
        run([], workspace)
    with pytest.raises(ConfigError, match="cwd"):
        run("pass", workspace, cwd="../outside")
    with pytest.raises(ConfigError, match="not a directory"):
        run("pass", workspace, cwd="missing-subdir")
    with pytest.raises(ConfigError, match="cpu_s"):
        Limits(cpu_s=0)
    with pytest.raises(ConfigError, match="relative"):
        SandboxPolicy(ro_paths=(Path("relative"),))
    with pytest.raises(ConfigError, match="uid"):
        SandboxPolicy(uid=0)
    with pytest.raises(ConfigError, match="missing-grant"):
        run("pass", workspace, policy=SandboxPolicy(ro_paths=(tmp_path / "missing-grant",)))


def test_without_bubblewrap_runs_are_refused_with_one_clear_line(workspace, monkeypatch):
    real_tool = bwrap.find_tool
    monkeypatch.setattr(bwrap, "find_tool", lambda name: None if name == "bwrap" else real_tool(name))
    sandbox_available.cache_clear()
    try:
        avail = sandbox_available()
        assert not avail and "bwrap" in avail.reason
        with pytest.raises(SandboxUnavailable) as err:
            run("print('should not run')", workspace)
        assert UNSAFE_FLAG in str(err.value) and "\n" not in str(err.value)
    finally:
        sandbox_available.cache_clear()


def test_unsafe_mode_runs_without_isolation_and_says_so(workspace, limits, caplog, capsys):
    policy = SandboxPolicy(unsafe=True)
    with caplog.at_level(logging.WARNING, logger="dataclaw.sandbox"):
        out = run("import os\nprint(os.getcwd())", workspace, limits, policy=policy)
    assert out.ok and not out.sandboxed
    assert out.stdout.strip() == str(workspace.resolve())
    assert [r.levelname for r in caplog.records if "UNSAFE" in r.message] == ["WARNING"]
    assert UNSAFE_FLAG in caplog.text
    out = run("import time\ntime.sleep(60)", workspace, limits, timeout=0.5, policy=policy)
    assert out.status is Status.TIMEOUT
    out = run(["bash", "-c", "exit 4"], workspace, limits, policy=policy)
    assert out.status is Status.ERROR and out.exit_code == 4
