"""A released ClawForge claw environment → a runnable package: the spec built from its tool docs and world
data (:mod:`.clawforge_spec`) compiled by the spec compiler (:func:`dataclaw.envcraft.synth.compile.
compile_package`), then the released verbs laid over the compiled package with their own names and
parameters (``released.py`` + ``released`` in ``data/config.json``, appended to the compiled ``tools.py``).

The package is then proven: opened in its sandboxed env worker, every released tool called once on the
first scenario (a tool *answers* when it returns a result or a structured domain error, never an internal
one), and audited by the environment audit the synthesis path uses (:func:`dataclaw.envcraft.audit.
audit_package`). Its report (``data/import_report.json``) says which released tools are reproduced, which
rules are (enforced or prose only) and what was dropped, each with why.
"""

from __future__ import annotations

import json
import keyword
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

from dataclaw.envcraft.importers.clawforge_spec import ReleaseSpec, build_release_spec

TEMPLATE = Path(__file__).parent / "clawforge_package" / "released.py"
_HINTS = {"string": "str", "integer": "int", "number": "float", "boolean": "bool"}


def _clean(text: str, limit: int = 200) -> str:
    text = " ".join(str(text).replace('"""', "'").replace("\\", "/").split())
    return text[:limit].rstrip() or "-"


def _hint(p: dict[str, Any]) -> str:
    s = p["schema"]
    base = (
        "Literal[" + ", ".join(repr(v) for v in s["enum"]) + "]"
        if s.get("enum")
        else _HINTS.get(s["type"], "str")
    )
    return base if p["required"] else f"{base} | None"


def _py_tool(r: dict[str, Any], fields: list[str]) -> str:
    params = sorted(r["params"], key=lambda p: not p["required"])
    sig = ["session: dict"] + [
        f"{p['name']}: {_hint(p)}" + ("" if p["required"] else f" = {p.get('default')!r}") for p in params
    ]
    deco = (
        f"@tool({r['side_effect']!r}" + (f", fields={fields!r}" if r["side_effect"] == "write" else "") + ")"
    )
    doc = [f'    """{_clean(r["description"], 300)}']
    if params:
        doc += ["", "    Args:"] + [f"        {p['name']}: {_clean(p['description'], 120)}." for p in params]
    doc.append('    """')
    call = ", ".join(["session", "CONFIG", repr(r["name"]), *[f"{p['name']}={p['name']}" for p in params]])
    return "\n".join(
        [
            deco,
            f"def {r['name']}(",
            *[f"    {x}," for x in sig],
            ") -> dict:",
            *doc,
            f"    return _released({call})",
            "",
            "",
        ]
    )


def _op_tool(config: dict[str, Any], op: str, coll: str, target: bool = False) -> str | None:
    for name, t in sorted(config["tools"].items()):
        if t.get("op") == op and t.get("collection") == coll and bool(t.get("target")) == target:
            return name
    return None


def _bind(rs: ReleaseSpec, config: dict[str, Any]) -> tuple[dict[str, dict[str, Any]], list[dict[str, str]]]:
    """The bindings with the compiled collections and operation tools they run on; tools whose
    collection or operation did not compile are dropped with why."""
    colls = {c["entity"]: name for name, c in config["collections"].items()}
    out: dict[str, dict[str, Any]] = {}
    dropped: list[dict[str, str]] = []
    for name, b in rs.bindings.items():
        b = dict(b)
        if "entity" in b:
            coll = colls.get(b["entity"])
            if coll is None:
                dropped.append({"tool": name, "why": f"its entity {b['entity']!r} did not compile"})
                continue
            b["collection"] = coll
            op = {"get": "get", "create": "create", "update": "update", "transition": "transition"}.get(
                b["kind"]
            )
            if op:
                b["op_tool"] = _op_tool(config, op, coll)
                if b["op_tool"] is None:
                    dropped.append({"tool": name, "why": f"no compiled {op} operation on {coll}"})
                    continue
            if b["kind"] in ("update", "transition"):
                b["update_tool"] = _op_tool(config, "update", coll)
            if b["kind"] == "transition" and b.get("target"):
                statuses = config["collections"][coll]["statuses"]
                if b["target"] not in statuses:
                    dropped.append({"tool": name, "why": f"status {b['target']!r} did not compile"})
                    continue
        out[name] = b
    return out, dropped


def _fields(b: dict[str, Any], config: dict[str, Any]) -> list[str]:
    out = [b["collection"], config["log"]]
    if b["kind"] == "create":
        out.append(config["counters"])
    if config.get("events"):
        out.append(config["events"])
    return list(dict.fromkeys(out))


def overlay(rs: ReleaseSpec, folder: Path) -> dict[str, Any]:
    """Lay the released verbs over a compiled package folder; what was reproduced and dropped."""
    config = json.loads((folder / "data" / "config.json").read_text(encoding="utf-8"))
    bindings, dropped = _bind(rs, config)
    tools = []
    refined: list[dict[str, str]] = []
    for r in rs.released:
        if r["name"] not in bindings:
            continue
        bad = [p["name"] for p in r["params"] if keyword.iskeyword(p["name"]) or p["name"] == "session"]
        if bad:
            dropped.append({"tool": r["name"], "why": f"parameter {bad[0]!r} is not a usable Python name"})
            del bindings[r["name"]]
            continue
        b = bindings[r["name"]]
        b["title"] = r["description"]
        sp = next((p for p in r["params"] if p["name"] == b.get("status_param")), None)
        if sp is not None and not sp["schema"].get("enum"):  # a free-text status: the lifecycle's values
            sp["schema"] = {**sp["schema"], "enum": list(config["collections"][b["collection"]]["statuses"])}
            refined.append(
                {"tool": r["name"], "param": sp["name"], "why": "enum: the statuses of the lifecycle"}
            )
        tools.append(_py_tool(r, _fields(bindings[r["name"]], config) if r["side_effect"] == "write" else []))
    text = (folder / "tools.py").read_text(encoding="utf-8")
    text = _rename_compiled(folder, text, [r["name"] for r in rs.released if r["name"] in bindings], config)
    head = "from .state import CONFIG\n"
    text = text.replace(head, head + "from .released import call as _released\n", 1)
    text += "\n# ---- the released ClawForge verbs (their own names and parameters) ----\n\n\n" + "\n".join(
        tools
    )
    (folder / "tools.py").write_text(text.rstrip() + "\n", encoding="utf-8")
    shutil.copyfile(TEMPLATE, folder / "released.py")
    config["released"] = {
        "bindings": bindings,
        "attachments": rs.attachments,
        "scenarios": [s["scenario_id"] for s in rs.scenarios],
        "prompts": {s.scenario_id: s.task_prompt for s in rs.e_spec.scenarios},
    }
    (folder / "data" / "config.json").write_text(json.dumps(config, indent=1, sort_keys=True) + "\n", "utf-8")
    return {"bindings": bindings, "dropped": dropped, "refined": refined}


def _rename_compiled(folder: Path, text: str, released: list[str], config: dict[str, Any]) -> str:
    """A compiled tool whose name a released verb takes is renamed ``<name>_records`` (its config entry,
    which the released binding may run, keeps the name), in ``tools.py`` and the scenarios' reference
    solutions and forbidden actions."""
    import re

    for name in released:
        if name not in config["tools"] or f"{name}_records" in config["tools"]:
            continue
        new = f"{name}_records"
        text = re.sub(rf"^def {name}\(", f"def {new}(", text, count=1, flags=re.M)
        for path in (folder / "data" / "scenarios").glob("*.json"):
            doc = json.loads(path.read_text(encoding="utf-8"))
            for key in ("reference_solution", "forbidden_actions"):
                for step in doc.get(key) or []:
                    if isinstance(step, dict) and step.get("tool") == name:
                        step["tool"] = new
            path.write_text(json.dumps(doc, indent=1) + "\n", encoding="utf-8")
    return text


_CHECK = r"""
import json, sys, tempfile
from dataclaw.envcraft.worker import open_environment
handle = open_environment(sys.argv[1])
env_cls = handle.env_cls
names = json.loads(sys.argv[2])
out = {"tools": sorted(s.name for s in env_cls.tools), "calls": {}}
with tempfile.TemporaryDirectory() as root:
    env = env_cls(root)
    scenarios = sorted(env_cls.scenarios())
    for sid in scenarios:
        env.get_session_state(env.create_session(sid))
    sid = env.create_session(scenarios[0])
    state = env.get_session_state(sid)
    for name in names:
        spec = env_cls.tools.get(name) if name in env_cls.tools else None
        if spec is None:
            out["calls"][name] = "missing"
            continue
        params = {}
        for p in spec.params:
            if not p.required:
                continue
            t = p.schema.get("type")
            enum = p.schema.get("enum")
            value = enum[0] if enum else {"integer": 1, "number": 1.0, "boolean": True}.get(t, "x")
            for coll in state.values():
                if isinstance(coll, dict) and coll and all(isinstance(r, dict) for r in coll.values()):
                    first = next(iter(coll.values()))
                    if p.name in first and first[p.name] is not None and not enum:
                        value = first[p.name]
                        break
            params[p.name] = value
        res = env.call(sid, name, **params)
        err = (res.get("error") or {}).get("category")
        bad = "internal" if err in (None, "internal") else err
        out["calls"][name] = "ok" if res.get("status") == "ok" else bad
print("@@check@@" + json.dumps(out))
"""


def check_runnable(folder: Path, names: list[str]) -> dict[str, Any]:
    """Open the package in its sandboxed env worker (from a fresh process) and call every released tool
    once: ``{"loaded", "answered": [names], "calls": {name: ok|<error category>}, "error"}``."""
    try:
        done = subprocess.run(
            [sys.executable, "-c", _CHECK, str(folder), json.dumps(names)],
            capture_output=True,
            text=True,
            timeout=240,
        )
    except subprocess.TimeoutExpired:
        return {"loaded": False, "answered": [], "calls": {}, "error": "did not load within 240 s"}
    line = next((x for x in done.stdout.splitlines() if x.startswith("@@check@@")), None)
    if line is None:
        last = (done.stderr.strip().splitlines() or ["no output"])[-1]
        return {"loaded": False, "answered": [], "calls": {}, "error": last[:300]}
    got = json.loads(line.removeprefix("@@check@@"))
    answered = [n for n, s in got["calls"].items() if s not in ("internal", "missing", "unknown_tool")]
    return {"loaded": True, "answered": answered, "calls": got["calls"], "error": None}


def chain_steps(chain: dict[str, Any], tools: Any) -> list[str]:
    """The tool names of a released chain's environment steps, in order: its CLI verbs and the action types
    of its implicit (gold) steps, those the package has (the scaffold's read/grep/finish are the agent's
    own tools, not the environment's)."""
    from dataclaw.envcraft.importers.clawforge_spec import _literal_dict, snake

    out = []
    for step in chain.get("chain") or []:
        if not isinstance(step, dict):
            continue
        if step.get("layer") == "cli":
            name = snake(str(step.get("op", "")))
        elif step.get("layer") == "implicit":
            name = snake(str((_literal_dict(step.get("op")) or {}).get("action_type", "")))
        else:
            continue
        if name in tools:
            out.append(name)
    return out


def build_runnable(
    env: str, docs: dict[str, Any], world: Path | None, lib: Path, *, audit: bool = True, unsafe: bool = False
) -> dict[str, Any]:
    """Spec → compiled package → released verbs → checked and audited, placed in ``LIB/envs/import/<env>``.
    Returns the row's fields (``runnable``, ``report``, ``package`` …); raises nothing for a bad release
    (the reason is in the result)."""
    from dataclaw.envcraft.importers.base import IMPORT_PATH, mark_imported
    from dataclaw.envcraft.synth.compile import CompileError, compile_package

    rs = build_release_spec(env, docs, world)
    build = lib / ".build" / "clawforge" / env
    if build.exists():
        shutil.rmtree(build)
    build.mkdir(parents=True)
    report: dict[str, Any] = {
        "env": env,
        "released_tools": len(rs.released),
        "entities": len(rs.e_spec.entities),
        "world_records": len(rs.e_spec.world_data.records),
        "scenarios": rs.scenarios,
    }
    try:
        res = compile_package(
            rs.e_spec,
            rs.t_spec.model_copy(update={"tools": []}),
            [],
            build,
            scenario={"id": env, "category": "clawforge"},
            claw=False,
        )
    except CompileError as exc:
        return {"runnable": False, "reason": {"code": "compile_error", "message": str(exc)}, "report": report}
    folder = res.path
    (folder / "data" / "spec.json").write_text(
        json.dumps(
            {"e_spec": rs.e_spec.model_dump(mode="json"), "t_spec": rs.t_spec.model_dump(mode="json")},
            indent=1,
        )
        + "\n",
        "utf-8",
    )
    laid = overlay(rs, folder)
    mark_imported(folder, "clawforge", env, release=True)
    names = list(laid["bindings"])
    check = check_runnable(folder, names)
    config = json.loads((folder / "data" / "config.json").read_text(encoding="utf-8"))
    enforced = config.get("rules") or []
    dropped = (
        rs.dropped
        + laid["dropped"]
        + [
            {"tool": n, "why": f"does not answer: {check['calls'].get(n)}"}
            for n in names
            if n not in check["answered"]
        ]
    )
    report.update(
        tools_reproduced=sorted(check["answered"]),
        tools_dropped=dropped,
        bindings={n: b["kind"] for n, b in laid["bindings"].items()},
        params_refined=laid["refined"],
        rules=[
            {
                **r,
                "enforced": r.get("enforced_by") == "state machine"
                or (
                    bool(r.get("rule_id"))
                    and any(isinstance(e, dict) and e.get("rule_id") == r.get("rule_id") for e in enforced)
                ),
            }
            for r in rs.rules
        ],
        rules_inferred=[
            e.get("description") for e in enforced if isinstance(e, dict) and e.get("source") == "inferred"
        ],
        compiled_tools=res.tools,
        compile_defaults=res.defaults[:40],
    )
    passed_audit: bool | None = None
    if check["loaded"] and audit:
        from dataclaw.envcraft.audit import DynamicOptions, audit_package

        rep = audit_package(folder, options=DynamicOptions(unsafe=unsafe))
        passed_audit = rep.passed
        report["audit"] = {
            "passed": rep.passed,
            "findings": [f"{f.rule}: {f.message}" for f in rep.findings][:10],
            "failed_checks": [f"{c.name}: {c.detail}"[:300] for c in rep.checks if not c.ok][:10],
        }
    (folder / "data" / "import_report.json").write_text(json.dumps(report, indent=1) + "\n", "utf-8")
    dest = lib / "envs" / IMPORT_PATH / env
    if dest.exists():
        shutil.rmtree(dest)
    dest.parent.mkdir(parents=True, exist_ok=True)
    shutil.move(str(folder), dest)
    shutil.rmtree(build, ignore_errors=True)
    share = len(check["answered"]) / max(1, len(rs.released))
    runnable = check["loaded"] and bool(check["answered"]) and passed_audit is not False
    reason = None
    if not check["loaded"]:
        reason = {"code": "import_error", "message": f"the package does not load: {check['error']}"}
    elif passed_audit is False:
        reason = {
            "code": "audit_failed",
            "message": "; ".join(report["audit"]["findings"] + report["audit"]["failed_checks"])[:1000],
        }
    return {
        "runnable": runnable,
        "reason": reason,
        "package": str(dest.relative_to(lib)),
        "report": report,
        "tools_reproduced": len(check["answered"]),
        "tools_share": round(share, 3),
        "audit": passed_audit,
    }
