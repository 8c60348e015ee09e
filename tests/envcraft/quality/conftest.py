"""The grounded chain the soundness tests share: a real grounding of an archetype's chain."""

from __future__ import annotations

import pytest

from dataclaw.envcraft import archetypes
from dataclaw.envcraft.tasks import GroundingError, ground_chain
from dataclaw.envcraft.tasks.tool.initial import build_initial_state

TICKETS = "transactional_workspace"


@pytest.fixture(scope="module")
def grounded() -> dict:
    """login → update_ticket on a ticket the user names, with distractors (a real grounded chain)."""
    env_cls = archetypes.get(TICKETS).env_cls
    for seed in range(40):
        try:
            g = ground_chain(env_cls, ["get_ticket", "update_ticket"], seed=seed)
        except GroundingError:
            continue
        if g["steps"][-1]["sources"]["ticket_id"] == "user":
            return build_initial_state(env_cls, g, seed=seed)
    pytest.fail("no grounding of get_ticket → update_ticket in 40 seeds")
