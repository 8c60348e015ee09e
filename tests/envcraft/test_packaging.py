"""Package data (world data, scenarios, README/SKILL, archetype.yaml) of each archetype ships in the wheel."""

from __future__ import annotations

import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from dataclaw.envcraft import archetypes

REPO = Path(__file__).resolve().parents[2]


@pytest.mark.slow
def test_wheel_contains_archetype_data(tmp_path: Path) -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", str(REPO), "-w", str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    (wheel,) = tmp_path.glob("dataclaw-*.whl")
    names = set(zipfile.ZipFile(wheel).namelist())
    assert "dataclaw/envcraft/runtime/README.md" in names
    # the quickstart's bundled inputs, with their licences and attribution
    examples = [p for p in (REPO / "examples").rglob("*") if p.is_file()]
    missing = [
        p for p in examples if "dataclaw/examples/" + str(p.relative_to(REPO / "examples")) not in names
    ]
    assert examples and not missing, missing[:5]
    assert "dataclaw/examples/SOURCES.md" in names
    src = REPO / "src"
    for name in archetypes.names():
        folder = archetypes.ARCHETYPES_DIR / name
        wanted = [
            p
            for p in folder.rglob("*")
            if p.is_file() and p.suffix in (".json", ".md", ".py", ".yaml") and "__pycache__" not in p.parts
        ]
        assert any(p.parent.name == "scenarios" for p in wanted), name
        missing = [str(p.relative_to(src)) for p in wanted if str(p.relative_to(src)) not in names]
        assert not missing, f"{name}: not in the wheel: {missing}"
