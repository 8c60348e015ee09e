"""The canonical tools every collection gets (``list_X``, ``get_X``, ``search_X``, ``create_X``,
``update_X``, ``set_X_status``) and the parameter helpers the archetype mechanics build theirs with."""

from __future__ import annotations

from dataclaw.envcraft.synth.compile.plan import Collection, Param, Plan, ToolPlan, lifecycle_text, spaced

_RESERVED_PARAMS = frozenset({"session", "status", "limit", "query"})
_HINTS = {
    "string": "str",
    "integer": "int",
    "number": "float",
    "boolean": "bool",
    "array": "list",
    "object": "dict",
}


def id_param(c: Collection, what: str = "") -> Param:
    return Param(c.id_param, "str", f"the {c.entity.replace('_', ' ')} id{what}")


def status_hint(c: Collection) -> str:
    return "Literal[" + ", ".join(repr(s) for s in c.statuses) + "]"


def attr_params(c: Collection, required_label: bool) -> list[Param]:
    out = []
    for a, kind in c.attributes.items():
        if a in (c.id_field, c.status_field) or a in _RESERVED_PARAMS:
            continue
        req = required_label and a == c.label_field
        hint = _HINTS[kind] if req else f"{_HINTS[kind]} | None"
        doc = c.docs.get(a, "")
        what = f"the {spaced(a)}" + (f" ({doc})" if doc and doc != a and doc != "-" else "")
        out.append(Param(a, hint, what, None, req))
    return out


def core_tools(p: Plan, c: Collection, full: bool) -> list[ToolPlan]:
    e, cn = c.entity, c.name
    words = e.replace("_", " ")
    out = [
        ToolPlan(
            f"list_{cn}",
            "list",
            "read",
            f"List {words} records (sorted by id), optionally only those in one status.",
            [
                Param("status", f"{status_hint(c)} | None", "only records in this status", None, False),
                Param("limit", "int", "at most this many records (1-200)", 50, False),
            ],
            returns=[cn, "total"],
            cfg={"collection": cn},
            key=("list", cn),
        ),
        ToolPlan(
            f"get_{e}",
            "get",
            "read",
            f"Get one {words} record by its id.",
            [id_param(c)],
            returns=[e],
            cfg={"collection": cn},
            key=("get", cn),
        ),
    ]
    if not full:
        return out
    return [
        *out,
        ToolPlan(
            f"search_{cn}",
            "search",
            "read",
            f"Find {words} records whose text fields contain a phrase (case-insensitive).",
            [Param("query", "str", "the phrase to look for")],
            returns=[cn, "total"],
            cfg={"collection": cn},
            key=("search", cn),
        ),
        ToolPlan(
            f"create_{e}",
            "create",
            "write",
            f"Create a {words} record; it starts in status '{c.statuses[0]}' and gets a new id.",
            attr_params(c, True),
            p.write_fields(cn, p.config["counters"]),
            [e],
            {"collection": cn},
            ("create", cn),
        ),
        ToolPlan(
            f"update_{e}",
            "update",
            "write",
            f"Change fields of a {words} record (not its status; final records are read-only).",
            [id_param(c), *attr_params(c, False)],
            p.write_fields(cn),
            [e],
            {"collection": cn},
            ("update", cn),
        ),
        ToolPlan(
            f"set_{e}_status",
            "transition",
            "write",
            f"Move a {words} record to another status along its lifecycle "
            f"({lifecycle_text(c)}); other moves are refused.",
            [id_param(c), Param("status", status_hint(c), "the status to move to")],
            p.write_fields(cn),
            [e],
            {"collection": cn},
            ("transition", cn, None),
        ),
    ]
