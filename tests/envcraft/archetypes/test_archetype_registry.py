"""An archetype is one folder: environment package, ``archetype.yaml`` (its blueprint entry) and an optional
``mechanic.py`` (its compiler mechanic), built in or installed through the ``dataclaw.archetypes`` entry
points; the compiler files stay out of the environment's audit, workspace copy and code listings."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from dataclaw.core.errors import ConfigError
from dataclaw.envcraft import archetypes
from dataclaw.envcraft.audit.dynamic import _copy_ignore
from dataclaw.envcraft.audit.package import read_package
from dataclaw.envcraft.scenarios import blueprints

REPO = Path(__file__).resolve().parents[3]
COUNTER = REPO / "tests" / "envcraft" / "fixtures" / "counter_env"
SPECS = REPO / "tests" / "envcraft" / "synth" / "fixtures" / "compile" / "specs.jsonl"

ARCHETYPE_YAML = """\
number: 10
title: Counting Workspace
blueprint: A counter and a list of items; every change is an increment or an append.
keywords: [counter, tally]
"""
MECHANIC = '''\
"""Compiler mechanic of the counter archetype: a compiled package gets count_X."""

from dataclaw.envcraft.synth.compile import Plan, mechanic
from dataclaw.envcraft.synth.compile.plan import ToolPlan, primary_collection


@mechanic("counter_env")
def _counter(p: Plan) -> None:
    c = primary_collection(p)
    p.add_tool(
        ToolPlan(
            f"count_{c.name}",
            "list",
            "read",
            f"Count the {c.name}.",
            [],
            returns=[c.name, "total"],
            cfg={"collection": c.name},
            key=("count", c.name),
        )
    )
'''


def _site(tmp_path: Path, folder: str = "counter_env", init: str = "") -> Path:
    """An installed distribution whose ``dataclaw.archetypes`` entry point names ``dc_archetypes``, a
    package with one archetype folder (the counter fixture, with its blueprint entry and mechanic)."""
    site = tmp_path / "site-packages"
    info = site / "dc_archetypes-0.1.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: dc_archetypes\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text("[dataclaw.archetypes]\ncounting = dc_archetypes\n")
    (info / "RECORD").write_text("")
    (site / "dc_archetypes").mkdir()
    (site / "dc_archetypes" / "__init__.py").write_text(init)
    dst = site / "dc_archetypes" / folder
    shutil.copytree(COUNTER, dst, ignore=shutil.ignore_patterns("__pycache__"))
    (dst / "archetype.yaml").write_text(ARCHETYPE_YAML)
    (dst / "mechanic.py").write_text(MECHANIC)
    return site


def test_every_builtin_folder_has_its_blueprint_entry_and_mechanic() -> None:
    assert [b.name for b in sorted(blueprints(), key=lambda b: b.name)] == archetypes.names()
    for name in archetypes.names():
        found = archetypes.archetype(name)
        assert found.folder == archetypes.ARCHETYPES_DIR / name
        assert found.module == f"dataclaw.envcraft.archetypes.{name}"
        assert found.mechanic_module == f"dataclaw.envcraft.archetypes.{name}.mechanic"


def test_an_installed_package_of_archetype_folders_is_found_without_importing_it(
    tmp_path: Path, monkeypatch
) -> None:
    monkeypatch.syspath_prepend(str(_site(tmp_path, init="raise RuntimeError('found, never imported')\n")))
    reg = type(archetypes.ARCHETYPES)("archetype")
    assert reg.group == "dataclaw.archetypes"
    assert "counter_env" in reg and "state_machine" in reg
    found = reg.get("counter_env")
    assert found.module == "dc_archetypes.counter_env" and found.folder.parent.name == "dc_archetypes"
    assert found.mechanic_module == "dc_archetypes.counter_env.mechanic"
    assert "dc_archetypes" not in sys.modules


def test_an_installed_archetype_may_not_take_a_builtin_name(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.syspath_prepend(str(_site(tmp_path, folder="state_machine")))
    with pytest.raises(ConfigError, match=r"entry point 'counting = dc_archetypes'.*name 'state_machine'"):
        type(archetypes.ARCHETYPES)("archetype").names()


def test_an_installed_archetype_is_retrieved_compiled_with_its_mechanic_and_resolved(tmp_path: Path) -> None:
    """End to end in a fresh process (the registries load once per process)."""
    site = _site(tmp_path)
    script = textwrap.dedent(f"""
        import json
        from pathlib import Path
        from dataclaw.envcraft import archetypes
        from dataclaw.envcraft.audit import static_audit
        from dataclaw.envcraft.runtime.resolve import resolve_env
        from dataclaw.envcraft.scenarios import blueprint
        from dataclaw.envcraft.synth import ESpec, TSpec, compile_package, retrieve

        rec = json.loads(Path({str(SPECS)!r}).read_text().splitlines()[0])
        e, t = ESpec.model_validate(rec["e_spec"]), TSpec.model_validate({{"tools": rec["t_spec"]}})
        found = retrieve(e, t, pinned=["counter_env"])
        res = compile_package(e, t, found, Path({str(tmp_path / "lib")!r}), scenario={{}})
        refs = ["counter_env", "dc_archetypes.counter_env"]  # its name, its import name
        print(json.dumps({{
            "blueprint": blueprint("counter_env").title,
            "retrieved": found[0].to_dict()["reference_files"],
            "mechanics": res.mechanics,
            "tools": res.tools,
            "findings": [f.rule for f in static_audit(res.path)],
            "env": archetypes.get("counter_env").name,
            "resolved": [[r.kind, str(r.folder)] for r in map(resolve_env, refs)],
        }}))
    """)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(site), os.environ.get("PYTHONPATH", "")])}
    proc = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, env=env, timeout=300
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    assert out["blueprint"] == "Counting Workspace" and out["env"] == "counter_env"
    folder = str((site / "dc_archetypes" / "counter_env").resolve())
    assert out["resolved"] == [["archetype", folder], ["archetype", folder]]
    assert "counter_env/mechanic.py" not in out["retrieved"] and "counter_env/env.py" in out["retrieved"]
    assert out["mechanics"][0] == "counter_env"
    assert any(t.startswith("count_") for t in out["tools"]) and out["findings"] == []


def test_compiler_files_stay_out_of_the_audit_and_the_workspace_copy(tmp_path: Path) -> None:
    folder = archetypes.archetype("state_machine").folder
    assert archetypes.compiler_file(folder / "mechanic.py") and archetypes.compiler_file(
        folder / "archetype.yaml"
    )
    assert "mechanic.py" not in {m.rel for m in read_package(folder).modules}
    assert _copy_ignore(folder)(str(folder), ["mechanic.py", "archetype.yaml", "env.py"]) == {
        "mechanic.py",
        "archetype.yaml",
    }
    # a package that is no archetype folder keeps a module that happens to be called mechanic.py
    pkg = tmp_path / "garage"
    shutil.copytree(COUNTER, pkg, ignore=shutil.ignore_patterns("__pycache__"))
    (pkg / "mechanic.py").write_text("def repair() -> None:\n    return None\n")
    assert not archetypes.compiler_file(pkg / "mechanic.py")
    assert "mechanic.py" in {m.rel for m in read_package(pkg).modules}
    assert _copy_ignore(pkg)(str(pkg), ["mechanic.py", "env.py"]) == set()
