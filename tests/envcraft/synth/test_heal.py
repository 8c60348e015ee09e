"""Audit and self-healing: what a model answer may write (infrastructure and unsafe paths are taken out,
the skeleton is ours), audit-only runs, a repair answer that is not the schema is a failed round and the
next round still applies, a folder that is not a package is a reason, not a crash. (The full generation
loop, with recorded answers and the sandboxed audit, is in test_codegen.py.)"""

from __future__ import annotations

import asyncio
import importlib.util
import json
from pathlib import Path

import pytest

from dataclaw.core.errors import ConfigError
from dataclaw.envcraft.synth.heal import MARKER, apply_answer, audit_and_heal
from dataclaw.models import get_model
from support.openai_server import OpenAIServer, Reply

_spec = importlib.util.spec_from_file_location(
    "codegen_answers", Path(__file__).parent / "fixtures" / "codegen" / "answers.py"
)
answers = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(answers)

ENV = "crm_customer_management"


def _written(tmp: Path, answer: dict) -> Path:
    folder = tmp / ENV
    apply_answer(folder, answer, ENV, fresh=True)
    return folder


def test_infrastructure_and_unsafe_files_are_not_written(tmp_path: Path) -> None:
    answer = answers.good()
    extra = [
        ("store.py", "store", "def save_session(root, sid, state): ..."),
        ("cli.py", "cli", "import argparse"),
        ("__main__.py", "helper", "print('mine')"),
        ("__init__.py", "helper", "ENVIRONMENT = None"),
        ("../escape.py", "helper", "x = 1"),
        ("/etc/cron.d/job.py", "helper", "x = 1"),
        ("data/loader.py", "helper", "x = 1"),
        (".hidden.py", "helper", "x = 1"),
        ("run.sh", "helper", "rm -rf /"),
        ("env.py", "environment_class", "class Other: ..."),  # env.py was given already
    ]
    answer["files"] += [{"path": p, "content": c, "role": r} for p, r, c in extra]
    folder = tmp_path / ENV
    done = apply_answer(folder, answer, ENV, fresh=True)
    why = {s["path"]: s["why"] for s in done.stripped}
    assert set(why) == {p for p, _, _ in extra}
    assert "runtime provides" in why["store.py"] and "runtime provides" in why["cli.py"]
    assert "skeleton" in why["__main__.py"] and "leaves the package" in why["../escape.py"]
    assert "code under data/" in why["data/loader.py"] and "not allowed" in why["run.sh"]
    assert not (folder / "store.py").exists() and not (folder / "cli.py").exists()
    assert not (tmp_path / "escape.py").exists() and not (folder / "run.sh").exists()
    assert "class CrmCustomerManagement" in (folder / "env.py").read_text()  # the first copy kept
    assert "from .env import CrmCustomerManagement" in (folder / "__init__.py").read_text()
    marker = json.loads((folder / MARKER).read_text())
    assert marker["roles"]["customers.py"] == "domain_module" and marker["roles"]["README.md"] == "doc"


def test_a_folder_not_written_by_code_generation_is_never_replaced(tmp_path: Path) -> None:
    (tmp_path / ENV).mkdir()
    (tmp_path / ENV / "notes.txt").write_text("mine")
    with pytest.raises(ConfigError, match="refusing to replace"):
        apply_answer(tmp_path / ENV, answers.good(), ENV, fresh=True)
    assert (tmp_path / ENV / "notes.txt").read_text() == "mine"


def test_without_a_model_it_only_audits(tmp_path: Path) -> None:
    folder = _written(tmp_path, answers.wall_clock())
    out = asyncio.run(audit_and_heal(None, folder))
    assert not out.passed and (out.rounds, out.calls) == (0, 0) and out.path == "codegen"
    assert [r["rule"] for r in out.reasons] == ["S020"] and out.audit["findings"][0]["file"] == "customers.py"


def test_a_folder_that_is_not_a_package_is_a_reason(tmp_path: Path) -> None:
    out = asyncio.run(audit_and_heal(None, tmp_path))
    assert not out.passed and out.reasons[0]["code"] == "package_unreadable"
    assert "no __init__.py" in out.reasons[0]["message"]


def test_compiled_packages_are_healed_under_their_own_path(tmp_path: Path) -> None:
    folder = tmp_path / "compiled"
    (folder / "data").mkdir(parents=True)
    (folder / "__init__.py").write_text('"""compiled"""\n')
    (folder / "data" / "compile.json").write_text("{}\n")
    out = asyncio.run(audit_and_heal(None, folder))
    assert out.path == "compile" and not out.passed and {r["code"] for r in out.reasons} == {"static_audit"}


def test_a_repair_answer_not_in_the_schema_uses_a_round_and_the_next_one_applies(tmp_path: Path) -> None:
    folder = _written(tmp_path, answers.wall_clock())
    still_bad = {
        "files": [answers.file_of(answers.wall_clock(), "customers.py")],
        "delete": ["data/attachments/policy.md", "../../outside.txt"],
    }
    with OpenAIServer() as server:
        server.enqueue(Reply.text("I fixed it, trust me."), Reply.json(still_bad))
        model = get_model(f"{server.base_url}::writer", cache=False)
        out = asyncio.run(
            audit_and_heal(model, folder, repair_rounds=2, context={"spec": answers.spec_record()})
        )
        bodies = server.chat_bodies()
    assert not out.passed and (out.rounds, out.calls) == (2, 2)
    steps = [h for h in out.history if h["step"] == "repair"]
    assert steps[0] == {"step": "repair", "round": 1, "codes": ["not_output_schema"]}
    assert steps[1]["written"] == ["customers.py"] and steps[1]["deleted"] == ["data/attachments/policy.md"]
    assert {s["path"] for s in out.stripped} == {"delete ../../outside.txt"}
    assert not (folder / "data" / "attachments" / "policy.md").exists()
    assert [r["rule"] for r in out.reasons] == ["S020"]  # the audit after the last applied round
    prompt = bodies[0]["messages"][1]["content"]
    assert (
        "CRM & Customer Management" in prompt and "S020 wall-clock" in prompt and "### customers.py" in prompt
    )
    assert "could not be used" in bodies[1]["messages"][1]["content"]
