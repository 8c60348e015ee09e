"""Compiler mechanic of the bilateral matching archetype: a compiled package gets ``match_X_with_Y``: each
record is matched at most once."""

from __future__ import annotations

from dataclaw.envcraft.synth.compile.mechanics import mechanic
from dataclaw.envcraft.synth.compile.plan import Param, Plan, ToolPlan, primary_collection, spaced
from dataclaw.envcraft.synth.compile.tools import id_param


@mechanic("bilateral_matching")
def _matching(p: Plan) -> None:
    a = primary_collection(p)
    b = next((c for c in p.collections.values() if c.name != a.name), a)
    matches = p.config.setdefault("matches", p.free("matches"))
    p.state.setdefault(matches, {})
    b_param = b.id_param if b is not a else f"partner_{a.id_param}"
    p.add_tool(
        ToolPlan(
            f"match_{a.entity}_with_{b.entity}" if b is not a else f"match_{a.entity}_pair",
            "match",
            "write",
            f"Match a {spaced(a.entity)} with a {spaced(b.entity)}; each record is matched at most once.",
            [id_param(a), Param(b_param, "str", f"the {b.entity.replace('_', ' ')} id to match with")],
            list(dict.fromkeys([a.name, b.name, matches, p.config["log"]])),
            ["match"],
            {
                "collection": a.name,
                "partner": b.name,
                "a_param": a.id_param,
                "b_param": b_param,
                "matches": matches,
            },
            ("match", a.name, b.name),
        )
    )
