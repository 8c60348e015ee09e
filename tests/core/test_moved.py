"""An old import path of a moved module warns and yields the module at its new place."""

import importlib
import sys

import pytest

from dataclaw.core.moved import keep_old_paths, old_names, old_paths


def test_old_path_is_the_new_module_and_warns() -> None:
    keep_old_paths({"dataclaw.core.old_store_for_test": "dataclaw.core.store"})
    sys.modules.pop("dataclaw.core.old_store_for_test", None)
    with pytest.warns(DeprecationWarning, match="moved to dataclaw.core.store"):
        old = importlib.import_module("dataclaw.core.old_store_for_test")
    new = importlib.import_module("dataclaw.core.store")
    assert old is new
    assert new.__name__ == "dataclaw.core.store"  # the new module's identity is untouched
    from dataclaw.core.old_store_for_test import RunStore  # noqa: F401 - from-imports work too

    assert old_paths()["dataclaw.core.old_store_for_test"] == "dataclaw.core.store"


def test_every_old_path_still_imports() -> None:
    for package in ("dataclaw.tailor", "dataclaw.envcraft", "dataclaw.pipeline", "dataclaw.models"):
        importlib.import_module(package)
    assert len(old_paths()) > 20
    for old, new in old_paths().items():
        if "for_test" in old:
            continue
        with pytest.warns(DeprecationWarning):
            sys.modules.pop(old, None)
            module = importlib.import_module(old)
        if isinstance(new, str):
            assert module is importlib.import_module(new)
        else:  # a split module: every public name of each part reads through the old path
            for part in new:
                found = importlib.import_module(part)
                for name in (n for n in vars(found) if not n.startswith("_")):
                    assert hasattr(module, name), f"{old}.{name} (now {part}.{name})"


def test_a_split_module_reads_each_name_from_its_new_home() -> None:
    keep_old_paths({"dataclaw.core.split_for_test": ("dataclaw.core.ids", "dataclaw.core.store")})
    sys.modules.pop("dataclaw.core.split_for_test", None)
    with pytest.warns(DeprecationWarning, match=r"moved to dataclaw\.core\.ids, dataclaw\.core\.store"):
        from dataclaw.core.split_for_test import RunStore, child_id  # type: ignore[import-not-found]
    from dataclaw.core.ids import child_id as new_child_id
    from dataclaw.core.store import RunStore as NewRunStore

    assert child_id is new_child_id and RunStore is NewRunStore
    with pytest.raises(AttributeError, match=r"no attribute 'nothing' \(it moved to dataclaw\.core\.ids, "):
        getattr(sys.modules["dataclaw.core.split_for_test"], "nothing")  # noqa: B009


def test_every_moved_name_still_reads_from_its_old_module() -> None:
    for package in ("dataclaw.tailor", "dataclaw.envcraft", "dataclaw.pipeline", "dataclaw.models"):
        importlib.import_module(package)
    for module in (
        "dataclaw.models.registry",
        "dataclaw.models.schema",
        "dataclaw.pipeline.registry",
        "dataclaw.pipeline.executors",
        "dataclaw.envcraft.audit.static",
        "dataclaw.envcraft.quality.runs",
        "dataclaw.envcraft.export.base",
        "dataclaw.envcraft.synth.compile",
    ):
        importlib.import_module(module)
    moved = old_names()
    assert len(moved) >= 8
    for module, names in moved.items():
        for name, new in names.items():
            with pytest.warns(DeprecationWarning, match=f"{module}.{name} moved to {new}.{name}"):
                value = getattr(importlib.import_module(module), name)
            assert value is getattr(importlib.import_module(new), name)
