"""Page kinds: one per record kind (a registry keyed by stage file name, not an if-chain).

A kind says which facets its list page filters on, what a list row shows and how one record's page is
drawn. Records are read defensively: every field is optional, unknown fields are fine (the JSON of the
record is always on its page), and a stage nobody registered gets the generic kind.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from dataclaw.core.errors import ConfigError
from dataclaw.core.registry import Registry
from dataclaw.viewer.markup import esc, json_block, kv, short, table
from dataclaw.viewer.verdicts import panel as review_panel

if TYPE_CHECKING:
    from dataclaw.viewer.run import Run
    from dataclaw.viewer.site import Ctx

Rec = dict[str, Any]


def _s(value: Any) -> str:
    return value if isinstance(value, str) else "" if value is None else str(value)


def _d(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _l(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


@dataclass(frozen=True)
class Kind:
    """How the viewer shows one record kind."""

    name: str
    title: str
    stages: tuple[str, ...]
    columns: tuple[str, ...] = ("id",)
    facets: tuple[str, ...] = ()
    facet: Callable[[Run, Rec], dict[str, str]] | None = None
    row: Callable[[Rec, Ctx], list[str]] | None = None
    render: Callable[[Rec, Ctx], str] | None = None
    extra: dict[str, Any] = field(default_factory=dict)

    def facet_fn(self, run: Run) -> Callable[[Rec], dict[str, str]] | None:
        if self.facet is None:
            return None
        fn = self.facet
        return lambda rec: fn(run, rec)


KINDS: Registry[Kind] = Registry("viewer page kind")
_BY_STAGE: dict[str, Kind] = {}


def register(kind: Kind) -> Kind:
    """Add a page kind; a stage file claimed by another kind is refused, like a duplicate name."""
    taken = {stage: _BY_STAGE[stage].name for stage in kind.stages if _BY_STAGE.get(stage, kind) is not kind}
    if taken:
        stage, owner = next(iter(taken.items()))
        raise ConfigError(
            f"viewer page kind '{kind.name}': stage '{stage}' is already shown by kind '{owner}'"
        )
    KINDS.register(kind.name, kind)
    for stage in kind.stages:
        _BY_STAGE[stage] = kind
    return kind


def kind_of(stage: str) -> Kind:
    """The kind of stage file ``stage`` (the generic JSON kind when none is registered)."""
    return _BY_STAGE.get(stage, GENERIC)


# --- generic ---------------------------------------------------------------------------------------
def _generic_row(rec: Rec, ctx: Ctx) -> list[str]:
    rest = {k: v for k, v in rec.items() if k not in ("id", "producer")}
    return [ctx.self_link(rec), esc(short(rest, 160))]


def _generic_render(rec: Rec, ctx: Ctx) -> str:
    return ctx.lineage(rec) + json_block(rec)


GENERIC = Kind("generic", "Records", (), ("id", "record"), row=_generic_row, render=_generic_render)


# --- rejects ---------------------------------------------------------------------------------------
def _reject_facets(run: Run, rec: Rec) -> dict[str, str]:
    return {"stage": _s(rec.get("stage")), "reason": _s(rec.get("reason"))}


def _reject_row(rec: Rec, ctx: Ctx) -> list[str]:
    return [
        esc(rec.get("stage")),
        f"<code>{esc(rec.get('reason'))}</code>",
        esc(short(_s(rec.get("message")), 200)),
        ctx.id_link(_s(rec.get("record_id"))),
    ]


def _reject_render(rec: Rec, ctx: Ctx) -> str:
    body = kv(
        [
            ("stage", esc(rec.get("stage"))),
            ("reason", f"<code>{esc(rec.get('reason'))}</code>"),
            ("message", esc(rec.get("message"))),
            ("record", ctx.id_link(_s(rec.get("record_id")))),
        ]
    )
    return body + json_block(rec)


register(
    Kind(
        "rejects",
        "Rejects",
        ("rejects",),
        ("stage", "reason", "message", "record"),
        ("stage", "reason"),
        _reject_facets,
        _reject_row,
        _reject_render,
    )
)


# --- Tailor ----------------------------------------------------------------------------------------
def _stream_row(rec: Rec, ctx: Ctx) -> list[str]:
    meta = _d(rec.get("metadata"))
    return [
        ctx.self_link(rec),
        esc(rec.get("reader")),
        esc(rec.get("modality")),
        esc(rec.get("frame_count")),
        esc(short(_s(meta.get("task") or rec.get("source")), 80)),
    ]


def _stream_render(rec: Rec, ctx: Ctx) -> str:
    cams = _d(rec.get("cameras"))
    rows = [
        [
            esc(name),
            esc(_d(c).get("kind")),
            esc(_d(c).get("codec")),
            f"{esc(_d(c).get('width'))}×{esc(_d(c).get('height'))}",
        ]
        for name, c in cams.items()
    ]
    out = kv(
        [
            (k, esc(short(rec.get(k), 300)))
            for k in ("reader", "modality", "source", "fps", "frame_count", "duration")
        ]
    )
    out += "<h2>Cameras</h2>" + table(["camera", "kind", "codec", "size"], rows)
    out += ctx.children(rec, "candidates", "stream_id")
    return out + json_block(rec, open_=False)


register(
    Kind(
        "streams",
        "Streams",
        ("streams",),
        ("id", "reader", "modality", "frames", "task / source"),
        ("modality",),
        lambda run, r: {"modality": _s(r.get("modality"))},
        _stream_row,
        _stream_render,
    )
)


def _cand_row(rec: Rec, ctx: Ctx) -> list[str]:
    return [ctx.self_link(rec), esc(rec.get("kind")), esc(short(_s(rec.get("why")), 160))]


def _cand_render(rec: Rec, ctx: Ctx) -> str:
    out = ctx.lineage(rec) + kv(
        [("kind", esc(rec.get("kind"))), ("why", esc(rec.get("why"))), ("camera", esc(rec.get("camera")))]
    )
    frames = [*_l(rec.get("frames")), *_l(rec.get("observation_frames")), *_l(rec.get("future_frames"))]
    out += ctx.thumbnails(_s(rec.get("stream_id")), _s(rec.get("camera")) or None, frames)
    out += ctx.children(rec, "responses", "candidate_id")
    return out + json_block(rec, open_=False)


register(
    Kind(
        "candidates",
        "Candidates",
        ("candidates",),
        ("id", "kind", "why"),
        ("kind",),
        lambda run, r: {"kind": _s(r.get("kind"))},
        _cand_row,
        _cand_render,
    )
)


def _response_verdict(run: Run, rid: str) -> str:
    verdict = run.verdicts.get("validated", {}).get(rid)
    return "not validated" if verdict is None else "passed" if verdict == "" else verdict


def _resp_facets(run: Run, rec: Rec) -> dict[str, str]:
    return {
        "intent": _s(rec.get("intent")),
        "domain": _s(rec.get("domain")),
        "verdict": _response_verdict(run, _s(rec.get("id"))) if not rec.get("error") else "model error",
    }


def _resp_row(rec: Rec, ctx: Ctx) -> list[str]:
    f = _resp_facets(ctx.run, rec)
    return [
        ctx.self_link(rec),
        esc(f["intent"]),
        esc(f["domain"]),
        _verdict_badge(f["verdict"]),
        esc(rec.get("model")),
    ]


def _verdict_badge(verdict: str) -> str:
    cls = "ok" if verdict in ("passed", "ok") else "bad"
    return f'<span class="badge {cls}">{esc(verdict)}</span>'


def _messages(messages: list[Any]) -> str:
    out = []
    for m in messages:
        m = _d(m)
        content = m.get("content")
        if isinstance(content, list):  # OpenAI content parts: text and images
            parts = []
            for p in content:
                p = _d(p)
                if p.get("type") == "text":
                    parts.append(esc(p.get("text")))
                else:
                    parts.append(f"<i>[{esc(p.get('type') or 'part')}]</i>")
            body = "<br>".join(parts)
        else:
            body = esc(content)
        calls = ""
        for call in _l(m.get("tool_calls")):
            fn = _d(_d(call).get("function"))
            args = esc(short(fn.get("arguments"), 400))
            calls += f"<div class=toolcall>→ <b>{esc(fn.get('name'))}</b>(<code>{args}</code>)</div>"
        role = _s(m.get("role")) or "?"
        name = f" <small>{esc(m.get('name') or m.get('tool_call_id') or '')}</small>"
        out.append(
            f'<div class="msg {esc(role)}"><div class=role>{esc(role)}{name}</div>'
            f"<pre>{body}</pre>{calls}</div>"
        )
    return "<div class=conversation>" + "".join(out) + "</div>"


def _request_section(resp: Rec, ctx: Ctx) -> str:
    out = "<h2>Request as sent</h2>"
    out += kv(
        [
            ("model", esc(resp.get("model"))),
            ("router", esc(resp.get("router"))),
            ("images sent", esc(resp.get("images"))),
            ("cached", esc(resp.get("cached"))),
        ]
    )
    cand = ctx.run.record("candidates", _s(resp.get("candidate_id"))) or {}
    out += ctx.thumbnails(_s(resp.get("stream_id")), _s(cand.get("camera")) or None, _l(resp.get("frames")))
    anchors = _l(cand.get("anchor_ids"))
    if anchors:
        out += (
            "<h3>Anchors</h3><ul class=anchors>"
            + "".join(f"<li>{ctx.id_link(_s(a))}</li>" for a in anchors)
            + "</ul>"
        )
    out += _messages(_l(resp.get("messages")))
    if resp.get("error"):
        out += f"<p class=bad>model error: {esc(short(resp.get('error'), 500))}</p>"
    return out


def _resp_render(rec: Rec, ctx: Ctx) -> str:
    out = ctx.lineage(rec) + review_panel(rec, ctx) + _request_section(rec, ctx)
    out += "<h2>Answer</h2>" + json_block(rec.get("output"))
    verdict = _response_verdict(ctx.run, _s(rec.get("id")))
    out += f"<h2>Validation</h2><p>{_verdict_badge(verdict)}</p>"
    out += ctx.rejects_of(_s(rec.get("id")))
    out += ctx.children(rec, "samples", "provenance.response_id")
    return out + json_block(rec, open_=False)


register(
    Kind(
        "responses",
        "Responses",
        ("responses",),
        ("id", "intent", "domain", "verdict", "model"),
        ("intent", "domain", "verdict"),
        _resp_facets,
        _resp_row,
        _resp_render,
    )
)


def _sample_facets(run: Run, rec: Rec) -> dict[str, str]:
    checks = _d(rec.get("checks"))
    failed = [k for k, v in checks.items() if v is False]
    return {
        "intent": _s(rec.get("intent")),
        "domain": _s(rec.get("domain")),
        "verdict": "passed" if not failed else "failed: " + ",".join(failed),
    }


def _sample_row(rec: Rec, ctx: Ctx) -> list[str]:
    f = _sample_facets(ctx.run, rec)
    question = next(
        (_s(_d(m).get("content")) for m in _l(rec.get("conversation")) if _d(m).get("role") == "user"), ""
    )
    return [
        ctx.self_link(rec),
        esc(f["intent"]),
        esc(f["domain"]),
        _verdict_badge(f["verdict"]),
        esc(short(question, 120)),
        esc(len(_l(rec.get("media")))),
    ]


def _sample_render(rec: Rec, ctx: Ctx) -> str:
    out = ctx.lineage(rec) + review_panel(rec, ctx)
    prov = _d(rec.get("provenance"))
    out += kv(
        [
            ("intent", esc(rec.get("intent"))),
            ("domain", esc(rec.get("domain"))),
            ("model", esc(_d(rec.get("route")).get("model"))),
        ]
    )
    out += "<h2>Media</h2>" + ctx.media(rec)
    out += "<h2>Conversation</h2>" + _messages(_l(rec.get("conversation")))
    out += "<h2>Answer</h2>" + json_block(rec.get("output"))
    checks = _d(rec.get("checks"))
    out += "<h2>Validation</h2>" + table(
        ["validator", "verdict"],
        [[esc(k), _verdict_badge("passed" if v else "failed")] for k, v in checks.items()],
        "checks",
    )
    resp = ctx.run.record("responses", _s(prov.get("response_id")))
    if resp is not None:
        out += _request_section(resp, ctx)
    elif prov.get("response_id"):
        out += f"<p class=note>response {esc(prov.get('response_id'))} is not in this run</p>"
    return out + json_block(rec, open_=False)


register(
    Kind(
        "samples",
        "Tailor samples",
        ("samples", "validated", "materialize"),
        ("id", "intent", "domain", "verdict", "question", "media"),
        ("intent", "domain", "verdict"),
        _sample_facets,
        _sample_row,
        _sample_render,
    )
)


def _artifact_row(rec: Rec, ctx: Ctx) -> list[str]:
    return [
        ctx.self_link(rec),
        esc(rec.get("kind")),
        esc(rec.get("media_type")),
        esc(rec.get("path")),
        ctx.id_link(_s(rec.get("sample_id"))),
    ]


def _artifact_render(rec: Rec, ctx: Ctx) -> str:
    out = ctx.lineage(rec) + kv(
        [
            (k, esc(short(rec.get(k), 200)))
            for k in ("kind", "media_type", "path", "frames", "fps", "width", "height", "sha256")
        ]
    )
    out += ctx.artifact_media(rec)
    return out + json_block(rec, open_=False)


register(
    Kind(
        "artifacts",
        "Artifacts",
        ("artifacts",),
        ("id", "kind", "media", "path", "sample"),
        ("kind",),
        lambda run, r: {"kind": _s(r.get("kind"))},
        _artifact_row,
        _artifact_render,
    )
)


# --- EnvCraft --------------------------------------------------------------------------------------
def _env_of(rec: Rec) -> str:
    envs = rec.get("envs")
    return _s(rec.get("env")) or (",".join(map(str, envs)) if isinstance(envs, list) else "")


def _chain_row(rec: Rec, ctx: Ctx) -> list[str]:
    steps = [s if isinstance(s, str) else _s(_d(s).get("tool")) for s in _l(rec.get("steps"))]
    return [ctx.self_link(rec), ctx.env_link(_env_of(rec)), esc(" → ".join(steps))]


def _chain_render(rec: Rec, ctx: Ctx) -> str:
    out = ctx.lineage(rec)
    steps = _l(rec.get("steps"))
    rows = []
    for i, s in enumerate(steps):
        s = s if isinstance(s, dict) else {"tool": s}
        rows.append(
            [
                esc(i),
                f"<b>{esc(s.get('tool'))}</b>",
                esc(s.get("side_effect")),
                f"<code>{esc(short(s.get('params'), 300))}</code>",
                f"<code>{esc(short(s.get('sources'), 200))}</code>",
                f"<code>{esc(short(s.get('output'), 300))}</code>",
            ]
        )
    out += "<h2>Steps</h2>" + table(["#", "tool", "side effect", "params", "sources", "output"], rows)
    if "verifier" in rec:
        out += "<h2>Verifier</h2>" + _verifier(rec.get("verifier")) + _proof(_d(rec.get("verifier_check")))
    if rec.get("added_distractors"):
        out += "<h2>Distractors added</h2>" + json_block(rec.get("added_distractors"))
    out += ctx.children(rec, "grounded", "chain_id") + ctx.children(rec, "tasks", "metadata.grounded_id")
    return out + json_block(rec, open_=False)


def _verifier(verifier: Any) -> str:
    assertions = _l(_d(verifier).get("assertions"))
    if not assertions:
        return json_block(verifier)
    rows = [
        [
            f"<code>{esc(a.get('path'))}</code>",
            esc(a.get("op")),
            f"<code>{esc(short(a.get('value'), 200))}</code>",
            f'<span class="why {esc(a.get("why"))}">{esc(a.get("why"))}</span>',
        ]
        for a in map(_d, assertions)
    ]
    return table(["path", "op", "value", "why"], rows, "verifier")


def _proof(check: dict[str, Any]) -> str:
    if not check:
        return ""
    gold, initial = check.get("gold"), check.get("initial")
    ok = gold == 1.0 and isinstance(initial, int | float) and initial < 1.0
    return (
        f'<p class="proof {"ok" if ok else "bad"}">proof: gold chain scores <b>{esc(gold)}</b>, untouched'
        f" initial state scores <b>{esc(initial)}</b></p>"
    )


for _name, _title in (("chains", "Tool chains"), ("grounded", "Grounded chains")):
    register(
        Kind(
            _name,
            _title,
            (_name,),
            ("id", "env", "steps"),
            ("env",),
            lambda run, r: {"env": _env_of(r)},
            _chain_row,
            _chain_render,
        )
    )


def _task_row(rec: Rec, ctx: Ctx) -> list[str]:
    return [
        ctx.self_link(rec),
        ctx.env_link(_env_of(rec)),
        esc(rec.get("scenario_id")),
        esc(short(_s(rec.get("instruction")), 140)),
    ]


def _state_with_distractors(state: Any, distractors: list[Any]) -> str:
    """S0 as a summary: each collection's size, the distractor entries marked."""
    marked = {(_s(_d(d).get("collection")), _s(_d(d).get("id"))): _d(d) for d in distractors}
    rows = []
    for key, value in _d(state).items():
        if isinstance(value, dict):
            size, ids = len(value), list(value)
        elif isinstance(value, list):
            size, ids = len(value), []
        else:
            rows.append([f"<code>{esc(key)}</code>", esc(short(value, 120)), ""])
            continue
        dis = [i for i in ids if (key, _s(i)) in marked]
        note = ", ".join(
            f'<span class=distractor title="{esc(marked[(key, _s(i))].get("reason"))}">{esc(i)}'
            f" (copy of {esc(marked[(key, _s(i))].get('copy_of'))})</span>"
            for i in dis
        )
        rows.append([f"<code>{esc(key)}</code>", f"{size} entries", note])
    return table(["field", "size", "distractors"], rows, "state")


def _task_render(rec: Rec, ctx: Ctx) -> str:
    from dataclaw.envcraft.runtime.task import TaskRowError, ToolTask

    out = ctx.lineage(rec) + review_panel(rec, ctx) + _trials_link(_s(rec.get("id")), ctx)
    try:
        task = ToolTask.from_row(rec)
    except TaskRowError as exc:  # a row that is no tool task (or a claw task's): say so, show the row
        out += f"<p class=bad>{esc(exc)}</p>"
    else:
        out += _tool_task_body(task, ctx)
    for stage in ("rubric", "calibration", "code_audit"):
        r = ctx.run.record(stage, _s(rec.get("id")))
        if r is not None:
            out += f"<h2>{esc(stage)}</h2>" + ctx.link(stage, r, "open") + json_block(r, open_=False)
    out += ctx.children(rec, "rollouts", "task_id")
    return out + json_block(rec, open_=False)


def _trials_link(task_id: str, ctx: Ctx) -> str:
    """A link to the task's trials side by side (``r/<run>/trials/<first rollout>.html``)."""
    trials = ctx.site.reverse(ctx.run, "rollouts", "task_id").get(task_id, [])
    if not trials:
        return ""
    return (
        f'<p class=trials-link><a href="{ctx.base}trials/{trials[0]}.html">{len(trials)} trial(s) of this'
        " task side by side</a></p>"
    )


def _tool_task_body(task: Any, ctx: Ctx) -> str:
    """A :class:`~dataclaw.envcraft.runtime.task.ToolTask`: environment, text, S0, verifier, gold chain."""
    meta = task.metadata
    out = kv(
        [
            ("environment", ctx.env_link(task.env)),
            ("scenario", esc(task.scenario_id)),
            ("persona", esc(_d(task.persona).get("description"))),
            ("instruction", esc(task.instruction)),
        ]
    )
    out += (
        "<h2>User turns</h2><ol class=turns>"
        + "".join(f"<li>{esc(t)}</li>" for t in task.user_turns)
        + "</ol>"
    )
    grounded = ctx.run.record("grounded", _s(meta.get("grounded_id"))) or {}
    out += "<h2>Initial state S0</h2>" + _state_with_distractors(
        task.initial_state, _l(grounded.get("added_distractors"))
    )
    out += "<h2>Verifier</h2>" + _verifier(task.verifier) + _proof(_d(meta.get("verifier_check")))
    return (
        out
        + "<h2>Gold chain</h2>"
        + table(
            ["#", "tool", "params"],
            [
                [esc(i), esc(_d(g).get("tool")), f"<code>{esc(short(_d(g).get('params'), 300))}</code>"]
                for i, g in enumerate(task.gold_chain)
            ],
        )
    )


register(
    Kind(
        "tasks",
        "Tasks",
        ("tasks", "calibrated_tasks", "repaired_tasks"),
        ("id", "env", "scenario", "instruction"),
        ("env", "scenario"),
        lambda run, r: {"env": _env_of(r), "scenario": _s(r.get("scenario_id"))},
        _task_row,
        _task_render,
    )
)


def _audit_row(rec: Rec, ctx: Ctx) -> list[str]:
    failed = [_s(_d(c).get("name")) for c in _l(rec.get("checks")) if not _d(c).get("passed")]
    return [
        ctx.self_link(rec),
        esc(rec.get("kind")),
        _verdict_badge("passed" if rec.get("passed") else "failed"),
        esc(rec.get("untouched_score")),
        esc(rec.get("solved_score")),
        esc(", ".join(failed)),
    ]


def _audit_render(rec: Rec, ctx: Ctx) -> str:
    out = kv(
        [
            ("passed", _verdict_badge("passed" if rec.get("passed") else "failed")),
            ("defect", esc(rec.get("defect"))),
            ("untouched score", esc(rec.get("untouched_score"))),
            ("solved score", esc(rec.get("solved_score"))),
        ]
    )
    rows = [
        [
            esc(_d(c).get("name")),
            _verdict_badge("passed" if _d(c).get("passed") else "failed"),
            esc(_d(c).get("reason")),
            esc(_d(c).get("message")),
        ]
        for c in _l(rec.get("checks"))
    ]
    out += "<h2>Checks</h2>" + table(["check", "verdict", "reason", "message"], rows, "checks")
    out += ctx.children(rec, "rollouts", "task_id")
    return out + json_block(rec, open_=False)


register(
    Kind(
        "code_audit",
        "Claw audit",
        ("code_audit",),
        ("id", "kind", "verdict", "untouched", "solved", "failed checks"),
        ("verdict",),
        lambda run, r: {"verdict": "passed" if r.get("passed") else "failed"},
        _audit_row,
        _audit_render,
    )
)


def _rollout_facets(run: Run, rec: Rec) -> dict[str, str]:
    err = _d(rec.get("error"))
    return {
        "stop_reason": _s(rec.get("stop_reason")),
        "kind": _s(rec.get("kind")),
        "error": _s(err.get("cause") or err.get("error")),
    }


def _rw_counts(rec: Rec, sides: dict[str, str]) -> str:
    """Read / write tool calls of a rollout, by the side effects the run's grounded chains record;
    calls of tools the run never saw a side effect for are counted apart (claw tools, other envs)."""
    reads = writes = other = 0
    for s in map(_d, _l(rec.get("steps"))):
        side = s.get("side_effect") or sides.get(_s(s.get("tool")))
        if side == "write":
            writes += 1
        elif side == "read":
            reads += 1
        else:
            other += 1
    return f"{reads} / {writes}" + (f" <small>+{other} other</small>" if other else "")


def _rollout_row(rec: Rec, ctx: Ctx) -> list[str]:
    f = _rollout_facets(ctx.run, rec)
    score = _d(rec.get("score"))
    match = score.get("fraction", _d(score.get("workplace_score")).get("total_score"))
    metrics = _d(rec.get("metrics"))
    tags = [k for k, v in metrics.items() if k != "tool_calls" and v]
    trials = ctx.site.reverse(ctx.run, "rollouts", "task_id").get(_s(rec.get("task_id")), [])
    compare = (
        f' <a class=trials href="{ctx.base}trials/{trials[0]}.html">{len(trials)} trials</a>'
        if len(trials) > 1
        else ""
    )
    return [
        ctx.self_link(rec, "open"),
        ctx.id_link(_s(rec.get("task_id"))) + compare,
        esc(rec.get("sample")),
        f"<b>{esc(rec.get('reward'))}</b>",
        esc(match),
        esc(metrics.get("tool_calls")),
        _rw_counts(rec, ctx.tool_sides()),
        esc(rec.get("turns")),
        esc(f["stop_reason"]),
        esc(", ".join(filter(None, [f["error"], *tags]))),
    ]


def _rollout_render(rec: Rec, ctx: Ctx) -> str:
    out = _trials_link(_s(rec.get("task_id")), ctx) + kv(
        [
            ("task", ctx.id_link(_s(rec.get("task_id")))),
            ("model", esc(rec.get("model"))),
            ("reward", f"<b>{esc(rec.get('reward'))}</b>"),
            ("stop reason", esc(rec.get("stop_reason"))),
            ("turns", esc(rec.get("turns"))),
            ("defect (task, not agent)", esc(rec.get("defect"))),
            ("wall s", esc(rec.get("wall_s"))),
        ]
    )
    if rec.get("error"):
        out += f"<p class=bad>error: {esc(short(rec.get('error'), 600))}</p>"
    out += "<h2>Conversation</h2>" + _messages(_l(rec.get("messages")))
    rows = []
    for s in map(_d, _l(rec.get("steps"))):
        diff = s.get("state_diff") or s.get("diff")
        ok = "ok" if s.get("ok") else _s(s.get("error_kind")) or "failed"
        rows.append(
            [
                esc(s.get("turn")),
                f"<b>{esc(s.get('tool'))}</b>",
                f"<code>{esc(short(s.get('arguments'), 300))}</code>",
                _verdict_badge(ok),
                f"<pre>{esc(short(s.get('observation'), 1200))}</pre>",
                f"<code>{esc(short(diff, 600))}</code>" if diff else "<span class=note>not recorded</span>",
            ]
        )
    out += "<h2>Steps</h2>" + table(
        ["turn", "tool", "arguments", "ok", "observation", "state diff"], rows, "steps"
    )
    out += "<h2>Score</h2>" + json_block(rec.get("score"))
    task = ctx.run.locate(_s(rec.get("task_id")))
    if task is not None:
        trec = ctx.run.index(task[0]).get(task[1])
        out += f"<h2>Task spec ({esc(task[0])})</h2>"
        out += f"<ol class=turns>{''.join(f'<li>{esc(t)}</li>' for t in _l(trec.get('user_turns')))}</ol>"
        if "verifier" in trec:
            out += _verifier(trec.get("verifier"))
    return out + json_block(rec, open_=False)


register(
    Kind(
        "rollouts",
        "Trajectories",
        ("rollouts",),
        (
            "rollout",
            "task",
            "trial",
            "reward",
            "match",
            "tool calls",
            "read / write",
            "turns",
            "stop reason",
            "errors",
        ),
        ("stop_reason", "kind", "error"),
        _rollout_facets,
        _rollout_row,
        _rollout_render,
    )
)


# ---- an environment library's index (env synth, env import) -------------------------------------------


def _env_status(rec: Rec) -> str:
    """passing / floor / failed, for rows written before statuses too (an invalid spec that passed the
    audit was a floor environment)."""
    from dataclaw.envcraft.synth.library import status_of

    return status_of(rec)


def _status_badge(status: str) -> str:
    cls = {"passing": "ok", "floor": ""}.get(status, "bad")
    return f'<span class="badge {cls}">{esc(status)}</span>'


def _gate_cell(value: Any) -> str:
    return "—" if value is None else _verdict_badge("passed" if value else "failed")


def _env_row(rec: Rec, ctx: Ctx) -> list[str]:
    return [
        ctx.self_link(rec),
        esc(rec.get("env") or rec.get("scenario_id")),
        esc(rec.get("path")),
        _status_badge(_env_status(rec)),
        esc(rec.get("tools")),
        esc(rec.get("chains3")),
        esc(short(", ".join(_s(_d(x).get("code")) for x in _l(rec.get("reasons"))), 80)),
    ]


def _env_render(rec: Rec, ctx: Ctx) -> str:
    status = _env_status(rec)
    meaning, sound = _d(rec.get("meaning")), _d(rec.get("soundness"))
    pairs = [
        ("status", _status_badge(status)),
        ("counted in the pass rate", "yes" if status == "passing" else "no"),
        ("scenario", esc(rec.get("scenario_id"))),
        ("path", esc(rec.get("path"))),
        ("package", esc(rec.get("package"))),
        (
            "entities / tools / scenarios",
            esc(f"{rec.get('entities')} / {rec.get('tools')} / {rec.get('scenarios')}"),
        ),
        ("enforced rules", esc(rec.get("rules"))),
        ("distinct 3-step chains", esc(rec.get("chains3"))),
    ]
    if meaning:
        pairs.append(("description coverage", esc(meaning.get("coverage"))))
    if sound:
        pairs.append(("sound tool tasks", esc(f"{sound.get('sound')} of {sound.get('grounded')} grounded")))
    out = kv(pairs)
    gates = _d(rec.get("gates"))
    if gates:
        out += "<h2>Gates</h2>" + table(
            ["gate", "verdict"], [[esc(g), _gate_cell(v)] for g, v in gates.items()], "checks"
        )
    reasons = [[esc(_d(x).get("code")), esc(_d(x).get("message"))] for x in _l(rec.get("reasons"))]
    if reasons:
        out += "<h2>Why not passing</h2>" + table(["reason", "message"], reasons, "checks")
    issues = [[esc(_d(i).get("code")), esc(_d(i).get("message"))] for i in _l(meaning.get("issues"))]
    if issues:
        out += "<h2>Meaning issues</h2>" + table(["issue", "message"], issues, "checks")
    return out + json_block(rec, open_=False)


register(
    Kind(
        "env_library",
        "Environments",
        ("index",),
        ("row", "environment", "path", "status", "tools", "3-step chains", "reasons"),
        ("status", "path"),
        lambda run, r: {"status": _env_status(r), "path": _s(r.get("path"))},
        _env_row,
        _env_render,
    )
)
