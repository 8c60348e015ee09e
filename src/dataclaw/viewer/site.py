"""The viewer's pages, the same for the server and the static export.

Every page has a file-like path relative to the site root (``r/0/samples/p1.html``,
``r/0/samples/12.html`` …) and links relatively, so the server and an export folder opened from disk
follow the same links. :class:`Site` maps a path to its HTML (:meth:`Site.render`); the server adds
filters (query strings) and media bytes, the export writes each page to a file.
"""

from __future__ import annotations

import json
import re
from collections import Counter, defaultdict
from collections.abc import Callable
from dataclasses import dataclass
from itertools import pairwise
from pathlib import Path
from typing import Any
from urllib.parse import quote, urlencode

from dataclaw.viewer import stats
from dataclaw.viewer.index import LineIndex
from dataclaw.viewer.kinds import kind_of
from dataclaw.viewer.markup import (
    bars_svg,
    esc,
    funnel_svg,
    graph_svg,
    hist_svg,
    json_block,
    kv,
    page,
    problem_box,
    short,
    table,
)
from dataclaw.viewer.media import IMAGE_SUFFIXES, MediaCache, OutsideRun, contained
from dataclaw.viewer.run import REJECTS, Run
from dataclaw.viewer.verdicts import agreement_block

PAGE_SIZE = 50
MAX_THUMBS = 24
ENV_SCAN = 5000
"""Records per stage read to describe environments (tools, scenarios, graph) — enough for any real env."""


class NotFound(Exception):
    """No page at this path (the server answers 404 with the message)."""


@dataclass
class Exporter:
    """What a static export needs from a page: where files land (set only while exporting)."""

    out: Path
    written: set[str]


class Ctx:
    """What a page kind may ask while drawing one record: links, lineage, media, related records."""

    def __init__(self, site: Site, run: Run, depth: int, stage: str | None = None) -> None:
        self.site, self.run, self.stage = site, run, stage
        self.root = "../" * depth
        self.base = f"{self.root}r/{run.key}/"

    # links --------------------------------------------------------------------------------------
    def rec_url(self, stage: str, n: int) -> str:
        return f"{self.base}{quote(stage)}/{n}.html"

    def link(self, stage: str, rec: dict[str, Any], text: str | None = None) -> str:
        rid = rec.get("id")
        n = self.run.index(stage).find(rid) if isinstance(rid, str) and stage in self.run.indexes else None
        label = esc(text or _tail(rid))
        return (
            f'<a href="{self.rec_url(stage, n)}" title="{esc(rid)}">{label}</a>' if n is not None else label
        )

    def self_link(self, rec: dict[str, Any], text: str | None = None) -> str:
        """A link to ``rec`` in the stage being shown (the same id may sit in several stage files)."""
        rid = rec.get("id")
        here = self.run.indexes.get(self.stage) if self.stage else None
        n = here.find(rid) if here is not None and isinstance(rid, str) else None
        loc = (self.stage, n) if n is not None else self.run.locate(rid) if isinstance(rid, str) else None
        label = esc(text or _tail(rid))
        return f'<a href="{self.rec_url(*loc)}" title="{esc(rid)}">{label}</a>' if loc else label

    def id_link(self, rid: str) -> str:
        if not rid:
            return ""
        loc = self.run.locate(rid)
        if loc is None:
            return f'<code title="not in this run">{esc(short(rid, 90))}</code>'
        return f'<a href="{self.rec_url(*loc)}" title="{esc(rid)}"><code>{esc(short(rid, 90))}</code></a>'

    def env_link(self, env: str) -> str:
        if not env:
            return ""
        return f'<a href="{self.base}envs/{quote(env)}.html">{esc(env)}</a>'

    def lineage(self, rec: dict[str, Any]) -> str:
        """The id read left to right (stream → candidate → sample → artifact; env → chain → task →
        rollout), each ancestor linked where the run holds it."""
        rid = rec.get("id")
        if not isinstance(rid, str) or "/" not in rid:
            return ""
        parts = rid.split("/")
        crumbs = []
        for i in range(1, len(parts)):
            prefix = "/".join(parts[:i])
            loc = self.run.locate(prefix)
            label = esc(parts[i - 1])
            crumbs.append(f'<a href="{self.rec_url(*loc)}">{label}</a>' if loc else label)
        crumbs.append(f"<b>{esc(parts[-1])}</b>")
        return f"<p class=lineage>lineage: {' / '.join(crumbs)}</p>"

    def children(self, rec: dict[str, Any], stage: str, field: str | None = None) -> str:
        """Records of ``stage`` made from ``rec``: ids under its id, or whose ``field`` names it."""
        rid = rec.get("id")
        idx = self.run.indexes.get(stage)
        if not isinstance(rid, str) or idx is None:
            return ""
        hits = [n for key, n in idx.ids.items() if key.startswith(rid + "/")]
        if field is not None:
            hits = sorted(set(hits) | set(self.site.reverse(self.run, stage, field).get(rid, [])))
        if not hits:
            return ""
        items = "".join(f"<li>{self.link(stage, idx.get(n))}</li>" for n in hits[:50])
        more = f"<li>… {len(hits) - 50} more</li>" if len(hits) > 50 else ""
        return f"<h2>{esc(kind_of(stage).title)} from this record</h2><ul class=children>{items}{more}</ul>"

    def rejects_of(self, record_id: str) -> str:
        idx = self.run.indexes.get(REJECTS)
        if idx is None:
            return ""
        rows = self.site.reverse(self.run, REJECTS, "record_id").get(record_id, [])
        if not rows:
            return ""
        out = []
        for n in rows:
            r = idx.get(n)
            fails = (r.get("detail") or {}).get("failures") if isinstance(r.get("detail"), dict) else None
            out.append([esc(r.get("stage")), f"<code>{esc(r.get('reason'))}</code>", esc(r.get("message"))])
            for f in fails if isinstance(fails, list) else []:
                if isinstance(f, dict):
                    out.append(
                        [
                            "",
                            f"<code>{esc(f.get('reason'))}</code>",
                            f"{esc(f.get('validator'))}: {esc(f.get('message'))}",
                        ]
                    )
        return table(["stage", "reason", "message"], out, "rejects")

    def tool_sides(self) -> dict[str, str]:
        return self.site.tool_sides(self.run)

    # media --------------------------------------------------------------------------------------
    def media(self, sample: dict[str, Any]) -> str:
        items = sample.get("media") if isinstance(sample.get("media"), list) else []
        if not items:
            return "<p class=note>no media (not materialised yet)</p>"
        out = []
        for m in items:
            m = m if isinstance(m, dict) else {}
            art = self.run.record("artifacts", str(m.get("artifact_id") or ""))
            what = f"{esc(m.get('role') or m.get('kind'))} {esc(m.get('placeholder') or '')}"
            head = f"<div class=mediahead>{what}</div>"
            if art is None:
                out.append(
                    f'<div class="media missing">{head}<p class=bad>artifact {esc(m.get("artifact_id"))}'
                    " is not in"
                    " artifacts.jsonl</p></div>"
                )
                continue
            out.append(
                f"<div class=media>{head}{self.artifact_media(art)}"
                f"<p>{self.link('artifacts', art, 'artifact record')}</p></div>"
            )
        return "<div class=medialist>" + "".join(out) + "</div>"

    def artifact_media(self, art: dict[str, Any]) -> str:
        rel = art.get("path")
        if not isinstance(rel, str):
            return "<p class=bad>the artifact names no path</p>"
        try:
            path = contained(self.run.root, rel)
        except OutsideRun as exc:
            return f"<p class='bad outside'>{esc(exc)}</p>"
        if not path.is_file():
            return f"<p class='bad missing'>media file missing: {esc(rel)}</p>"
        rel_in = path.relative_to(self.run.root.resolve()).as_posix()
        if path.suffix.lower() in IMAGE_SUFFIXES or art.get("media_type") == "image":
            return f'<img class=still src="{self.site.file_url(self, rel_in)}" alt="{esc(art.get("kind"))}">'
        try:
            play = self.site.cache.playability(path)
        except Exception as exc:  # noqa: BLE001 - an undecodable clip is shown as a message, the page stays
            why = f"{esc(type(exc).__name__)}: {esc(short(str(exc), 200))}"
            return f"<p class=bad>cannot read the clip {esc(rel)}: {why}</p>"
        original = f'<a href="{self.site.file_url(self, rel_in)}">original</a>'
        if play.playable:
            src, note = self.site.file_url(self, rel_in), f"{esc(play.codec)} {esc(play.pix_fmt)}"
        else:
            src = self.site.preview_url(self, rel_in, path)
            note = (
                f"browser preview (lossy H.264) of a {esc(play.codec)} {esc(play.pix_fmt)} clip · {original}"
            )
        return f'<video class=clip controls preload=metadata src="{src}"></video><p class=note>{note}</p>'

    def thumbnails(self, stream_id: str, camera: str | None, frames: list[Any]) -> str:
        """The frames of the request as thumbnails, decoded from the stream's video (as streams.jsonl
        names it; the source file itself is never served)."""
        frames = [f for f in frames if isinstance(f, int)]
        if not frames:
            return ""
        stream = self.run.record("streams", stream_id)
        cams = (stream or {}).get("cameras")
        cams = cams if isinstance(cams, dict) else {}
        names = list(cams)
        name = camera if camera in cams else (names[0] if names else None)
        cam = cams.get(name) if name else None
        path = Path(cam["path"]) if isinstance(cam, dict) and isinstance(cam.get("path"), str) else None
        label = ", ".join(map(str, frames))
        if path is None or not path.is_file():
            why = "no thumbnails: the stream's video is not on this machine"
            return f"<p class=note>frames {esc(label)} ({why})</p>"
        pos = self.run.index("streams").find(stream_id)
        shown = frames[:MAX_THUMBS]
        cam_no = names.index(name) if name in names else 0
        imgs = "".join(
            f'<figure><img loading=lazy src="{self.site.thumb_url(self, pos or 0, cam_no, f, path)}"'
            f' alt="frame {f}"><figcaption>{f}</figcaption></figure>'
            for f in shown
        )
        more = f"<p class=note>{len(frames) - len(shown)} more frames</p>" if len(frames) > len(shown) else ""
        return f"<div class=thumbs>{imgs}</div>{more}"


def _tail(rid: Any) -> str:
    return short(rid.rsplit("/", 1)[-1], 70) if isinstance(rid, str) else "record"


class Site:
    """All pages of a set of runs."""

    def __init__(self, runs: list[Run], cache: MediaCache) -> None:
        self.runs = {r.key: r for r in runs}
        self.cache = cache
        self.export: Exporter | None = None
        self._reverse: dict[tuple[str, str, str, int], dict[str, list[int]]] = {}
        self._sides: dict[tuple[str, int], dict[str, str]] = {}
        self.routes: list[tuple[re.Pattern[str], Callable[..., str]]] = [
            (re.compile(r"index\.html"), self.home),
            (re.compile(r"compare\.html"), self.compare),
            (re.compile(r"r/(\w+)/index\.html"), self.overview),
            (re.compile(r"r/(\w+)/envs/index\.html"), self.envs),
            (re.compile(r"r/(\w+)/envs/([^/]+)\.html"), self.env),
            (re.compile(r"r/(\w+)/view/(.+)\.html"), self.file_view),
            (re.compile(r"r/(\w+)/trials/(\d+)\.html"), self.trials),
            (re.compile(r"r/(\w+)/([^/]+)/p(\d+)\.html"), self.listing),
            (re.compile(r"r/(\w+)/([^/]+)/(\d+)\.html"), self.record),
        ]

    # url helpers that differ between server and export -----------------------------------------
    def file_url(self, ctx: Ctx, rel: str) -> str:
        if self.export is not None:
            return (ctx.run.root / rel).resolve().as_uri()
        return f"{ctx.base}file/{quote(rel)}"

    def preview_url(self, ctx: Ctx, rel: str, path: Path) -> str:
        if self.export is not None:
            name = f"r/{ctx.run.key}/preview/{self.cache.preview(path).name}"
            self._copy_out(self.cache.preview(path), name)
            return ctx.root + name
        return f"{ctx.base}preview/{quote(rel)}"

    def thumb_url(self, ctx: Ctx, stream: int, cam: int, frame: int, video: Path) -> str:
        name = f"r/{ctx.run.key}/thumb/{stream}/{cam}/{frame}.jpg"
        if self.export is not None:
            try:
                self._copy_out(self.cache.thumbnail(video, frame), name)
            except Exception:  # noqa: BLE001 - a frame that does not decode is a broken image, not a failed export
                pass
        return ctx.root + name

    def _copy_out(self, src: Path, name: str) -> None:
        assert self.export is not None
        if name in self.export.written:
            return
        dest = self.export.out / name
        dest.parent.mkdir(parents=True, exist_ok=True)
        dest.write_bytes(src.read_bytes())
        self.export.written.add(name)

    # lookups ------------------------------------------------------------------------------------
    def run(self, key: str) -> Run:
        run = self.runs.get(key)
        if run is None:
            raise NotFound(f"no run {key!r} in this viewer")
        return run

    def reverse(self, run: Run, stage: str, field: str) -> dict[str, list[int]]:
        """``field`` value (dotted path) → positions in ``stage``; built once per file length."""
        idx = run.indexes.get(stage)
        if idx is None:
            return {}
        key = (run.key, stage, field, len(idx))
        if key not in self._reverse:
            out: dict[str, list[int]] = defaultdict(list)
            path = field.split(".")
            for n in range(len(idx)):
                value: Any = idx.get(n)
                for p in path:
                    value = value.get(p) if isinstance(value, dict) else None
                if isinstance(value, str):
                    out[value].append(n)
            self._reverse[key] = dict(out)
        return self._reverse[key]

    def tool_sides(self, run: Run) -> dict[str, str]:
        """Tool name → read/write, as the run's grounded chains record the side effects."""
        idx = run.indexes.get("grounded")
        key = (run.key, len(idx) if idx else 0)
        if key not in self._sides:
            sides: dict[str, str] = {}
            for n in range(min(len(idx), ENV_SCAN) if idx else 0):
                for s in idx.get(n).get("steps") or []:  # type: ignore[union-attr]
                    if isinstance(s, dict) and isinstance(s.get("tool"), str) and s.get("side_effect"):
                        sides[s["tool"]] = str(s["side_effect"])
            self._sides[key] = sides
        return self._sides[key]

    # rendering ----------------------------------------------------------------------------------
    def render(self, path: str, query: dict[str, str] | None = None) -> str:
        """The HTML of the page at ``path`` (relative to the site root); NotFound when none."""
        path = path.lstrip("/") or "index.html"
        if path.endswith("/"):
            path += "index.html"
        for pattern, fn in self.routes:
            m = pattern.fullmatch(path)
            if m:
                return fn(*m.groups(), query=query or {})
        raise NotFound(f"no page {path}")

    def home(self, query: dict[str, str]) -> str:
        if len(self.runs) == 1:
            only = next(iter(self.runs.values()))
            return self.overview(only.key, query=query, depth=0)
        rows = []
        for run in self.runs.values():
            run.refresh()
            state = "" if run.ok else "<span class='badge bad'>not a run</span>"
            cmds = stats.commands(run.manifest)
            produced = [_flow(b) for b in stats.headline(run) if b.kind != "run"] if run.ok else []
            rows.append(
                [
                    f'<a href="r/{run.key}/index.html">{esc(run.name)}</a> {state}',
                    "<br>".join(p for p in produced if p) or "<span class=note>no output</span>",
                    f"<code>{esc(cmds[-1])}</code>" if cmds else "",
                ]
            )
        body = table(["run", "produced", "command (last)"], rows, "runs")
        body += (
            "<section><h2>Side by side</h2>"
            + self._compare_table(list(self.runs.values()), "")
            + "</section>"
        )
        return page("Runs", body, "")

    def compare(self, query: dict[str, str]) -> str:
        """The runs' headline figures side by side (``?runs=0,2`` picks runs), differences marked."""
        keys = [k for k in (query.get("runs") or "").split(",") if k]
        runs = [self.run(k) for k in keys] if keys else list(self.runs.values())
        for run in runs:
            run.refresh()
        crumbs = [("runs", "index.html"), ("side by side", "")]
        return page("Runs side by side", self._compare_table(runs, ""), "", crumbs)

    def _compare_table(self, runs: list[Run], root: str) -> str:
        """One row per headline figure, one column per run; a row whose values differ is marked."""
        runs = [r for r in runs if r.ok]
        if len(runs) < 2:
            return "<p class=note>one run: nothing to compare</p>"
        order: dict[tuple[str, str], str] = {}
        values: list[dict[tuple[str, str], str]] = []
        for run in runs:
            got: dict[tuple[str, str], str] = {}
            for block in [*stats.headline(run), stats.field_block(run)]:
                for fig in block.figures:
                    order.setdefault((block.kind, fig.key), f"{block.title}: {fig.label}")
                    got[(block.kind, fig.key)] = fig.text()
            values.append(got)
        rows = []
        kinds = [*stats.BLOCK_ORDER, "run", "fields"]
        ranked = sorted(
            order.items(), key=lambda kv: kinds.index(kv[0][0]) if kv[0][0] in kinds else len(kinds)
        )
        for key, label in ranked:
            cells = [v.get(key) for v in values]
            present = {c for c in cells if c is not None}
            mark = "diff" if len(present) > 1 else "only" if sum(c is not None for c in cells) == 1 else ""
            rows.append(
                f'<tr data-figure="{esc(key[0])}.{esc(key[1])}"><th>{esc(label)}</th>'
                + "".join(
                    f"<td class={mark}>{esc(c)}</td>"
                    if c is not None and mark
                    else f"<td>{esc(c or '—')}</td>"
                    for c in cells
                )
                + "</tr>"
            )
        names = _short_names([r.name for r in runs])
        head = "".join(
            f'<th><a href="{root}r/{r.key}/index.html" title="{esc(r.name)}">{esc(n)}</a></th>'
            for r, n in zip(runs, names, strict=True)
        )
        n_diff = sum(1 for r in rows if "class=diff" in r)
        return (
            f"<p class=note>{n_diff} of {len(rows)} figures differ between the runs that have them (marked ≠;"
            " a figure only one run has is greyed)</p>"
            f"<table class=compare><thead><tr><th>figure</th>{head}</tr></thead>"
            f"<tbody>{''.join(rows)}</tbody></table>"
        )

    def overview(self, key: str, query: dict[str, str], depth: int = 2) -> str:
        run = self.run(key)
        run.refresh()
        ctx = Ctx(self, run, depth)
        crumbs = [("runs", f"{ctx.root}index.html"), (run.name, "")]
        body = problem_box(f"{p.file}: {p.message}" for p in run.problems)
        if not run.ok:
            return page(run.name, body, ctx.root, crumbs)
        man = run.manifest
        body += _headline(run)
        rej = run.indexes.get(REJECTS)
        by_stage = Counter(f.get("stage", "") for f in rej.facets) if rej else Counter()
        rows, steps = [], []
        for stage in run.stages():
            idx = run.index(stage)
            steps.append((stage, len(idx), by_stage.get(stage, 0)))
            rows.append(
                [
                    f'<a href="{ctx.base}{quote(stage)}/p1.html">{esc(stage)}</a>',
                    esc(kind_of(stage).title),
                    f"{len(idx):,}",
                    f"{idx.superseded:,}" if idx.superseded else "",
                    esc(by_stage.get(stage, "")),
                ]
            )
        body += "<section><h2>Yield per gate</h2>" + funnel_svg(steps)
        body += table(["file", "kind", "current records", "superseded", "rejects"], rows, "stages")
        if any(s in run.indexes for s in ("chains", "grounded", "tasks")):
            body += f'<p><a href="{ctx.base}envs/index.html">Environments in this run</a></p>'
        body += "</section>" + _field_stats(run)
        body += _rejects_summary(run, ctx)
        body += agreement_block(run, ctx)
        body += "<section><h2>Manifest</h2>"
        if man:
            body += kv(
                [
                    ("created", esc(man.get("created"))),
                    ("updated", esc(man.get("updated"))),
                    ("versions", esc(short(man.get("versions"), 200))),
                    ("inputs", esc(short(man.get("inputs"), 300))),
                ]
            )
            config = {
                k: man[k] for k in ("config", "route", "intents", "request", "seed", "export") if k in man
            }
            if config:
                body += "<h3>Config</h3>" + json_block(config, open_=False)
            body += "<h3>Whole manifest</h3>" + json_block(man, open_=False)
        else:
            body += "<p class=note>this run has no manifest.json (its command did not write one)</p>"
        body += "</section>"
        others = run.other_files()
        if others:
            items = "".join(
                f'<li><a href="{ctx.base}view/{quote(p.name)}.html">{esc(p.name)}</a>'
                f" <small>{p.stat().st_size:,} bytes</small></li>"
                for p in others
            )
            body += f"<section><h2>Other files</h2><ul>{items}</ul></section>"
        nested = [r for r in self.runs.values() if r is not run and run.root in r.root.parents]
        if nested:
            items = "".join(
                f'<li><a href="{ctx.root}r/{r.key}/index.html">{esc(r.name)}</a></li>' for r in nested
            )
            body += f"<section><h2>Runs inside this one</h2><ul>{items}</ul></section>"
        return page(run.name, body, ctx.root, crumbs)

    def listing(self, key: str, stage: str, page_no: str, query: dict[str, str]) -> str:
        run = self.run(key)
        run.refresh()
        idx = run.indexes.get(stage)
        if idx is None:
            raise NotFound(f"run {run.name} has no stage file {stage}.jsonl")
        kind = kind_of(stage)
        ctx = Ctx(self, run, 3, stage)
        want = {f: query.get(f, "") for f in kind.facets}
        text = query.get("q", "")
        rows = idx.select(want, text) if (any(want.values()) or text) else None
        total = len(rows) if rows is not None else len(idx)
        pages = max(1, -(-total // PAGE_SIZE))
        n = min(max(1, int(page_no)), pages)
        positions = (
            rows[(n - 1) * PAGE_SIZE : n * PAGE_SIZE]
            if rows is not None
            else range((n - 1) * PAGE_SIZE, min(n * PAGE_SIZE, total))
        )
        body = problem_box(f"{p.file}: {p.message}" for p in run.problems if p.file == idx.path.name)
        body += self._filter_form(idx, kind.facets, want, text)
        table_rows = []
        for pos in positions:
            rec = idx.get(pos)
            try:
                table_rows.append((kind.row or _plain_row)(rec, ctx))
            except Exception as exc:  # noqa: BLE001 - one odd record is one plain row, not a broken page
                table_rows.append(
                    [
                        ctx.link(stage, rec),
                        f"<span class=bad>{esc(type(exc).__name__)}</span> {esc(short(rec, 160))}",
                    ]
                    + [""] * (len(kind.columns) - 2)
                )
        match = " match" if rows is not None else ""
        body += f"<p class=count>{total:,} records{match} · page {n} of {pages}</p>"
        body += table(list(kind.columns), table_rows, f"list {kind.name}")
        body += self._pager(stage, n, pages, {**want, "q": text})
        crumbs = [("runs", f"{ctx.root}index.html"), (run.name, f"{ctx.base}index.html"), (stage, "")]
        return page(f"{kind.title}: {stage}", body, ctx.root, crumbs)

    def _filter_form(self, idx: LineIndex, facets: tuple[str, ...], want: dict[str, str], text: str) -> str:
        if self.export is not None:
            return "<p class=note>static export: filters and search need <code>dataclaw view</code></p>"
        parts = []
        for f in facets:
            values = idx.facet_values(f)
            opts = "".join(
                f'<option value="{esc(v)}"{" selected" if want.get(f) == v else ""}>{esc(v)} ({c:,})</option>'
                for v, c in values.items()
            )
            parts.append(
                f'<label>{esc(f)} <select name="{esc(f)}">'
                f'<option value="">all</option>{opts}</select></label>'
            )
        parts.append(
            f'<label>search <input name=q value="{esc(text)}" placeholder="text in the record"></label>'
        )
        return (
            f'<form class=filters method=get action="p1.html">{"".join(parts)}<button>filter</button></form>'
        )

    def _pager(self, stage: str, n: int, pages: int, params: dict[str, str]) -> str:
        qs = urlencode({k: v for k, v in params.items() if v}) if self.export is None else ""
        suffix = f"?{qs}" if qs else ""
        links = []
        if n > 1:
            links.append(f'<a rel=prev href="p{n - 1}.html{suffix}">‹ previous</a>')
        if n < pages:
            links.append(f'<a rel=next href="p{n + 1}.html{suffix}">next ›</a>')
        return f"<nav class=pager>{' '.join(links)}</nav>"

    def record(self, key: str, stage: str, pos: str, query: dict[str, str]) -> str:
        run = self.run(key)
        idx = run.indexes.get(stage)
        if idx is None:
            raise NotFound(f"run {run.name} has no stage file {stage}.jsonl")
        if int(pos) >= len(idx):
            run.refresh()
        try:
            rec = idx.get(int(pos))
        except IndexError:
            raise NotFound(f"{stage}.jsonl has no record {pos}") from None
        kind = kind_of(stage)
        ctx = Ctx(self, run, 3, stage)
        try:
            body = (kind.render or _plain_render)(rec, ctx)
        except Exception as exc:  # noqa: BLE001 - an unexpected shape shows as JSON with the reason
            body = problem_box(
                [f"this {kind.name} record has an unexpected shape ({type(exc).__name__}: {exc})"]
            ) + json_block(rec)
        nav = []
        if int(pos) > 0:
            nav.append(f'<a rel=prev href="{int(pos) - 1}.html">‹ previous</a>')
        if int(pos) + 1 < len(idx):
            nav.append(f'<a rel=next href="{int(pos) + 1}.html">next ›</a>')
        body = f"<nav class=pager>{' '.join(nav)}</nav>" + body
        crumbs = [
            ("runs", f"{ctx.root}index.html"),
            (run.name, f"{ctx.base}index.html"),
            (stage, f"p{int(pos) // PAGE_SIZE + 1}.html"),
            (str(pos), ""),
        ]
        return page(f"{kind.title}: {_tail(rec.get('id'))}", body, ctx.root, crumbs)

    def trials(self, key: str, pos: str, query: dict[str, str]) -> str:
        """k trials of one task side by side (:mod:`dataclaw.viewer.compare`)."""
        from dataclaw.viewer.compare import trials_page

        run = self.run(key)
        run.refresh()
        html = trials_page(Ctx(self, run, 3, "rollouts"), int(pos))
        if html is None:
            raise NotFound(f"run {run.name} has no rollout {pos}")
        return html

    def file_view(self, key: str, rel: str, query: dict[str, str]) -> str:
        run = self.run(key)
        ctx = Ctx(self, run, 2 + rel.count("/") + 1)
        crumbs = [("runs", f"{ctx.root}index.html"), (run.name, f"{ctx.base}index.html"), (rel, "")]
        try:
            path = contained(run.root, rel)
        except OutsideRun as exc:
            return page(rel, problem_box([str(exc)]), ctx.root, crumbs)
        if not path.is_file():
            raise NotFound(f"no file {rel} in run {run.name}")
        size = path.stat().st_size
        data = path.read_bytes()[:2_000_000]
        body = f"<p class=note>{size:,} bytes</p>"
        try:
            body += json_block(json.loads(data))
        except ValueError:
            try:
                body += f"<pre>{esc(data.decode('utf-8')[:200_000])}</pre>"
            except UnicodeDecodeError:
                body += "<p class=note>binary file, not shown</p>"
        return page(rel, body, ctx.root, crumbs)

    # environments -------------------------------------------------------------------------------
    def _env_facts(self, run: Run) -> dict[str, dict[str, Any]]:
        envs: dict[str, dict[str, Any]] = defaultdict(
            lambda: {
                "tools": {},
                "scenarios": Counter(),
                "edges": Counter(),
                "chains": 0,
                "tasks": 0,
                "rollouts": [],
            }
        )
        for stage in ("chains", "grounded", "tasks"):
            idx = run.indexes.get(stage)
            for n in range(min(len(idx), ENV_SCAN) if idx else 0):
                rec = idx.get(n)  # type: ignore[union-attr]
                names = (
                    [rec["env"]]
                    if isinstance(rec.get("env"), str)
                    else [e for e in rec.get("envs") or [] if isinstance(e, str)]
                )
                for env in names:
                    facts = envs[env]
                    if isinstance(rec.get("scenario_id"), str):
                        facts["scenarios"][rec["scenario_id"]] += 1
                    if stage == "tasks":
                        facts["tasks"] += 1
                    steps = rec.get("steps") or []
                    tools = [
                        s if isinstance(s, str) else s.get("tool") for s in steps if isinstance(s, str | dict)
                    ]
                    if stage == "chains":
                        facts["chains"] += 1
                        for a, b in pairwise(tools):
                            facts["edges"][(a, b)] += 1
                    for s in steps:
                        if isinstance(s, dict) and isinstance(s.get("tool"), str):
                            t = facts["tools"].setdefault(s["tool"], {"side_effect": "", "params": {}})
                            t["side_effect"] = s.get("side_effect") or t["side_effect"]
                            for p, v in (s.get("params") or {}).items():
                                t["params"][p] = type(v).__name__
                        elif isinstance(s, str):
                            facts["tools"].setdefault(s, {"side_effect": "", "params": {}})
        return envs

    def envs(self, key: str, query: dict[str, str]) -> str:
        run = self.run(key)
        ctx = Ctx(self, run, 3)
        facts = self._env_facts(run)
        rows = [
            [
                ctx.env_link(e),
                f"{len(f['tools'])}",
                f"{len(f['scenarios'])}",
                f"{f['chains']}",
                f"{f['tasks']}",
            ]
            for e, f in sorted(facts.items())
        ]
        crumbs = [
            ("runs", f"{ctx.root}index.html"),
            (run.name, f"{ctx.base}index.html"),
            ("environments", ""),
        ]
        body = "<p class=note>as this run's chains, grounded chains and tasks describe them</p>"
        return page(
            "Environments",
            body + table(["environment", "tools", "scenarios", "chains", "tasks"], rows),
            ctx.root,
            crumbs,
        )

    def env(self, key: str, name: str, query: dict[str, str]) -> str:
        run = self.run(key)
        ctx = Ctx(self, run, 3)
        facts = self._env_facts(run).get(name)
        if facts is None:
            raise NotFound(f"run {run.name} has no records of environment {name}")
        tools = facts["tools"]
        rows = [
            [
                f"<b>{esc(t)}</b>",
                f'<span class="side {esc(v["side_effect"])}">{esc(v["side_effect"] or "?")}</span>',
                esc(", ".join(f"{p}: {ty}" for p, ty in v["params"].items())),
            ]
            for t, v in sorted(tools.items())
        ]
        body = "<h2>Tools</h2>" + table(["tool", "side effect", "parameters seen (name: type)"], rows)
        body += "<h2>Tool graph</h2><p class=note>edges: consecutive calls in the sampled chains</p>"
        body += graph_svg(
            [(t, v["side_effect"]) for t, v in sorted(tools.items())],
            [(a, b, w) for (a, b), w in facts["edges"].items()],
        )
        body += "<h2>Scenarios</h2>" + table(
            ["scenario", "records"], [[esc(s), esc(c)] for s, c in facts["scenarios"].most_common()]
        )
        audit = run.root / "audits" / f"{name}.json"
        if audit.is_file():
            try:
                body += "<h2>Audit</h2>" + json_block(json.loads(audit.read_text(encoding="utf-8")))
            except (OSError, ValueError) as exc:
                body += problem_box([f"audits/{name}.json: cannot be read ({exc})"])
        body += (
            f'<p><a href="{ctx.base}tasks/p1.html?env={quote(name)}">tasks of {esc(name)}</a></p>'
            if "tasks" in run.indexes
            else ""
        )
        crumbs = [
            ("runs", f"{ctx.root}index.html"),
            (run.name, f"{ctx.base}index.html"),
            ("environments", "index.html"),
            (name, ""),
        ]
        return page(f"Environment: {name}", body, ctx.root, crumbs)


def _plain_row(rec: dict[str, Any], ctx: Ctx) -> list[str]:
    return [ctx.self_link(rec), esc(short(rec, 160))]


def _plain_render(rec: dict[str, Any], ctx: Ctx) -> str:
    return json_block(rec)


def _short_names(names: list[str]) -> list[str]:
    """Run names without the folders they all share (the full path stays in the link's title)."""
    parts = [n.split("/") for n in names]
    common = 0
    while all(len(p) > common + 1 for p in parts) and len({p[common] for p in parts}) == 1:
        common += 1
    return ["/".join(p[common:]) for p in parts]


def _flow(block: stats.Block) -> str:
    """ "N inputs → K kept (yield)" of a headline block ("" when it has no such pair)."""
    figs = {f.key: f for f in block.figures}
    if "kept" not in figs:
        return ""
    k = figs["kept"]
    out = f"<b>{esc(k.text())}</b> {esc(k.label)}"
    if "inputs" in figs:
        out = f"{esc(figs['inputs'].text())} {esc(figs['inputs'].label)} → {out}"
    rate = figs.get("yield") or figs.get("pass_rate")
    return out + (f" ({esc(rate.text())} {esc(rate.label)})" if rate is not None else "")


def _headline(run: Run) -> str:
    """What the run produced and whether it is good, first: the commands that wrote it, one block of
    figures per kind of output (inputs → kept, yield, pass rate, mean reward, pass^k …), tokens and cost
    per model, and the reject reasons as a bar chart. Every figure is counted from the stage files."""
    cmds = stats.commands(run.manifest)
    out = "<section class=summary><h2>At a glance</h2>"
    if cmds:
        items = "".join(f"<code>{esc(c)}</code>" for c in cmds[-5:])
        more = f"<span class=note>… {len(cmds) - 5} earlier</span>" if len(cmds) > 5 else ""
        out += f'<div class=commands data-figure="command">{more}{items}</div>'
    else:
        out += (
            "<p class='note commands'>command: not recorded in manifest.json (a run written before"
            " dataclaw kept its command lines)</p>"
        )
    out += "<div class=headline>"
    for block in stats.headline(run):
        flow = f"<div class=flow>{_flow(block)}</div>" if block.kind != "run" else ""
        cells = "".join(
            f'<div class=fig data-figure="{esc(block.kind)}.{esc(f.key)}" data-value="{esc(f.value)}"'
            f' title="{esc(f.source)}"><span class=v>{esc(f.text())}</span>'
            f"<span class=l>{esc(f.label)}</span></div>"
            for f in block.figures
        )
        out += (
            f'<div class=block data-kind="{esc(block.kind)}"><h3>{esc(block.title)}</h3>{flow}'
            f"<div class=figs>{cells}</div></div>"
        )
    out += "</div>" + _usage(run) + _reason_bars(run) + "</section>"
    return out


def _usage(run: Run) -> str:
    by_model, source = stats.usage_by_model(run)
    if not by_model:
        return "<p class=note>models: no model calls recorded</p>"
    rows = []
    for name, u in by_model.items():
        priced = "" if u.get("priced", True) else " <small>(unpriced)</small>"
        rows.append(
            [
                esc(name),
                esc(u.get("calls")),
                esc(u.get("cache_hits", "")),
                esc(u.get("failed")),
                esc(u.get("prompt_tokens")),
                esc(u.get("completion_tokens")),
                esc(round(float(u.get("cost_usd") or 0.0), 6)) + priced,
            ]
        )
    return f"<h3>Models, tokens, cost <small class=note>({esc(source)})</small></h3>" + table(
        ["model", "calls", "cache hits", "failed", "prompt tokens", "completion tokens", "cost $"],
        rows,
        "usage",
    )


def _reason_bars(run: Run) -> str:
    idx = run.indexes.get(REJECTS)
    if idx is None or not len(idx):
        return "<h3>Reject reasons</h3><p class=note>no rejects</p>"
    counts = Counter(f"{f.get('stage', '')}: {f.get('reason', '')}" for f in idx.facets)
    top = counts.most_common(15)
    rest = sum(counts.values()) - sum(n for _, n in top)
    if rest:
        top.append(("(other reasons)", rest))
    return "<h3>Reject reasons</h3>" + bars_svg(top, "reasons", "rejects by stage and reason")


def _field_stats(run: Run) -> str:
    """Small plots of each stage's registered fields (histograms of numbers, bars of values): the run's
    product first (samples, tasks, rollouts, a library's index), the other stages folded below."""
    present = [s for s in [*run.stages(), REJECTS] if s in run.indexes]
    kept = [s for s in stats.KEPT_STAGES if s in present][:1] or present[:1]
    kept += [s for s in stats.KEPT_STAGES if s in present and s not in kept and s != "streams"]
    drawn = {s: _stage_plots(run, s) for s in present}
    first = "".join(drawn[s] for s in kept)
    rest = "".join(drawn[s] for s in present if s not in kept)
    if not first and not rest:
        return ""
    folded = f"<details><summary>the other stages</summary>{rest}</details>" if rest else ""
    return f"<section><h2>Fields of the kept records</h2>{first}{folded}</section>"


def _stage_plots(run: Run, stage: str) -> str:
    idx = run.indexes[stage]
    st = idx.stats
    if st is None or not st.fields or not len(idx):
        return ""
    cells = []
    for f in st.fields:
        if f.kind == "num":
            summ = st.summary(f.name)
            if summ is None:
                continue
            note = (
                f"n {summ.n:,} · min {_fmt(summ.min)} · median {_fmt(summ.median)} · mean"
                f" {_fmt(summ.mean)} · max {_fmt(summ.max)}"
            )
            plot = hist_svg(summ.bins, f"{stage} {f.name}")
        else:
            counts = st.cats.get(f.name) or Counter()
            if not counts:
                continue
            top = counts.most_common(8)
            rest = sum(counts.values()) - sum(n for _, n in top)
            note = f"{len(counts):,} distinct" + (f" · {rest:,} in others" if rest else "")
            plot = bars_svg(top, "bars", f"{stage} {f.name}")
        cells.append(
            f'<div class=stat data-stat="{esc(stage)}.{esc(f.name)}"><h4>{esc(f.name)}</h4>{plot}'
            f"<div class=note>{note}</div></div>"
        )
    if not cells:
        return ""
    return (
        f"<h3>{esc(stage)} <small class=note>({len(idx):,} records)</small></h3>"
        f"<div class=statgrid>{''.join(cells)}</div>"
    )


def _fmt(x: float) -> str:
    return f"{x:,.0f}" if float(x).is_integer() else f"{x:,.2f}"


def _rejects_summary(run: Run, ctx: Ctx) -> str:
    idx = run.indexes.get(REJECTS)
    if idx is None or not len(idx):
        return "<section><h2>Rejects</h2><p>none</p></section>"
    groups: dict[tuple[str, str], list[int]] = defaultdict(list)
    for n, f in enumerate(idx.facets):
        groups[(f.get("stage", ""), f.get("reason", ""))].append(n)
    rows = []
    for (stage, reason), ns in sorted(groups.items(), key=lambda kv: -len(kv[1])):
        examples = []
        for n in ns[:3]:
            r = idx.get(n)
            examples.append(
                f'<li><a href="{ctx.rec_url(REJECTS, n)}">'
                f"{esc(short(r.get('message') or r.get('record_id'), 140))}</a></li>"
            )
        href = f"{ctx.base}{REJECTS}/p1.html?" + urlencode({"stage": stage, "reason": reason})
        if ctx.site.export is not None:
            href = f"{ctx.base}{REJECTS}/p1.html"
        rows.append(
            [
                esc(stage),
                f'<a href="{esc(href)}"><code>{esc(reason)}</code></a>',
                f"{len(ns):,}",
                f"<ul class=examples>{''.join(examples)}</ul>",
            ]
        )
    return (
        "<section><h2>Rejects by reason</h2>"
        + table(["stage", "reason", "count", "examples"], rows, "rejects")
        + "</section>"
    )
