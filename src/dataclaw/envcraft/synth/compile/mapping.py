"""T_spec tools → operations: a declared tool compiles onto a canonical operation of its target collection
by its verb, parameters and the collection it names, or takes over an archetype mechanic's tool; a tool
that maps onto nothing is dropped with a reason."""

from __future__ import annotations

import keyword

from dataclaw.envcraft.synth.compile.plan import MAX_TOOL_NAME, Collection, Plan, ToolPlan, clean
from dataclaw.envcraft.synth.compile.tools import core_tools, id_param
from dataclaw.envcraft.synth.spec import IDENT_RE, ToolDecl

_RESERVED_TOOLS = frozenset({"tool", "Literal", "CONFIG", "annotations"})
_VERBS: dict[str, tuple[str, ...]] = {
    "get": (
        "get",
        "read",
        "view",
        "show",
        "fetch",
        "describe",
        "inspect",
        "open",
        "retrieve",
        "check",
        "lookup",
    ),
    "list": ("list", "browse", "all", "enumerate"),
    "search": ("search", "find", "query", "filter", "lookup", "locate"),
    "create": (
        "create",
        "add",
        "new",
        "register",
        "submit",
        "post",
        "log",
        "record",
        "make",
        "insert",
        "file",
    ),
    "update": ("update", "edit", "modify", "change", "rename", "assign", "tag", "set", "patch", "reassign"),
    "transition": ("move", "transition", "mark", "progress", "status"),
}


def _tokens(name: str) -> list[str]:
    return [t for t in name.split("_") if t]


def _target_collection(p: Plan, decl: ToolDecl) -> Collection | None:
    for f in decl.state_fields_affected:
        if f in p.collections:
            return p.collections[f]
    params = set(decl.parameters.properties)
    toks = set(_tokens(decl.name))
    for c in p.collections.values():
        if {c.id_field, c.id_param} & params:
            return c
    for c in p.collections.values():
        if c.name in toks or c.entity in toks or c.entity in decl.name or c.name in decl.name:
            return c
    return None


def _status_target(c: Collection, verb: str) -> str | None:
    """The status a verb moves a record to (``close`` → closed, ``verify`` → verified, ``activate`` →
    active): a shared prefix of at least four letters, at most two short of the shorter word."""
    if len(verb) < 4:
        return None
    for s in c.statuses:
        common = next(
            (i for i, (a, b) in enumerate(zip(verb, s, strict=False)) if a != b), min(len(verb), len(s))
        )
        if common >= 4 and common >= min(len(verb), len(s)) - 2:
            return s
    return None


def map_tool(p: Plan, decl: ToolDecl) -> tuple[ToolPlan | None, str]:
    """The operation a declared tool compiles onto, or None and why not."""
    if not IDENT_RE.match(decl.name) or keyword.iskeyword(decl.name) or decl.name in _RESERVED_TOOLS:
        return None, "tool name is not a usable identifier"
    c = _target_collection(p, decl)
    if c is None:
        return None, "names no entity collection (by state_fields_affected, id parameter or name)"
    toks = _tokens(decl.name)
    verb = toks[0] if toks else ""
    params = set(decl.parameters.properties)
    has_id = bool({c.id_field, c.id_param} & params)
    desc = clean(decl.description)
    target = _status_target(c, verb) if decl.side_effect == "write" else None
    if decl.side_effect == "read":
        if verb in _VERBS["search"] and not has_id:
            kind = "search"
        elif verb in _VERBS["list"] or (verb in _VERBS["get"] and not has_id):
            kind = "list"
        elif verb in _VERBS["get"] or has_id:
            kind = "get"
        else:
            return None, f"read verb {verb!r} maps onto no read operation"
    elif target is not None:
        kind = "transition"
    elif "status" in params or verb in _VERBS["transition"]:
        kind = "transition"
    elif verb in _VERBS["create"] and not has_id:
        kind = "create"
    elif verb in _VERBS["update"] or (has_id and verb in _VERBS["create"]):
        kind = "update"
    else:
        return None, f"write verb {verb!r} maps onto no write operation of {c.name}"
    canon = {t.op: t for t in core_tools(p, c, True)}[kind]
    out = ToolPlan(
        decl.name,
        canon.op,
        canon.side_effect,
        desc if desc != "-" else canon.description,
        canon.params,
        canon.fields,
        canon.returns,
        dict(canon.cfg),
        canon.key,
    )
    if kind == "transition" and target is not None:
        out.params = [id_param(c)]
        out.cfg["target"] = target
        out.key = ("transition", c.name, target)
        out.description = f"{out.description} (moves it to '{target}')"
    return out, kind


_MECHANIC_VERBS: dict[str, tuple[str, ...]] = {
    "schedule": ("schedule", "book", "reschedule", "reserve", "slot", "plan"),
    "advance": ("advance", "promote", "proceed", "next", "forward", "process", "run"),
    "request_confirmation": ("confirm", "ask", "request", "consult", "check"),
    "match": ("match", "pair", "allocate", "assign"),
    "commit": ("commit", "apply", "save", "finalize"),
    "render_report": ("render", "report", "summarize", "aggregate", "export"),
    "acknowledge": ("acknowledge", "ack", "consume"),
    "approve": ("approve", "authorize", "authorise", "sign"),
    "list_events": ("events", "history", "poll", "subscribe"),
}


def mechanic_op(p: Plan, decl: ToolDecl) -> str | None:
    """Rename the archetype-mechanic tool a declared tool's verb names (``book_table`` → the schedule
    tool of the tables) to the declared name and description; the operation, or None when no mechanic
    of the same side effect (and the same collection, when the mechanic has one) fits."""
    if not IDENT_RE.match(decl.name) or keyword.iskeyword(decl.name) or decl.name in _RESERVED_TOOLS:
        return None
    if decl.name in p.tools:
        return None
    verb = (_tokens(decl.name) or [""])[0]
    for op, verbs in _MECHANIC_VERBS.items():
        if verb not in verbs:
            continue
        target = _target_collection(p, decl)
        t = next(
            (
                x
                for x in p.tools.values()
                if x.op == op
                and x.side_effect == decl.side_effect
                and x.cfg.get("collection") in (None, target.name if target else None)
            ),
            None,
        )
        if t is None or t.name in p.mapped:
            continue
        del p.tools[t.name]
        t.name = decl.name[:MAX_TOOL_NAME]
        desc = clean(decl.description)
        t.description = desc if desc != "-" else t.description
        p.tools[t.name] = t
        return op
    return None
