"""Small HTML helpers: escaping, the page layout, JSON as a collapsible tree, tables, the funnel chart
and the tool graph as inline SVG (drawn on the server, so a static export shows them too)."""

from __future__ import annotations

import html
import json
import math
from collections.abc import Iterable, Sequence
from typing import Any

MAX_JSON_CHARS = 200_000


def esc(value: Any) -> str:
    return html.escape("" if value is None else str(value), quote=True)


def page(title: str, body: str, root: str, crumbs: Sequence[tuple[str, str]] = ()) -> str:
    """A whole page. ``root``: the relative path back to the site root ("", "../", …)."""
    nav = " › ".join(f'<a href="{esc(href)}">{esc(text)}</a>' if href else esc(text) for text, href in crumbs)
    return (
        "<!doctype html>\n<html lang=en><head><meta charset=utf-8>"
        f"<title>{esc(title)} · dataclaw view</title>"
        f'<link rel=stylesheet href="{root}static/viewer.css">'
        f'<script defer src="{root}static/viewer.js"></script></head><body>'
        f'<header><a class=brand href="{root}index.html">dataclaw view</a> <nav>{nav}</nav></header>'
        f"<main><h1>{esc(title)}</h1>{body}</main></body></html>"
    )


def problem_box(messages: Iterable[str]) -> str:
    items = "".join(f"<li>{esc(m)}</li>" for m in messages)
    return f'<div class="problems" role=alert><b>Problems</b><ul>{items}</ul></div>' if items else ""


def json_block(value: Any, open_: bool = True) -> str:
    """Pretty JSON in a <details>; very large values are cut with a note (the raw line stays a link)."""
    text = json.dumps(value, indent=2, ensure_ascii=False, default=str)
    note = ""
    if len(text) > MAX_JSON_CHARS:
        note = f"<p class=note>cut at {MAX_JSON_CHARS:,} of {len(text):,} characters</p>"
        text = text[:MAX_JSON_CHARS]
    attr = " open" if open_ else ""
    return f"<details class=json{attr}><summary>JSON</summary><pre>{esc(text)}</pre>{note}</details>"


def table(headers: Sequence[str], rows: Iterable[Sequence[str]], cls: str = "") -> str:
    """``rows`` cells are HTML already (escape with :func:`esc`)."""
    head = "".join(f"<th>{esc(h)}</th>" for h in headers)
    body = "".join("<tr>" + "".join(f"<td>{c}</td>" for c in row) + "</tr>" for row in rows)
    return f'<table class="{cls}"><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>'


def kv(pairs: Iterable[tuple[str, Any]]) -> str:
    rows = "".join(f"<tr><th>{esc(k)}</th><td>{v}</td></tr>" for k, v in pairs)
    return f"<table class=kv>{rows}</table>"


def short(value: Any, n: int = 120) -> str:
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, default=str)
    return text if len(text) <= n else text[: n - 1] + "…"


def funnel_svg(steps: Sequence[tuple[str, int, int]]) -> str:
    """Horizontal bars, one per stage: (name, records out, rejects); the yield to the next gate is
    written beside each bar."""
    if not steps:
        return "<p class=note>no stage counts</p>"
    top = max(max(n, 1) for _, n, _ in steps)
    bar_h, gap, label_w, width = 22, 8, 150, 620
    height = len(steps) * (bar_h + gap) + gap
    parts = [f'<svg class=funnel role=img aria-label="per-stage yield" viewBox="0 0 {width} {height}">']
    prev = None
    for i, (name, n, rej) in enumerate(steps):
        y = gap + i * (bar_h + gap)
        w = max(2.0, (width - label_w - 170) * n / top)
        x = label_w + (width - label_w - 170 - w) / 2
        parts.append(f'<text x="{label_w - 6}" y="{y + 15}" text-anchor=end>{esc(name)}</text>')
        parts.append(
            f'<rect x="{x:.1f}" y="{y}" width="{w:.1f}" height="{bar_h}" rx=3>'
            f"<title>{esc(name)}: {n}</title></rect>"
        )
        note = f"{n:,}"
        if prev:
            note += f"  ({100 * n / prev:.0f}% of {prev:,})"
        if rej:
            note += f"  · {rej:,} rejected"
        parts.append(f'<text x="{width - 165}" y="{y + 15}">{esc(note)}</text>')
        prev = n if n else prev
    parts.append("</svg>")
    return "".join(parts)


def graph_svg(nodes: Sequence[tuple[str, str]], edges: Sequence[tuple[str, str, int]]) -> str:
    """A tool graph on a circle: nodes (name, "read"/"write"/""), directed edges (a, b, weight)."""
    if not nodes:
        return "<p class=note>no tools seen</p>"
    size, r = 520, 190
    c = size / 2
    pos = {}
    for i, (name, _) in enumerate(nodes):
        a = 2 * math.pi * i / len(nodes) - math.pi / 2
        pos[name] = (c + r * math.cos(a), c + r * math.sin(a))
    parts = [
        f'<svg class=toolgraph role=img aria-label="tool graph" viewBox="0 0 {size} {size}">'
        '<defs><marker id=arrow viewBox="0 0 10 10" refX=10 refY=5 markerWidth=6 markerHeight=6 orient=auto>'
        '<path d="M0,0L10,5L0,10z"/></marker></defs>'
    ]
    for a, b, w in edges:
        if a not in pos or b not in pos or a == b:
            continue
        (x1, y1), (x2, y2) = pos[a], pos[b]
        d = math.hypot(x2 - x1, y2 - y1) or 1
        ux, uy = (x2 - x1) / d, (y2 - y1) / d
        parts.append(
            f'<line x1="{x1 + 16 * ux:.1f}" y1="{y1 + 16 * uy:.1f}"'
            f' x2="{x2 - 16 * ux:.1f}" y2="{y2 - 16 * uy:.1f}"'
            f' stroke-width="{min(1 + w, 5)}" marker-end="url(#arrow)">'
            f"<title>{esc(a)} → {esc(b)} ({w})</title></line>"
        )
    for name, side in nodes:
        x, y = pos[name]
        parts.append(
            f'<circle class="{esc(side)}" cx="{x:.1f}" cy="{y:.1f}" r=14>'
            f"<title>{esc(name)} ({esc(side)})</title></circle>"
        )
        anchor = "start" if x >= c else "end"
        dx = 18 if x >= c else -18
        parts.append(f'<text x="{x + dx:.1f}" y="{y + 4:.1f}" text-anchor={anchor}>{esc(name)}</text>')
    parts.append("</svg>")
    return "".join(parts)
