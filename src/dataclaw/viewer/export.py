"""``dataclaw view RUN --export DIR``: the server's pages written as static HTML that opens from disk.

Every page the server has (overview, every list page, every record page, environments, other files) is
rendered once; media links point at the run's files (``file://``), previews and thumbnails are copied
into ``DIR``. Filters and search need the server; the static pages list everything, paginated.

Review works there too: sample and task pages keep a reviewer's verdicts in the browser (localStorage)
and offer them as a downloaded ``verdicts.jsonl``, which ``dataclaw view --import-verdicts FILE RUN``
appends to the run's verdict file. Verdicts the run already had when it was exported are shown.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from importlib import resources
from pathlib import Path

from dataclaw.viewer.run import REJECTS
from dataclaw.viewer.site import PAGE_SIZE, Exporter, NotFound, Site


def pages(site: Site) -> Iterator[str]:
    """Every page path of ``site``."""
    yield "index.html"
    if len(site.runs) > 1:
        yield "compare.html"
    for run in site.runs.values():
        base = f"r/{run.key}/"
        yield base + "index.html"
        if not run.ok:
            continue
        for stage in [*run.stages(), *([REJECTS] if REJECTS in run.indexes else [])]:
            n = len(run.index(stage))
            for p in range(1, max(1, -(-n // PAGE_SIZE)) + 1):
                yield f"{base}{stage}/p{p}.html"
            for i in range(n):
                yield f"{base}{stage}/{i}.html"
        if "rollouts" in run.indexes:  # each task's trials side by side, named by its first rollout
            for first in sorted(ns[0] for ns in site.reverse(run, "rollouts", "task_id").values() if ns):
                yield f"{base}trials/{first}.html"
        if any(s in run.indexes for s in ("chains", "grounded", "tasks")):
            yield base + "envs/index.html"
            for env in site._env_facts(run):
                yield f"{base}envs/{env}.html"
        for other in run.other_files():
            yield f"{base}view/{other.name}.html"


def export_site(site: Site, out: Path, progress: Callable[[int], None] | None = None) -> int:
    """Write every page of ``site`` under ``out``; returns the number of pages written."""
    out.mkdir(parents=True, exist_ok=True)
    static = out / "static"
    static.mkdir(exist_ok=True)
    for res in (resources.files("dataclaw.viewer") / "static").iterdir():
        if res.is_file():
            (static / res.name).write_bytes(res.read_bytes())
    site.export = Exporter(out, set())
    count = 0
    try:
        for path in pages(site):
            try:
                html = site.render(path)
            except NotFound:
                continue
            dest = out / path
            dest.parent.mkdir(parents=True, exist_ok=True)
            dest.write_text(html, encoding="utf-8")
            count += 1
            if progress is not None:
                progress(count)
    finally:
        site.export = None
    return count
