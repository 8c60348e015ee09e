"""EnvCraft environment quality auditing (§3.3): static AST rules, then a dynamic run in the sandbox.

``audit_package(path) -> AuditReport``: the static rules of :mod:`.static` (Table 15, C.1, C.3) and, in a
fresh sandboxed workspace, instantiation from S0 + the contract test-suite + the package's own tests
(:mod:`.dynamic`). A package passes when there is no static finding and every dynamic check passed.
See README.md beside this file for the rule table.
"""

from __future__ import annotations

import ast
import time
from pathlib import Path

from dataclaw.envcraft.audit.dynamic import DynamicOptions, dynamic_audit
from dataclaw.envcraft.audit.model import AuditReport, CheckStatus, DynamicCheck, Finding
from dataclaw.envcraft.audit.package import PackageSource, Role, class_attrs, env_classes, read_package
from dataclaw.envcraft.audit.rules import RULES
from dataclaw.envcraft.audit.static import static_audit

__all__ = [
    "RULES",
    "AuditReport",
    "CheckStatus",
    "DynamicCheck",
    "DynamicOptions",
    "Finding",
    "audit_package",
    "dynamic_audit",
    "static_audit",
]


def _env_name(pkg: PackageSource) -> str:
    """The environment's declared ``name`` (read from the source, not imported), else the folder name."""
    for mod in pkg.with_role(Role.ENVIRONMENT_CLASS):
        for cls in env_classes(mod):
            name = class_attrs(cls).get("name")
            if isinstance(name, ast.Constant) and isinstance(name.value, str):
                return name.value
    return pkg.root.name


def audit_package(
    path: str | Path, *, options: DynamicOptions | None = None, dynamic: bool = True
) -> AuditReport:
    """Audit one environment package folder. ``dynamic=False`` runs the static rules only.

    Raises :class:`dataclaw.sandbox.SandboxUnavailable` when bubblewrap cannot run and
    ``options.unsafe`` is not set (the caller decides whether to opt into the weaker mode)."""
    root = Path(path).resolve()
    t0 = time.monotonic()
    pkg = read_package(root)
    findings = static_audit(pkg)
    t_static = time.monotonic() - t0
    checks: list[DynamicCheck] = []
    sandboxed = not (options and options.unsafe)
    if dynamic:
        checks, sandboxed = dynamic_audit(root, pkg.import_name, options)
    total = time.monotonic() - t0
    return AuditReport(
        env=_env_name(pkg),
        path=str(root),
        passed=not findings and all(c.ok for c in checks),
        findings=findings,
        checks=checks,
        sandboxed=sandboxed,
        timings={
            "static_s": round(t_static, 3),
            "dynamic_s": round(total - t_static, 3),
            "total_s": round(total, 3),
        },
    )
