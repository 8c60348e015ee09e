"""S045 host-path: environment code that opens the host's files (absolute paths, ``~``, ``..``, the working
directory, paths from the environment) is a static finding before the sandbox is needed; reads of the
package's own data (from ``__file__``'s folder, however spelt) stay clean."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from dataclaw.envcraft.audit import static_audit

# state.py of the reference package imports json and Path and defines DATA = Path(__file__)…/ "data"
F = "def _x() -> str:\n    return "  # the body of a function in state.py
OS = "import os\n\n\n"

HOST_READS = {
    "etc_shadow": (F + 'open("/etc/shadow").read()\n', "the absolute path '/etc/shadow'"),
    "ssh_expanduser": (OS + F + 'open(os.path.expanduser("~/.ssh/id_rsa")).read()\n', "expands ~"),
    "ssh_path_home": (F + '(Path.home() / ".ssh" / "id_rsa").read_text()\n', "home"),
    "tilde_literal": (F + 'Path("~/.ssh/id_rsa").expanduser().read_text()\n', "~"),
    "dotdot": (F + '(DATA / ".." / ".." / ".." / "secrets.txt").read_text()\n', "climbs 2 level(s)"),
    "dotdot_relative": (F + 'open("../../.netrc").read()\n', "'..'"),
    "parent_climb": (
        "ROOT = Path(__file__).resolve().parent.parent.parent\n\n\n"
        + F
        + '(ROOT / "config.toml").read_text()\n',
        "climbs 2 level(s) above the package",
    ),
    "environ": (
        OS
        + 'HOME = os.environ["HOME"]\n\n\n'
        + F
        + 'open(os.path.join(HOME, ".aws", "credentials")).read()\n',
        "environment variable",
    ),
    "getenv": (OS + F + 'str(os.listdir(os.getenv("SECRETS_DIR", ".")))\n', "environment"),
    "fstring_abs": (F + 'open(f"/home/{DATA.name}/.bash_history").read()\n', "'/home/'"),
    "absolute_join": (F + '(DATA / "/root/.docker/config.json").read_text()\n', "/root"),
    "cwd": (OS + F + "str(os.listdir(os.getcwd()))\n", "working directory"),
    "string_climb": (
        OS + F + 'open(os.path.dirname(__file__) + "/../../x.cfg").read()\n',
        "climbs 2 level(s)",
    ),
}

PACKAGE_READS = {
    "data_dir": F + '(DATA / "accounts.json").read_text()\n',
    "dirname": (
        OS
        + "HERE = os.path.dirname(os.path.abspath(__file__))\n\n\n"
        + F
        + 'open(os.path.join(HERE, "data", "tickets.json")).read()\n'
    ),
    "parents_index": F + '(Path(__file__).parents[0] / "data" / "kb_articles.json").read_text()\n',
    "param": "def _x(name: str) -> str:\n    return (DATA / name).read_text()\n",
    "relative_data": F + 'open("data/tickets.json").read()\n',
    "slash_suffix": "BASE = str(DATA)\n\n\n" + F + 'open(BASE + "/tickets.json").read()\n',
    "up_and_back": F + '(DATA / ".." / "data" / "accounts.json").read_text()\n',
    "string_join": OS + F + 'open(os.path.dirname(__file__) + "/data/../data/tickets.json").read()\n',
}


@pytest.mark.parametrize("case", sorted(HOST_READS))
def test_a_host_read_is_a_static_finding(case: str, mutant: Callable[..., Path]) -> None:
    code, why = HOST_READS[case]
    findings = static_audit(mutant(("state.py", code)), only=["S045"])
    assert [f.rule for f in findings] == ["S045"], findings
    assert why in findings[0].message and findings[0].file == "state.py" and findings[0].line > 1


@pytest.mark.parametrize("case", sorted(PACKAGE_READS))
def test_package_data_reads_stay_clean(case: str, mutant: Callable[..., Path]) -> None:
    assert static_audit(mutant(("state.py", PACKAGE_READS[case])), only=["S045"]) == []


def test_a_deeper_module_may_climb_to_its_package_root_but_not_above(mutant: Callable[..., Path]) -> None:
    inside = 'from pathlib import Path\n\nDATA = Path(__file__).parent.parent / "data"\n\n\n' + (
        'def _x() -> str:\n    return (DATA / "accounts.json").read_text()\n'
    )
    assert static_audit(mutant(("helpers/io.py", inside)), only=["S045"]) == []
    above = inside.replace("parent.parent", "parent.parent.parent")
    (finding,) = static_audit(mutant(("helpers/io.py", above)), only=["S045"])
    assert finding.file == "helpers/io.py" and "climbs 1 level(s)" in finding.message
