"""Bubblewrap command lines: what is mounted where, which namespaces, which user, which rlimits.

Two modes. As root, bubblewrap runs privileged without a user namespace and ``setpriv`` drops the program to
an unprivileged uid (RLIMIT_NPROC is never enforced for uid 0, so a root program could fork-bomb the host).
As a normal user, bubblewrap creates a user namespace (``--disable-userns`` stops nesting) and the uid stays.
Either way the program sees: read-only system dirs and Python, a minimal /etc, fresh /dev and /proc, private
size-capped /tmp and /dev/shm, the workspace, explicitly granted paths — nothing else (no network, no home).
"""

from __future__ import annotations

import functools
import os
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO

import dataclaw
from dataclaw.sandbox.seccomp import sandbox_filter
from dataclaw.sandbox.types import Limits, SandboxPolicy

SYSTEM_DIRS = ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32")
# /etc entries programs need: copied in (a copy is cheaper than a bind mount), except the alternatives dir.
ETC_COPIES = ("ld.so.cache", "nsswitch.conf")
ETC_BINDS = ("alternatives",)
STATUS_DIR = "/run/dataclaw"
PIPE_DATA_MAX = 60_000
REFUSAL = (
    "refusing to run untrusted code: bubblewrap is not usable here ({reason}); install bubblewrap "
    "(apt-get install bubblewrap) or pass --unsafe-no-sandbox to run without isolation at your own risk"
)


@dataclass(frozen=True)
class Availability:
    """Result of :func:`sandbox_available`: truthy when bubblewrap works, else ``reason`` says why not."""

    ok: bool
    reason: str

    def __bool__(self) -> bool:
        return self.ok

    @property
    def refusal(self) -> str:
        """One line for the user when a run is refused."""
        return REFUSAL.format(reason=self.reason)


def is_root() -> bool:
    return os.geteuid() == 0


def find_tool(name: str) -> str | None:
    """A system tool by name, looked up in the system dirs only (never the caller's PATH)."""
    return shutil.which(name, path="/usr/bin:/bin:/usr/sbin:/sbin:/usr/local/bin")


@functools.cache
def sandbox_available() -> Availability:
    """Probe once per process whether bubblewrap can build the sandbox this module asks for."""
    bwrap = find_tool("bwrap")
    if bwrap is None:
        return Availability(False, "the bwrap executable was not found")
    need = ["prlimit", *(["setpriv"] if is_root() else [])]
    missing = [n for n in need if find_tool(n) is None]
    if missing:
        return Availability(False, f"util-linux tool(s) missing: {', '.join(missing)}")
    probe = [bwrap, *namespace_args(), "--ro-bind", "/usr", "/usr", *_system_links(), "--proc", "/proc"]
    probe += ["--dev", "/dev", "--", *user_switch(65534), "/usr/bin/true"]
    try:
        res = subprocess.run(probe, capture_output=True, timeout=30, check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return Availability(False, f"bwrap probe failed: {type(exc).__name__}")
    if res.returncode != 0:
        first = res.stderr.decode(errors="replace").strip().splitlines()[:1]
        return Availability(False, f"bwrap probe failed: {first[0] if first else res.returncode}")
    return Availability(True, "bubblewrap works")


def namespace_args() -> list[str]:
    """Namespaces and privileges: new ipc/pid/net/uts (/cgroup), no capabilities, killed with its parent."""
    common = ["--die-with-parent", "--new-session", "--hostname", "sandbox"]
    if is_root():
        return [
            *["--unshare-ipc", "--unshare-pid", "--unshare-net", "--unshare-uts", "--unshare-cgroup-try"],
            *["--cap-drop", "ALL", "--cap-add", "CAP_SETUID", "--cap-add", "CAP_SETGID"],
            # enter a 0700 workspace owned by the sandbox uid; all capabilities go when setpriv switches uid
            *["--cap-add", "CAP_SETPCAP", "--cap-add", "CAP_DAC_READ_SEARCH"],
            *common,
        ]
    return ["--unshare-all", "--unshare-user", "--disable-userns", "--cap-drop", "ALL", *common]


def seccomp_args(plan: MountPlan) -> list[str]:
    """The seccomp filter: no new user namespaces (as non-root, ``--disable-userns`` also does), no IP
    sockets."""
    prog = sandbox_filter()
    if prog is None:
        return []
    fd = plan.static_fd(prog)
    plan.pass_fds.append(fd)
    return ["--seccomp", str(fd)]


def user_switch(uid: int) -> list[str]:
    """As root: drop to ``uid`` with no capabilities and no_new_privs before the program starts."""
    if not is_root():
        return []
    return [
        find_tool("setpriv") or "setpriv",
        f"--reuid={uid}",
        f"--regid={uid}",
        "--clear-groups",
        "--no-new-privs",
        "--inh-caps=-all",
        "--bounding-set=-all",
        "--",
    ]


def rlimit_args(limits: Limits, *, cpu: bool = True) -> list[str]:
    """``prlimit`` wrapper that applies the limits inside the sandbox (so RLIMIT_NPROC counts per sandbox)."""
    mb = 1 << 20
    args = [find_tool("prlimit") or "prlimit"]
    if cpu:
        cpu_s = max(1, int(limits.cpu_s + 0.999))
        args.append(f"--cpu={cpu_s}:{cpu_s + 1}")
    args += [
        f"--as={limits.memory_mb * mb}",
        f"--fsize={limits.file_size_mb * mb}",
        f"--nofile={limits.open_files}",
        f"--nproc={limits.processes}",
        "--core=0",
        "--",
    ]
    return args


@functools.cache
def _system_links() -> tuple[str, ...]:
    out: list[str] = []
    for d in SYSTEM_DIRS[1:]:
        if os.path.islink(d):
            out += ["--symlink", os.readlink(d), d]
        elif os.path.isdir(d):
            out += ["--ro-bind", d, d]
    return tuple(out)


@functools.cache
def src_root() -> str:
    """The folder holding the ``dataclaw`` package (mounted read-only, first on a sandboxed sys.path)."""
    return str(Path(dataclaw.__file__).resolve().parent.parent)


@functools.cache
def base_python() -> Path:
    """The interpreter this one was made from (a virtualenv's base), which sees the standard library only
    when started with ``-I -S``."""
    real_exe = os.path.realpath(sys.executable)
    for cand in (getattr(sys, "_base_executable", None), real_exe):
        if cand and os.path.isfile(cand) and not under(os.path.realpath(cand), sys.prefix):
            return Path(cand)
    if sys.prefix == sys.base_prefix:
        return Path(sys.executable)
    name = f"python{sys.version_info.major}.{sys.version_info.minor}"
    return Path(sys.base_prefix, "bin", name)


def interpreter(policy: SandboxPolicy, limits: Limits) -> Path:
    """The Python that runs sources: the policy's, else the base interpreter (stdlib only), else ours."""
    if policy.python is not None:
        return policy.python
    return base_python() if limits.stdlib_only else Path(sys.executable)


def python_flags(limits: Limits) -> list[str]:
    """Interpreter flags of the launcher: isolated and unbuffered; stdlib-only runs skip ``site`` too."""
    return ["-I", "-S", "-B", "-u"] if limits.stdlib_only else ["-I", "-B", "-u"]


@functools.cache
def python_paths(python: Path, stdlib_only: bool = False) -> tuple[str, ...]:
    """Host dirs Python needs: venv, base prefix, the real binary's dir and dataclaw's source root — or,
    for stdlib-only runs, the interpreter's prefix and binary dir only (no venv, no dataclaw)."""
    real_dir = os.path.dirname(os.path.realpath(python))
    if stdlib_only:
        ours = os.path.realpath(python) == os.path.realpath(base_python())
        paths = {real_dir, sys.base_prefix if ours else str(python.parent.parent)}
    else:
        paths = {sys.prefix, sys.base_prefix, real_dir, src_root()}
        if python != Path(sys.executable):
            paths.add(str(python.parent.parent))
    keep = [p for p in paths if not any(under(p, d) for d in SYSTEM_DIRS)]
    return tuple(sorted(p for p in keep if not any(q != p and under(p, q) for q in keep)))


@functools.cache
def site_dirs(roots: tuple[str, ...]) -> tuple[str, ...]:
    """The base interpreter's site-packages dirs inside ``roots``: covered by an empty read-only tmpfs in
    stdlib-only runs, so not even a program that edits ``sys.path`` finds third-party packages there."""
    import site

    found = [*site.getsitepackages([sys.base_prefix]), site.getusersitepackages()]
    dirs = {os.path.realpath(x) for x in found}
    return tuple(sorted(d for d in dirs if os.path.isdir(d) and any(under(d, r) for r in roots)))


@functools.cache
def _etc_copies() -> dict[str, bytes]:
    out = {}
    for name in ETC_COPIES:
        try:
            out[name] = Path("/etc", name).read_bytes()
        except OSError:
            continue
    return out


@functools.cache
def _memfd(data: bytes) -> int:
    """A process-lifetime in-memory file holding ``data``; each run opens its own read description."""
    fd = os.memfd_create("dataclaw-sandbox", os.MFD_CLOEXEC)
    os.write(fd, data)
    return fd


def under(path: str, root: str) -> bool:
    """``path`` is ``root`` or inside it (plain string test on normalised absolute paths)."""
    return path == root or path.startswith(root.rstrip("/") + "/")


@dataclass
class MountPlan:
    """Mount arguments plus the temp files whose fds bubblewrap copies into the sandbox."""

    args: list[str] = field(default_factory=list)
    pass_fds: list[int] = field(default_factory=list)
    files: list[IO[bytes]] = field(default_factory=list)
    fds: list[int] = field(default_factory=list)
    roots: list[str] = field(default_factory=list)
    writable: list[str] = field(default_factory=list)
    hidden: list[str] = field(default_factory=list)
    """Directories that exist only to hold a granted mount (e.g. the checkout around a venv): their
    other host contents are hidden, so a missing path in them is an access outside the sandbox."""

    def data_file(self, dest: str, data: bytes, *, static: bool = False) -> None:
        """Copy ``data`` into a read-only file at ``dest`` (bubblewrap reads it from an inherited fd).

        Static data (the same every run) is read from a cached memfd; small data goes through a pipe
        (cheaper than a temp file, and it fits the pipe buffer); the rest through a temp file.
        """
        if static:
            fd = self.static_fd(data)
        elif len(data) <= PIPE_DATA_MAX:
            r, w = os.pipe()
            os.write(w, data)
            os.close(w)
            self.fds.append(r)
            fd = r
        else:
            fh = tempfile.TemporaryFile()
            fh.write(data)
            fh.flush()
            fh.seek(0)
            self.files.append(fh)
            fd = fh.fileno()
        self.pass_fds.append(fd)
        self.args += ["--perms", "0444", "--file", str(fd), dest]

    def static_fd(self, data: bytes) -> int:
        """A fresh read-only fd (own file offset) on the cached memfd of ``data``, closed with the plan."""
        fd = os.open(f"/proc/self/fd/{_memfd(data)}", os.O_RDONLY | os.O_CLOEXEC)
        self.fds.append(fd)
        return fd

    def close(self) -> None:
        for fh in self.files:
            fh.close()
        for fd in self.fds:
            os.close(fd)
        self.files.clear()
        self.fds.clear()


def mount_plan(
    policy: SandboxPolicy,
    limits: Limits,
    workspace: Path,
    python: Path,
    uid: int,
    files: dict[str, bytes],
    static: frozenset[str] = frozenset(),
) -> MountPlan:
    """Every mount of one sandbox, parents before children, with 0755 dirs for the paths in between."""
    plan = MountPlan()
    plan.args += ["--ro-bind", "/usr", "/usr", *_system_links(), "--perms", "0755", "--dir", "/etc"]
    for name in ETC_BINDS:
        plan.args += ["--ro-bind-try", f"/etc/{name}", f"/etc/{name}"]
    for name, data in _etc_copies().items():
        plan.data_file(f"/etc/{name}", data, static=True)
    if os.path.islink("/etc/localtime"):
        plan.args += ["--symlink", os.readlink("/etc/localtime"), "/etc/localtime"]
    plan.args += ["--dev", "/dev", "--proc", "/proc"]
    for tmp in ("/tmp", "/dev/shm"):  # memory-backed: without a size, writing there could eat the host's RAM
        plan.args += ["--size", str(limits.tmp_mb << 20), "--perms", "1777", "--tmpfs", tmp]
    pythons = python_paths(python, limits.stdlib_only)
    grants: list[tuple[str, str, bool]] = [(p, p, False) for p in pythons]
    grants += [(str(p), str(p), False) for p in policy.ro_paths]
    grants += [(str(p), str(p), True) for p in policy.rw_paths]
    grants.append((str(workspace), policy.workspace_mount, True))
    made: set[str] = set()
    for src, dest, rw in sorted(grants, key=lambda g: g[1].count("/")):
        for parent in reversed(Path(dest).parents):
            p = str(parent)
            if p == "/" or p in made or any(under(p, r) for r in (*SYSTEM_DIRS, *plan.roots)):
                continue
            made.add(p)
            plan.args += ["--perms", "0755", "--dir", p]
        plan.args += ["--bind" if rw else "--ro-bind", src, dest]
        plan.roots.append(dest)
        if rw:
            plan.writable.append(dest)
    if limits.stdlib_only:
        for site_dir in site_dirs((*SYSTEM_DIRS, *pythons)):
            plan.args += ["--size", "4096", "--perms", "0555", "--tmpfs", site_dir, "--remount-ro", site_dir]
    home = policy.workspace_mount
    plan.args += ["--perms", "0755", "--dir", "/run", "--perms", "0755", "--dir", STATUS_DIR]
    plan.data_file("/etc/passwd", f"root:x:0:0::/:/bin/sh\nsandbox:x:{uid}:{uid}::{home}:/bin/sh\n".encode())
    plan.data_file("/etc/group", f"root:x:0:\nsandbox:x:{uid}:\n".encode())
    plan.data_file("/etc/hosts", b"127.0.0.1 localhost sandbox\n::1 localhost\n")
    for dest, data in files.items():
        plan.data_file(dest, data, static=dest in static)
    plan.args += seccomp_args(plan)
    etc = [f"/etc/{name}" for name in (*ETC_COPIES, *ETC_BINDS, "localtime", "passwd", "group", "hosts")]
    plan.hidden = sorted(made - {"/tmp", "/dev/shm"})
    plan.roots += [*SYSTEM_DIRS, *etc, "/dev", "/proc", "/tmp", STATUS_DIR]
    plan.writable += ["/tmp", "/dev/shm"]
    return plan


def sandbox_env(policy: SandboxPolicy, python: Path, env: dict[str, str] | None) -> list[str]:
    """``--clearenv`` plus an explicit environment: nothing of the host's leaks in."""
    base = {
        "PATH": f"{python.parent}:/usr/local/bin:/usr/bin:/bin",
        "HOME": policy.workspace_mount,
        "TMPDIR": "/tmp",
        "LANG": "C.UTF-8",
        "PYTHONDONTWRITEBYTECODE": "1",
        "DATACLAW_SANDBOX": "1",
        "DATACLAW_WORKSPACE": policy.workspace_mount,
        **(env or {}),
    }
    args = ["--clearenv"]
    for key, value in base.items():
        args += ["--setenv", key, value]
    return args
