"""TRL export: an ``environment_factory`` module, its dataset and a reward function (TRL >= 1.x).

``GRPOTrainer(environment_factory=Cls)`` creates one ``Cls()`` per rollout, calls ``reset(**row)`` with the
dataset row (its return text is appended to the prompt's last user message), offers every public method
but ``reset``/``get_reward`` as a tool — the schema comes from the type hints and the Google-style
docstring (``transformers.utils.get_json_schema``) — and takes ``get_reward()`` as a reward source. The
generated class is that, per environment group, over :class:`~dataclaw.envcraft.export.episode.Episode`.
Each method's type hints carry the tool's parameter types and enums (``anyOf``/type lists as unions), its
docstring the descriptions; an optional parameter defaults to ``OMITTED``, so an argument the model left
out is not sent and the tool's own default applies (as in process and through VERL).

Files: ``envcraft_trl.py`` (the class, ``envcraft_reward``, ``train_dataset()``), ``dataset.jsonl``
(``prompt`` = system message + an empty user message that ``reset`` fills, ``task_id``, ``env``,
``user_turns``), ``tasks.jsonl``, ``manifest.json``, ``README.md``.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from dataclaw.envcraft.export import EXPORTERS
from dataclaw.envcraft.export.base import (
    Exporter,
    ExportResult,
    Prepared,
    class_name,
    docstring_literal,
    param_description,
    write_common,
)

MODULE = "envcraft_trl"
DATASET = "dataset.jsonl"
_SCALAR_HINTS = {"string": "str", "integer": "int", "number": "float", "boolean": "bool"}


def lit(value: Any) -> str:
    """A Python literal of a JSON scalar, double-quoted like the formatter writes strings."""
    return json.dumps(value) if isinstance(value, str) else repr(value)


def hint(schema: dict[str, Any]) -> str:
    """The Python type hint of a tool parameter's JSON schema (the inverse of the runtime's ``@tool``, and
    of what ``transformers.utils.get_json_schema`` reads back): ``anyOf`` and type lists become unions, so an
    imported tool's wrapped types (BFCL's ``{"anyOf": [{"type": "integer"}]}``) keep their type."""
    if "enum" in schema:
        return "Literal[" + ", ".join(lit(v) for v in schema["enum"]) + "]"
    if isinstance(schema.get("anyOf"), list) and schema["anyOf"]:
        return _union([hint(s) for s in schema["anyOf"]])
    kind = schema.get("type")
    if isinstance(kind, list) and kind:
        return _union([hint({**schema, "type": k}) for k in kind])
    if kind in _SCALAR_HINTS:
        return _SCALAR_HINTS[kind]
    if kind == "null":
        return "None"
    if kind == "array":
        return f"list[{hint(schema['items'])}]" if isinstance(schema.get("items"), dict) else "list"
    if kind == "object":
        fields = schema.get("properties")
        if isinstance(fields, dict) and fields:  # a dict of named fields: its values' types
            return f"dict[str, {_union([hint(f) for f in fields.values() if isinstance(f, dict)])}]"
        return "dict"
    return "Any"


def _union(hints: list[str]) -> str:
    unique = list(dict.fromkeys(hints))
    return "Any" if "Any" in unique else " | ".join(unique)


def method_source(method: str, spec: Any) -> str:
    """One typed, docstringed method that runs tool ``spec`` in the episode."""
    args, docs, call = ["self"], [], []
    for p in sorted(spec.params, key=lambda p: not p.required):  # required first: Python's rule
        h = hint(p.schema)
        # ``None`` is in the type only where the tool takes it as a value of its own (its default is None),
        # not because a parameter is optional: an omitted argument is left out, never sent as None
        if p.nullable and p.default is None and h not in ("Any", "None") and "None" not in h.split(" | "):
            h += " | None"
        args.append(f"{p.name}: {h}" if p.required else f"{p.name}: {h} = OMITTED")
        desc = param_description(p) or str(p.schema.get("type", "value"))
        docs.append(f"    {p.name}: {desc}")
        call.append(f"{p.name}={p.name}")
    text = spec.description.strip() or spec.name
    if docs:
        text += "\n\nArgs:\n" + "\n".join(docs)
    returns = " ".join((spec.returns_description or "The tool's result.").split())
    text += f"\n\nReturns:\n    JSON text: {returns}"
    sig = ", ".join(args)
    if len(sig) + len(method) > 90:  # one parameter a line, as a formatter would
        sig = "\n" + "".join(f"        {a},\n" for a in args) + "    "
    body = f"        return self._episode.call({lit(spec.name)}{''.join(', ' + c for c in call)})"
    if len(body) > 110:
        lines = "".join(f"            {c},\n" for c in [lit(spec.name), *call])
        body = f"        return self._episode.call(\n{lines}        )"
    return f"    def {method}({sig}) -> str:\n{docstring_literal(text, '        ')}\n{body}\n"


def module_source(prep: Prepared) -> str:
    cls = class_name(prep.group)
    methods = "\n".join(method_source(m, prep.env_cls.tools.get(t)) for m, t in sorted(prep.tools.items()))
    return f'''"""TRL environment for the EnvCraft environment group {prep.group!r} ({len(prep.tasks)} tasks),
exported by dataclaw. Needs dataclaw's base install (no extras) for the environment runtime and the verifier.

    import sys; sys.path.insert(0, "<this folder>")
    from envcraft_trl import {cls}, train_dataset
    trainer = GRPOTrainer(model=..., args=GRPOConfig(...), train_dataset=train_dataset(),
                          environment_factory={cls})

The reward is ``get_reward()`` ({prep.reward}: the task's verifier on the final state), which TRL picks up
by itself; pass ``envcraft_reward`` as ``reward_funcs`` only when training without the environment class.
"""

from pathlib import Path
from typing import Any, Literal

from dataclaw.envcraft.export.episode import OMITTED, Episode, TaskSet

HERE = Path(__file__).resolve().parent
TASKS = TaskSet(HERE)


class {cls}:
    """One rollout of a task of {prep.group!r}: ``reset(**row)`` loads the row's task
    (its initial state S0) and returns the user's request; each public method is one tool;
    ``get_reward()`` runs the verifier."""

    def __init__(self) -> None:
        self._episode = Episode(TASKS)

    def reset(self, **row: Any) -> str:
        """Start the episode of the row's ``task_id`` from its initial state; return the user's request."""
        return self._episode.reset(row.get("task_id"))

    def get_reward(self) -> float:
        """The verifier's reward on the state the episode reached (1.0 = solved)."""
        return self._episode.reward()

{methods}

def envcraft_reward(completions: list[Any], task_id: list[str], **kwargs: Any) -> list[float]:
    """TRL reward function: each completion's tool calls replayed from its task's S0, scored by the
    verifier. For trainers that generate tool calls without this environment class."""
    return TASKS.replay_rewards(completions, task_id)


def train_dataset() -> Any:
    """``{DATASET}`` as a ``datasets.Dataset`` (prompt messages + task columns)."""
    from datasets import load_dataset

    return load_dataset("json", data_files=str(HERE / "{DATASET}"), split="train")
'''


def dataset_rows(prep: Prepared) -> list[dict[str, Any]]:
    from dataclaw.envcraft.rollout.harness import TOOL_SYSTEM_PROMPT

    return [
        {
            "prompt": [
                {"role": "system", "content": TOOL_SYSTEM_PROMPT},
                {"role": "user", "content": ""},
            ],
            "task_id": t.id,
            "env": prep.group,
            "user_turns": [str(u) for u in t.user_turns],
        }
        for t in prep.tasks
    ]


README = """# TRL export of {group!r}

{n} EnvCraft tasks for `trl.GRPOTrainer(environment_factory=...)` (TRL >= 1.x, transformers >= 5.2).

* `envcraft_trl.py` — `{cls}`: `reset(**row)` loads the row's task (initial state S0) and returns the
  user's request; one typed method per tool; `get_reward()` = the verifier on the final state ({reward}).
  Also `envcraft_reward` (TRL reward-function signature: replays a completion's tool calls) and
  `train_dataset()`.
* `dataset.jsonl` — `prompt` (system message + the user message `reset` fills), `task_id`, `env`,
  `user_turns`.
* `tasks.jsonl`, `manifest.json` — the tasks and where the environment code lives{envs}.

```python
import sys; sys.path.insert(0, "{out}")
from envcraft_trl import {cls}, train_dataset
from trl import GRPOConfig, GRPOTrainer

trainer = GRPOTrainer(model="...", train_dataset=train_dataset(), environment_factory={cls},
                      args=GRPOConfig(num_generations=8, max_completion_length=2048, beta=0.02))
trainer.train()
```

Needs `pip install dataclaw` (no extras) beside TRL. `dataclaw train grpo --recipe envcraft` runs it.
"""


@EXPORTERS.add
class TrlExporter(Exporter):
    name = "trl"
    description = "TRL GRPOTrainer environment_factory module + dataset + reward function"

    def write(self, prep: Prepared, out: Path) -> ExportResult:
        files = write_common(prep, out, self.name, {"module": MODULE, "class": class_name(prep.group)})
        source = module_source(prep)
        compile(source, f"{MODULE}.py", "exec")  # a generation bug fails here, not in the trainer
        (out / f"{MODULE}.py").write_text(source, encoding="utf-8")
        with open(out / DATASET, "w", encoding="utf-8") as fh:
            for row in dataset_rows(prep):
                fh.write(json.dumps(row, ensure_ascii=False) + "\n")
        copied = [c.env for c in prep.envs if c.package is not None]
        envs = f" (copied: {', '.join(copied)} under envs/)" if copied else " (built-in archetypes)"
        cls = class_name(prep.group)
        readme = README.format(
            group=prep.group, n=len(prep.tasks), cls=cls, reward=prep.reward, envs=envs, out=out.resolve()
        )
        (out / "README.md").write_text(readme, encoding="utf-8")
        files += [f"{MODULE}.py", DATASET, "README.md"]
        usage = f"GRPOTrainer(environment_factory={MODULE}.{cls}, train_dataset={MODULE}.train_dataset())"
        return ExportResult(self.name, out, prep.group, len(prep.tasks), files, usage)
