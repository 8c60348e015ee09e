"""Fixtures of the rollout tests."""

from __future__ import annotations

from typing import Any

import pytest

from envcraft.rollout.rollout_helpers import tool_task


@pytest.fixture(scope="session")
def gold_tool_task() -> dict[str, Any]:
    return tool_task()
