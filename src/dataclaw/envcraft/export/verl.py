"""VERL export (0.9.x): parquet dataset, tool-config YAML, ``BaseTool`` adapters and ``compute_score``.

VERL's ``ToolAgentLoop`` makes a tool instance per call — ``create(create_kwargs=...)``,
``execute(instance_id, parameters, agent_data=...)``, ``release(instance_id)`` — so the adapters keep the
environment session per *rollout*: keyed by ``agent_data.request_id``, started from the task's S0
(``create_kwargs.task_id``, from the row's ``extra_info.tools_kwargs``) at the rollout's first call.
After each call the session state is put in ``agent_data.extra_fields["dataclaw_state"]``; VERL's reward
managers merge those fields into ``extra_info``, where ``compute_score`` reads the final state and runs
the verifier (``ground_truth``).

Files: ``train.parquet`` (``data_source``, ``agent_name``, ``prompt``, ``ability``,
``reward_model.ground_truth``, ``extra_info.task_id`` / ``index`` / ``tools_kwargs``), ``tool_config.yaml``,
``dataclaw_verl_tools.py`` (imports verl), ``reward.py`` (no verl import), ``tasks.jsonl``,
``manifest.json``, ``README.md``.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import yaml

from dataclaw.core.errors import require
from dataclaw.envcraft.export import EXPORTERS
from dataclaw.envcraft.export.base import (
    Exporter,
    ExportResult,
    Prepared,
    flat_schema,
    param_description,
    write_common,
)
from dataclaw.envcraft.export.episode import opening_message

TOOLS_MODULE = "dataclaw_verl_tools"
TOOL_CLASS = "DataclawTool"
PARQUET = "train.parquet"
TOOL_CONFIG = "tool_config.yaml"

TOOLS_SOURCE = '''"""VERL ``BaseTool`` adapters for an EnvCraft export (made by dataclaw; needs verl 0.9.x
and dataclaw's base install). One class serves every tool; ``tool_config.yaml`` names the environment tool
of each entry.

Session state lives per rollout, keyed by ``agent_data.request_id`` (VERL creates and releases a tool
instance per call); the state after each call goes to ``agent_data.extra_fields["dataclaw_state"]``
for ``compute_score``.
"""

import json
import os
from pathlib import Path
from typing import Any
from uuid import uuid4

from verl.tools.base_tool import BaseTool
from verl.tools.schemas import OpenAIFunctionToolSchema, ToolResponse

from dataclaw.envcraft.export.episode import ExportedTaskError, Sessions, TaskSet

HERE = Path(__file__).resolve().parent
TASKS = TaskSet(HERE)
# live rollouts per worker process; the oldest session is dropped past this
SESSIONS = Sessions(TASKS, limit=int(os.environ.get("DATACLAW_VERL_MAX_SESSIONS", "4096")))


class DataclawTool(BaseTool):
    """One environment tool (``config["env_tool"]``) over the rollout's environment session."""

    def __init__(self, config: dict, tool_schema: OpenAIFunctionToolSchema) -> None:
        super().__init__(config, tool_schema)
        self.env_tool = config.get("env_tool", self.name)
        self._instances: dict[str, str] = {}  # instance id -> task id

    async def create(self, instance_id: str | None = None, **kwargs: Any) -> tuple[str, ToolResponse]:
        """Bind a call to the row's task (``create_kwargs.task_id``)."""
        create_kwargs = kwargs.get("create_kwargs") or {}
        task_id = create_kwargs.get("task_id", kwargs.get("task_id"))
        if not task_id:
            raise ExportedTaskError(
                f"tool {self.name!r} needs create_kwargs.task_id: the dataset row's "
                "extra_info.tools_kwargs provides it (set data.need_tools_kwargs / use this export's parquet)"
            )
        TASKS.task(task_id)  # an unknown id fails here, with the export's task count
        instance_id = instance_id or uuid4().hex
        self._instances[instance_id] = task_id
        return instance_id, ToolResponse()

    async def execute(
        self, instance_id: str, parameters: dict[str, Any], **kwargs: Any
    ) -> tuple[ToolResponse, float, dict]:
        """Run the tool in the rollout's session; the environment's envelope is the response text."""
        if instance_id not in self._instances:
            raise ExportedTaskError(
                f"tool {self.name!r}: instance {instance_id!r} was never created or was released"
            )
        task_id = self._instances[instance_id]
        agent_data = kwargs.get("agent_data")
        key = getattr(agent_data, "request_id", None) or instance_id
        episode = SESSIONS.get(str(key), task_id)
        envelope = episode.envelope(self.name, parameters)
        if agent_data is not None:
            agent_data.extra_fields["dataclaw_task_id"] = task_id
            agent_data.extra_fields["dataclaw_state"] = json.dumps(episode.state(), ensure_ascii=False)
        ok = envelope.get("status") == "ok"
        return ToolResponse(text=json.dumps(envelope, ensure_ascii=False, default=str)), 0.0, {"ok": ok}

    async def calc_reward(self, instance_id: str, **kwargs: Any) -> float:
        """The verifier's reward on the rollout's state now (compute_score gives the same at the end)."""
        agent_data = kwargs.get("agent_data")
        key = getattr(agent_data, "request_id", None) or instance_id
        episode = SESSIONS.get(str(key), self._instances[instance_id])
        from dataclaw.envcraft.export.episode import reward_of

        return reward_of(episode.result(), TASKS.reward_mode)

    async def release(self, instance_id: str, **kwargs: Any) -> None:
        """Forget the call's instance (the rollout's session lives on for its next call)."""
        self._instances.pop(instance_id, None)
'''

REWARD_SOURCE = '''"""VERL ``compute_score`` for an EnvCraft export (made by dataclaw; needs dataclaw's base
install, not verl).

    custom_reward_function.path=<this folder>/reward.py custom_reward_function.name=compute_score
"""

from pathlib import Path
from typing import Any

from dataclaw.envcraft.export.episode import TaskSet

TASKS = TaskSet(Path(__file__).resolve().parent)


def compute_score(
    data_source: str, solution_str: str, ground_truth: Any, extra_info: dict | None = None, **kwargs: Any
) -> dict[str, float]:
    """The verifier (``ground_truth``) on the final environment state the tools left in
    ``extra_info["dataclaw_state"]`` (the task's initial state when no tool ran): ``score`` is the reward."""
    return TASKS.compute_score(data_source, ground_truth, extra_info)
'''

README = """# VERL export of {group!r}

{n} EnvCraft tasks for VERL 0.9.x multi-turn GRPO (`ToolAgentLoop`).

* `train.parquet` — `prompt` (system + the user's request), `data_source` = `dataclaw/{group}`,
  `agent_name` = `tool_agent`, `reward_model.ground_truth` (the verifier, JSON), `extra_info.task_id`,
  `extra_info.tools_kwargs` (each tool's `create_kwargs.task_id`).
* `tool_config.yaml` — one `{module}.{cls}` entry per tool ({tools} tools).
* `{module}.py` — the `BaseTool` adapters (session per rollout request id).
* `reward.py` — `compute_score` ({reward}: the verifier on the final state).

```bash
export PYTHONPATH={out}:$PYTHONPATH   # VERL imports the tool class by module name
python -m verl.trainer.main_ppo algorithm.adv_estimator=grpo \\
  data.train_files={out}/train.parquet data.val_files={out}/train.parquet \\
  data.return_raw_chat=True data.max_prompt_length=4096 data.max_response_length=32768 \\
  actor_rollout_ref.rollout.name=vllm actor_rollout_ref.rollout.mode=async \\
  actor_rollout_ref.rollout.multi_turn.enable=True \\
  actor_rollout_ref.rollout.multi_turn.max_assistant_turns=32 \\
  actor_rollout_ref.rollout.multi_turn.tool_config_path={out}/tool_config.yaml \\
  actor_rollout_ref.rollout.agent.default_agent_loop=tool_agent \\
  actor_rollout_ref.rollout.n=8 actor_rollout_ref.actor.optim.lr=1e-6 \\
  actor_rollout_ref.actor.use_kl_loss=True actor_rollout_ref.actor.kl_loss_coef=0.02 \\
  custom_reward_function.path={out}/reward.py custom_reward_function.name=compute_score \\
  actor_rollout_ref.model.path=Qwen/Qwen3-8B
```
"""


def tool_schema(method: str, spec: Any) -> dict[str, Any]:
    """The OpenAI function schema in the form VERL's ``OpenAIFunctionToolSchema`` reads (a property has
    ``type``, ``description``, ``enum``: an array's item type goes into its description)."""
    props = {}
    for p in spec.params:
        schema = flat_schema(p.schema)  # an imported tool's ``anyOf``-wrapped type is its type
        desc = param_description(p)
        if schema.get("type") == "array" and isinstance(schema.get("items"), dict):
            item = flat_schema(schema["items"]).get("type", "value")
            item = " or ".join(item) if isinstance(item, list) else item
            desc = f"{desc} (a list of {item} values)".strip()
        prop: dict[str, Any] = {"type": schema.get("type", "string"), "description": desc}
        if "enum" in schema:
            prop["enum"] = list(schema["enum"])
        props[p.name] = prop
    return {
        "type": "function",
        "function": {
            "name": method,
            "description": " ".join(spec.description.split()),
            "parameters": {
                "type": "object",
                "properties": props,
                "required": [p.name for p in spec.params if p.required],
            },
        },
    }


def tool_config(prep: Prepared) -> dict[str, Any]:
    return {
        "tools": [
            {
                "class_name": f"{TOOLS_MODULE}.{TOOL_CLASS}",
                "config": {"type": "native", "env_tool": tool},
                "tool_schema": tool_schema(method, prep.env_cls.tools.get(tool)),
            }
            for method, tool in sorted(prep.tools.items())
        ]
    }


def rows(prep: Prepared) -> list[dict[str, Any]]:
    from dataclaw.envcraft.rollout.harness import TOOL_SYSTEM_PROMPT

    out = []
    for i, t in enumerate(prep.tasks):
        out.append(
            {
                "data_source": f"dataclaw/{prep.group}",
                "agent_name": "tool_agent",
                "prompt": [
                    {"role": "system", "content": TOOL_SYSTEM_PROMPT},
                    {"role": "user", "content": opening_message(t)},
                ],
                "ability": "agent",
                "reward_model": {
                    "style": "rule",
                    "ground_truth": json.dumps(t.verifier, ensure_ascii=False),
                },
                "extra_info": {
                    "index": i,
                    "task_id": t.id,
                    "need_tools_kwargs": True,
                    "tools_kwargs": {m: {"create_kwargs": {"task_id": t.id}} for m in sorted(prep.tools)},
                },
            }
        )
    return out


@EXPORTERS.add
class VerlExporter(Exporter):
    name = "verl"
    description = "VERL parquet + tool-config YAML + BaseTool adapters + compute_score"

    def write(self, prep: Prepared, out: Path) -> ExportResult:
        pa = require("pyarrow", "the VERL export (parquet)", "media")
        import pyarrow.parquet as pq

        files = write_common(prep, out, self.name, {"tool_module": TOOLS_MODULE})
        pq.write_table(pa.Table.from_pylist(rows(prep)), out / PARQUET)
        (out / TOOL_CONFIG).write_text(
            yaml.safe_dump(tool_config(prep), sort_keys=False, allow_unicode=True), encoding="utf-8"
        )
        (out / f"{TOOLS_MODULE}.py").write_text(TOOLS_SOURCE, encoding="utf-8")
        (out / "reward.py").write_text(REWARD_SOURCE, encoding="utf-8")
        readme = README.format(
            group=prep.group,
            n=len(prep.tasks),
            module=TOOLS_MODULE,
            cls=TOOL_CLASS,
            tools=len(prep.tools),
            reward=prep.reward,
            out=out.resolve(),
        )
        (out / "README.md").write_text(readme, encoding="utf-8")
        files += [PARQUET, TOOL_CONFIG, f"{TOOLS_MODULE}.py", "reward.py", "README.md"]
        usage = f"PYTHONPATH={out} ... multi_turn.tool_config_path={out / TOOL_CONFIG}"
        return ExportResult(self.name, out, prep.group, len(prep.tasks), files, usage)
