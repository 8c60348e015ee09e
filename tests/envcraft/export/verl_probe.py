"""Run in the VERL venv (.venv-verl) by test_trainers.py: load a VERL export's tools with verl's own loader,
dispatch calls through verl's own ``ToolAgentLoop._call_tool`` (create → execute → release per call, the
rollout's ``AgentData``), score with the ``compute_score`` verl loads, and print one JSON line.

    python verl_probe.py EXPORT_DIR
"""

from __future__ import annotations

import asyncio
import contextlib
import io
import json
import sys
from pathlib import Path


def main() -> None:
    export = Path(sys.argv[1])
    sys.path.insert(0, str(export))  # as PYTHONPATH does: verl imports the tool class by module name
    import pyarrow.parquet as pq
    from verl.experimental.agent_loop.tool_agent_loop import AgentData, ToolAgentLoop
    from verl.experimental.agent_loop.tool_parser import FunctionCall
    from verl.tools.base_tool import BaseTool
    from verl.tools.tool_registry import initialize_tools_from_config
    from verl.utils.import_utils import load_extern_object

    out: dict = {}
    with contextlib.redirect_stdout(io.StringIO()):  # BaseTool.__init__ prints every schema
        tools = initialize_tools_from_config(str(export / "tool_config.yaml"))
    out["tools"] = sorted(t.name for t in tools)
    out["all_base_tools"] = all(isinstance(t, BaseTool) for t in tools)
    rows = pq.read_table(export / "train.parquet").to_pylist()
    tasks = {json.loads(x)["id"]: json.loads(x) for x in (export / "tasks.jsonl").read_text().splitlines()}
    compute_score = load_extern_object(module_path=str(export / "reward.py"), object_name="compute_score")

    # ToolAgentLoop's dispatch needs only these of its attributes (the rest is the LLM server side)
    loop = object.__new__(ToolAgentLoop)
    loop.tools = {t.name: t for t in tools}
    loop.max_tool_response_length = 1_000_000
    loop.tool_response_truncate_side = "middle"

    def agent(row: dict, request_id: str) -> AgentData:
        return AgentData(
            messages=list(row["prompt"]),
            image_data=None,
            video_data=None,
            audio_data=None,
            mm_processor_kwargs=None,
            metrics={},
            request_id=request_id,
            tools_kwargs=row["extra_info"]["tools_kwargs"],
        )

    def score(row: dict, data: AgentData) -> dict:
        extra = dict(row["extra_info"])
        extra.update(data.extra_fields.items())  # what verl's reward managers do with tool_extra_fields
        return compute_score(
            data_source=row["data_source"],
            solution_str="",
            ground_truth=row["reward_model"]["ground_truth"],
            extra_info=extra,
        )

    async def call(data: AgentData, name: str, arguments: str) -> str:
        response, _, _ = await loop._call_tool(
            FunctionCall(name=name, arguments=arguments), data.tools_kwargs, data
        )
        return response.text

    async def run() -> None:
        row = rows[0]
        task = tasks[row["extra_info"]["task_id"]]
        gold, idle = agent(row, "req-gold"), agent(row, "req-idle")
        texts = []
        for step in task["gold_chain"]:
            texts.append(await call(gold, step["tool"].replace(".", "__"), json.dumps(step["params"])))
            # a concurrent rollout of the same task, interleaved, reads its own untouched session
            if "list_calendars" in loop.tools:
                await call(idle, "list_calendars", "{}")
        out["gold_ok"] = [json.loads(t)["status"] for t in texts]
        out["gold_score"] = score(row, gold)
        out["idle_score"] = score(row, idle)
        out["no_call_score"] = score(row, agent(row, "req-none"))
        out["live_instances"] = sum(len(t._instances) for t in tools)  # every call's instance released
        out["unknown_tool"] = await call(gold, "no_such_tool", "{}")
        out["bad_json"] = await call(gold, out["tools"][0], "{not json")
        out["bad_args"] = json.loads(await call(gold, out["tools"][0], json.dumps({"bogus": 1})))
        no_kwargs = agent(row, "req-x")
        no_kwargs.tools_kwargs = {}
        out["no_task_id"] = await call(no_kwargs, out["tools"][0], "{}")

    asyncio.run(run())
    print("PROBE " + json.dumps(out), flush=True)


if __name__ == "__main__":
    main()
