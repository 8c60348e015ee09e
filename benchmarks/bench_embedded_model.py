"""The embedded default model (SmolLM2-135M-Instruct GGUF in llama.cpp): load time and tokens/s for a
~200-token JSON answer under schema-constrained decoding, and the wall time of the quickstart-sized request
from a cold process (load + answer), which must stay under 30 s on 2 cores.

Prints one JSON line; exits 1 when the quickstart-sized request misses the target or the answer does not
validate. The response cache is off so the model really generates.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
import time

TARGET_QUICKSTART_S = 30.0

SCHEMA = {
    "type": "object",
    "properties": {
        "task": {"type": "string", "maxLength": 120},
        "robot": {"type": "string", "maxLength": 60},
        "objects": {
            "type": "array",
            "items": {"type": "string", "maxLength": 40},
            "minItems": 1,
            "maxItems": 3,
        },
        "steps": {
            "type": "array",
            "items": {"type": "string", "minLength": 20, "maxLength": 90},
            "minItems": 6,
            "maxItems": 6,
        },
        "success_check": {"type": "string", "minLength": 20, "maxLength": 120},
    },
    "required": ["task", "robot", "objects", "steps", "success_check"],
    "additionalProperties": False,
}
PROMPT = (
    'A Unitree G1 humanoid robot with dexterous hands performs the task "Pick up the yellow bottle on the '
    'table." Describe it as JSON: the task, the robot, the objects involved, six detailed steps, and how to '
    "check that the task succeeded."
)


async def _answer(model) -> tuple[float, object]:
    start = time.perf_counter()
    done = await model.complete(PROMPT, schema=SCHEMA, temperature=0, max_tokens=600)
    return time.perf_counter() - start, done


def main() -> int:
    from dataclaw.models import get_model

    cold_start = time.perf_counter()
    model = get_model("local:smollm2-135m", cache=False)
    loaded = model.backend.load()
    load_s = time.perf_counter() - cold_start
    gen_s, done = asyncio.run(_answer(model))
    quickstart_s = time.perf_counter() - cold_start
    tokens = done.usage.completion_tokens
    # a second, warm request: generation speed without first-call effects
    warm_s, warm = asyncio.run(_answer(model))
    ok = quickstart_s < TARGET_QUICKSTART_S and done.parsed is not None
    print(
        json.dumps(
            {
                "bench": "embedded_model",
                "model": done.model,
                "cores": os.cpu_count(),
                "load_s": round(load_s, 3),
                "llama_load_s": round(loaded.load_s, 3),
                "prompt_tokens": done.usage.prompt_tokens,
                "completion_tokens": tokens,
                "generate_s": round(gen_s, 3),
                "tokens_per_s": round(tokens / gen_s, 1),
                "warm_tokens_per_s": round(warm.usage.completion_tokens / warm_s, 1),
                "quickstart_request_s": round(quickstart_s, 3),
                "target_quickstart_request_s": TARGET_QUICKSTART_S,
                "answer_valid": done.parsed is not None,
                "ok": ok,
            }
        )
    )
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
