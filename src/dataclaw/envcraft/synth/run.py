"""One synthesis run as a user asks for it (``dataclaw env synth``): catalogue ids, the whole catalogue
and/or descriptions in words → :func:`~dataclaw.envcraft.synth.library.synthesize` into a library → a
:class:`LibraryRun` (the rows, their pass rates per path and archetype, the failures and a headline).

    run = synth_library(Path("lib"), SynthRequest("local:smollm2-135m", scenarios=("support_ticketing",)))
    run.headline(), [f.why for f in run.failures()]
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any

from dataclaw.core.errors import ConfigError
from dataclaw.envcraft.audit.report import check_sandbox
from dataclaw.envcraft.scenarios import load_catalogue
from dataclaw.envcraft.synth.expand import REPAIR_ROUNDS
from dataclaw.envcraft.synth.library import (
    INDEX,
    PATHS,
    EnvStatus,
    SynthConfig,
    resolve_requests,
    status_of,
    summarize,
    synthesize,
)

WHY_CHARS = 300
"""A failure's reasons are cut to this many characters (the index row keeps them all)."""


@dataclass(frozen=True)
class PassRate:
    """Raw → passed of one group of rows: a generation path or an archetype (the first retrieved)."""

    kind: str
    """``path`` or ``archetype``."""
    name: str
    raw: int
    passed: int
    pass_rate: float | None
    """None when the group has no rows."""
    floor: int = 0
    """Floor environments (an invalid spec compiled and audited): counted apart, never in ``passed``."""


@dataclass(frozen=True)
class Failure:
    """A (scenario, path) that gave no passing package: its status (``floor`` or ``failed``) and why (its
    reasons, code: message)."""

    scenario: str
    """The scenario id, or ``(request)`` for a request that named none."""
    path: str
    why: str
    status: str = EnvStatus.FAILED.value


@dataclass
class LibraryRun:
    """What one synthesis run gave: the index rows of its request and their summary."""

    lib: Path
    rows: list[dict[str, Any]] = field(default_factory=list)

    @cached_property
    def summary(self) -> dict[str, Any]:
        """:func:`~dataclaw.envcraft.synth.library.summarize` of the rows (raw, passed, per path and
        archetype, reasons, tokens, cost, the paper's rate)."""
        return summarize(self.rows)

    @property
    def index(self) -> Path:
        return self.lib / f"{INDEX}.jsonl"

    def rates(self) -> list[PassRate]:
        """Raw → passed per path, then per archetype."""
        return [
            PassRate(kind, name, r["raw"], r["passed"], r["pass_rate"], r["floor"])
            for kind, key in (("path", "per_path"), ("archetype", "per_archetype"))
            for name, r in self.summary[key].items()
        ]

    def failures(self) -> list[Failure]:
        """Every row that did not pass (floor and failed), in index order."""
        return [
            Failure(
                r["scenario_id"] or "(request)",
                r["path"],
                "; ".join(f"{x['code']}: {x['message']}" for x in r["reasons"])[:WHY_CHARS],
                status_of(r),
            )
            for r in self.rows
            if status_of(r) != EnvStatus.PASSING
        ]

    def headline(self) -> str:
        """All raw → passing with the rate (floor environments counted apart, never in it), the paper's
        (Table 2) beside it, tokens and cost, on one line."""
        s = self.summary
        paper = s["paper"]
        return (
            f"all {s['raw']} → {s['passed']} passing"
            + (f" = {s['pass_rate']:.1%}" if s["raw"] else "")
            + f" · {s['floor']} floor (invalid spec, smoke tests only, not counted) · {s['failed']} failed"
            + f" · paper (Table 2) {paper['raw']} → {paper['passed']} = {paper['pass_rate']:.1%}"
            + f" · tokens {s['tokens']['prompt']} in / {s['tokens']['completion']} out, ${s['cost_usd']:.4f}"
        )


@dataclass(frozen=True)
class SynthRequest:
    """What to synthesise and how: catalogue ids (``scenarios``), the whole catalogue (``all_``; with the
    ``extra`` scenario folders) and/or ``descriptions`` in words, on ``path`` (compile, codegen or both).
    Bad settings are refused when it is made, before any work."""

    model: str
    scenarios: tuple[str, ...] = ()
    all_: bool = False
    descriptions: tuple[str, ...] | None = None
    """None: no description asked for (an empty one is a failed row, not nothing)."""
    extra: tuple[Path, ...] = ()
    path: str = "compile"
    repair_rounds: int = REPAIR_ROUNDS
    spec_bounds: str = "auto"
    workers: int = 1
    timeout_s: float = 300.0
    unsafe: bool = False

    def __post_init__(self) -> None:
        if self.path not in (*PATHS, "both"):
            raise ConfigError(f"--path must be compile, codegen or both, not {self.path!r}")
        if not (self.scenarios or self.all_ or self.descriptions is not None):
            raise ConfigError("say what to synthesise: --scenario ID, --all or --description TEXT")
        if self.repair_rounds < 0 or self.workers < 1 or self.timeout_s <= 0:
            raise ConfigError("--repair-rounds must be at least 0, --workers at least 1, --timeout positive")

    @property
    def paths(self) -> tuple[str, ...]:
        return PATHS if self.path == "both" else (self.path,)

    def config(self) -> SynthConfig:
        return SynthConfig(
            model=self.model,
            paths=self.paths,
            repair_rounds=self.repair_rounds,
            bounds=self.spec_bounds,
            workers=self.workers,
            unsafe=self.unsafe,
            timeout_s=self.timeout_s,
        )


def synth_library(
    lib: Path, request: SynthRequest, *, progress: Callable[[str, int, int], None] | None = None
) -> LibraryRun:
    """Synthesise ``request`` into the library ``lib`` (resumable: what its index holds is not made
    again); refuses a sandbox that cannot run unless the request is ``unsafe``. ``progress(phase, done,
    total)`` is told of each phase (specs, packages)."""
    check_sandbox(request.unsafe)
    requests = resolve_requests(
        load_catalogue(list(request.extra)),
        request.scenarios,
        all_=request.all_,
        descriptions=request.descriptions or (),
        paths=request.paths,
    )
    return LibraryRun(lib, synthesize(lib, requests, request.config(), progress=progress))
