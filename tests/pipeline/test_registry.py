"""The executor registry: built-ins found by discovery, a duplicate name refused, one from outside the
package declared by an entry point and chosen by name."""

from __future__ import annotations

import sys

import pytest

from dataclaw.core.errors import ConfigError
from dataclaw.pipeline.executors import EXECUTORS, LocalExecutor, register_executor
from dataclaw.pipeline.registry import ExecutorSettings, make_executor

OUT_OF_TREE = '''
from dataclaw.pipeline.executors import LocalExecutor


class InProcessExecutor(LocalExecutor):
    """Every CPU stage in this process, whatever --workers says."""

    name = "in-process"

    @classmethod
    def from_settings(cls, settings, workers, concurrency):
        return cls(workers=1, concurrency=concurrency)
'''


def test_the_built_in_executors_are_discovered():
    assert {"local", "ray"} <= set(EXECUTORS.names())
    assert EXECUTORS.get("local") is LocalExecutor


def test_a_second_executor_under_a_taken_name_is_refused():
    class Other(LocalExecutor):
        name = "local"

    with pytest.raises(ConfigError, match=r"executor name 'local' is already registered by .*LocalExecutor"):
        register_executor(Other)


def test_an_executor_from_an_entry_point_is_chosen_by_name(tmp_path, monkeypatch, request):
    site = tmp_path / "site-packages"
    info = site / "dc_inproc-0.1.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: dc_inproc\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text("[dataclaw.executors]\nin-process = dc_inproc:InProcessExecutor\n")
    (info / "RECORD").write_text("")
    (site / "dc_inproc.py").write_text(OUT_OF_TREE)
    monkeypatch.syspath_prepend(str(site))
    request.addfinalizer(lambda: sys.modules.pop("dc_inproc", None))
    monkeypatch.setattr(EXECUTORS, "_items", dict(EXECUTORS._items))
    monkeypatch.setattr(EXECUTORS, "_loaded", False)

    executor = make_executor(workers=8, settings=ExecutorSettings(name="in-process"))
    assert type(executor).__name__ == "InProcessExecutor" and executor.workers == 1
    assert "in-process" in EXECUTORS.names()
