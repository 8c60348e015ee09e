"""The importer contract: a published task set or environment collection → our records, item by item.

An :class:`Importer` names a format (``pinchbench``, ``clawforge``, ``bfcl``, ``tau2`` …), says what it
produces (tasks, environments or both), recognises a source (:meth:`Importer.sniff`: ``None`` when the
folder is in its format, else one line saying why not), lists the source's items and converts one item
into records, or into an :class:`ImportReject` with an :class:`ImportReason`. The runner
(:func:`run_import`) is the pipeline's resumable stage runner: one item is one record, a bad item is a
reject and the run goes on, a rerun skips what is done. Items carry a content fingerprint in their id, so
an item fixed at the source is imported again on the next run.

Imported code (graders, environment classes) is untrusted: importers hand it to the sandbox
(:mod:`dataclaw.sandbox`) or the env worker, never import it into this process.
"""

from __future__ import annotations

import threading
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from enum import StrEnum
from pathlib import Path
from typing import Any, ClassVar

from dataclaw.core.errors import ConfigError, Reject
from dataclaw.core.ids import root_id
from dataclaw.core.registry import Registry
from dataclaw.pipeline.stage import Record, Resources, Result, Stage
from dataclaw.sandbox import SandboxPolicy


class Produces(StrEnum):
    """What an importer makes: task records (``tasks import``) or environments (``env import``)."""

    TASKS = "tasks"
    ENVIRONMENTS = "environments"


STAGE_OF: dict[Produces, str] = {Produces.TASKS: "tasks", Produces.ENVIRONMENTS: "index"}
"""Where each kind's records go: ``tasks.jsonl`` (what every tasks command reads) and ``index.jsonl``
(an environment library's index, as ``env synth`` writes it: ``env list --library``, ``tasks sample
--library``)."""


class ImportReason(StrEnum):
    """Why one item of a source was not imported (the ``reason`` of its reject)."""

    UNREADABLE = "unreadable"
    """The item's file cannot be read or parsed (bad encoding, bad YAML/JSON, too large)."""
    MALFORMED = "malformed"
    """It parses, but a required part is missing or has the wrong shape."""
    UNKNOWN_TOOL = "unknown_tool"
    """Its ground truth calls a tool that its environment does not have."""
    SYNTAX_ERROR = "syntax_error"
    """Its code (a grader, an environment class) does not compile."""
    IMPORT_TIMEOUT = "import_timeout"
    """Its environment code did not finish importing within the limit (run in the sandbox)."""
    IMPORT_ERROR = "import_error"
    """Its environment code failed when imported or instantiated (in the sandbox)."""
    UNSUPPORTED = "unsupported"
    """A well-formed item of a kind this importer does not convert (the message says which)."""
    DUPLICATE = "duplicate"
    """Another item of the source already produced this id."""
    GOLD_FAILS = "gold_fails"
    """Its own reference solution, replayed through its environment, does not pass its check."""
    MISSING_TOOLS = "missing_tools"
    """Its environment's code is not in the source (e.g. a τ²-bench domain without its tools module)."""


class ImportFailed(RuntimeError):
    """An importer crashed on one item (a bug): recorded as ``internal_error``, retried by the next run."""


@dataclass(frozen=True)
class SourceItem:
    """One item of a source: ``key`` its stable name in the source (a relative path, a task id),
    ``fingerprint`` a hash of its content, ``payload`` what :meth:`Importer.convert` needs (picklable)."""

    key: str
    fingerprint: str
    payload: Any = None


@dataclass(frozen=True)
class ImportReject:
    """An item that could not be imported, and why."""

    reason: ImportReason
    message: str
    detail: dict[str, Any] = field(default_factory=dict)


@dataclass
class ImportContext:
    """Where and how a conversion runs: ``out`` the run directory (tasks) or library (environments),
    ``produce`` what is asked for, ``policy`` the sandbox policy for imported code, ``src`` the source."""

    src: Path
    out: Path
    produce: Produces
    policy: SandboxPolicy = field(default_factory=SandboxPolicy)
    options: dict[str, Any] = field(default_factory=dict)


class Importer(ABC):
    """One published format. Subclass, set the class attributes, implement the three methods and
    register with ``@IMPORTERS.add``."""

    name: ClassVar[str]
    produces: ClassVar[frozenset[Produces]]
    description: ClassVar[str] = ""
    version: ClassVar[int] = 1
    """Bump when conversions change: every item is then converted again on the next run."""

    @abstractmethod
    def sniff(self, src: Path) -> str | None:
        """``None`` when ``src`` is in this format; otherwise one line saying why it is not."""

    @abstractmethod
    def items(self, src: Path, ctx: ImportContext) -> Iterator[SourceItem]:
        """The items of ``src`` that make what ``ctx.produce`` asks for, in a stable order."""

    @abstractmethod
    def convert(self, item: SourceItem, ctx: ImportContext) -> list[Record] | ImportReject:
        """Records of one item (task records, or environment records with the package written under
        ``ctx.out``), or a reject."""

    def prepare(self, src: Path, ctx: ImportContext) -> None:  # noqa: B027 - an optional hook
        """Work shared by all items, done once before them (e.g. writing the environments the tasks of
        the source run in)."""


IMPORTERS: Registry[type[Importer]] = Registry("importer", builtins="dataclaw.envcraft.importers")
"""Importers by format name: the modules of this package, then ``--plugin`` modules and the
``dataclaw.importers`` entry points of installed distributions (``name = "pkg.module:ImporterClass"``,
or a module that registers its importers with ``@IMPORTERS.add``)."""


def importers_for(produce: Produces) -> list[str]:
    """Names of the importers that make ``produce``."""
    return [name for name, cls in IMPORTERS.items() if produce in cls.produces]


@dataclass
class Detection:
    """Result of :func:`detect`: the importer that matched, and why each one tried did not."""

    name: str | None
    tried: dict[str, str]

    def explain(self, src: Path) -> str:
        if not self.tried:
            return f"no importer is registered that could read {src}"
        why = "; ".join(f"{name}: {reason}" for name, reason in self.tried.items())
        return f"{src} is none of the formats tried ({why})"


def detect(src: Path, produce: Produces) -> Detection:
    """Try each importer that makes ``produce`` on ``src`` (sniff only: nothing is run)."""
    tried: dict[str, str] = {}
    for name in importers_for(produce):
        try:
            why = IMPORTERS.get(name)().sniff(src)
        except Exception as exc:  # noqa: BLE001 - a sniff that crashes is a "no" with its reason
            why = f"could not be read ({type(exc).__name__}: {exc})"
        if why is None:
            return Detection(name, tried)
        tried[name] = why
    return Detection(None, tried)


def resolve(fmt: str, src: Path, produce: Produces) -> type[Importer]:
    """The importer for ``fmt`` (``auto``: the first whose sniff accepts ``src``), checked against
    ``src``: one ConfigError saying which formats were tried and why each failed."""
    if not src.exists():
        raise ConfigError(f"{src} does not exist")
    if fmt == "auto":
        found = detect(src, produce)
        if found.name is None:
            raise ConfigError(found.explain(src))
        return IMPORTERS.get(found.name)
    cls = IMPORTERS.get(fmt)
    if produce not in cls.produces:
        makes = ", ".join(sorted(p.value for p in cls.produces))
        others = ", ".join(importers_for(produce)) or "none"
        why = f"importer {fmt!r} makes {makes}, not {produce.value} (importers that do: {others})"
        raise ConfigError(why)
    why = cls().sniff(src)
    if why is not None:
        raise ConfigError(f"{src} is not in the {fmt} format: {why}")
    return cls


class ImportStage(Stage):
    """Source item → records (one item per input record), run by the resumable pipeline runner. Its
    output file is ``tasks.jsonl`` or the library's ``index.jsonl`` (:data:`STAGE_OF`), so every later
    command reads it."""

    # run in this process (threads): conversions wait on sandboxed subprocesses; a forked pool worker of a
    # process that already talks to env workers could not start one of its own (seen under pytest)
    resources: ClassVar[Resources] = Resources.ASYNC

    def __init__(self, importer: Importer, ctx: ImportContext) -> None:
        self.importer = importer
        self.ctx = ctx
        self.name = STAGE_OF[ctx.produce]  # type: ignore[misc] - the output file depends on the kind

    def process(self, item: Record) -> Result:
        src = SourceItem(item["key"], item["fingerprint"], item.get("payload"))
        try:
            out = self.importer.convert(src, self.ctx)
        except Exception as exc:
            # a bug of the importer, not a verdict on the item: the runner records it (internal_error) and
            # leaves the item undone, so the next run tries it again
            raise ImportFailed(f"{item['key']}: {type(exc).__name__}: {exc}") from exc
        if isinstance(out, ImportReject):
            return Reject(
                id=item["id"],
                stage=self.name,
                reason=str(out.reason),
                message=f"{item['key']}: {out.message}",
                detail={"key": item["key"], **out.detail},
            )
        return [{**rec, "import": {"format": self.importer.name, "key": item["key"]}} for rec in out]


LOAD_TIMEOUT_S = 180.0
"""Starting an imported package's worker on a loaded machine (backends may load their data at import)."""
_OPEN_LOCK = threading.Lock()
_OPEN: dict[str, Any] = {}


def package_handle(folder: Path) -> Any:
    """The env worker of an imported package folder, one open at a time per process (a source may hold
    tens of packages, each a sandbox; converting one package's items keeps it warm)."""
    from dataclaw.envcraft.worker import WorkerOptions, open_environment

    key = str(folder)
    with _OPEN_LOCK:
        if key not in _OPEN:
            for other in list(_OPEN):
                _OPEN.pop(other).close()
            _OPEN[key] = open_environment(folder, WorkerOptions(load_timeout_s=LOAD_TIMEOUT_S))
        return _OPEN[key]


IMPORT_PATH = "import"
"""The ``path`` of a library index row that ``env import`` wrote (env synth's are ``compile``/``codegen``)."""


IMPORTED_MARKER = "IMPORTED.json"
"""The file at the root of every package an importer writes: which format and source item it came from.
Its code is the publisher's, not generated: ``tasks export`` copies it without the static audit (Table 15
rules are written for generated code) and says so in the export's manifest."""


def mark_imported(folder: Path, fmt: str, key: str, **info: Any) -> None:
    """Write :data:`IMPORTED_MARKER` into an imported package (unchanged content is not rewritten)."""
    import json

    text = json.dumps({"format": fmt, "key": key, **info}, indent=1, sort_keys=True) + "\n"
    path = folder / IMPORTED_MARKER
    if not path.is_file() or path.read_text(encoding="utf-8") != text:
        path.write_text(text, encoding="utf-8")


def imported_from(folder: Path) -> dict[str, Any] | None:
    """The :data:`IMPORTED_MARKER` of a package folder, or None when an importer did not write it."""
    import json

    try:
        info = json.loads((folder / IMPORTED_MARKER).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return info if isinstance(info, dict) and isinstance(info.get("format"), str) else None


def publisher_set(task: Any) -> str | None:
    """The published set a tool task was imported from as it stands (its ``metadata.source`` names the
    format its environment package was imported by), else None. Such a task carries the publisher's
    verifier, which dataclaw cannot remake: its soundness findings are reported, not refused. A task
    dataclaw derived itself over an imported environment (a ClawForge chain) is not one."""
    from dataclaw.envcraft.runtime.resolve import resolve_env

    source = (task.metadata or {}).get("source")
    if not isinstance(source, str):
        return None
    try:
        ref = resolve_env(task.env, task.env_module)
    except ConfigError:
        return None
    marker = None if ref.builtin else imported_from(ref.folder)
    return source if marker and marker["format"] == source else None


def library_row(fmt: str, rid: str, key: str, env: str, **fields: Any) -> Record:
    """An imported environment as a row of the library index, in env synth's shape
    (:func:`dataclaw.envcraft.synth.library.row`), so ``env list --library``, ``tasks sample --library``
    and the viewer read imported and synthesised environments alike."""
    from dataclaw.envcraft.synth.library import row

    scenario = {"id": env, "name": env, "category": "", "source": f"{fmt}:{key}"}
    return row(rid, scenario, IMPORT_PATH, env=env, spec_valid=True, **fields)


def item_record(importer: Importer, item: SourceItem) -> Record:
    """The runner's input record of a source item: a deterministic id from format, key and content."""
    rid = root_id(f"import-{importer.name}", item.key, [item.key, item.fingerprint, importer.version])
    return {"id": rid, "key": item.key, "fingerprint": item.fingerprint, "payload": item.payload}


@dataclass
class ImportSummary:
    format: str
    produce: str
    items: int
    imported: int
    resumed: int
    rejects: dict[str, int]
    records: int
    file: str = "tasks.jsonl"
    reject_messages: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {k: v for k, v in self.__dict__.items() if k != "reject_messages"}


def run_import(
    fmt: str,
    src: Path,
    out: Path,
    produce: Produces,
    *,
    policy: SandboxPolicy | None = None,
    workers: int = 1,
    limit: int | None = None,
    progress: Callable[[int, int], None] | None = None,
    options: dict[str, Any] | None = None,
) -> ImportSummary:
    """Import ``src`` (format ``fmt`` or ``auto``) into ``out``: records in ``<out>/tasks.jsonl`` or
    ``<out>/index.jsonl``, rejects in ``<out>/rejects.jsonl``; a rerun resumes."""
    from dataclaw.core.store import RunStore
    from dataclaw.pipeline import run_stage
    from dataclaw.pipeline.registry import make_executor

    cls = resolve(fmt, src, produce)
    importer = cls()
    ctx = ImportContext(src.resolve(), out.resolve(), produce, policy or SandboxPolicy(), dict(options or {}))
    with RunStore(out) as store:
        importer.prepare(ctx.src, ctx)
        listed = [item_record(importer, it) for it in importer.items(ctx.src, ctx)][:limit]
        items = list({r["id"]: r for r in listed}.values())  # one item listed twice is imported once
        stage = ImportStage(importer, ctx)
        done = store.done(stage.name)
        resumed = sum(1 for r in items if r["id"] in done)
        run_stage(
            stage,
            items,
            store,
            make_executor(workers=1, concurrency=workers),
            progress,
            # tasks: a new importer version supersedes the records it made; a library index is shared
            # with env synth, whose rows must stay current (item ids carry the version instead)
            producer={"importer": importer.name, "version": importer.version}
            if produce is Produces.TASKS
            else None,
        )
        ids = {r["id"] for r in items}
        rejects = [r for r in store.rejects(stage.name) if r["record_id"] in ids]
        reasons: dict[str, int] = {}
        for r in rejects:
            reasons[r["reason"]] = reasons.get(r["reason"], 0) + 1
        summary = ImportSummary(
            format=importer.name,
            produce=produce.value,
            items=len(items),
            imported=len(items) - len(rejects),
            resumed=resumed,
            rejects=reasons,
            records=len(store.stage(stage.name)),
            file=f"{stage.name}.jsonl",
            reject_messages=[f"[{r['reason']}] {r['message']}" for r in rejects],
        )
        entry = {"format": importer.name, "source": str(ctx.src), **summary.to_dict()}
        store.update_manifest(**{f"import_{produce.value}": entry})
    return summary
