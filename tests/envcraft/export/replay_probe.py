"""Run in a side venv by test_fidelity.py: replay runs of tool calls (each from its task's S0) through one
path a trainer uses, and write each run's score to a JSON file. One script, one driver per path:

* ``trl`` (.venv-train): the export's environment class as ``GRPOTrainer(environment_factory=...)`` uses
  it — one instance constructed once and reset per rollout with the dataset row (``reset(**row)``), the
  tools collected from the class as TRL collects them, each call dispatched as TRL's tool loop does
  (``tool_dict[name](**arguments)``, an exception is the tool's error), the reward from ``get_reward()``.
* ``verl`` (.venv-verl): verl's own loader (``initialize_tools_from_config``) and dispatch
  (``ToolAgentLoop._call_tool``, create → execute → release per call, one ``AgentData`` per rollout), the
  score from the ``compute_score`` verl loads (``load_extern_object``) with the rollout's extra fields
  merged into ``extra_info`` as verl's reward managers do.
* ``serve`` (.venv-openenv): a running ``dataclaw env serve`` over its WebSocket with OpenEnv's own
  ``MCPToolClient``: ``reset(task_id=...)``, one ``CallToolAction`` per call, ``finish``; the score is the
  verifier's fraction in the final observation's metadata, the reward the binary one it carries.

    python replay_probe.py PATH JOBS_JSON OUT_JSON

``JOBS_JSON`` holds ``{"jobs": [{"target", "runs": [{"task_id", "calls": [{"tool", "params"}]}]}]}``:
each job's target is an export folder (trl, verl) or a server's base URL (serve), its calls name the
environment's tools; ``OUT_JSON`` gets ``{"jobs": [{"scores": [...], "rewards": [...]}]}`` in order
(``scores``: the verifier's fraction; ``rewards``: what the path hands the trainer).
"""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import io
import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

Run = dict[str, Any]


def _method(tools: dict[str, str]) -> Callable[[str], str]:
    """Environment tool name → the agent-facing name the export's manifest gives it."""
    back = {env_tool: method for method, env_tool in tools.items()}
    return lambda tool: back.get(tool, tool.replace(".", "__"))


def trl(export: str, runs: list[Run]) -> tuple[list[float], list[float]]:
    import importlib.util

    manifest = json.loads((Path(export) / "manifest.json").read_text())
    # by file, under a name of its own: every export's module is called envcraft_trl
    spec = importlib.util.spec_from_file_location(
        f"{manifest['module']}_{abs(hash(export))}", Path(export) / f"{manifest['module']}.py"
    )
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    cls = getattr(module, manifest["class"])
    rows = {r["task_id"]: r for r in map(json.loads, (Path(export) / "dataset.jsonl").open())}
    name = _method(manifest["tools"])
    env = cls()  # GRPOTrainer constructs once and resets per rollout
    tool_dict = {
        member: getattr(env, member)
        for member, _ in inspect.getmembers(type(env), predicate=inspect.isfunction)
        if member not in ("reset", "get_reward") and not member.startswith("_")
    }
    scores = []
    for run in runs:
        env.reset(**rows[run["task_id"]])
        for call in run["calls"]:
            method = name(call["tool"])
            try:
                if method not in tool_dict:
                    raise ValueError(f"Tool {method} not found.")
                tool_dict[method](**json.loads(json.dumps(call["params"])))
            except Exception:  # noqa: BLE001 - TRL hands the error to the model and goes on
                pass
        scores.append(float(env.get_reward()))
    return scores, scores


def verl(export: str, runs: list[Run]) -> tuple[list[float], list[float]]:
    # as PYTHONPATH does: verl imports the tool class by module name (the same in every export, so the
    # previous job's is forgotten)
    sys.path.insert(0, export)
    for name in [m for m in sys.modules if m == "dataclaw_verl_tools"]:
        del sys.modules[name]
    import pyarrow.parquet as pq
    from verl.experimental.agent_loop.tool_agent_loop import AgentData, ToolAgentLoop
    from verl.experimental.agent_loop.tool_parser import FunctionCall
    from verl.tools.tool_registry import initialize_tools_from_config
    from verl.utils.import_utils import load_extern_object

    root = Path(export)
    with contextlib.redirect_stdout(io.StringIO()):  # BaseTool.__init__ prints every schema
        tools = initialize_tools_from_config(str(root / "tool_config.yaml"))
    manifest = json.loads((root / "manifest.json").read_text())
    name = _method(manifest["tools"])
    rows = {r["extra_info"]["task_id"]: r for r in pq.read_table(root / "train.parquet").to_pylist()}
    compute_score = load_extern_object(module_path=str(root / "reward.py"), object_name="compute_score")
    loop = object.__new__(ToolAgentLoop)  # its dispatch needs only these attributes
    loop.tools = {t.name: t for t in tools}
    loop.max_tool_response_length = 1_000_000_000
    loop.tool_response_truncate_side = "middle"

    async def rollout(i: int, run: Run) -> dict[str, float]:
        row = rows[run["task_id"]]
        data = AgentData(
            messages=list(row["prompt"]),
            image_data=None,
            video_data=None,
            audio_data=None,
            mm_processor_kwargs=None,
            metrics={},
            request_id=f"fidelity-{i}",
            tools_kwargs=row["extra_info"]["tools_kwargs"],
        )
        for call in run["calls"]:
            fc = FunctionCall(name=name(call["tool"]), arguments=json.dumps(call["params"]))
            await loop._call_tool(fc, data.tools_kwargs, data)
        extra = dict(row["extra_info"])
        extra.update(data.extra_fields.items())  # what verl's reward managers do with tool_extra_fields
        score = compute_score(
            data_source=row["data_source"],
            solution_str="",
            ground_truth=row["reward_model"]["ground_truth"],
            extra_info=extra,
        )
        # the rollout is over: its session goes, as the adapters' bound on live sessions would drop it
        sys.modules["dataclaw_verl_tools"].SESSIONS.drop(data.request_id)
        return score

    async def main() -> list[dict[str, float]]:
        return [await rollout(i, run) for i, run in enumerate(runs)]

    found = asyncio.run(main())
    return [f["fraction"] for f in found], [f["score"] for f in found]


def serve(url: str, runs: list[Run], clients: int = 3) -> tuple[list[float], list[float]]:
    from openenv.core.env_server import CallToolAction
    from openenv.core.mcp_client import MCPToolClient

    scores: list[float] = [0.0] * len(runs)
    rewards: list[float] = [0.0] * len(runs)

    async def episode(env: MCPToolClient, i: int) -> None:
        run = runs[i]
        await env.reset(task_id=run["task_id"])
        for call in run["calls"]:
            name = call["tool"].replace(".", "__")
            await env.step(CallToolAction(tool_name=name, arguments=json.loads(json.dumps(call["params"]))))
        end = await env.step(CallToolAction(tool_name="finish", arguments={}))
        if not end.done:
            raise RuntimeError(f"run {i}: finish did not end the episode: {end}")
        meta = end.observation.metadata or {}
        if "score" not in meta:
            raise RuntimeError(f"run {i} of {run['task_id']}: no score in the final observation: {meta}")
        scores[i], rewards[i] = float(meta["score"]["fraction"]), float(end.reward)

    async def client(mine: list[int]) -> None:
        async with MCPToolClient(base_url=url, message_timeout_s=300) as env:
            for i in mine:
                await episode(env, i)

    async def main() -> None:
        await asyncio.gather(*(client(list(range(k, len(runs), clients))) for k in range(clients)))

    asyncio.run(main())
    return scores, rewards


PATHS: dict[str, Callable[[str, list[Run]], tuple[list[float], list[float]]]] = {
    "trl": trl,
    "verl": verl,
    "serve": serve,
}


def main() -> None:
    path, jobs_file, out_file = sys.argv[1:4]
    jobs = json.loads(Path(jobs_file).read_text())["jobs"]
    found = []
    for job in jobs:
        scores, rewards = PATHS[path](job["target"], job["runs"])
        found.append({"scores": scores, "rewards": rewards})
    Path(out_file).write_text(json.dumps({"jobs": found}))
    print(f"PROBE {json.dumps({'jobs': len(jobs), 'runs': sum(len(j['runs']) for j in jobs)})}", flush=True)


if __name__ == "__main__":
    main()
