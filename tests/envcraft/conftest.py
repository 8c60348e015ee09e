"""Shared fixtures: the counter test environment (a real package loaded from its folder)."""

from __future__ import annotations

from pathlib import Path

import pytest

from dataclaw.envcraft.runtime import EnvPackage, load_env_package

COUNTER_DIR = Path(__file__).parent / "fixtures" / "counter_env"


@pytest.fixture(scope="session")
def counter_pkg() -> EnvPackage:
    return load_env_package(COUNTER_DIR)


@pytest.fixture
def counter_env(counter_pkg: EnvPackage, tmp_path: Path):
    return counter_pkg.env_cls(tmp_path / "state")
