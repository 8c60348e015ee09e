"""Compiler mechanic of the transactional workspace archetype: a compiled package gets a draft per record
(``stage_X_changes``), ``commit_changes`` (all or nothing) and ``list_drafts``."""

from __future__ import annotations

from dataclaw.envcraft.synth.compile.mechanics import mechanic
from dataclaw.envcraft.synth.compile.plan import Plan, ToolPlan, primary_collection
from dataclaw.envcraft.synth.compile.tools import attr_params, id_param


@mechanic("transactional_workspace")
def _transactional(p: Plan) -> None:
    c = primary_collection(p)
    drafts = p.config.setdefault("drafts", p.free("drafts"))
    p.state.setdefault(drafts, {})
    words = c.entity.replace("_", " ")
    p.add_tool(
        ToolPlan(
            f"stage_{c.entity}_changes",
            "stage_change",
            "write",
            f"Stage field changes to a {words} record as a draft; nothing changes until commit_changes.",
            [id_param(c), *attr_params(c, False)],
            [drafts],
            ["draft", "pending"],
            {"collection": c.name},
            ("stage_change", c.name),
        )
    )
    p.add_tool(
        ToolPlan(
            "commit_changes",
            "commit",
            "write",
            "Apply every staged draft at once (all or nothing) and clear the drafts.",
            [],
            list(dict.fromkeys([drafts, *p.write_fields(c.name)])),
            ["committed"],
            {},
            ("commit",),
        )
    )
    p.add_tool(
        ToolPlan(
            "list_drafts",
            "list_drafts",
            "read",
            "List the staged drafts not yet committed.",
            [],
            returns=["drafts"],
            key=("list_drafts",),
        )
    )
