"""Run in the trainer venv (.venv-train) by test_trainers.py: drive a TRL export through TRL's and
transformers' own helpers and print one JSON line of findings.

    python trl_probe.py EXPORT_DIR GGUF_FILE TASK_ID
"""

from __future__ import annotations

import inspect
import json
import os
import sys
from pathlib import Path

os.environ.setdefault("TRL_EXPERIMENTAL_SILENCE", "1")


def main() -> None:
    export, gguf, task_id = Path(sys.argv[1]), Path(sys.argv[2]), sys.argv[3]
    sys.path.insert(0, str(export))
    manifest = json.loads((export / "manifest.json").read_text())
    module = __import__(manifest["module"])
    cls = getattr(module, manifest["class"])

    import torch
    from transformers import AutoTokenizer, LlamaConfig, LlamaForCausalLM
    from transformers.utils import get_json_schema
    from trl import GRPOConfig, GRPOTrainer
    from trl.chat_template_utils import (
        add_response_schema,
        is_chat_template_prefix_preserving,
        parse_response,
        qwen2_5_chat_template,
        supports_tool_calling,
    )

    out: dict = {}
    env = cls()
    # the tools exactly as GRPOTrainer collects them: public functions of the class but reset/get_reward
    methods = {
        name: getattr(env, name)
        for name, _ in inspect.getmembers(type(env), predicate=inspect.isfunction)
        if name not in ("reset", "get_reward") and not name.startswith("_")
    }
    out["schemas"] = {name: get_json_schema(fn)["function"] for name, fn in methods.items()}

    tok = AutoTokenizer.from_pretrained(gguf.parent, gguf_file=gguf.name)
    out["smollm2_template_supports_tools"] = supports_tool_calling(tok)
    tok.chat_template = qwen2_5_chat_template
    out["supports_tool_calling"] = supports_tool_calling(tok)
    out["prefix_preserving"] = is_chat_template_prefix_preserving(tok)
    add_response_schema(tok)

    task = module.TASKS.task(task_id)
    request = env.reset(task_id=task_id)
    prompt = [{"role": "user", "content": request}]
    rendered = tok.apply_chat_template(prompt, tools=list(methods.values()), tokenize=False)
    out["rendered_tools"] = sorted(n for n in methods if f'"name": "{n}"' in rendered)
    opened = tok.apply_chat_template(
        prompt, tools=list(methods.values()), tokenize=False, add_generation_prompt=True
    )
    prefix = tok(opened, add_special_tokens=False)["input_ids"]  # what GRPOTrainer passes as the prefix
    # the gold chain as the model would write it, parsed by TRL's parser and dispatched as TRL's tool loop
    # does (``tool_dict[name](**function["arguments"])``)
    observations = []
    for step in task.gold_chain:
        name = step["tool"].replace(".", "__")
        text = (
            f"<tool_call>\n{json.dumps({'name': name, 'arguments': step['params']})}\n</tool_call><|im_end|>"
        )
        ids = tok(text, add_special_tokens=False)["input_ids"]
        parsed = parse_response(tok, ids, prefix=prefix, tools=list(methods.values()))
        call = parsed["tool_calls"][0]["function"]
        observations.append(json.loads(methods[call["name"]](**call["arguments"])))
    out["gold_observations"] = len(observations)
    out["gold_reward"] = env.get_reward()
    env.reset(task_id=task_id)
    out["untouched_reward"] = env.get_reward()

    # one real GRPO step with a tiny random policy (no tool call is likely: the untouched reward)
    torch.manual_seed(0)
    cfg = LlamaConfig(
        vocab_size=len(tok),
        hidden_size=32,
        intermediate_size=64,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        max_position_embeddings=8192,
        pad_token_id=tok.pad_token_id,
        eos_token_id=tok.eos_token_id,
        bos_token_id=tok.bos_token_id,
    )
    tok.padding_side = "left"
    trainer = GRPOTrainer(
        model=LlamaForCausalLM(cfg),
        processing_class=tok,
        train_dataset=module.train_dataset(),
        environment_factory=cls,
        args=GRPOConfig(
            output_dir=str(export.parent / "tiny-grpo"),
            max_steps=1,
            per_device_train_batch_size=2,
            num_generations=2,
            max_completion_length=8,
            use_cpu=True,
            report_to=[],
            save_strategy="no",
            logging_steps=1,
        ),
    )
    out["reward_funcs"] = list(trainer.reward_func_names)
    out["trainer_tools"] = sorted(t.__name__ for t in trainer.tools)
    trainer.train()
    logs = [x for x in trainer.state.log_history if "reward" in x]
    out["grpo_logs"] = logs
    print("PROBE " + json.dumps(out), flush=True)


if __name__ == "__main__":
    main()
