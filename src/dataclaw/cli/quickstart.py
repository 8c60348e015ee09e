"""``dataclaw quickstart``: run what dataclaw can do on the bundled examples with the embedded model.

Each part is one engine's real job on small inputs; parts are added as the engines grow. Nothing here
fakes work: a part that cannot run says why and the command fails.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import typer
from rich.console import Console
from rich.table import Table

DEFAULT_MODEL = "local:smollm2-135m"

# (name, function(out_dir, model) -> summary rows): each part calls one engine's demonstration on the
# bundled examples and words its result. Appended to below.
Part = Callable[[Path, str], dict[str, Any]]
PARTS: list[tuple[str, Part]] = []


def quickstart(
    out: Path = typer.Option(Path("runs/quickstart"), "--out", help="Run directory for everything produced."),
    model: str = typer.Option(
        DEFAULT_MODEL, "--model", help="Model string (local:…, openai:…, http://host/v1::name)."
    ),
) -> None:
    """Run every engine end to end on the bundled examples (offline, embedded model by default)."""
    console = Console()
    out.mkdir(parents=True, exist_ok=True)
    table = Table(title="dataclaw quickstart", show_lines=True)
    table.add_column("part")
    table.add_column("result")
    for name, part in PARTS:
        console.rule(f"[bold]{name}")
        summary = part(out / name, model)
        table.add_row(name, "\n".join(f"{k}: {v}" for k, v in summary.items()))
    console.print(table)
    console.print(f"output written under [bold]{out.resolve()}[/bold]")


# --- the parts: each calls its engine's demonstration and words the result -----------------------------


def _examples_dir() -> Path:
    """The bundled examples: inside the installed package (a wheel), else the source checkout's."""
    packaged = Path(__file__).resolve().parents[1] / "examples"
    return packaged if packaged.is_dir() else Path(__file__).resolve().parents[3] / "examples"


EXAMPLES = _examples_dir()


def _model_part(out: Path, model: str) -> dict[str, Any]:
    """The model layer answers a small structured question about the LeRobot G1 task
    (examples/lerobot_g1/tasks.jsonl) as schema-valid JSON → answer.json."""
    from dataclaw.models.demo import describe_robot_task

    done = describe_robot_task(EXAMPLES / "lerobot_g1" / "tasks.jsonl", model, out)
    return {
        "model": done.model,
        "latency_s": round(done.latency_s, 2),
        "tokens": f"{done.usage.prompt_tokens} in / {done.usage.completion_tokens} out",
        "cached": done.cached,
        "answer": out / "answer.json",
    }


PARTS.append(("model", _model_part))


def _ingest_part(out: Path, model: str) -> dict[str, Any]:
    """``dataclaw tailor ingest`` on every example a stream reader recognises (no model involved)."""
    from dataclaw.tailor.pipeline import quickstart_ingest

    inputs, summary = quickstart_ingest(EXAMPLES, out)
    return {
        "inputs": ", ".join(p.name for p in inputs),
        "streams": summary.streams,
        "anchors": sum(summary.anchors.values()),
        "candidates": ", ".join(f"{k} {v}" for k, v in summary.candidates.items()) or "none",
        "rejects": sum(summary.rejects.values()),
        "run": out,
    }


PARTS.append(("ingest", _ingest_part))


def _tailor_part(out: Path, model: str) -> dict[str, Any]:
    """``dataclaw tailor run``: a robot episode and a video → fault-recovery, subtask and video-gen samples
    with the model; the reasons of the answers validation rejected are listed."""
    from dataclaw.tailor.pipeline import quickstart_run

    summary = quickstart_run(EXAMPLES, out, model)
    usage = summary["usage"]
    return {
        "requests": summary["requests"],
        "samples": summary["counts"].get("samples", 0),
        "rejects": ", ".join(f"{k} {v}" for k, v in summary["rejects"].items() if not k.startswith("ingest"))
        or "none",
        "tokens": f"{usage['prompt_tokens']} in / {usage['completion_tokens']} out"
        f" ({usage.get('cache_hits', 0)} of {usage.get('calls', 0)} model calls, for"
        f" {summary['requests']} requests, from the response cache)",
        "export": (summary["export"] or {}).get("out_dir", "none (no sample passed validation)"),
        "run": out,
    }


PARTS.append(("tailor", _tailor_part))


def _envcraft_part(out: Path, model: str) -> dict[str, Any]:
    """EnvCraft on one archetype and the bundled claw tasks: chains → tool tasks, the claw tasks' code
    audit, and the model as the agent on both kinds."""
    from dataclaw.envcraft.quickstart import tasks_demo

    d = tasks_demo(EXAMPLES, out, model)
    return {
        "chains → grounded → tool tasks": f"{d.chains} → {d.grounded} → {len(d.tool_tasks)}",
        "chain/task rejects": ", ".join(f"{k} {v}" for k, v in d.rejects) or "none",
        "claw tasks audited": f"{d.claw_passed}/{d.claw_total} pass",
        "rewards": ", ".join(f"{r['task_id'].rsplit('/', 1)[-1]}={r['reward']:.2f}" for r in d.rollouts)
        or "none",
        "mean reward": d.summary["mean_reward"],
        "run": out,
    }


PARTS.append(("envcraft", _envcraft_part))


def _envsynth_part(out: Path, model: str) -> dict[str, Any]:
    """``dataclaw env synth`` on two catalogue scenarios into ``LIB/``, then tool tasks in the passing
    environments."""
    from dataclaw.envcraft.quickstart import synth_demo

    d = synth_demo(out, model)
    s = d.summary
    failed = [f"{r['scenario_id']}: {r['reasons'][0]['code']}" for r in d.rows if not r["passed"]]
    return {
        "scenarios → passing envs": f"{s['raw']} → {s['passed']}, {s['floor']} floor (not counted)"
        " (paper: 324 → 139 = 42.9%)",
        "envs": ", ".join(f"{r['env']} ({r['tools']} tools)" for r, _ in d.packages) or "none",
        "failed": ", ".join(failed) or "none",
        "spec tokens": f"{s['tokens']['prompt']} in / {s['tokens']['completion']} out",
        "chains → tool tasks": f"{d.chains} → {d.tasks}",
        "library": d.library,
    }


PARTS.append(("envsynth", _envsynth_part))
