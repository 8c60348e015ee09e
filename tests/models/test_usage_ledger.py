"""The run manifest's model usage adds up over invocations: a resumed run never hides what it spent."""

from __future__ import annotations

from pathlib import Path

from dataclaw.core.store import RunStore
from dataclaw.models import UsageLedger
from dataclaw.models.types import Usage


def _ledger(calls: int, tokens: int, cost: float) -> UsageLedger:
    ledger = UsageLedger()
    for _ in range(calls):
        ledger.record(
            "m",
            Usage(prompt_tokens=tokens, completion_tokens=1),
            cost_usd=cost,
            priced=True,
            cached=False,
            latency_s=0.5,
        )
    ledger.record("m", Usage(), cost_usd=0.0, priced=True, cached=True, latency_s=0.0)
    return ledger


def test_usage_is_the_total_over_invocations_and_a_resave_is_not_counted_twice(tmp_path: Path) -> None:
    with RunStore(tmp_path / "run") as store:
        first = _ledger(2, 10, 0.25)
        first.save(store)
        first.save(store)  # saved again at the end of the same invocation
        second = _ledger(3, 100, 0.5)  # the resumed run
        manifest = second.save(store)
    total = manifest["models"]["usage"]["total"]
    assert (total["calls"], total["cache_hits"], total["prompt_tokens"]) == (
        2 + 1 + 3 + 1,
        2,
        2 * 10 + 3 * 100,
    )
    assert total["cost_usd"] == 2 * 0.25 + 3 * 0.5
    assert manifest["models"]["usage"]["by_model"]["m"]["completion_tokens"] == 5
    invocations = manifest["models"]["invocations"]
    assert set(invocations) == {first.invocation, second.invocation}
    assert invocations[second.invocation] == second.summary()


def test_saved_usage_records_a_failed_invocation_and_run_usage_reads_it_back(tmp_path: Path) -> None:
    """What the commands wrap their model calls in: the usage is saved even when the work fails part-way,
    and nothing is saved when no model was called."""
    import pytest

    from dataclaw.core.errors import ConfigError
    from dataclaw.models.ledger import run_usage, saved_usage

    run = tmp_path / "run"
    with RunStore(run) as store, saved_usage(store):
        store.update_manifest(note="a run without model calls")
    with pytest.raises(ConfigError, match="no model usage"):
        run_usage(run)
    with pytest.raises(RuntimeError), RunStore(run) as store, saved_usage(store) as ledger:
        ledger.record("m", Usage(prompt_tokens=3, completion_tokens=1), cost_usd=0.5, priced=True,
                      cached=False, latency_s=0.1)  # fmt: skip
        raise RuntimeError("the command failed after one call")
    assert run_usage(run)["total"]["prompt_tokens"] == 3
    with pytest.raises(ConfigError, match=r"no manifest\.json"):
        run_usage(tmp_path / "none")
