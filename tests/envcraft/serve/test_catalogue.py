"""What ``dataclaw env serve`` agrees to serve, and what it says otherwise — without the OpenEnv library
(these run in the main venv): a built-in archetype or a package folder (anything else is refused), the
task file's tasks of that environment only, and an install hint when the [openenv] extra is missing."""

from __future__ import annotations

import importlib.util
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from dataclaw.core.errors import ConfigError
from dataclaw.envcraft.serve import load_catalogue

ENV = "transactional_workspace"


def test_a_task_file_serves_the_tasks_of_its_environment_in_order(gold_tasks) -> None:
    path, (gold, second) = gold_tasks
    cat = load_catalogue(ENV, path)
    assert cat.kind == "tasks" and cat.ids == [gold["id"], second["id"]]
    assert cat.pick(None, 3, None) == second["id"] and cat.pick(None, None, 0) == gold["id"]
    assert cat.spec(second["id"]) == {
        "id": second["id"],
        "index": 1,
        "env": ENV,
        "prompt": "Log in as agent_lee.",
    }
    with pytest.raises(ValueError, match="unknown task_id 'x'; this server has 2 tasks"):
        cat.pick("x", None, None)
    with pytest.raises(ValueError, match=r"out of range \(0..1\)"):
        cat.pick(None, None, 2)
    assert load_catalogue(ENV, path, limit=1).ids == [gold["id"]]


def test_a_task_file_without_tasks_of_the_environment_is_refused_with_what_it_holds(gold_tasks) -> None:
    path, _ = gold_tasks
    with pytest.raises(ConfigError, match=r"no task of environment 'stream_processing' \(tasks found: "):
        load_catalogue("stream_processing", path)


def test_an_environment_that_is_neither_builtin_nor_a_package_folder_is_refused(tmp_path: Path) -> None:
    for name in ("some.module.name", f"{ENV}+my_env", str(tmp_path / "missing")):
        with pytest.raises(ConfigError, match="given as its package folder") as err:
            load_catalogue(name)
        assert ENV in str(err.value)
    (tmp_path / "not_a_pkg").mkdir()
    with pytest.raises(ConfigError, match="not an environment package"):
        load_catalogue(str(tmp_path / "not_a_pkg"))


@pytest.mark.skipif(importlib.util.find_spec("openenv") is not None, reason="openenv is installed here")
def test_env_serve_without_the_extra_says_how_to_install_it(tmp_path: Path) -> None:
    exe = shutil.which("dataclaw", path=str(Path(sys.executable).parent))
    assert exe
    res = subprocess.run(
        [exe, "env", "serve", ENV, "--port", "0"], capture_output=True, text=True, timeout=120
    )
    assert res.returncode == 1
    assert "pip install 'dataclaw[openenv]'" in res.stderr and "Traceback" not in res.stderr
