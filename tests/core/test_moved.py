"""An old import path of a moved module warns and yields the module at its new place."""

import importlib
import sys

import pytest

from dataclaw.core.moved import keep_old_paths, old_paths


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
    for old, new in old_paths().items():
        if "for_test" in old:
            continue
        with pytest.warns(DeprecationWarning):
            sys.modules.pop(old, None)
            assert importlib.import_module(old) is importlib.import_module(new)
