"""The trainer side of ``dataclaw train``: find the trainer's own Python (a venv with ``dataclaw[train]``),
the policy to train, and run a recipe script there as a subprocess whose JSON summary line is the result.
dataclaw never imports a trainer."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from dataclaw.core.errors import ConfigError

TRAIN_PYTHON_ENV = "DATACLAW_TRAIN_PYTHON"
DEFAULT_VENV = Path(".venv-train")
NEEDED = ("torch", "trl", "transformers", "datasets", "gguf", "matplotlib", "dataclaw")
GRPO_RECIPE = Path(__file__).resolve().parents[1] / "envcraft" / "export" / "recipes" / "trl_grpo.py"
SFT_RECIPE = Path(__file__).resolve().parent / "recipes" / "trl_sft.py"
INSTALL_HINT = (
    "install the trainer stack in its own venv with `make train-setup` (creates .venv-train: torch CPU, "
    "then `pip install -e '.[train]'`), or point --train-python / $DATACLAW_TRAIN_PYTHON at a Python "
    "that has dataclaw[train]"
)


def train_python(flag: Path | None) -> Path:
    """The trainer's interpreter: ``--train-python``, ``$DATACLAW_TRAIN_PYTHON``, else ``.venv-train``
    here; checked for the packages the recipe imports (without importing them)."""
    if flag is not None:
        py, how = flag, "--train-python"
    elif os.environ.get(TRAIN_PYTHON_ENV):
        py, how = Path(os.environ[TRAIN_PYTHON_ENV]), f"${TRAIN_PYTHON_ENV}"
    else:
        py, how = DEFAULT_VENV / "bin" / "python", "the default ./.venv-train"
    if not py.is_file():
        raise ConfigError(f"no trainer Python at {py} ({how}): {INSTALL_HINT}")
    probe = (
        "import importlib.util, json; "
        f"print(json.dumps([m for m in {list(NEEDED)!r} if importlib.util.find_spec(m) is None]))"
    )
    proc = subprocess.run([str(py), "-c", probe], capture_output=True, text=True, timeout=120)
    if proc.returncode != 0:
        raise ConfigError(f"the trainer Python {py} ({how}) does not run: {proc.stderr.strip()[-300:]}")
    missing = json.loads(proc.stdout.strip().splitlines()[-1])
    if missing:
        raise ConfigError(f"the trainer Python {py} ({how}) lacks {', '.join(missing)}: {INSTALL_HINT}")
    return py


def policy_path(model: str) -> Path:
    """The policy to train: the bundled SmolLM2-135M GGUF, a GGUF file or a checkpoint folder."""
    if model == "smollm2-135m":
        from dataclaw.models.backends.local import find_gguf

        return find_gguf(model)
    path = Path(model)
    if not path.exists():
        raise ConfigError(f"--model {model}: not smollm2-135m, a GGUF file or a checkpoint folder")
    return path.resolve()


def default_cache_dir() -> Path:
    """Where checkpoints converted from a GGUF are kept by default."""
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "dataclaw" / "models"


def run_recipe(argv: list[str], what: str) -> dict:
    """Run a recipe script in the trainer's Python, its output streamed; its JSON summary line."""
    # the hubs are out of reach and not needed: everything is local
    child_env = {
        **os.environ,
        "HF_HUB_OFFLINE": "1",
        "TRANSFORMERS_OFFLINE": "1",
        "TRL_EXPERIMENTAL_SILENCE": "1",
    }
    summary = None
    with subprocess.Popen(
        argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=child_env, bufsize=1
    ) as proc:
        try:
            assert proc.stdout is not None
            for line in proc.stdout:
                if line.startswith('{"summary"'):
                    summary = json.loads(line)["summary"]
                sys.stdout.write(line)
            code = proc.wait()
        except BaseException:
            proc.terminate()
            proc.wait(timeout=30)
            raise
    if code != 0 or summary is None:
        raise ConfigError(f"the {what} run failed (exit {code}); its output is above")
    return summary


def recipe_argv(python: Path, recipe: Path, **options: object) -> list[str]:
    """The command line running ``recipe`` in ``python``: one ``--kebab-case VALUE`` per option, in the
    order given, paths made absolute (the recipe runs with the same working directory, but says where)."""
    argv = [str(python), str(recipe)]
    for key, value in options.items():
        argv += [f"--{key.replace('_', '-')}", str(value.resolve() if isinstance(value, Path) else value)]
    return argv
