"""The mechanics operations compiled environment packages call (EnvCraft §3.2 "configuring the archetype's
mechanics"): generic, configured by the package's ``data/config.json``, never written by a model.

A compiled package's tools are thin ``@tool`` functions whose body is ``return run(session, CONFIG,
"<tool>", ...)``; :func:`run` looks the tool up in the config (``tools.<name>.op``) and dispatches to an
operation in :data:`OPS`. Operations only check domain rules (the runtime has validated types) and raise
agent-safe :class:`EnvError` s; they validate everything before mutating the session, read the clock only
through :func:`now`, and are deterministic functions of (session, params), so journals replay.

Config shape (written by :mod:`dataclaw.envcraft.synth.compile`)::

    {"collections": {name: {"entity", "id_field", "prefix", "label_field", "attributes": {attr: type},
                            "status_field", "statuses", "initial_status", "transitions": {from: [to]},
                            "gated": [status], "stages": [status]}},
     "log": "<log field>", "counters": "<counter field>", "events": "<events log>" | null,
     "triggers": [{"collection", "status", "event"}], "tools": {name: {"op", ...}}}
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime, timedelta
from typing import Any

from dataclaw.envcraft.runtime.errors import (
    EnvError,
    ErrorCategory,
    echo,
    invalid_argument,
    invalid_reference,
    invalid_transition,
    permission_denied,
    rule_violation,
)
from dataclaw.envcraft.runtime.state import now
from dataclaw.envcraft.synth.mechanics.rules import approval_key, enforce, maintain

Op = Callable[[dict[str, Any], dict[str, Any], dict[str, Any], dict[str, Any]], dict[str, Any]]
OPS: dict[str, Op] = {}
MAX_LIST = 200


def op(name: str) -> Callable[[Op], Op]:
    """Register an operation under ``name`` (refuses duplicates)."""

    def wrap(fn: Op) -> Op:
        if name in OPS:
            raise ValueError(f"duplicate mechanics operation {name!r}")
        OPS[name] = fn
        return fn

    return wrap


def run(session: dict[str, Any], config: dict[str, Any], tool: str, /, **params: Any) -> dict[str, Any]:
    """Run the configured operation of ``tool`` on ``session`` (the body of every compiled tool); after
    it, computed fields of the business rules are brought up to date."""
    tcfg = config["tools"].get(tool)
    if tcfg is None or tcfg.get("op") not in OPS:
        raise EnvError(ErrorCategory.UNKNOWN_TOOL, f"There is no tool {echo(tool)} in this environment.")
    out = OPS[tcfg["op"]](session, config, tcfg, params)
    if config.get("rules"):
        maintain(session, config)
    return out


# ---- helpers -------------------------------------------------------------------------------------------


def _coll(
    config: dict[str, Any], tcfg: dict[str, Any], key: str = "collection"
) -> tuple[str, dict[str, Any]]:
    name = tcfg[key]
    return name, config["collections"][name]


def _record(session: dict[str, Any], cname: str, ccfg: dict[str, Any], rid: str) -> dict[str, Any]:
    records = session[cname]
    if rid not in records:
        raise invalid_reference(ccfg["entity"], rid, sorted(records))
    return records[rid]


def _log(session: dict[str, Any], config: dict[str, Any], action: str, **what: Any) -> None:
    session[config["log"]].append({"at": now(session), "action": action, **what})


def _next_id(session: dict[str, Any], config: dict[str, Any], cname: str, prefix: str) -> str:
    counters = session[config["counters"]]
    n = int(counters.get(cname, 1000)) + 1
    while f"{prefix}-{n}" in session.get(cname, {}):
        n += 1
    counters[cname] = n
    return f"{prefix}-{n}"


def _fire(session: dict[str, Any], config: dict[str, Any], cname: str, rid: str, status: str) -> None:
    """Event triggering: append one event per trigger rule matching (collection, new status)."""
    events = config.get("events")
    if not events:
        return
    for rule in config.get("triggers", []):
        if rule["collection"] == cname and rule["status"] == status:
            session[events].append(
                {
                    "offset": len(session[events]),
                    "event": rule["event"],
                    "collection": cname,
                    "record_id": rid,
                    "status": status,
                    "at": now(session),
                }
            )


def _set_status(
    session: dict[str, Any],
    config: dict[str, Any],
    cname: str,
    ccfg: dict[str, Any],
    rec: dict[str, Any],
    to: str,
) -> None:
    field = ccfg["status_field"]
    before = rec.get(field)
    rec[field] = to
    rec["updated_at"] = now(session)
    _log(
        session,
        config,
        "transition",
        collection=cname,
        record_id=rec[ccfg["id_field"]],
        source=before,
        target=to,
    )
    _fire(session, config, cname, rec[ccfg["id_field"]], to)


def _check_transition(
    session: dict[str, Any],
    config: dict[str, Any],
    cname: str,
    ccfg: dict[str, Any],
    rec: dict[str, Any],
    to: str,
) -> None:
    """The state-machine guard: the edge must exist; a gated target needs the user's confirmation first;
    then the business rules on a move to ``to``."""
    if not ccfg.get("status_field"):
        raise invalid_argument("status", f"{ccfg['entity']} records have no lifecycle")
    rid, current = rec[ccfg["id_field"]], rec.get(ccfg["status_field"])
    if to not in ccfg["statuses"]:
        raise invalid_argument("status", f"must be one of {', '.join(ccfg['statuses'])}")
    allowed = ccfg["transitions"].get(current, [])
    if to not in allowed:
        why = f"allowed next statuses: {', '.join(allowed)}" if allowed else f"'{current}' is final"
        raise invalid_transition(ccfg["entity"], rid, str(current), to, why)
    if to in ccfg.get("gated", []):
        store = config.get("confirmations")
        key = f"{rid}:{to}"
        if not store or key not in session[store]:
            raise permission_denied(
                str(session.get("workspace_account") or "agent"),
                f"move {ccfg['entity']} {rid} to '{to}' without the user's confirmation (request it first)",
                ccfg["entity"],
            )
    enforce(session, config, cname, to, rec, {**rec, ccfg["status_field"]: to})


def _attrs(ccfg: dict[str, Any], params: dict[str, Any]) -> dict[str, Any]:
    skip = {ccfg["id_field"], ccfg.get("status_field")}
    return {k: v for k, v in params.items() if k in ccfg["attributes"] and k not in skip and v is not None}


def _matches(rec: dict[str, Any], query: str) -> bool:
    q = query.casefold()
    return any(isinstance(v, str) and q in v.casefold() for v in rec.values())


def _time(name: str, value: str) -> datetime:
    try:
        t = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        raise invalid_argument(
            name, f"{echo(value)} is not an ISO-8601 time like 2026-03-02T09:00:00Z"
        ) from None
    if t.tzinfo is None:
        raise invalid_argument(name, "give a time zone (e.g. a trailing Z for UTC)")
    return t


# ---- core: records -------------------------------------------------------------------------------------


@op("list")
def op_list(
    session: dict[str, Any], config: dict[str, Any], tcfg: dict[str, Any], p: dict[str, Any]
) -> dict[str, Any]:
    cname, ccfg = _coll(config, tcfg)
    status, limit = p.get("status"), p.get("limit") or 50
    if not 1 <= limit <= MAX_LIST:
        raise invalid_argument("limit", f"must be between 1 and {MAX_LIST}")
    rows = [r for _, r in sorted(session[cname].items())]
    if status is not None and ccfg.get("status_field"):
        rows = [r for r in rows if r.get(ccfg["status_field"]) == status]
    return {cname: rows[:limit], "total": len(rows)}


@op("get")
def op_get(
    session: dict[str, Any], config: dict[str, Any], tcfg: dict[str, Any], p: dict[str, Any]
) -> dict[str, Any]:
    cname, ccfg = _coll(config, tcfg)
    return {ccfg["entity"]: _record(session, cname, ccfg, p[ccfg["id_param"]])}


@op("search")
def op_search(
    session: dict[str, Any], config: dict[str, Any], tcfg: dict[str, Any], p: dict[str, Any]
) -> dict[str, Any]:
    cname, _ = _coll(config, tcfg)
    query = p["query"].strip()
    if not query:
        raise invalid_argument("query", "must not be blank")
    rows = [r for _, r in sorted(session[cname].items()) if _matches(r, query)]
    return {cname: rows[:MAX_LIST], "total": len(rows)}


@op("create")
def op_create(
    session: dict[str, Any], config: dict[str, Any], tcfg: dict[str, Any], p: dict[str, Any]
) -> dict[str, Any]:
    cname, ccfg = _coll(config, tcfg)
    label = ccfg.get("label_field")
    if label and isinstance(p.get(label), str) and not p[label].strip():
        raise invalid_argument(label, "must not be blank")
    rid = _next_id(session, config, cname, ccfg["prefix"])
    rec: dict[str, Any] = {a: None for a in ccfg["attributes"]}
    given = _attrs(ccfg, p)
    rec.update(given)
    rec[ccfg["id_field"]] = rid
    if ccfg.get("status_field"):
        rec[ccfg["status_field"]] = ccfg["initial_status"]
    enforce(session, config, cname, "create", None, rec, given)
    rec["created_at"] = rec["updated_at"] = now(session)
    session[cname][rid] = rec
    _log(session, config, "create", collection=cname, record_id=rid)
    if ccfg.get("status_field"):
        _fire(session, config, cname, rid, ccfg["initial_status"])
    return {ccfg["entity"]: rec}


@op("update")
def op_update(
    session: dict[str, Any], config: dict[str, Any], tcfg: dict[str, Any], p: dict[str, Any]
) -> dict[str, Any]:
    cname, ccfg = _coll(config, tcfg)
    rec = _record(session, cname, ccfg, p[ccfg["id_param"]])
    changes = _attrs(ccfg, p)
    if not changes:
        raise invalid_argument("fields", "give at least one field to change")
    status = rec.get(ccfg.get("status_field") or "")
    if status is not None and not ccfg["transitions"].get(status) and ccfg.get("status_field"):
        raise invalid_transition(
            ccfg["entity"], rec[ccfg["id_field"]], str(status), str(status), "a final record is read-only"
        )
    enforce(session, config, cname, "update", rec, {**rec, **changes}, changes)
    rec.update(changes)
    rec["updated_at"] = now(session)
    _log(session, config, "update", collection=cname, record_id=rec[ccfg["id_field"]], fields=sorted(changes))
    return {ccfg["entity"]: rec}


@op("transition")
def op_transition(
    session: dict[str, Any], config: dict[str, Any], tcfg: dict[str, Any], p: dict[str, Any]
) -> dict[str, Any]:
    """State machine: move a record along a declared, guarded edge (fixed target or a ``status`` param)."""
    cname, ccfg = _coll(config, tcfg)
    rec = _record(session, cname, ccfg, p[ccfg["id_param"]])
    to = tcfg.get("target") or p["status"]
    _check_transition(session, config, cname, ccfg, rec, to)
    _set_status(session, config, cname, ccfg, rec, to)
    return {ccfg["entity"]: rec}


@op("available_transitions")
def op_available(
    session: dict[str, Any], config: dict[str, Any], tcfg: dict[str, Any], p: dict[str, Any]
) -> dict[str, Any]:
    cname, ccfg = _coll(config, tcfg)
    rec = _record(session, cname, ccfg, p[ccfg["id_param"]])
    current = rec.get(ccfg["status_field"])
    nxt = ccfg["transitions"].get(current, [])
    gated = [s for s in nxt if s in ccfg.get("gated", [])]
    return {
        "record_id": rec[ccfg["id_field"]],
        "status": current,
        "next_statuses": nxt,
        "needs_confirmation": gated,
    }


# ---- archetype mechanics ------------------------------------------------------------------------------


@op("advance")
def op_advance(
    session: dict[str, Any], config: dict[str, Any], tcfg: dict[str, Any], p: dict[str, Any]
) -> dict[str, Any]:
    """Workflow / pipeline: move a record to the next stage of its ordered pipeline."""
    cname, ccfg = _coll(config, tcfg)
    rec = _record(session, cname, ccfg, p[ccfg["id_param"]])
    stages = ccfg["stages"]
    current = rec.get(ccfg["status_field"])
    if current not in stages or stages.index(current) == len(stages) - 1:
        raise invalid_transition(
            ccfg["entity"],
            rec[ccfg["id_field"]],
            str(current),
            "next stage",
            "it is not in an open pipeline stage",
        )
    to = stages[stages.index(current) + 1]
    _check_transition(session, config, cname, ccfg, rec, to)
    _set_status(session, config, cname, ccfg, rec, to)
    return {ccfg["entity"]: rec, "stage": to}


@op("schedule")
def op_schedule(
    session: dict[str, Any], config: dict[str, Any], tcfg: dict[str, Any], p: dict[str, Any]
) -> dict[str, Any]:
    """Temporal scheduling: book a time slot for a record; slots of one collection never overlap."""
    cname, ccfg = _coll(config, tcfg)
    rec = _record(session, cname, ccfg, p[ccfg["id_param"]])
    start = _time("start", p["start"])
    minutes = p.get("duration_minutes") or 60
    if not 5 <= minutes <= 24 * 60:
        raise invalid_argument("duration_minutes", "must be between 5 and 1440")
    if start < _time("now", now(session)):
        raise invalid_argument("start", f"{echo(p['start'])} is in the past (now is {now(session)})")
    end = start + timedelta(minutes=minutes)
    rid = rec[ccfg["id_field"]]
    for oid, other in sorted(session[cname].items()):
        slot = other.get("slot")
        if oid == rid or not slot:
            continue
        if start < _time("end", slot["end"]) and _time("start", slot["start"]) < end:
            raise EnvError(
                ErrorCategory.INVALID_TRANSITION,
                f"{ccfg['entity']} {oid} already holds {slot['start']}–{slot['end']}; pick a free slot",
                conflict=oid,
            )
    rec["slot"] = {"start": start.isoformat(), "end": end.isoformat()}
    rec["updated_at"] = now(session)
    _log(session, config, "schedule", collection=cname, record_id=rid, start=rec["slot"]["start"])
    return {ccfg["entity"]: rec}


@op("match")
def op_match(
    session: dict[str, Any], config: dict[str, Any], tcfg: dict[str, Any], p: dict[str, Any]
) -> dict[str, Any]:
    """Bilateral matching: pair a record of one pool with a record of the other; each is matched once."""
    aname, acfg = _coll(config, tcfg, "collection")
    bname, bcfg = _coll(config, tcfg, "partner")
    a_id, b_id = p[tcfg["a_param"]], p[tcfg["b_param"]]
    a, b = _record(session, aname, acfg, a_id), _record(session, bname, bcfg, b_id)
    if a is b:
        raise invalid_argument(tcfg["b_param"], "a record cannot be matched with itself")
    for rec, cfg in ((a, acfg), (b, bcfg)):
        if rec.get("matched_with"):
            rid = rec[cfg["id_field"]]
            raise invalid_transition(
                cfg["entity"], rid, "matched", "matched", f"already matched with {rec['matched_with']}"
            )
    matches = session[tcfg["matches"]]
    mid = f"M-{len(matches) + 1:04d}"
    matches[mid] = {"match_id": mid, "a": a_id, "b": b_id, "at": now(session)}
    a["matched_with"], b["matched_with"] = b_id, a_id
    _log(session, config, "match", a=a_id, b=b_id, match_id=mid)
    return {"match": matches[mid]}


@op("request_confirmation")
def op_request_confirmation(
    session: dict[str, Any], config: dict[str, Any], tcfg: dict[str, Any], p: dict[str, Any]
) -> dict[str, Any]:
    """Human-agent interaction: ask the user to confirm a gated status change; the simulated user confirms
    an edge that exists (deterministically) and refuses one that does not."""
    cname, ccfg = _coll(config, tcfg)
    rec = _record(session, cname, ccfg, p[ccfg["id_param"]])
    to, rid = p["status"], rec[ccfg["id_field"]]
    if to not in ccfg["transitions"].get(rec.get(ccfg["status_field"]), []):
        raise invalid_transition(
            ccfg["entity"],
            rid,
            str(rec.get(ccfg["status_field"])),
            to,
            "the user cannot confirm a move the rules forbid",
        )
    key = f"{rid}:{to}"
    session[config["confirmations"]][key] = {
        "record_id": rid,
        "status": to,
        "note": p.get("note") or "",
        "at": now(session),
    }
    _log(session, config, "confirmation", collection=cname, record_id=rid, target=to)
    return {
        "confirmation": session[config["confirmations"]][key],
        "reply": f"Yes, go ahead and move {rid} to {to}.",
    }


@op("stage_change")
def op_stage_change(
    session: dict[str, Any], config: dict[str, Any], tcfg: dict[str, Any], p: dict[str, Any]
) -> dict[str, Any]:
    """Transactional workspace: stage field changes to a record as a draft (nothing applied yet)."""
    cname, ccfg = _coll(config, tcfg)
    rec = _record(session, cname, ccfg, p[ccfg["id_param"]])
    changes = _attrs(ccfg, p)
    if not changes:
        raise invalid_argument("fields", "give at least one field to change")
    drafts = session[config["drafts"]]
    did = f"D-{len(drafts) + 1:04d}"
    drafts[did] = {
        "draft_id": did,
        "collection": cname,
        "record_id": rec[ccfg["id_field"]],
        "changes": changes,
    }
    return {"draft": drafts[did], "pending": len(drafts)}


@op("commit")
def op_commit(
    session: dict[str, Any], config: dict[str, Any], tcfg: dict[str, Any], p: dict[str, Any]
) -> dict[str, Any]:
    """Transactional workspace: apply every staged draft at once (all or nothing), then clear them."""
    drafts = session[config["drafts"]]
    if not drafts:
        raise EnvError(
            ErrorCategory.INVALID_TRANSITION, "There are no staged changes to commit; stage some first."
        )
    for d in drafts.values():  # validate all before applying any
        ccfg = config["collections"][d["collection"]]
        rec = _record(session, d["collection"], ccfg, d["record_id"])
        status = rec.get(ccfg.get("status_field") or "")
        if ccfg.get("status_field") and not ccfg["transitions"].get(status):
            raise invalid_transition(
                ccfg["entity"], d["record_id"], str(status), str(status), "a final record is read-only"
            )
        enforce(session, config, d["collection"], "update", rec, {**rec, **d["changes"]}, d["changes"])
    applied = []
    for did, d in sorted(drafts.items()):
        rec = session[d["collection"]][d["record_id"]]
        rec.update(d["changes"])
        rec["updated_at"] = now(session)
        applied.append(did)
        _log(session, config, "commit", collection=d["collection"], record_id=d["record_id"], draft_id=did)
    drafts.clear()
    return {"committed": applied}


@op("discard")
def op_discard(
    session: dict[str, Any], config: dict[str, Any], tcfg: dict[str, Any], p: dict[str, Any]
) -> dict[str, Any]:
    drafts = session[config["drafts"]]
    gone = sorted(drafts)
    drafts.clear()
    return {"discarded": gone}


@op("list_drafts")
def op_list_drafts(
    session: dict[str, Any], config: dict[str, Any], tcfg: dict[str, Any], p: dict[str, Any]
) -> dict[str, Any]:
    return {"drafts": [d for _, d in sorted(session[config["drafts"]].items())]}


@op("list_events")
def op_list_events(
    session: dict[str, Any], config: dict[str, Any], tcfg: dict[str, Any], p: dict[str, Any]
) -> dict[str, Any]:
    """Event triggering / streams: the events fired so far, from an offset on."""
    after = p.get("after_offset")
    after = -1 if after is None else after
    events = [e for e in session[config["events"]] if e["offset"] > after]
    return {"events": events[:MAX_LIST], "total": len(events)}


@op("acknowledge")
def op_acknowledge(
    session: dict[str, Any], config: dict[str, Any], tcfg: dict[str, Any], p: dict[str, Any]
) -> dict[str, Any]:
    """Stream processing: acknowledge events up to an offset (the only way the consumer cursor moves)."""
    cursor = session[config["cursor"]]
    upto, last = p["offset"], len(session[config["events"]]) - 1
    if upto > last:
        raise invalid_argument("offset", f"no event has offset {upto} yet (latest is {last})")
    if upto <= cursor.get("acked", -1):
        raise invalid_argument("offset", f"events up to {cursor.get('acked')} are already acknowledged")
    cursor["acked"] = upto
    return {"acked": upto, "pending": last - upto}


@op("pending_events")
def op_pending(
    session: dict[str, Any], config: dict[str, Any], tcfg: dict[str, Any], p: dict[str, Any]
) -> dict[str, Any]:
    acked = session[config["cursor"]].get("acked", -1)
    events = [e for e in session[config["events"]] if e["offset"] > acked]
    return {"events": events[:MAX_LIST], "pending": len(events), "acked": acked}


@op("render_report")
def op_render(
    session: dict[str, Any], config: dict[str, Any], tcfg: dict[str, Any], p: dict[str, Any]
) -> dict[str, Any]:
    """Cross-tool pipeline: aggregate a collection by status (dedup by id) into a rendered report record."""
    cname, ccfg = _coll(config, tcfg)
    fmt = p.get("format") or "markdown"
    counts: dict[str, int] = {}
    for rec in session[cname].values():
        key = str(rec.get(ccfg.get("status_field") or "", "all"))
        counts[key] = counts.get(key, 0) + 1
    lines = [f"{k}: {v}" for k, v in sorted(counts.items())]
    body = {
        "markdown": "\n".join(f"- **{k}**: {v}" for k, v in sorted(counts.items())),
        "bullets": "\n".join(f"* {x}" for x in lines),
    }
    reports = session[tcfg["reports"]]
    rid = f"R-{len(reports) + 1:04d}"
    reports[rid] = {
        "report_id": rid,
        "collection": cname,
        "format": fmt,
        "counts": counts,
        "body": body.get(fmt, str(counts)),
        "at": now(session),
    }
    _log(session, config, "report", collection=cname, report_id=rid)
    return {"report": reports[rid]}


@op("bash")
def op_bash(
    session: dict[str, Any], config: dict[str, Any], tcfg: dict[str, Any], p: dict[str, Any]
) -> dict[str, Any]:
    """Claw extension: run a bash command in the sandbox over a read-only snapshot of the session's records
    (one ``<collection>/<id>.json`` file each, plus the world attachments); the snapshot is thrown away."""
    from dataclaw.envcraft.synth.mechanics.claw import bash_over_state

    return bash_over_state(session, config, p["command"])


# ---- business rules ------------------------------------------------------------------------------------


@op("list_accounts")
def op_list_accounts(
    session: dict[str, Any], config: dict[str, Any], tcfg: dict[str, Any], p: dict[str, Any]
) -> dict[str, Any]:
    """The staff accounts (id, name, role): who may approve what the approval rules gate."""
    rows = [a for _, a in sorted(session[config["accounts"]].items())]
    role = p.get("role")
    if role:
        rows = [a for a in rows if a.get("role") == role]
    return {"accounts": rows, "total": len(rows)}


@op("approve")
def op_approve(
    session: dict[str, Any], config: dict[str, Any], tcfg: dict[str, Any], p: dict[str, Any]
) -> dict[str, Any]:
    """Approval by role: an account approves moving one record to a status an approval rule gates; the
    account must hold the role the rule names (the rule's id is in the refusal otherwise)."""
    cname, ccfg = _coll(config, tcfg)
    rec = _record(session, cname, ccfg, p[ccfg["id_param"]])
    to, rid = p["status"], rec[ccfg["id_field"]]
    rules = [r for r in config.get("rules", []) if r["kind"] == "approval" and r["collection"] == cname]
    rule = next((r for r in rules if r["on"] == to), None)
    if rule is None:
        gated = sorted({r["on"] for r in rules})
        raise invalid_argument(
            "status", f"no rule asks for an approval of that move (only of: {', '.join(gated)})"
        )
    accounts = session[config["accounts"]]
    approver = p["approver_id"]
    if approver not in accounts:
        raise invalid_reference("account", approver, sorted(accounts))
    role = accounts[approver].get("role")
    if role != rule["role"]:
        raise rule_violation(
            rule["rule_id"],
            f"{rule['description'].rstrip('.')} (account {approver} has role {role!r}, not {rule['role']!r})",
        )
    key = approval_key(cname, rid, to)
    session[config["approvals"]][key] = {
        "collection": cname,
        "record_id": rid,
        "status": to,
        "approver_id": approver,
        "role": role,
        "at": now(session),
    }
    _log(session, config, "approval", collection=cname, record_id=rid, target=to, approver_id=approver)
    return {"approval": session[config["approvals"]][key]}
