"""Run in the trainer venv (.venv-train) by test_fidelity.py: the tool schemas TRL builds from a TRL export's
class (``transformers.utils.get_json_schema`` of each method, as ``GRPOTrainer`` does) and, for an imported
environment whose publisher's code the export copied (``envs/*/backend/*.py``), the same function of the
publisher's own classes. Prints one JSON line.

    python schema_probe.py EXPORT_DIR
"""

from __future__ import annotations

import importlib.util
import inspect
import json
import sys
from pathlib import Path
from typing import Any


def main() -> None:
    export = Path(sys.argv[1])
    sys.path.insert(0, str(export))
    manifest = json.loads((export / "manifest.json").read_text())
    module = __import__(manifest["module"])
    cls = getattr(module, manifest["class"])

    from transformers.utils import get_json_schema

    out: dict[str, Any] = {"generated": {}, "publisher": {}, "publisher_errors": {}}
    for name, fn in inspect.getmembers(cls, predicate=inspect.isfunction):
        if name in ("reset", "get_reward") or name.startswith("_"):
            continue
        out["generated"][name] = get_json_schema(fn)["function"]
    for i, backend in enumerate(sorted(export.glob("envs/*/backend"))):
        # the publisher's modules import each other relatively: load the folder as a package of its own
        package = f"publisher_backend_{i}"
        init = importlib.util.spec_from_file_location(
            package, backend / "__init__.py", submodule_search_locations=[str(backend)]
        )
        assert init and init.loader
        sys.modules[package] = importlib.util.module_from_spec(init)
        init.loader.exec_module(sys.modules[package])
        for path in sorted(backend.glob("*.py")):
            if path.name == "__init__.py":
                continue
            try:
                mod = importlib.import_module(f"{package}.{path.stem}")
            except Exception as exc:  # noqa: BLE001 - reported, not fatal: the comparison names what it lacked
                out["publisher_errors"][path.name] = f"{type(exc).__name__}: {exc}"
                continue
            _publisher_schemas(mod, out, get_json_schema)
    print("PROBE " + json.dumps(out), flush=True)


def _publisher_schemas(mod: Any, out: dict[str, Any], get_json_schema: Any) -> None:
    """``get_json_schema`` of every public method of the module's own classes that the export offers."""
    for _, klass in inspect.getmembers(mod, inspect.isclass):
        if klass.__module__ != mod.__name__:
            continue
        for name, fn in inspect.getmembers(klass, predicate=inspect.isfunction):
            if name.startswith("_") or name not in out["generated"]:
                continue
            try:
                out["publisher"][name] = get_json_schema(fn)["function"]
            except Exception as exc:  # noqa: BLE001 - a docstring transformers cannot read
                out["publisher_errors"][name] = f"{type(exc).__name__}: {exc}"


if __name__ == "__main__":
    main()
