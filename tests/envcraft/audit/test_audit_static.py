"""Static audit: every archetype is clean; one broken package per rule fails with exactly that rule;
the rules are precise (registries, constants, datetime.time, str.replace, seeded RNGs are not flagged)."""

from __future__ import annotations

import shutil
import sys
import textwrap
from collections.abc import Callable
from pathlib import Path

import pytest

from dataclaw.core.errors import ConfigError
from dataclaw.envcraft import archetypes
from dataclaw.envcraft.audit import RULES, static_audit
from dataclaw.envcraft.audit.package import Role, read_package
from dataclaw.envcraft.audit.rules import Rule, rule


@pytest.mark.parametrize("name", archetypes.names())
def test_archetype_has_no_static_findings(name: str) -> None:
    findings = static_audit(archetypes.ARCHETYPES_DIR / name)
    assert findings == [], "\n".join(map(str, findings))


@pytest.mark.parametrize("name", archetypes.names())
def test_archetype_roles_are_all_present(name: str) -> None:
    pkg = read_package(archetypes.ARCHETYPES_DIR / name)
    for role in (Role.ENVIRONMENT_CLASS, Role.DOMAIN_MODULE, Role.EVALUATOR, Role.REPOSITORY, Role.CLI):
        assert pkg.with_role(role), role


def _tool(body: str, params: str = "", doc_args: str = "", fields: str = "") -> str:
    side = f'"write", fields={fields}' if fields else '"read"'
    args = f"\n\n    Args:\n{doc_args}" if doc_args else ""
    head = f"\n@tool({side})\ndef probe(session: dict{params}) -> dict:\n"
    doc = f'    """Probe the workspace.{args}\n    """\n'
    return head + doc + textwrap.indent(textwrap.dedent(body), "    ")


# rule id -> (mutation of the reference package, text the finding's message contains)
BREAKS: dict[str, tuple[list[tuple], str]] = {
    "S001": ([("README.md", None)], "missing README.md"),
    "S002": (
        [("env.py", "", "    evaluator: ClassVar[Evaluator] = EVALUATOR\n")],
        "does not set `evaluator`",
    ),
    "S003": ([("SKILL.md", "more\n" * 40)], "SKILL.md must have fewer than 50"),
    "S004": ([("knowledge.py", "def broken(:\n    pass\n")], "does not parse"),
    "S010": (
        [("tickets.py", _tool("return {}\n", ", ticket_id", "        ticket_id: the ticket.\n"))],
        "parameter `ticket_id` has no type hint",
    ),
    "S011": (
        [
            (
                "knowledge.py",
                '''
                def pin_article(session: dict, article_id: str) -> dict:
                    """Pin an article.

                    Args:
                        article_id: the article.
                    """
                    return {"pinned": article_id}
                ''',
            )
        ],
        "pin_article looks like a tool but has no @tool",
    ),
    "S012": ([("tickets.py", _tool('raise ValueError("no such queue")\n'))], "raises ValueError"),
    "S020": (
        [("tickets.py", "import time\n\n\ndef _stamp() -> float:\n    return time.time()\n")],
        "reads the clock (time.time)",
    ),
    "S021": (
        [("tickets.py", "import random\n" + _tool("return {'pick': random.choice(['a', 'b'])}\n"))],
        "uses randomness (random.choice)",
    ),
    "S030": ([("tickets.py", "seen_tickets = {}\n")], "module-level mutable dict `seen_tickets`"),
    "S031": (
        [("tickets.py", "_RECENT: tuple = ()\n" + _tool("global _RECENT\n_RECENT = (1,)\nreturn {}\n"))],
        "probe rebinds module-level `_RECENT`",
    ),
    "S040": (
        [
            (
                "knowledge.py",
                "from pathlib import Path\n" + _tool("return {'t': Path('kb.md').read_text()}\n"),
            )
        ],
        "file access (Path.read_text()) in a tool",
    ),
    "S041": (
        [("state.py", 'def _save() -> None:\n    (DATA / "cache.json").write_text("{}")\n')],
        "writes files (Path.write_text())",
    ),
    "S042": ([("tickets.py", "import argparse\n")], "imports argparse"),
    "S043": ([("tickets.py", "import threading\n\n_LOCK = threading.Lock()\n")], "creates a lock"),
    "S044": (
        [("auth.py", "import os\n" + _tool("return {'who': os.environ.get('USER')}\n"))],
        "uses os.environ",
    ),
    "S045": (
        [("state.py", 'def _secrets() -> str:\n    return Path("/etc/shadow").read_text()\n')],
        "reads a host path (Path.read_text()): the absolute path '/etc/shadow'",
    ),
    "S050": ([("knowledge.py", "import urllib.request\n")], "imports urllib.request"),
    "S051": ([("tickets.py", "def _calc(expr: str) -> int:\n    return eval(expr)\n")], "calls eval()"),
    "S060": (
        [
            (
                "evaluator.py",
                """
                import random


                @EVALUATOR.dimension("luck", 0.1, "a coin flip")
                def luck(state: dict[str, Any], scenario: Scenario) -> tuple[float, str]:
                    return random.random(), "luck"
                """,
            )
        ],
        "evaluator uses random.random",
    ),
    # a generated package (synthesis's marker) whose evaluator marks no goal dimension
    "S061": (
        [
            ("data/codegen.json", '{"generated": "codegen"}\n'),
            (
                "evaluator.py",
                '"expected ticket fields hold their target values")',
                '"expected ticket fields hold their target values", goal=True)',
            ),
            (
                "evaluator.py",
                '"resolution notes and comments carry the required facts"\n',
                '"resolution notes and comments carry the required facts", goal=True\n',
            ),
        ],
        "no dimension is marked goal=True",
    ),
}


def test_every_rule_has_a_broken_fixture() -> None:
    assert set(BREAKS) == set(RULES.names())


@pytest.mark.parametrize("rule_id", sorted(BREAKS))
def test_broken_package_fails_with_its_rule(rule_id: str, mutant: Callable[..., Path]) -> None:
    edits, message = BREAKS[rule_id]
    findings = static_audit(mutant(*edits))
    assert {f.rule for f in findings} == {rule_id}, "\n".join(map(str, findings))
    assert any(message in f.message for f in findings), "\n".join(map(str, findings))
    assert all(f.name == RULES.get(rule_id).name and f.file for f in findings)


def test_findings_carry_file_and_line(mutant: Callable[..., Path]) -> None:
    pkg = mutant(("tickets.py", "import time\n\n\ndef _stamp() -> float:\n    return time.time()\n"))
    (finding,) = static_audit(pkg)
    line = (pkg / "tickets.py").read_text().splitlines()[finding.line - 1]
    assert finding.file == "tickets.py" and "time.time()" in line
    assert str(finding).startswith(f"S020 wall-clock tickets.py:{finding.line}: ")


PRECISE = '''
"""Things that look suspicious to a naive linter but are fine."""

import random
import re
from collections.abc import Callable
from datetime import time

STEPS: dict[str, Callable[[str], str]] = {}
ALLOWED = frozenset({"a", "b"})
ORDER = ("x", "y")
DEFAULTS = {"limit": 10}


def _register(name: str, fn: Callable[[str], str]) -> None:
    STEPS[name] = fn


def step(name: str) -> Callable:
    def wrap(fn: Callable[[str], str]) -> Callable[[str], str]:
        STEPS[name] = fn
        return fn

    return wrap


_register("lower", str.lower)


@step("strip")
def _strip(text: str) -> str:
    return re.sub(r"\\s+", " ", text).replace("a", "b").strip()


def opening(hours: dict) -> time:
    step = hours.get("step")  # a local that shadows the decorator: not a use of it
    rng = random.Random(7)  # seeded: deterministic
    return time(9, rng.randint(0, 5) if step else 0)


def run(steps: list, session: dict) -> str:
    seen = {}
    seen["n"] = len(steps)
    session["log"].append(DEFAULTS["limit"])
    return STEPS[steps[0]](str(seen))
'''

IMPRECISE = """
BUFFER: list = []


def remember(x: str) -> None:
    BUFFER.append(x)
"""


def _with_module(tmp_path: Path, source: str) -> Path:
    dst = tmp_path / "transactional_workspace"
    shutil.copytree(archetypes.ARCHETYPES_DIR / "transactional_workspace", dst)
    (dst / "helpers.py").write_text(textwrap.dedent(source))
    return dst


def test_registries_constants_and_lookalikes_are_not_flagged(tmp_path: Path) -> None:
    findings = static_audit(_with_module(tmp_path, PRECISE))
    assert findings == [], "\n".join(map(str, findings))


def test_runtime_mutation_of_a_constant_is_flagged(tmp_path: Path) -> None:
    findings = static_audit(_with_module(tmp_path, IMPRECISE))
    assert [(f.rule, f.file, f.line) for f in findings] == [("S031", "helpers.py", 6)]
    assert "remember changes module-level `BUFFER` (calls .append())" in findings[0].message


def test_counter_fixture_crash_tool_is_reported() -> None:
    """The runtime's own test fixture has a deliberately buggy tool; the audit names it."""
    findings = static_audit(Path(__file__).parents[1] / "fixtures" / "counter_env")
    assert [(f.rule, f.file) for f in findings] == [("S012", "env.py")]
    assert "tool crash raises RuntimeError" in findings[0].message


def test_static_only_subset_of_rules(mutant: Callable[..., Path]) -> None:
    pkg = mutant(("tickets.py", "import argparse\nimport subprocess\n"))
    assert {f.rule for f in static_audit(pkg)} == {"S042", "S050"}
    assert {f.rule for f in static_audit(pkg, only=["S050"])} == {"S050"}


@pytest.mark.slow
def test_auditor_survives_real_world_code(tmp_path: Path) -> None:
    """Every module of dataclaw itself, dropped into a package as a helper, is audited without crashing;
    the infrastructure modules are (rightly) flagged: the sandbox runner spawns processes, the store locks."""
    import dataclaw

    src = Path(dataclaw.__file__).parent
    dst = _with_module(tmp_path, "")
    sources = sorted(p for p in src.rglob("*.py") if "archetypes" not in p.parts)
    for i, path in enumerate(sources):
        (dst / f"real_{i:03d}.py").write_text(path.read_text(encoding="utf-8"), encoding="utf-8")
    findings = static_audit(dst)
    by_file = {(src / "sandbox" / "runner.py"): "S050", (src / "envcraft" / "runtime" / "store.py"): "S043"}
    for path, rule_id in by_file.items():
        rel = f"real_{sources.index(path):03d}.py"
        assert any(f.rule == rule_id and f.file == rel for f in findings), rule_id


def test_a_rule_id_or_name_is_refused_twice() -> None:
    before = RULES.get("S020")
    with pytest.raises(ConfigError, match=r"audit rule name 'S020' is already registered"):
        rule("S020", "clock-again", "a second S020")(lambda pkg: iter(()))
    with pytest.raises(ConfigError, match=r"name 'wall-clock' of S999 is already the name of S020"):
        rule("S999", "wall-clock", "a second wall-clock")(lambda pkg: iter(()))
    assert RULES.get("S020") is before and "S999" not in RULES


NO_TODO = """\
from dataclaw.envcraft.audit.model import Finding
from dataclaw.envcraft.audit.rules import Rule


def _no_todo(pkg):
    for mod in pkg.code_modules():
        if "TODO" in mod.source:
            yield Finding(rule="S900", name="todo-left", file=mod.rel, line=0, message="a TODO")


NO_TODO = Rule("S900", "todo-left", "no TODO left in package code", _no_todo)
"""


def test_an_installed_entry_point_adds_a_rule(tmp_path: Path, monkeypatch, request) -> None:
    """A ``dataclaw.audit_rules`` entry point names a Rule under its id; one whose id is not the entry
    point's name is refused."""
    site = tmp_path / "site-packages"
    info = site / "dc_rules-0.1.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: dc_rules\nVersion: 0.1\n")
    (info / "RECORD").write_text("")
    (site / "dc_rules_mod.py").write_text(NO_TODO)
    monkeypatch.syspath_prepend(str(site))
    request.addfinalizer(lambda: sys.modules.pop("dc_rules_mod", None))
    (info / "entry_points.txt").write_text("[dataclaw.audit_rules]\nS900 = dc_rules_mod:NO_TODO\n")
    fresh = type(RULES)("audit rule")  # a fresh registry: the group of the kind, entry points loaded
    assert fresh.group == "dataclaw.audit_rules"
    assert isinstance(fresh.get("S900"), Rule) and fresh.get("S900").name == "todo-left"
    (info / "entry_points.txt").write_text("[dataclaw.audit_rules]\nS901 = dc_rules_mod:NO_TODO\n")
    with pytest.raises(ConfigError, match=r"S901 = dc_rules_mod:NO_TODO.*must be a Rule with id 'S901'"):
        type(RULES)("audit rule").names()
