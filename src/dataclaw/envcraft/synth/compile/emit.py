"""Code emission: the package written is data (``data/config.json``, ``data/world.json``,
``data/scenarios/*.json``) plus thin generated glue from :mod:`dataclaw.envcraft.synth.mechanics.templates`:
``tools.py`` (typed, documented ``@tool`` functions whose body is one ``run(...)`` call), ``state.py``,
``env.py``, ``evaluator.py``, ``__init__.py``, ``__main__.py``, README.md and SKILL.md."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

from dataclaw.envcraft.synth.compile.plan import (
    MARKER,
    CompileError,
    Plan,
    ToolPlan,
    clean,
    lifecycle_text,
    primary_collection,
)
from dataclaw.envcraft.synth.mechanics import templates as T
from dataclaw.envcraft.synth.mechanics.claw import workspace_files
from dataclaw.envcraft.synth.mechanics.evaluation import DIMENSIONS


def _wrap(head: str, items: list[str], tail: str, width: int = 110) -> str:
    """``head + items + tail`` on one line, or one item per line when that is too long (black style)."""
    line = head + ", ".join(items) + tail
    if len(line) <= width:
        return line
    indent = " " * (len(head) - len(head.lstrip()) + 4)
    return head + "\n" + "".join(f"{indent}{x},\n" for x in items) + indent[:-4] + tail


def _py_tool(t: ToolPlan) -> str:
    t.params.sort(key=lambda x: not x.required)  # Python: parameters with defaults come last
    sig = ["session: dict"]
    for prm in t.params:
        sig.append(f"{prm.name}: {prm.hint}" + ("" if prm.required else f" = {prm.default!r}"))
    deco = f"@tool({t.side_effect!r}"
    if t.fields:
        deco += f", fields={t.fields!r}"
    if t.returns:
        deco += f", returns={t.returns!r}"
    deco += ")"
    doc = [f'    """{clean(t.description, 300)}']
    if t.params:
        doc += ["", "    Args:"] + [f"        {prm.name}: {clean(prm.description, 120)}." for prm in t.params]
    doc.append('    """')
    call = ", ".join([f"{t.name!r}"] + [f"{prm.name}={prm.name}" for prm in t.params])
    return "\n".join(
        [
            deco,
            _wrap(f"def {t.name}(", sig, ") -> dict:"),
            *doc,
            _wrap("    return _run(", ["session", "CONFIG", *call.split(", ")], ")"),
            "",
            "",
        ]
    )


def package_files(
    p: Plan, scenarios: list[dict[str, Any]], claw: bool, archetypes: list[str]
) -> dict[str, str]:
    cls = "".join(w.title() for w in p.env.split("_"))[:60] + "Env"
    dims = "\n".join(
        T.DIMENSION.substitute(name=name, weight=weight, doc=clean(doc), goal=goal)
        for name, weight, doc, goal in DIMENSIONS
    )
    doc = clean(p.spec.task_description, 300).replace('"', "'")
    return {
        "__init__.py": T.INIT.substitute(env=p.env, cls=cls),
        "__main__.py": T.MAIN.substitute(env=p.env),
        "env.py": T.ENV.substitute(env=p.env, cls=cls, doc=doc, prefix=p.env.upper()[:40]),
        "state.py": T.STATE.substitute(),
        "evaluator.py": T.EVALUATOR.substitute(dimensions=dims),
        "tools.py": T.TOOLS.substitute(env=p.env, tools="\n".join(_py_tool(t) for t in p.tools.values())),
        "README.md": _readme(p, scenarios, claw, archetypes),
        "SKILL.md": _skill(p, claw),
        "data/config.json": json.dumps(p.config, indent=1, sort_keys=True) + "\n",
        "data/world.json": json.dumps(p.state, indent=1, sort_keys=True) + "\n",
        **{f"data/scenarios/{s['scenario_id']}.json": json.dumps(s, indent=1) + "\n" for s in scenarios},
    }


def _readme(p: Plan, scenarios: list[dict[str, Any]], claw: bool, archetypes: list[str]) -> str:
    lines = [
        f"# {p.env}",
        "",
        clean(p.spec.task_description, 600),
        "",
        "Compiled deterministically from an E_spec/T_spec by `dataclaw.envcraft.synth.compile`",
        f"(no model-written code). Archetypes: {', '.join(archetypes) or 'none'};",
        f"mechanics: {', '.join(p.mechanics) or 'core'}.",
        "",
        "## State",
        "",
    ]
    for c in p.collections.values():
        lines.append(f"- `{c.name}`: {c.entity} records by `{c.id_field}`; lifecycle {lifecycle_text(c)}")
    if p.rules:
        lines += ["", "## Enforced rules", ""]
        lines += [f"- `{r['rule_id']}` ({r['kind']}): {clean(r['description'], 150)}" for r in p.rules]
    lines += ["", "## Tools", ""]
    lines += [f"- `{t.name}` ({t.side_effect}): {clean(t.description, 160)}" for t in p.tools.values()]
    lines += ["", "## Scenarios", ""]
    lines += [f"- `{s['scenario_id']}`: {s['title']}" for s in scenarios]
    lines += [
        "",
        "## Use",
        "",
        "Sessions, storage, the clock and the CLI come from `dataclaw.envcraft.runtime`:",
        f"`python -m {p.path_name} prepare-rollout --scenario-id ID --state-root DIR --show-bindings`,",
        "then the agent commands with the printed bindings. Check it with `dataclaw env audit <folder>`.",
    ]
    if claw:
        lines += [
            "",
            "Claw scenario: `bash` runs a command over the session's records as files (see SKILL.md).",
        ]
    return "\n".join(lines) + "\n"


def _skill(p: Plan, claw: bool) -> str:
    c = primary_collection(p)
    reads = [t.name for t in p.tools.values() if t.side_effect == "read"]
    writes = [t.name for t in p.tools.values() if t.side_effect == "write"]
    lines = [
        f"# {p.env}: workflow",
        "",
        "1. Read before you write: " + ", ".join(f"`{n}`" for n in reads[:5]) + ".",
        f"2. Find the record by id (`{p.tool_for(('get', c.name))}`) and check its status first.",
        f"3. Change state only with: {', '.join(f'`{n}`' for n in writes[:6])}.",
        f"4. Lifecycle of {c.entity}: {lifecycle_text(c)}. Other moves are refused.",
        "5. Change only the records the task names; leave the others as they are.",
    ]
    if c.gated:
        lines.append(f"6. Moves to {', '.join(c.gated)} need the user's confirmation first (request it).")
    lines += _rules_section(p)
    order = p.spec.constraints.required_reading_order[:5]
    if order:
        lines += ["", "Read in this order: " + ", ".join(order) + "."]
    for seq in p.spec.constraints.forbidden_action_sequences[:3]:
        lines.append("Never do in sequence: " + " -> ".join(seq) + ".")
    if claw:
        lines += [
            "",
            "## Workspace (bash)",
            "",
            "- `bash` sees one JSON file per record, `<collection>/<id>.json`, the logs and a README.md.",
            "- Use it to search and compare records (`ls`, `grep -l`, `python3 -c`); edits there are",
            "  thrown away: change state only through the write tools above.",
            "- Workflow: list the workspace, grep for the record, read it, act with the tools, verify",
            f"  with `{p.tool_for(('get', c.name))}`.",
        ]
    lines += [
        "",
        "Errors are structured (`category`, `message`): read the message, fix the call, retry once.",
    ]
    return "\n".join(lines[:64]) + "\n"


def _rules_section(p: Plan) -> list[str]:
    """The rules the tools enforce (id, kind, entity, the write guarded: what the library counts), then
    the spec's prose rules nothing enforces."""
    out: list[str] = []
    if p.rules:
        out += ["", "## Enforced rules", ""]
        for r in p.rules[:10]:
            on = f", on {r['on']}" if r["on"] else ""
            out.append(f"- `{r['rule_id']}` ({r['kind']}, {r['entity']}{on}): {clean(r['description'], 150)}")
        out.append("A change that breaks one is refused as `rule_violation: <rule id>: <why>`.")
    enforced = {r["rule_id"] for r in p.rules}
    prose = [clean(r.description, 150) for r in p.spec.business_rules if r.rule_id not in enforced][:6]
    if prose:
        out += ["", "## Rules" if not p.rules else "## Other rules (guidance, not enforced)", ""]
        out += [f"- {r}" for r in prose]
    return out


def write_package(folder: Path, files: dict[str, str], plan: Plan, claw: bool) -> None:
    if folder.exists():
        if not (folder / MARKER).is_file():
            raise CompileError(f"{folder} exists and is not a compiled package; refusing to replace it")
        shutil.rmtree(folder)
    for rel, text in files.items():
        path = folder / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    if claw:  # the S0 workspace a claw task starts from (the layout the bash tool shows)
        for rel, text in workspace_files(plan.state, plan.config).items():
            path = folder / "data" / "workspace" / rel
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text, encoding="utf-8")
