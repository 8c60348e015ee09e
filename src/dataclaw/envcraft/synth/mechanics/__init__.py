"""Generic mechanics that compiled environment packages are configured with (EnvCraft §3.2).

``run(session, CONFIG, tool, **params)`` is the body of every compiled tool; :data:`OPS` is the operation
registry (records, lifecycles, schedules, matching, pipelines, events, streams, confirmations, drafts,
the claw bash tool); :mod:`.rules` the business-rule guards every write runs (``rule_violation``);
:mod:`.evaluation` holds the evaluator dimensions. See ``docs/envcraft.md``,
"Spec compilation".
"""

from dataclaw.envcraft.synth.mechanics.claw import workspace_files
from dataclaw.envcraft.synth.mechanics.evaluation import DIMENSIONS, goal_state, rule_compliance, untouched
from dataclaw.envcraft.synth.mechanics.ops import OPS, op, run

__all__ = ["DIMENSIONS", "OPS", "goal_state", "op", "rule_compliance", "run", "untouched", "workspace_files"]
