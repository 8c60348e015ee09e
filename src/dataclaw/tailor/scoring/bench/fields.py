"""Schema-field scores of the DataClaw0-val metric (paper A.4.4): the JSON gate, C_field and R_field.

* ``G_json`` is 1 when the prediction is a JSON object valid against the intent's schema (``gate:
  schema``, the default), or merely a JSON object (``gate: json``); else 0.
* ``C_field`` (coverage): of the reference's required leaf fields, the share the prediction has at the
  same place and with a well-typed value (the leaf schema's ``type`` and ``enum``; a list of scalars is one
  leaf whose items must all be well-typed). A leaf is a value that is not an object the schema describes
  further; list items are compared by index, so a missing step costs its fields.
* ``R_field`` (redundancy): of the prediction's leaf fields, the share the schema does not define
  (a key outside ``properties`` is one leaf, whatever it holds).
"""

from __future__ import annotations

from typing import Any

from dataclaw.models.schema import check_schema
from dataclaw.tailor.scoring.bench.fastschema import validity

_TYPES: dict[str, tuple[type, ...]] = {
    "string": (str,),
    "integer": (int,),
    "number": (int, float),
    "boolean": (bool,),
    "object": (dict,),
    "array": (list,),
    "null": (type(None),),
}

Leaf = tuple[Any, dict[str, Any] | None, bool]  # value, its schema (None: not in the schema), required


def _is_object_schema(schema: dict[str, Any]) -> bool:
    return "properties" in schema or schema.get("type") == "object"


def leaves(
    value: Any, schema: dict[str, Any] | None, path: str = "", required: bool = True
) -> dict[str, Leaf]:
    """Leaf fields of ``value`` by concrete path (``steps[1].text``), with their schema and whether the
    schema requires them (every key on the way required)."""
    out: dict[str, Leaf] = {}
    if schema is not None and isinstance(value, dict) and _is_object_schema(schema):
        props = schema.get("properties", {})
        req = set(schema.get("required", []))
        for key, item in value.items():
            sub = f"{path}.{key}" if path else key
            if key in props:
                out.update(leaves(item, props[key], sub, required and key in req))
            else:
                out[sub] = (item, None, False)
        return out
    items = (schema or {}).get("items")
    if isinstance(value, list) and isinstance(items, dict) and _is_object_schema(items):
        for i, item in enumerate(value):
            out.update(leaves(item, items, f"{path}[{i}]", required))
        return out
    out[path] = (value, schema, required)
    return out


def _type_ok(value: Any, schema: dict[str, Any]) -> bool:
    types = schema.get("type")
    if types is not None:
        names = [types] if isinstance(types, str) else list(types)
        ok = False
        for name in names:
            py = _TYPES.get(name, (object,))
            if isinstance(value, py) and not (isinstance(value, bool) and name in ("integer", "number")):
                ok = True
                break
        if not ok:
            return False
    if "enum" in schema and value not in schema["enum"]:
        return False
    items = schema.get("items")
    if isinstance(value, list) and isinstance(items, dict):
        return all(_type_ok(v, items) for v in value)
    return True


def well_typed(value: Any, schema: dict[str, Any] | None) -> bool:
    """Whether a leaf value has the type (and enum value) its schema asks for."""
    return schema is not None and _type_ok(value, schema)


def coverage(pred: Any, ref: Any, schema: dict[str, Any]) -> float:
    """C_field: the share of the reference's required leaves present and well-typed in ``pred``."""
    ref_leaves = leaves(ref, schema)
    wanted = {p: s for p, (_, s, req) in ref_leaves.items() if req and s is not None}
    if not wanted:
        wanted = {p: s for p, (_, s, _) in ref_leaves.items() if s is not None}
    if not wanted:
        return 1.0
    got = leaves(pred, schema) if isinstance(pred, dict) else {}
    hit = sum(1 for p, s in wanted.items() if p in got and well_typed(got[p][0], s))
    return hit / len(wanted)


def redundancy(pred: Any, schema: dict[str, Any]) -> float:
    """R_field: the share of the prediction's leaves that the schema does not define."""
    if not isinstance(pred, dict):
        return 0.0
    got = leaves(pred, schema)
    if not got:
        return 0.0
    return sum(1 for _, s, _ in got.values() if s is None) / len(got)


def gate(pred: Any, schema: dict[str, Any], mode: str = "schema") -> float:
    """G_json: 1 for a JSON object (valid against ``schema`` when ``mode`` is ``schema``), else 0."""
    if not isinstance(pred, dict):
        return 0.0
    if mode == "json":
        return 1.0
    return 1.0 if validity(schema)(pred) else 0.0


def schema_error(pred: Any, schema: dict[str, Any]) -> str | None:
    """The first schema violation of ``pred`` as ``path: message`` (None when valid)."""
    import jsonschema

    err = jsonschema.exceptions.best_match(check_schema(schema).iter_errors(pred))
    if err is None:
        return None
    where = "/".join(str(p) for p in err.absolute_path) or "<root>"
    return f"{where}: {err.message}"
