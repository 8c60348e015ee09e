"""``dataclaw quickstart``: run what dataclaw can do on the bundled examples with the embedded model.

Each part is one engine's real job on small inputs; parts are added as the engines grow. Nothing here
fakes work: a part that cannot run says why and the command fails.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import typer
from rich.console import Console
from rich.table import Table

from dataclaw.core.errors import ConfigError

DEFAULT_MODEL = "local:smollm2-135m"

# (name, function(out_dir, model) -> summary rows). Appended to by each engine's part below.
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


# --- part "model": the model layer answers a small structured question about a bundled example ---------


def _examples_dir() -> Path:
    """The bundled examples: inside the installed package (a wheel), else the source checkout's."""
    packaged = Path(__file__).resolve().parents[1] / "examples"
    return packaged if packaged.is_dir() else Path(__file__).resolve().parents[3] / "examples"


EXAMPLES = _examples_dir()
TASK_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "task": {"type": "string", "maxLength": 120},
        "action": {"enum": ["pick up", "place", "push", "pull", "open", "close", "pour", "other"]},
        "object": {"type": "string", "maxLength": 40},
        "location": {"type": "string", "maxLength": 40},
        "steps": {
            "type": "array",
            "items": {"type": "string", "maxLength": 60},
            "minItems": 2,
            "maxItems": 4,
        },
    },
    "required": ["task", "action", "object", "location", "steps"],
    "additionalProperties": False,
}


def _model_part(out: Path, model: str) -> dict[str, Any]:
    """Describe the LeRobot G1 task (examples/lerobot_g1/tasks.jsonl) as schema-valid JSON → answer.json."""
    from dataclaw.models import get_model
    from dataclaw.models.structured import ask_json

    tasks_file = EXAMPLES / "lerobot_g1" / "tasks.jsonl"
    if not tasks_file.is_file():
        raise ConfigError(f"bundled example {tasks_file} is missing")
    task = json.loads(tasks_file.read_text(encoding="utf-8").splitlines()[0])["task"]
    prompt = (
        f'A humanoid robot dataset has this task: "{task}"\n'
        "Describe the task as JSON: the task, the main action verb, the object, where the object is, "
        "and 2 to 4 short steps the robot performs."
    )
    chat = get_model(model, cache=out / "responses.sqlite")  # a rerun into the same --out answers from cache
    done = ask_json(chat, prompt, TASK_SCHEMA, out=out / "answer.json", temperature=0, max_tokens=400)
    return {
        "model": done.model,
        "latency_s": round(done.latency_s, 2),
        "tokens": f"{done.usage.prompt_tokens} in / {done.usage.completion_tokens} out",
        "cached": done.cached,
        "answer": out / "answer.json",
    }


PARTS.append(("model", _model_part))


# --- part "ingest": Tailor reads the bundled examples into streams, anchors and candidates --------------
def _ingest_part(out: Path, model: str) -> dict[str, Any]:
    """``dataclaw tailor ingest`` on every example a stream reader recognises (no model involved)."""
    from dataclaw.tailor.pipeline import IngestConfig, discover_inputs, ingest

    inputs = discover_inputs(EXAMPLES)
    if not inputs:
        raise ConfigError(f"no bundled Tailor examples (recordings, datasets, videos) found in {EXAMPLES}")
    summary = ingest(inputs, out, IngestConfig(workers=2))
    return {
        "inputs": ", ".join(p.name for p in inputs),
        "streams": summary.streams,
        "anchors": sum(summary.anchors.values()),
        "candidates": ", ".join(f"{k} {v}" for k, v in summary.candidates.items()) or "none",
        "rejects": sum(summary.rejects.values()),
        "run": out,
    }


PARTS.append(("ingest", _ingest_part))


# --- part "tailor": the whole Tailor pipeline on bundled examples with the model -------------------------
def _tailor_part(out: Path, model: str) -> dict[str, Any]:
    """``dataclaw tailor run``: a robot episode and a video → fault-recovery, subtask and video-gen samples
    (ingest → synthesis → validation → materialisation → JSONL export). The embedded model is weak, so
    many answers are rejected by validation; the reasons are listed."""
    from dataclaw.tailor.pipeline import IngestConfig
    from dataclaw.tailor.synthesis.route import RouteConfig
    from dataclaw.tailor.pipeline import TailorRunConfig, tailor_run

    inputs = [EXAMPLES / "lerobot_g1", EXAMPLES / "videos" / "dj_video1.mp4"]
    missing = [str(p) for p in inputs if not p.exists()]
    if missing:
        raise ConfigError(f"bundled Tailor examples are missing: {', '.join(missing)}")
    config = TailorRunConfig(
        route=RouteConfig.omni(model),
        intents=["robot_fault_recovery", "describe_current_subtask", "video_generation_segment"],
        ingest=IngestConfig(workers=2, extractors=["proprio", "shots", "motion"]),
        max_per_kind=1,
        concurrency=2,
        workers=2,
    )
    summary = tailor_run(inputs, out, config)
    usage = summary["usage"]
    return {
        "requests": summary["requests"],
        "samples": summary["counts"].get("samples", 0),
        "rejects": ", ".join(f"{k} {v}" for k, v in summary["rejects"].items() if not k.startswith("ingest"))
        or "none",
        "tokens": f"{usage['prompt_tokens']} in / {usage['completion_tokens']} out"
        f" ({usage.get('cache_hits', 0)} of {summary['requests']} answers from the response cache)",
        "export": (summary["export"] or {}).get("out_dir", "none (no sample passed validation)"),
        "run": out,
    }


PARTS.append(("tailor", _tailor_part))


# --- part "envcraft": archetype env → chains → tasks → audit → rollouts with the model → rewards ---------
def _envcraft_part(out: Path, model: str) -> dict[str, Any]:
    """EnvCraft on one archetype and the bundled claw tasks: sample tool chains, ground them into verified
    tool tasks (text by the model), audit the claw workspace tasks by code, then let the model act as the
    agent on both kinds. The embedded model is weak: rewards are mostly 0, and that is the honest result."""
    import asyncio
    from collections import Counter

    from dataclaw.core.store import RunStore
    from dataclaw.envcraft import archetypes
    from dataclaw.envcraft.graph import ChainSampler, build_tool_graph
    from dataclaw.envcraft.quality.runs import audit_by_code, load_task_source
    from dataclaw.envcraft.rollout import RolloutConfig
    from dataclaw.envcraft.rollout.run import rollout_summary, rollout_tasks
    from dataclaw.envcraft.tasks import GroundStage, SynthStage, chain_record
    from dataclaw.models import get_model
    from dataclaw.pipeline import run_stage

    env, cache = "temporal_scheduling", out / "model_cache.sqlite"
    with RunStore(out) as store:
        for chain in ChainSampler([build_tool_graph(archetypes.get(env))]).sample(
            4, seed=0, min_len=2, max_len=4
        ):
            store.stage("chains").append(chain_record(chain))
        run_stage(GroundStage(), list(store.records("chains")), store)
        run_stage(SynthStage(model, cache=str(cache)), list(store.records("grounded")), store)
        tool_tasks = list(store.records("tasks"))[:2]
        claw = load_task_source(EXAMPLES / "claw_tasks")
        audits = {r["id"]: r for r in audit_by_code(claw, store)}
        claw_ok = [t for t in claw.tasks if audits[t.task_id]["passed"]]
        agent = get_model(model, cache=cache)
        config = RolloutConfig(max_turns=4, timeout_s=180, max_tokens=256)
        recs = asyncio.run(rollout_tasks(agent, [*tool_tasks, *claw_ok], store, config, concurrency=1))
        n_chains, n_grounded = len(store.stage("chains")), len(store.stage("grounded"))
        why = Counter(r["reason"] for r in store.rejects() if r["stage"] in ("grounded", "tasks"))
    s = rollout_summary(recs)
    return {
        "chains → grounded → tool tasks": f"{n_chains} → {n_grounded} → {len(tool_tasks)}",
        "chain/task rejects": ", ".join(f"{k} {v}" for k, v in why.most_common()) or "none",
        "claw tasks audited": f"{len(claw_ok)}/{len(claw.tasks)} pass",
        "rewards": ", ".join(f"{r['task_id'].rsplit('/', 1)[-1]}={r['reward']:.2f}" for r in recs) or "none",
        "mean reward": s["mean_reward"],
        "run": out,
    }


PARTS.append(("envcraft", _envcraft_part))


# --- part "envsynth": two catalogue scenarios → specs by the model → compiled, audited envs → tasks ------
SYNTH_SCENARIOS = ("support_ticketing", "monitoring_logging")


def _envsynth_part(out: Path, model: str) -> dict[str, Any]:
    """``dataclaw env synth`` on two catalogue scenarios (the model writes the specs, the compiler the
    packages, the sandboxed audit judges them) into ``LIB/``, then tool tasks in the passing environments
    (chains sampled, grounded in the packages' sandboxed env workers, verifiers proven, text by the model)."""
    from dataclaw.core.store import RunStore
    from dataclaw.envcraft.graph import ChainSampler, build_tool_graph
    from dataclaw.envcraft.scenarios import load_catalogue
    from dataclaw.envcraft.synth.library import (
        Requests,
        SynthConfig,
        library_packages,
        summarize,
        synthesize,
    )
    from dataclaw.envcraft.tasks import GroundStage, SynthStage, chain_record
    from dataclaw.envcraft.worker import open_environment
    from dataclaw.pipeline import run_stage

    lib, run = out / "LIB", out / "tasks"
    catalogue = load_catalogue()
    rows = synthesize(
        lib, Requests(scenarios=[catalogue.get(s) for s in SYNTH_SCENARIOS]), SynthConfig(model)
    )
    s = summarize(rows)
    pkgs = library_packages(lib)
    n_tasks = n_chains = 0
    if pkgs:
        modules, graphs = {}, []
        for _, folder in pkgs:
            handle = open_environment(folder)  # the package's sandboxed env worker
            graphs.append(build_tool_graph(handle))
            modules[graphs[-1].env] = str(folder)
        with RunStore(run) as store:
            for chain in ChainSampler(graphs).sample(4, seed=0, min_len=2, max_len=4):
                store.stage("chains").append(chain_record(chain, modules))
            run_stage(GroundStage(), list(store.records("chains")), store)
            grounded = list(store.records("grounded"))[:2]
            run_stage(SynthStage(model, cache=str(run / "model_cache.sqlite")), grounded, store)
            n_chains, n_tasks = len(store.stage("chains")), len(store.stage("tasks"))
    failed = [f"{r['scenario_id']}: {r['reasons'][0]['code']}" for r in rows if not r["passed"]]
    return {
        "scenarios → passing envs": f"{s['raw']} → {s['passed']} (paper: 324 → 139 = 42.9%)",
        "envs": ", ".join(f"{r['env']} ({r['tools']} tools)" for r, _ in pkgs) or "none",
        "failed": ", ".join(failed) or "none",
        "spec tokens": f"{s['tokens']['prompt']} in / {s['tokens']['completion']} out",
        "chains → tool tasks": f"{n_chains} → {n_tasks}",
        "library": lib,
    }


PARTS.append(("envsynth", _envsynth_part))
