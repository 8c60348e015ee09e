"""Loading environment packages from folders."""

from __future__ import annotations

import shutil
from pathlib import Path

from dataclaw.envcraft.runtime import load_env_package

COUNTER_DIR = Path(__file__).parent / "fixtures" / "counter_env"


def test_two_folders_with_one_package_name_each_load_their_own_code(tmp_path: Path) -> None:
    """A second folder named like an already-loaded package must not bind the first one's submodules."""
    first = load_env_package(shutil.copytree(COUNTER_DIR, tmp_path / "a" / "counter_env"))
    second_dir = shutil.copytree(COUNTER_DIR, tmp_path / "b" / "counter_env")
    env_py = second_dir / "env.py"
    env_py.write_text(env_py.read_text().replace("def crash(", "def crash_b("))
    second = load_env_package(second_dir)
    assert "crash" in first.env_cls.tools.names() and "crash_b" not in first.env_cls.tools.names()
    assert "crash_b" in second.env_cls.tools.names() and "crash" not in second.env_cls.tools.names()
    assert second.path == second_dir.resolve()
