"""Trials of one task side by side (``r/<run>/trials/<n>.html``, n: the position of the task's first
rollout): one column per trial, one row per tool call, the first turn where the trials' calls differ
highlighted, and the task's pass^k over its trials (τ²-bench's definition,
:func:`dataclaw.envcraft.rollout.run.pass_hat_k`).

A call is its tool name and arguments (arguments compared as parsed JSON, so key order and spacing do
not count); a trial that stops earlier differs from one that goes on at the first call it lacks.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from dataclaw.viewer.markup import esc, kv, page, short, table

if TYPE_CHECKING:
    from dataclaw.viewer.site import Ctx

Call = tuple[str, str]


def calls_of(rollout: dict[str, Any]) -> list[Call]:
    """The rollout's tool calls in order, each (tool, canonical arguments)."""
    out = []
    for step in rollout.get("steps") or []:
        if not isinstance(step, dict):
            continue
        args = step.get("arguments")
        if isinstance(args, str):
            try:
                args = json.loads(args)
            except ValueError:
                pass
        out.append((str(step.get("tool")), json.dumps(args, sort_keys=True, default=str)))
    return out


def first_divergence(trials: list[list[Call]]) -> int | None:
    """The first call index at which the trials' calls differ (one lacking a call counts), or None when
    every trial made the same calls (or there is one trial)."""
    if len(trials) < 2:
        return None
    for i in range(max(map(len, trials), default=0)):
        seen = {t[i] if i < len(t) else None for t in trials}
        if len(seen) > 1:
            return i
    return None


def trials_of(ctx: Ctx, pos: int) -> tuple[str, list[tuple[int, dict[str, Any]]]] | None:
    """The task of the rollout at ``pos`` and all its rollouts (position, record) in trial order."""
    idx = ctx.run.indexes.get("rollouts")
    if idx is None or not 0 <= pos < len(idx):
        return None
    task_id = idx.get(pos).get("task_id")
    if not isinstance(task_id, str):
        return None
    positions = ctx.site.reverse(ctx.run, "rollouts", "task_id").get(task_id, [pos])
    recs = [(n, idx.get(n)) for n in positions]
    recs.sort(key=lambda nr: (nr[1].get("sample") if isinstance(nr[1].get("sample"), int) else 0, nr[0]))
    return task_id, recs


def trials_body(ctx: Ctx, pos: int) -> tuple[str, str] | None:
    """(title, body) of the comparison page; None when ``pos`` is no rollout of this run."""
    from dataclaw.envcraft.rollout.run import is_success, pass_hat_k

    found = trials_of(ctx, pos)
    if found is None:
        return None
    task_id, recs = found
    calls = [calls_of(r) for _, r in recs]
    div = first_divergence(calls)
    records = [{"task_id": task_id, "reward": r.get("reward")} for _, r in recs]
    passk = pass_hat_k(records)
    wins = sum(is_success(r.get("reward")) for _, r in recs)
    where = (
        "one trial: nothing to compare (run `tasks rollout -n K` for K trials)"
        if len(recs) < 2
        else "every trial made the same tool calls"
        if div is None
        else f"trials first differ at tool call {div + 1} (turn {_turn_at(recs, div)}): {_how(calls, div)}"
    )
    body = kv(
        [
            ("task", ctx.id_link(task_id)),
            ("trials", f"{len(recs)} ({wins} with full reward)"),
            ("pass^k", "<span class=passk>" + esc(_passk_text(passk)) + "</span>"),
            ("first divergence", f"<b class=divergence>{esc(where)}</b>"),
        ]
    )
    head = [f"trial {r.get('sample', n)}" for n, r in recs]
    summary = [
        [
            f'<a href="{ctx.rec_url("rollouts", n)}">open</a> reward <b>{esc(r.get("reward"))}</b>'
            f" · {esc(r.get('stop_reason'))} · {esc(r.get('turns'))} turns"
            for n, r in recs
        ]
    ]
    if any(isinstance(r.get("reward_components"), dict) and r["reward_components"] for _, r in recs):
        summary.append([_components(r.get("reward_components")) for _, r in recs])
    rows_html = []
    for i in range(max(map(len, calls), default=0)):
        cells = []
        for t, (_, r) in zip(calls, recs, strict=True):
            if i >= len(t):
                cells.append(
                    "<td class=differs><span class=note>no call</span></td>" if i == div else "<td></td>"
                )
                continue
            step = (r.get("steps") or [])[i] if i < len(r.get("steps") or []) else {}
            step = step if isinstance(step, dict) else {}
            ok = "ok" if step.get("ok") else str(step.get("error_kind") or "failed")
            differs = div is not None and i >= div and any(i >= len(o) or o[i] != t[i] for o in calls)
            cells.append(
                f"<td{' class=differs' if differs else ''}><b>{esc(t[i][0])}</b>"
                f"(<code>{esc(short(t[i][1], 240))}</code>) <small>{esc(ok)}</small>"
                f"<pre>{esc(short(step.get('observation'), 300))}</pre></td>"
            )
        cls = " class=diverge" if i == div else ""
        rows_html.append(f"<tr{cls}><th>{i + 1}</th>{''.join(cells)}</tr>")
    head_html = "<th class=call>call</th>" + "".join(f"<th>{esc(h)}</th>" for h in head)
    summary_html = "".join(
        f"<tr><th>{label}</th>" + "".join(f"<td>{c}</td>" for c in row) + "</tr>"
        for label, row in zip(("", "reward components"), summary, strict=False)
    )
    body += (
        f'<link rel=stylesheet href="{ctx.root}static/review.css"><h2>Tool calls side by side</h2>'
        f"<table class=trials><thead><tr>{head_html}</tr></thead><tbody>{summary_html}"
        f"{''.join(rows_html)}</tbody></table>"
    )
    if not rows_html:
        body += "<p class=note>no trial made a tool call</p>"
    answers = [[esc(short(_final_answer(r), 600)) for _, r in recs]]
    body += "<h2>Final answers</h2>" + table(head, answers, "trials")
    return f"Trials of {short(task_id.rsplit('/', 1)[-1], 60)}", body


def trials_page(ctx: Ctx, pos: int) -> str | None:
    """The whole comparison page (None: no such rollout)."""
    made = trials_body(ctx, pos)
    if made is None:
        return None
    title, body = made
    crumbs = [
        ("runs", f"{ctx.root}index.html"),
        (ctx.run.name, f"{ctx.base}index.html"),
        ("rollouts", f"{ctx.base}rollouts/p1.html"),
        ("trials", ""),
    ]
    return page(title, body, ctx.root, crumbs)


def _how(calls: list[list[Call]], i: int) -> str:
    """What differs at call ``i``: a trial stopped, the tools, or only the arguments."""
    at = [t[i] if i < len(t) else None for t in calls]
    if None in at:
        return "a trial made no call there"
    return "different tools" if len({c[0] for c in at if c}) > 1 else "same tool, different arguments"


def _turn_at(recs: list[tuple[int, dict[str, Any]]], i: int) -> str:
    turns = {
        str(s.get("turn"))
        for _, r in recs
        for s in (r.get("steps") or [])[i : i + 1]
        if isinstance(s, dict) and s.get("turn") is not None
    }
    return ", ".join(sorted(turns)) or "?"


def _components(comps: Any) -> str:
    """A trial's reward components (``{name: {score, weight, detail}}``), one line each."""
    if not isinstance(comps, dict) or not comps:
        return "<span class=note>none recorded</span>"
    lines = []
    for name, c in comps.items():
        c = c if isinstance(c, dict) else {}
        lines.append(
            f'<span title="{esc(short(c.get("detail"), 300))}"><code>{esc(name)}</code>'
            f" {esc(c.get('score'))} ×{esc(c.get('weight'))}</span>"
        )
    return "<br>".join(lines)


def _passk_text(passk: dict[int, float]) -> str:
    return " · ".join(f"pass^{k} = {v:g}" for k, v in sorted(passk.items())) or "—"


def _final_answer(rec: dict[str, Any]) -> str:
    for m in reversed(rec.get("messages") or []):
        if isinstance(m, dict) and m.get("role") == "assistant" and isinstance(m.get("content"), str):
            if m["content"].strip():
                return m["content"]
    return ""
