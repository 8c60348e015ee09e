"""Audit records: static findings, dynamic check results and the per-environment report."""

from __future__ import annotations

from enum import StrEnum

from pydantic import BaseModel, Field


class Finding(BaseModel):
    """One static-rule violation, located in the package."""

    rule: str = Field(description="stable rule id, e.g. S020")
    name: str = Field(description="rule name, e.g. wall-clock")
    file: str = Field(description="path relative to the package folder ('.' for the package itself)")
    line: int = 0
    message: str

    def where(self) -> str:
        return f"{self.file}:{self.line}" if self.line else self.file

    def __str__(self) -> str:
        return f"{self.rule} {self.name} {self.where()}: {self.message}"


class CheckStatus(StrEnum):
    """How one dynamic check ended; anything but ``passed`` fails the audit (``skipped`` does not)."""

    PASSED = "passed"
    FAILED = "failed"
    CRASHED = "crashed"  # the check (or the sandboxed process) died with an error
    TIMEOUT = "timeout"  # the sandbox's wall clock ran out before the check finished
    RESOURCE_LIMIT = "resource_limit"
    VIOLATION = "violation"  # the package tried something the sandbox blocks (network, writes outside)
    NOT_RUN = "not_run"  # an earlier failure made it impossible to run
    SKIPPED = "skipped"  # nothing to run (e.g. the package has no tests/)


class DynamicCheck(BaseModel):
    """One dynamic check (instantiation, a contract check, the package's own tests)."""

    name: str
    status: CheckStatus
    detail: str = ""
    seconds: float = 0.0

    @property
    def ok(self) -> bool:
        return self.status in (CheckStatus.PASSED, CheckStatus.SKIPPED)


class AuditReport(BaseModel):
    """The audit of one environment package (EnvCraft §3.3): static findings + dynamic checks."""

    env: str = Field(description="environment name (folder name when it cannot be loaded)")
    path: str
    passed: bool
    findings: list[Finding] = Field(default_factory=list)
    checks: list[DynamicCheck] = Field(default_factory=list)
    sandboxed: bool = True
    timings: dict[str, float] = Field(default_factory=dict, description="seconds: static, dynamic, total")

    def reasons(self) -> list[str]:
        """Why the audit failed, one line each (empty when it passed)."""
        out = [str(f) for f in self.findings]
        out += [f"{c.name}: {c.status}: {c.detail}" for c in self.checks if not c.ok]
        return out
