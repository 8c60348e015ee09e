"""Code-generated environments keep the evaluator guarantee (issue 25): the codegen prompt asks for goal
dimensions (``goal=True``), and the recorded codegen package, written as code generation writes it, gives
0 to the untouched state of every scenario and full marks to its reference. The same package with its goal
mark taken out (what a model that ignores the instruction writes) pays the idle agent, and the static
audit of generated packages rejects it (S061 evaluator-no-goal), so self-healing asks for the mark."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from typing import Any

import pytest

from dataclaw.envcraft.audit import static_audit
from dataclaw.envcraft.synth.codegen import generation_messages
from dataclaw.envcraft.synth.heal import apply_answer

_spec = importlib.util.spec_from_file_location(
    "codegen_goal_answers", Path(__file__).parent / "fixtures" / "codegen" / "answers.py"
)
assert _spec and _spec.loader
answers = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(answers)
ENV = "crm_customer_management"
GOAL = '"goal_state", 0.5, "records hold the target values; the newsletters asked for went out", goal=True'


def _scores(root: Path, answer: dict[str, Any], name: str) -> dict[str, tuple[float, float]]:
    """(untouched, reference) overall score per scenario of the package ``answer`` writes as ``name``."""
    from dataclaw.envcraft.runtime import load_env_package

    apply_answer(root / name, answer, name, fresh=True, claw=False)
    sys.path.insert(0, str(root))
    try:
        env_cls = load_env_package(root / name).env_cls
        env = env_cls(root / "state")
        out = {}
        for sc in env_cls.scenarios().values():
            sid = env.create_session(sc.scenario_id)
            untouched = env.evaluate_session(sid)["overall_score"]
            for step in sc.reference_solution:
                env.call(sid, step["tool"], **step.get("params", {}))
            out[sc.scenario_id] = (untouched, env.evaluate_session(sid)["overall_score"])
        return out
    finally:
        sys.path.remove(str(root))
        for mod in [m for m in sys.modules if m == name or m.startswith(f"{name}.")]:
            del sys.modules[mod]


def test_the_codegen_prompt_asks_for_goal_dimensions() -> None:
    prompt = generation_messages(answers.spec_record(), ENV)[-1]["content"]
    assert "goal=True" in prompt and "doing nothing and a" in prompt


def test_the_recorded_codegen_package_gives_the_untouched_state_zero(tmp_path: Path) -> None:
    answer = answers.good()
    assert GOAL in answers.file_of(answer, "evaluator.py")["content"]
    scores = _scores(tmp_path, answer, ENV)
    assert not [f for f in static_audit(tmp_path / ENV) if f.rule == "S061"]
    assert len(scores) >= 2
    assert all(u == 0.0 for u, _ in scores.values()), scores
    assert all(r >= 0.9 for _, r in scores.values()), scores


def test_without_its_goal_mark_the_package_pays_doing_nothing(tmp_path: Path) -> None:
    plain = answers.patched("evaluator.py", GOAL, GOAL.removesuffix(", goal=True"))
    scores = _scores(tmp_path, plain, ENV)
    assert any(u > 0.0 for u, _ in scores.values()), scores
    (finding,) = [f for f in static_audit(tmp_path / ENV) if f.rule == "S061"]
    assert finding.file == "evaluator.py" and "goal=True" in finding.message


if __name__ == "__main__":
    sys.exit(pytest.main([__file__, "-q"]))
