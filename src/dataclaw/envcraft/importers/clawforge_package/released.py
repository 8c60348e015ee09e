"""The released ClawForge verbs of an imported claw environment, run on its compiled package (copied into
each package as ``released.py`` by dataclaw's ClawForge importer).

Each released tool (``tools.py``, with the verb's own name and parameters) is one :func:`call`, which runs
the binding the importer wrote under ``released`` in ``data/config.json`` over the compiled mechanics
(:func:`dataclaw.envcraft.synth.mechanics.run`, configured by ``data/config.json``): read one record, list
records filtered by the verb's arguments, move a record to a status (its other arguments stored on the
record first), change a record's fields, create a record of what the verb produces, or a workspace read
(summary, scenarios, the task, attachments). Every write goes through a compiled operation, so the
lifecycle guards and the rules the compiler enforces apply to released verbs too.
"""

from __future__ import annotations

from typing import Any

from dataclaw.envcraft.runtime import EnvError, ErrorCategory
from dataclaw.envcraft.synth.mechanics import run

MAX_ROWS = 50


def _given(params: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in params.items() if v is not None}


def _attrs(ccfg: dict[str, Any], params: dict[str, Any], skip: set[str]) -> dict[str, Any]:
    return {k: v for k, v in _given(params).items() if k in ccfg["attributes"] and k not in skip}


def _matches(value: Any, wanted: Any) -> bool:
    if isinstance(wanted, str) and isinstance(value, str):
        return wanted.casefold() in value.casefold()
    if isinstance(wanted, str) and isinstance(value, list):
        return any(_matches(v, wanted) for v in value)
    return value == wanted


def _list(session: dict[str, Any], config: dict[str, Any], b: dict[str, Any], p: dict[str, Any]) -> Any:
    cname = b["collection"]
    ccfg = config["collections"][cname]
    rows = [r for _, r in sorted(session.get(cname, {}).items())]
    limit = p.get("limit")
    for k, v in _given(p).items():
        if k in ccfg["attributes"] and k != "limit":
            rows = [r for r in rows if _matches(r.get(k), v)]
    n = limit if isinstance(limit, int) and 0 < limit <= 200 else MAX_ROWS
    return {cname: rows[:n], "total": len(rows)}


def _summary(session: dict[str, Any], config: dict[str, Any]) -> dict[str, Any]:
    counts = {c: len(session.get(c, {})) for c in sorted(config["collections"])}
    log = session.get(config["log"], [])
    return {"scenario_id": session.get("scenario_id"), "records": counts, "actions_logged": len(log)}


def _scenario(released: dict[str, Any], session: dict[str, Any]) -> dict[str, Any]:
    sid = str(session.get("scenario_id") or "")
    return {"scenario_id": sid, "task_prompt": released.get("prompts", {}).get(sid)}


def _attachment(released: dict[str, Any], p: dict[str, Any]) -> dict[str, Any]:
    files: dict[str, str] = released.get("attachments", {})
    wanted = next((str(v) for v in _given(p).values()), "")
    name = wanted.rsplit("/", 1)[-1]
    hit = next((k for k in files if k == name or k.rsplit(".", 1)[0] == name.rsplit(".", 1)[0]), None)
    if hit is None:
        known = ", ".join(sorted(files)) or "none"
        raise EnvError(ErrorCategory.INVALID_REFERENCE, f"No attachment {name!r} (attachments: {known}).")
    return {"attachment": hit, "content": files[hit]}


def call(session: dict[str, Any], config: dict[str, Any], tool: str, /, **params: Any) -> dict[str, Any]:
    """Run the released tool ``tool`` with the agent's ``params`` (the body of every released tool)."""
    released = config["released"]
    b = released["bindings"][tool]
    kind = b["kind"]
    if kind == "summary":
        return _summary(session, config)
    if kind == "scenarios":
        return {"scenarios": released.get("scenarios", [])}
    if kind == "task":
        return {**_scenario(released, session), "workspace": _summary(session, config)["records"]}
    if kind == "attachments":
        return {"attachments": sorted(released.get("attachments", {}))}
    if kind == "attachment":
        return _attachment(released, params)
    if kind == "list":
        return _list(session, config, b, params)
    ccfg = config["collections"][b["collection"]]
    idp = ccfg["id_param"]
    if kind == "get":
        return run(session, config, b["op_tool"], **{idp: params[b["id_param"]]})
    if kind == "create":
        attrs = _attrs(ccfg, params, {ccfg["id_field"], ccfg.get("status_field") or ""})
        label = ccfg.get("label_field")
        if label and label not in attrs:
            attrs[label] = b.get("title") or tool.replace("_", " ")
        return run(session, config, b["op_tool"], **attrs)
    rid = params[b["id_param"]]
    skip = {b["id_param"], ccfg["id_field"], ccfg.get("status_field") or "", b.get("status_param") or ""}
    changes = _attrs(ccfg, params, skip)
    if kind == "update" or changes:
        if "last_action" in ccfg["attributes"]:
            changes["last_action"] = tool
        out = run(session, config, b["update_tool"], **{idp: rid}, **changes)
        if kind == "update":
            return out
    target = params.get(b["status_param"]) if b.get("status_param") else b.get("target")
    return run(session, config, b["op_tool"], **{idp: rid, "status": target})
