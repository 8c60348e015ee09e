"""``dataclaw train loop``: does the data teach? The EnvCraft side of the learning loop, composed here
(the CLI layer may use both the engine and the trainer services; ``dataclaw.train`` imports no engine).

1. **Tasks**: tool chains sampled per environment (built-in archetypes, or any environment ``tasks
   sample`` takes), grounded in real sessions with the soundness gate on (:class:`GroundStage`), given
   the user's request by a template (the chain's own step phrases, every user-specified value stated,
   no tool-derived value leaked: the checks ``tasks synth`` applies to a model's text). A model writes
   that text in ``tasks synth``; the embedded model keeps ~1 in 6 of its texts at ~7 s a chain, too few
   and too slow for hundreds of tasks on a CPU, so the loop uses the template, and says so.
2. **Split** by environment and by seed: the train environments' chains of ``train_seed`` are the train
   split; the same environments' chains of ``heldout_seed`` whose writes (the end state a task demands)
   no train task has are the ``same_env`` held-out split; the held-out environments' chains are the
   ``unseen_env`` split.
3. **SFT data**: each train task's gold chain replayed through the rollout harness (the tools and the
   system prompt ``tasks rollout`` gives the agent, each call's observation as the environment returned
   it, the episode scored: only a gold run scoring 1.0 is kept), one conversation per task, ending on a
   plain-text reply (how the agent says it is done).
4. **Train** in the trainer's Python: SFT (``recipes/trl_sft.py``, tool mode), then optionally GRPO steps
   on the train split's largest environment group (``trl_grpo.py``, the TRL export's environment class).
   A rerun resumes: an SFT policy trained on the same data with the same settings is reused, and so are
   the rollouts its evaluation recorded.
5. **Evaluate** before and after on each held-out split with the rollout loop of ``tasks rollout``: both
   checkpoints served by ``recipes/serve_policy.py`` (same template, decoding and parser), the same
   budgets, seeds and temperature; mean reward, pass^k, tool-call validity and turns per task.
"""

from __future__ import annotations

import asyncio
import json
import shutil
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from dataclaw.core.errors import ConfigError
from dataclaw.core.store import RunStore

DEFAULT_TRAIN_ENVS = (
    "temporal_scheduling",
    "transactional_workspace",
    "workflow_orchestration",
    "bilateral_matching",
    "stream_processing",
    "cross_tool_pipeline",
)
"""The archetypes trained on by default (their unseen chains are the ``same_env`` split).
``human_agent_interaction`` is left out: grounding keeps none of its sampled chains (0 of 6, seed 1000)."""
DEFAULT_HELDOUT_ENVS = ("state_machine", "event_triggering")
"""The archetypes never trained on by default (the ``unseen_env`` split): two that ground well."""
DONE_REPLY = "Done."
"""The closing plain-text reply of a gold trajectory: the agent tells the user it has finished."""


@dataclass
class LoopConfig:
    """One run of the learning loop (the CLI's options; the benchmark's sizes)."""

    out: Path
    train_envs: list[str]
    heldout_envs: list[str]
    chains_per_env: int = 30
    heldout_per_env: int = 10
    train_seed: int = 0
    heldout_seed: int = 1000
    min_len: int = 2
    max_len: int = 4
    model: str = "smollm2-135m"
    epochs: float = 2.0
    """Epochs over the SFT data (0: ``sft_steps`` optimizer steps instead)."""
    sft_steps: int = 1
    learning_rate: float = 5e-5
    grad_accum: int = 4
    max_length: int = 2048
    grpo_steps: int = 0
    samples: int = 2
    max_turns: int = 8
    max_tokens: int = 160
    temperature: float = 0.0
    timeout_s: float = 600.0
    concurrency: int = 1
    python: Path | None = None
    cache: Path | None = None
    skip_before: bool = False
    device: str = "cpu"
    """``cpu``, or ``auto``: SFT and serving on an accelerator when one is present (the device check)."""


@dataclass
class Split:
    """The tasks of one split and what was made or dropped on the way."""

    name: str
    envs: list[str]
    tasks: list[Any] = field(default_factory=list)
    made: dict[str, int] = field(default_factory=dict)


def template_instruction(grounded: dict[str, Any]) -> str | None:
    """The user's request for a grounded chain, from its step phrases (None when the phrases would leak a
    tool-derived value); every user-specified value is in it."""
    from dataclaw.envcraft.tasks.tool.synth import check_text, classify, instruction_prompt

    user, derived = classify(grounded["steps"])
    job = instruction_prompt(grounded, derived).split("\n\n", 1)[0]
    text = "Please " + job.removeprefix("A user wants an AI assistant to ")
    missing, leaked = check_text([text], user, derived)
    if leaked:
        return None
    if missing:
        text += " Details: " + ", ".join(missing) + "."
    return text


def make_tasks(run: Path, envs: list[str], n: int, seed: int, min_len: int, max_len: int) -> Split:
    """``n`` chains per environment of ``envs`` sampled with ``seed``, grounded (soundness gate on) and
    given a template request; the tool tasks (one user turn: the composite request)."""
    from dataclaw.envcraft.tasks.tool.pipeline import sample_chains
    from dataclaw.envcraft.tasks.tool.stages import GroundStage, grounded_task
    from dataclaw.pipeline import run_stage

    split = Split(name=run.name, envs=envs)
    for env in envs:
        sample_chains(run, envs=[env], n=n, seed=seed, min_len=min_len, max_len=max_len)
    with RunStore(run) as store:
        run_stage(GroundStage(), list(store.records("chains")), store)
        # by id, not in the order the workers finished: a rerun makes the same SFT data, in the same order
        grounded = sorted(store.records("grounded"), key=lambda g: g["id"])
        split.made = {"chains": len(list(store.records("chains"))), "grounded": len(grounded)}
    for g in grounded:
        text = template_instruction(g)
        if text is None:
            split.made["text_leaks"] = split.made.get("text_leaks", 0) + 1
            continue
        task = grounded_task(g)
        split.tasks.append(task.model_copy(update={"instruction": text, "user_turns": [text]}))
    return split


def writes_of(task: Any) -> list[str]:
    """The write calls of a task's gold chain (tool and arguments, as JSON): what fixes the end state
    its verifier checks."""
    from dataclaw.envcraft.tasks.tool.loading import record_env

    tools = record_env(task).tools
    return [
        json.dumps([c["tool"], c["params"]], sort_keys=True, default=str)
        for c in task.gold_chain
        if c["tool"] not in tools or tools.get(c["tool"]).modifies_state
    ]


def chain_key(task: Any) -> str:
    """What a task demands, as a key: its gold chain's writes. Two chains with the same writes and other
    reads ask for the same end state: the same task for the verifier (a chain without a write, which
    grounding does not keep, is keyed by all its calls)."""
    writes = sorted(writes_of(task))
    if not writes:
        return json.dumps([[c["tool"], c["params"]] for c in task.gold_chain], sort_keys=True, default=str)
    return json.dumps(writes)


def gold_conversation(task: Any) -> dict[str, Any] | None:
    """The task's gold chain as the agent would live it in ``tasks rollout``: the harness's system
    prompt, tools and user turn, each gold call as an assistant tool call followed by the observation the
    environment returned, then :data:`DONE_REPLY`. None unless the episode scores 1.0."""
    from dataclaw.envcraft.rollout.harness import ToolTaskHarness

    harness = ToolTaskHarness(task)
    harness.setup()
    try:
        tools = harness.tools()
        messages: list[dict[str, Any]] = [
            {"role": "system", "content": harness.system_prompt()},
            {"role": "user", "content": harness.user_turns()[0]},
        ]
        for i, call in enumerate(task.gold_chain):
            name = call["tool"].replace(".", "__")
            result = harness.execute(name, dict(call["params"]))
            fn = {"name": name, "arguments": call["params"]}
            messages.append(
                {"role": "assistant", "content": "", "tool_calls": [{"type": "function", "function": fn}]}
            )
            messages.append({"role": "tool", "tool_call_id": f"call_{i}", "content": result.content})
        messages.append({"role": "assistant", "content": DONE_REPLY})
        score = harness.score()
    finally:
        harness.cleanup()
    return {"messages": messages, "tools": tools} if score.reward >= 1.0 - 1e-6 else None


def split_tasks(cfg: LoopConfig) -> dict[str, Split]:
    """The three splits, written as ``tasks.jsonl`` files under ``OUT/splits/``."""
    from dataclaw.envcraft.runtime.task import write_tool_tasks

    root = cfg.out / "splits"
    train = make_tasks(
        root / "train", cfg.train_envs, cfg.chains_per_env, cfg.train_seed, cfg.min_len, cfg.max_len
    )
    same = make_tasks(
        root / "same_env", cfg.train_envs, cfg.heldout_per_env, cfg.heldout_seed, cfg.min_len, cfg.max_len
    )
    seen = {chain_key(t) for t in train.tasks}
    kept = [t for t in same.tasks if chain_key(t) not in seen]
    same.made["in_train"] = len(same.tasks) - len(kept)
    same.tasks = kept
    splits = {"train": train, "same_env": same}
    if cfg.heldout_envs:
        splits["unseen_env"] = make_tasks(
            root / "unseen_env",
            cfg.heldout_envs,
            cfg.heldout_per_env,
            cfg.heldout_seed,
            cfg.min_len,
            cfg.max_len,
        )
    for name, split in splits.items():
        if not split.tasks:
            raise ConfigError(f"the {name} split has no task ({split.made}); sample more chains")
        write_tool_tasks(root / f"{name}.jsonl", split.tasks)
    return splits


def made_every_write(record: dict[str, Any], task: Any) -> bool:
    """Whether a rollout made every write of its task's gold chain (tool and arguments, each call
    accepted). The verifier scores the end state, so a run can score 1.0 without doing all that was
    asked: where the task's steps cancel out (a record created, then deleted), where a write sets what
    the record already holds, or where the verifier does not see what a write sets (the nested content
    of a record the run creates). docs/training.md counts such passes in a measured run."""
    done = {
        json.dumps([s["tool"], s.get("arguments")], sort_keys=True, default=str)
        for s in record.get("steps") or []
        if s.get("ok")
    }
    for write in writes_of(task):
        tool, params = json.loads(write)
        if json.dumps([tool.replace(".", "__"), params], sort_keys=True, default=str) not in done:
            return False
    return True


def figures(records: list[dict[str, Any]], tasks: dict[str, Any] | None = None) -> dict[str, Any]:
    """Mean reward, pass^k, tool-call validity and turns per task of one policy on one split; with the
    ``tasks`` (by id), ``pass_every_write``: the share of rollouts that score 1.0 *and* made every write
    of the gold chain (:func:`made_every_write`), the passes a careful reader counts."""
    from dataclaw.envcraft.rollout.run import is_success, pass_hat_k

    rewards = [float(r.get("reward") or 0.0) for r in records]
    calls = sum(r["metrics"].get("tool_calls", 0) for r in records)
    invalid = sum(r["metrics"].get("invalid_calls", 0) for r in records)
    strict = None
    if tasks is not None and records:
        passes = sum(
            is_success(r.get("reward")) and made_every_write(r, tasks[r["task_id"]]) for r in records
        )
        strict = round(passes / len(records), 4)
    return {
        "rollouts": len(records),
        "tasks": len({r["task_id"] for r in records}),
        "mean_reward": round(sum(rewards) / len(rewards), 4) if rewards else None,
        "pass_every_write": strict,
        "pass_hat_k": pass_hat_k(records),
        "tool_calls": calls,
        "tool_call_validity": round((calls - invalid) / calls, 4) if calls else None,
        "turns_per_task": round(sum(r["turns"] for r in records) / len(records), 2) if records else None,
        "errors": sum(1 for r in records if r.get("error")),
    }


def evaluate(
    model_spec: str, tasks: list[Any], out: Path, cfg: LoopConfig, novel: set[str] | None = None,
    key: str | None = None,
) -> dict[str, Any]:  # fmt: skip
    """Roll the served policy out on ``tasks`` (``cfg.samples`` each, seeds 0…k-1) into ``out``, the
    policy named ``key`` in rollout ids (a rerun reads its rollouts back); with ``novel`` (task ids), the
    figures of those tasks alone as ``novel_writes``."""
    from dataclaw.envcraft.rollout import RolloutConfig
    from dataclaw.envcraft.rollout.run import rollout_tasks
    from dataclaw.models import get_model

    config = RolloutConfig(
        max_turns=cfg.max_turns,
        timeout_s=cfg.timeout_s,
        temperature=cfg.temperature,
        max_tokens=cfg.max_tokens,
        seed=0,
    )
    model = get_model(model_spec + "?timeout=600&deadline=1800", cache=False)
    with RunStore(out) as store:
        records = asyncio.run(
            rollout_tasks(
                model, tasks, store, config, samples=cfg.samples, concurrency=cfg.concurrency, model_key=key
            )
        )
    by_id = {t.id: t for t in tasks}
    out_figures = figures(records, by_id)
    if novel is not None:
        out_figures["novel_writes"] = figures([r for r in records if r["task_id"] in novel], by_id)
    return out_figures


def novel_tasks(train: list[Any], heldout: list[Any]) -> set[str]:
    """The held-out tasks none of whose writes any train task makes (not even one call in common): the
    strictest reading of "tasks it has not seen"."""
    seen = {w for t in train for w in writes_of(t)}
    return {t.id for t in heldout if not seen & set(writes_of(t))}


DONE_FILE = "done.json"
"""Written next to an SFT run's metrics once its policy is saved: the key of what it was trained on."""


def train_key(argv: list[str]) -> str:
    """What a recipe run depends on: its command line and the content of every file it names."""
    import hashlib

    h = hashlib.sha256()
    for arg in argv:
        h.update(arg.encode() + b"\0")
        path = Path(arg)
        if path.is_file() and path.suffix in (".jsonl", ".jinja", ".gguf", ".py"):
            h.update(hashlib.sha256(path.read_bytes()).digest())
    return h.hexdigest()


def trained_before(out: Path, saved: Path, key: str) -> dict[str, Any] | None:
    """The summary of an SFT run of the same :func:`train_key` whose policy is still saved."""
    try:
        done = json.loads((out / DONE_FILE).read_text())
    except (OSError, ValueError):
        return None
    ok = done.get("key") == key and (saved / "config.json").is_file()
    return done["summary"] if ok else None


def run_loop(cfg: LoopConfig, say: Any = print) -> dict[str, Any]:
    """The whole loop; its summary (also written to ``OUT/summary.json``)."""
    from dataclaw.train.loop import learning_curve, serve_policy, write_sft_rows, write_template
    from dataclaw.train.trainer import (
        GRPO_RECIPE,
        SFT_RECIPE,
        default_cache_dir,
        policy_path,
        recipe_argv,
        run_recipe,
        train_python,
    )

    t0 = time.monotonic()
    py = train_python(cfg.python)
    policy = policy_path(cfg.model)
    cache = cfg.cache or default_cache_dir()
    cfg.out.mkdir(parents=True, exist_ok=True)
    splits = split_tasks(cfg)
    say("splits: " + ", ".join(f"{n} {len(s.tasks)} tasks ({', '.join(s.envs)})" for n, s in splits.items()))
    t_tasks = time.monotonic() - t0

    conversations = [c for c in map(gold_conversation, splits["train"].tasks) if c is not None]
    dropped = len(splits["train"].tasks) - len(conversations)
    sft_data = cfg.out / "sft.jsonl"
    write_sft_rows(sft_data, conversations)
    say(f"SFT data: {len(conversations)} gold trajectories ({dropped} gold replays not scoring 1.0 left out)")

    sft_out = cfg.out / "sft"
    after = cfg.out / "policy-sft"
    template = write_template(cfg.out)
    argv = recipe_argv(
        py, SFT_RECIPE, data=sft_data, out=sft_out, model=policy, cache=cache, steps=cfg.sft_steps,
        max_length=cfg.max_length, learning_rate=cfg.learning_rate, seed=0, epochs=cfg.epochs,
        grad_accum=cfg.grad_accum, chat_template=template, device=cfg.device, save=after,
    )  # fmt: skip
    sft_key = train_key(argv)  # hashes the data and the policy file: once
    sft, trained = trained_before(sft_out, after, sft_key), False
    if sft is None:
        sft, trained = run_recipe(argv, "SFT"), True
        (sft_out / DONE_FILE).write_text(json.dumps({"key": sft_key, "summary": sft}) + "\n")
    else:
        say(f"SFT: reusing {after} (trained on the same data with the same settings)")
    before_ckpt = Path(sft["checkpoint"])
    grpo: dict[str, Any] | None = None
    if cfg.grpo_steps > 0:
        grpo = run_grpo(cfg, splits["train"].tasks, py, after, cache, recipe_argv, run_recipe, GRPO_RECIPE)
        after, trained = Path(grpo["saved"]), True
    t_train = time.monotonic() - t0 - t_tasks

    if trained:  # rollouts an earlier run left here are not this policy's
        shutil.rmtree(cfg.out / "eval", ignore_errors=True)
    results: dict[str, dict[str, Any]] = {}
    novel = {"same_env": novel_tasks(splits["train"].tasks, splits["same_env"].tasks)}
    splits["same_env"].made["novel_writes"] = len(novel["same_env"])
    # each policy by what made it (rollout ids: a rerun of the same policies reads their rollouts back)
    keys = {"before": f"before:{before_ckpt}", "after": f"after:{sft_key}:{after}"}
    stages = [("after", after)] if cfg.skip_before else [("before", before_ckpt), ("after", after)]
    for label, ckpt in stages:
        log = cfg.out / "serve" / f"{label}.log"
        with serve_policy(py, ckpt, f"policy-{label}", log, template, device=cfg.device) as spec:
            for name in (n for n in splits if n != "train"):
                results.setdefault(name, {})[label] = evaluate(
                    spec,
                    splits[name].tasks,
                    cfg.out / "eval" / f"{name}-{label}",
                    cfg,
                    novel.get(name),
                    keys[label],
                )
                say(f"{label:>6} on {name}: {results[name][label]}")
    summary = {
        "splits": {n: {"tasks": len(s.tasks), "envs": s.envs, **s.made} for n, s in splits.items()},
        "sft_trajectories": len(conversations),
        "sft": {k: sft.get(k) for k in ("steps", "samples", "wall_s", "saved")},
        "sft_curve": learning_curve(sft_out / "metrics.jsonl", "loss"),
        "grpo": grpo,
        "grpo_curve": learning_curve(cfg.out / "grpo" / "metrics.jsonl", "reward") if grpo else [],
        "eval": results,
        "wall_s": {
            "tasks": round(t_tasks, 1),
            "train": round(t_train, 1),
            "eval": round(time.monotonic() - t0 - t_tasks - t_train, 1),
            "total": round(time.monotonic() - t0, 1),
        },
        "config": {k: str(v) if isinstance(v, Path) else v for k, v in asdict(cfg).items()},
    }
    (cfg.out / "summary.json").write_text(json.dumps(summary, indent=1) + "\n")
    return summary


def run_grpo(
    cfg: LoopConfig, tasks: list[Any], py: Path, model: Path, cache: Path, recipe_argv: Any, run_recipe: Any,
    recipe: Path,
) -> dict[str, Any]:  # fmt: skip
    """GRPO steps from the SFT policy on the train split's largest environment group (a TRL export holds
    one group), through the export's environment class; the trained checkpoint saved. A rollout's token
    budget is an SFT trajectory's (``max_length``): TRL drops a tool result that would pass it and ends
    the rollout there, so a budget of a few hundred tokens ends most rollouts after their first call."""
    from collections import Counter

    from dataclaw.envcraft.export import export_tasks
    from dataclaw.envcraft.runtime.task import write_tool_tasks

    group, _ = Counter(t.env for t in tasks).most_common(1)[0]
    src = cfg.out / "grpo" / "tasks.jsonl"
    src.parent.mkdir(parents=True, exist_ok=True)
    write_tool_tasks(src, [t for t in tasks if t.env == group])
    export_dir = cfg.out / "grpo" / "export"
    export_tasks(src, "trl", export_dir, group=group)
    saved = cfg.out / "policy-grpo"
    argv = recipe_argv(
        py, recipe, export=export_dir, out=cfg.out / "grpo", model=model, cache=cache, steps=cfg.grpo_steps,
        num_generations=2, max_completion_length=cfg.max_length, max_tool_calls=cfg.max_turns,
        learning_rate=1e-6, beta=0.0, seed=0, save=saved,
    )  # fmt: skip
    summary = run_recipe(argv, "GRPO")
    return {**summary, "group": group, "saved": str(saved)}
