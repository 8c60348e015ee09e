"""Small HTML helpers: escaping, the page layout, JSON as a collapsible tree, tables, the funnel chart
and the tool graph as inline SVG (drawn on the server, so a static export shows them too)."""

from __future__ import annotations

import html
import json
import math
from collections.abc import Iterable, Sequence
from typing import Any

MAX_JSON_CHARS = 200_000
LABEL_CHAR_W = 7.5
"""Width of one label character in the SVGs (13 px sans-serif, generous) for laying out text."""


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
    # labels sit outside the circle: widen the view box to hold the longest one on either side
    label_w = {name: LABEL_CHAR_W * len(name) for name, _ in nodes}
    left = min([0.0, *(pos[n][0] - 18 - label_w[n] for n, _ in nodes if pos[n][0] < c)]) - 4
    right = max([float(size), *(pos[n][0] + 18 + label_w[n] for n, _ in nodes if pos[n][0] >= c)]) + 4
    parts = [
        f'<svg class=toolgraph role=img aria-label="tool graph"'
        f' viewBox="{left:.0f} 0 {right - left:.0f} {size}" width="{right - left:.0f}">'
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


def bars_svg(items: Sequence[tuple[str, int]], cls: str = "bars", label: str = "counts") -> str:
    """Horizontal bars with their counts: (label, count), drawn in the order given."""
    if not items:
        return "<p class=note>none</p>"
    top = max(max(n for _, n in items), 1)
    label_w = min(max(LABEL_CHAR_W * len(name) for name, _ in items) + 8, 320)
    bar_h, gap, bar_w = 16, 4, 220
    width, height = label_w + bar_w + 70, len(items) * (bar_h + gap) + gap
    parts = [
        f'<svg class="{esc(cls)}" role=img aria-label="{esc(label)}" viewBox="0 0 {width:.0f} {height}"'
        f' width="{width:.0f}" height="{height}">'
    ]
    for i, (name, n) in enumerate(items):
        y = gap + i * (bar_h + gap)
        w = max(1.0, bar_w * n / top)
        parts.append(
            f'<text x="{label_w - 6:.0f}" y="{y + 12}" text-anchor=end>{esc(short(name, 42))}</text>'
            f'<rect x="{label_w:.0f}" y="{y}" width="{w:.1f}" height="{bar_h}" rx=2 data-label="{esc(name)}"'
            f' data-count="{n}"><title>{esc(name)}: {n:,}</title></rect>'
            f'<text x="{label_w + w + 4:.0f}" y="{y + 12}">{n:,}</text>'
        )
    parts.append("</svg>")
    return "".join(parts)


def hist_svg(bins: Sequence[tuple[float, float, int]], label: str = "histogram") -> str:
    """A small histogram: (low, high, count) per bin, the range written under it."""
    if not bins:
        return "<p class=note>no values</p>"
    top = max(max(c for _, _, c in bins), 1)
    width, height, base = 240, 70, 56
    w = width / len(bins)
    parts = [
        f'<svg class=hist role=img aria-label="{esc(label)}" viewBox="0 0 {width} {height}"'
        f' width="{width}" height="{height}">'
    ]
    for i, (lo, hi, c) in enumerate(bins):
        h = (base - 4) * c / top
        parts.append(
            f'<rect x="{i * w + 1:.1f}" y="{base - h:.1f}" width="{max(w - 2, 1):.1f}" height="{h:.1f}"'
            f' data-count="{c}"><title>{_num(lo)} – {_num(hi)}: {c:,}</title></rect>'
        )
    parts.append(
        f'<text x="0" y="{height - 2}">{_num(bins[0][0])}</text>'
        f'<text x="{width}" y="{height - 2}" text-anchor=end>{_num(bins[-1][1])}</text></svg>'
    )
    return "".join(parts)


def _num(x: float) -> str:
    return f"{x:,.0f}" if abs(x) >= 100 or float(x).is_integer() else f"{x:.2f}"
