"""ClawForge → environments: tool-API classes become packages run in the sandboxed env worker (and work
with env graph, tasks sample, audit and rollout); the released graphs, docs, chains and world data load
with side effects read from the docs. Bad input is a reject per item; a rerun resumes."""

from __future__ import annotations

import json
import tempfile
from pathlib import Path

import pytest

from dataclaw.cli.app import _run
from dataclaw.envcraft.graph import load_tool_graph
from dataclaw.envcraft.importers import Produces, run_import
from dataclaw.envcraft.importers.clawforge import check_chain, verb_side_effect
from dataclaw.envcraft.importers.clawforge_api import read_api
from dataclaw.envcraft.scenarios.catalogue import read_scenario_file
from dataclaw.envcraft.tasks.tool.verifier import allowance, derive_verifier
from dataclaw.envcraft.worker import open_environment
from dataclaw.sandbox import sandbox_available
from envcraft.importers import shapes
from support.openai_server import OpenAIServer, Reply

needs_sandbox = pytest.mark.skipif(not sandbox_available(), reason="needs the sandbox")


def test_tools_side_effects_and_fields_are_read_from_the_source_without_running_it() -> None:
    info = read_api(shapes.TODO_API)
    assert info.cls == "TodoListAPI" and info.state_keys == [
        "current_user",
        "projects",
        "tasks",
        "task_counter",
    ]
    assert info.description.startswith("A project and task management system")
    tools = {m.name: m for m in info.methods}
    assert set(tools) == {"auth_login", "create_task", "update_task_status", "get_task", "list_tasks"}
    assert tools["auth_login"].writes == {"current_user"}
    assert tools["create_task"].writes == {"tasks", "task_counter"}
    assert tools["update_task_status"].writes == {"tasks"}  # through the local alias task = self.tasks[...]
    assert tools["get_task"].writes == set() and tools["list_tasks"].writes == set()
    assert tools["list_tasks"].success_keys == ["tasks"]
    params = {p["name"]: p for p in tools["create_task"].params}
    assert params["project_id"]["schema"] == {"type": "integer"} and params["project_id"]["required"]
    assert params["assignee"]["nullable"] and not params["assignee"]["required"]
    assert params["priority"]["default"] == 3
    assert params["title"]["description"] == "The title of the new task."
    assert info.uses_wall_clock


@pytest.fixture(scope="module")
def library(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, object]:
    if not sandbox_available():
        pytest.skip("needs the sandbox")
    root = tmp_path_factory.mktemp("cf")
    src = shapes.tool_api_folder(root / "ClawForge-Tool_env")
    lib = root / "lib"
    summary = run_import("auto", src, lib, Produces.ENVIRONMENTS, options={"probe_timeout_s": 3})
    return lib, summary


@needs_sandbox
def test_tool_api_files_become_packages_and_bad_ones_rejects(library) -> None:
    lib, s = library
    assert (s.format, s.items, s.imported) == ("clawforge", 5, 1)
    assert s.rejects == {"import_timeout": 1, "import_error": 1, "syntax_error": 1, "unknown_tool": 1}
    messages = "\n".join(s.reject_messages)
    assert "HangingAPI did not finish loading within 3 s" in messages
    assert "RuntimeError: boom at import" in messages and "Traceback" not in messages
    assert "calls 'close_sprint', which TodoListAPI lacks" in messages
    row = json.loads((lib / "index.jsonl").read_text().splitlines()[0])
    assert row["passed"] and row["env"] == "todo_management_system" and row["path"] == "import"
    assert row["package"] == "envs/import/todo_management_system" and row["tools"] == 5
    assert {r["code"] for r in row["reasons"]} == {"wall_clock"}
    pkg = lib / row["package"]
    assert (pkg / "api_source.py").read_text() == shapes.TODO_API.lstrip()  # the file, unchanged
    again = run_import("clawforge", lib.parent / "ClawForge-Tool_env", lib, Produces.ENVIRONMENTS)
    assert again.resumed == 5 and again.records == 1


@needs_sandbox
def test_the_package_runs_in_its_env_worker_with_state_errors_and_clock(library) -> None:
    lib, _ = library
    handle = open_environment(lib / "envs" / "import" / "todo_management_system")
    assert not handle.builtin  # the imported class never runs in this process
    env_cls = handle.env_cls
    assert {s.name: s.side_effect for s in env_cls.tools} == {
        "auth_login": "write", "create_task": "write", "update_task_status": "write",
        "get_task": "read", "list_tasks": "read",
    }  # fmt: skip
    assert set(env_cls.scenarios()) == {"default", "busy_sprint"}
    with tempfile.TemporaryDirectory() as root:
        env = env_cls(root)
        sid = env.create_session("busy_sprint")
        assert env.call(sid, "update_task_status", task_id=2001, status="Done")["status"] == "ok"
        got = env.call(sid, "get_task", task_id=2001)["data"]
        assert got["status"] == "Done" and got["updated_at"] == "2025-01-01 09:00:00"  # the session clock
        bad = env.call(sid, "create_task", project_id=99, title="x")
        assert bad["status"] == "error" and bad["error"]["category"] == "invalid_reference"
        created = env.call(sid, "create_task", project_id=20, title="QA")["data"]
        assert created == {"id": 2002, "status": "Task created successfully"}
        state = env.get_session_state(sid)
        assert set(state["tasks"]) == {"2001", "2002"} and state["task_counter"] == 2003
        fresh = env.create_session("default")
        denied = env.call(fresh, "update_task_status", task_id=1001, status="Done")
        assert denied["error"]["category"] == "permission_denied"  # "Authentication required."


@needs_sandbox
def test_graph_sample_audit_and_rollout_work_on_the_imported_environment(
    library, tmp_path: Path, capsys
) -> None:
    lib, _ = library
    pkg = lib / "envs" / "import" / "todo_management_system"
    assert _run(["env", "graph", str(pkg), "--json"]) == 0
    graph = json.loads(capsys.readouterr().out)
    edges = {(e["source"], e["target"]): e["tier"] for e in graph["links"]}
    assert edges[("list_tasks", "update_task_status")] == "dataflow"
    assert _run(["tasks", "sample", "--library", str(lib), "-n", "8", "--out", str(tmp_path / "s")]) == 0
    chains = [json.loads(x) for x in (tmp_path / "s" / "chains.jsonl").read_text().splitlines()]
    writes = {"auth_login", "create_task", "update_task_status"}
    assert chains and all(c["steps"][-1] in writes for c in chains)

    # a tool task on the imported environment: gold chain from the scenario's reference solution
    env_cls = open_environment(pkg).env_cls
    with tempfile.TemporaryDirectory() as root:
        env = env_cls(root)
        sid = env.create_session("busy_sprint", session_id="gold")
        initial = env.get_session_state(sid)
        assert env.call(sid, "update_task_status", task_id=2001, status="Done")["status"] == "ok"
        final = env.get_session_state(sid)
    task = {
        "id": "task:imported-todo", "env": "todo_management_system", "env_module": str(pkg),
        "scenario_id": "busy_sprint", "persona": {"id": "p0", "description": "a lead"},
        "instruction": "Mark task 2001 as done.", "user_turns": ["Mark task 2001 as done."],
        "initial_state": initial, "verifier": derive_verifier(initial, final, {"tasks"}, guard=True,
                                                              allow=allowance(env_cls.tools, initial)),
        "gold_chain": [{"tool": "update_task_status", "params": {"task_id": 2001, "status": "Done"}}],
        "metadata": {},
    }  # fmt: skip
    (tmp_path / "t").mkdir()
    (tmp_path / "t" / "tasks.jsonl").write_text(json.dumps(task) + "\n")
    # the audit runs the soundness suite: the guard makes collateral writes cost, but one call on a short
    # list of tasks and statuses is a task a seeded random policy often completes, and it says so
    assert _run(["tasks", "audit", str(tmp_path / "t"), "-o", str(tmp_path / "a"), "--strict"]) == 1
    report = json.loads((tmp_path / "a" / "code_audit.jsonl").read_text().splitlines()[0])
    assert report["soundness"]["reasons"] == ["gamed_by_random"]
    assert report["soundness"]["figures"]["collateral"]["ok"] and report["soundness"]["figures"]["gold"]["ok"]
    plan = [("update_task_status", {"task_id": 2001, "status": "Done"})]

    def agent(req) -> Reply:
        n = sum(1 for m in req.body["messages"] if m["role"] == "assistant")
        return Reply.tool_call(*plan[n], call_id=f"c{n}") if n < len(plan) else Reply.text("Done.")

    with OpenAIServer(responder=agent) as server:
        args = ["tasks", "rollout", str(tmp_path / "t"), "-o", str(tmp_path / "r"), "--model"]
        assert _run([*args, f"{server.base_url}::agent"]) == 0
    rollout = json.loads((tmp_path / "r" / "rollouts.jsonl").read_text().splitlines()[0])
    assert rollout["reward"] == 1.0


# ---- the released claw data (../shared/data/clawforge, Apache-2.0) ---------------------------------------


def test_side_effects_come_from_the_docs_not_from_the_role_other() -> None:
    def effect(verb: str, role: str, help_: str = "", gold: frozenset[str] = frozenset()) -> str:
        return verb_side_effect(
            {"verb": verb, "action": verb.replace("-", "_"), "role": role, "help": help_}, gold
        )[0]

    assert effect("session-summary", "other", "Show session progress and summary.") == "read"
    assert effect("search", "other", "Search songs") == "read"
    assert effect("play", "other", "Play a song by ID") == "write"
    assert effect("window", "other", "Control window") == "write"
    assert effect("inspect-return", "other", "", frozenset({"inspect_return"})) == "write"  # a gold action
    assert effect("mystery", "other") == "read"  # unknown: never a chain's end
    effects = {"list-songs": "read", "play": "write"}
    ends_read = {"chain": [{"layer": "cli", "op": "play"}, {"layer": "cli", "op": "list-songs"}]}
    assert check_chain(ends_read, effects).startswith("ends_on_read")
    unknown = {"chain": [{"layer": "cli", "op": "teleport"}]}
    assert check_chain(unknown, effects).startswith("unknown_tool")
    assert (
        check_chain(
            {"chain": [{"layer": "cli", "op": "list-songs"}, {"layer": "cli", "op": "play"}]}, effects
        )
        is None
    )


def test_the_released_graphs_docs_chains_and_world_data_load(shared_data: Path, tmp_path: Path) -> None:
    lib = tmp_path / "lib"
    s = run_import("auto", shared_data / "clawforge", lib, Produces.ENVIRONMENTS, options={"audit": False})
    assert s.format == "clawforge" and s.items == 26 and s.imported == 26 and not s.rejects
    rows = {r["env"]: r for r in map(json.loads, (lib / "index.jsonl").read_text().splitlines())}
    for env, row in rows.items():
        assert row["passed"] is True and row["runnable"] is True, (env, row["reasons"])
        assert row["tools_reproduced"] >= 0.8 * row["tools_released"], env
        report = json.loads((lib / row["report"]).read_text())
        assert len(report["tools_reproduced"]) == row["tools_reproduced"], env
        graph = load_tool_graph(lib / row["graph"])
        roles = {d["role"] for n, d in graph.graph.nodes(data=True) if d.get("layer") != "scaffold"}
        assert roles <= {"read", "write"}, env  # no "other", "produce" or "guard" left
    music = load_tool_graph(lib / rows["music_player_envs"]["graph"])
    assert not music.is_write("search") and music.is_write("play")
    assert music.graph.nodes["search"]["clawforge_role"] == "other"
    # the released music-player chains all end on list-songs, a read: none is kept
    assert rows["music_player_envs"]["chains"]["dropped"] == {"ends_on_read": 8}
    kept = (lib / rows["logistics_envs"]["chains"]["file"]).read_text().splitlines()
    assert len(kept) == rows["logistics_envs"]["chains"]["kept"] > 0
    # world data without code: a spec source for env synth, with the data beside it
    spec = rows["smart_home_envs"]["spec"]
    (scenario,) = read_scenario_file(lib / spec["file"])
    assert (
        scenario.id == "smart_home_envs"
        and scenario.category == "claw"
        and "Commands:" in scenario.description
    )
    assert (lib / spec["data"] / "scenarios").is_dir() and spec["data_files"] > 3
    # sampled chains over the relabelled graphs end on writes
    args = [
        "tasks",
        "sample",
        "-n",
        "30",
        "--out",
        str(tmp_path / "s"),
        "--graph",
        str(lib / rows["music_player_envs"]["graph"]),
    ]
    assert _run(args) == 0
    chains = [json.loads(x) for x in (tmp_path / "s" / "chains.jsonl").read_text().splitlines()]
    assert chains and all(music.is_write(c["steps"][-1]) for c in chains)


@pytest.mark.slow
@needs_sandbox
def test_every_released_environment_is_runnable_audited_and_replays_a_released_chain(
    shared_data: Path, tmp_path: Path
) -> None:
    """The release made runnable: every environment's package passes the audit the synthesis path uses and
    keeps the released tools' names and parameters; a task grounded from a released chain replays its
    gold to 1.0 and its untouched state scores 0; doing harm (cancelling the target) is refused."""
    from dataclaw.envcraft.importers.clawforge_runnable import chain_steps
    from dataclaw.envcraft.runtime.task import ToolTask
    from dataclaw.envcraft.tasks import ground_chain
    from dataclaw.envcraft.tasks.tool.initial import build_initial_state, build_verifier
    from dataclaw.envcraft.tasks.tool.stages import replay_task

    lib = tmp_path / "lib"
    run_import("clawforge", shared_data / "clawforge", lib, Produces.ENVIRONMENTS)
    rows = {r["env"]: r for r in map(json.loads, (lib / "index.jsonl").read_text().splitlines())}
    assert len(rows) == 26 and all(r["audit"] is True and r["passed"] for r in rows.values())
    docs = json.loads((shared_data / "clawforge" / "tool_docs" / "logistics_envs.json").read_text())
    handle = open_environment(lib / rows["logistics_envs"]["package"])
    try:
        tools = handle.env_cls.tools
        adjust = next(v for v in docs["visible_verbs"] if v["verb"] == "adjust-inventory")
        spec = tools.get("adjust_inventory")
        params = {p.name: p for p in spec.params}
        assert set(params) == {a["name"].lstrip("-").replace("-", "_") for a in adjust["args"]}
        assert params["quantity_change"].schema["type"] == "integer" and params["quantity_change"].required
        assert not params["notes"].required and spec.side_effect == "write"
        with tempfile.TemporaryDirectory() as root:
            env = handle.env_cls(root)
            sid = env.create_session("fulfillment_inventory_reconcile")
            state = env.get_session_state(sid)
            assert "ret_001" in state["returns"] and "SKU-1002" in state["inventory"]  # the world data
            got = env.call(sid, "approve_return", return_id="ret_003", notes="ok")
            assert got["status"] == "error"  # the released flow: only a return under review is approved
    finally:
        handle.close()
    env = "auditor_impersonation_guard_env"
    chain = json.loads((lib / rows[env]["chains"]["file"]).read_text().splitlines()[0])
    handle = open_environment(lib / rows[env]["package"])
    try:
        steps = chain_steps(chain, handle.env_cls.tools)  # its CLI verbs and gold actions, as tools
        g = build_initial_state(handle.env_cls, ground_chain(handle.env_cls, steps, seed=0), seed=0)
        verifier, _ = build_verifier(g, handle.env_cls)
    finally:
        handle.close()
    task = ToolTask(
        id="t/cf", env=env, env_module=str(lib / rows[env]["package"]), scenario_id=g["scenario_id"],
        initial_state=g["initial_state"], verifier=verifier,
        gold_chain=[{"tool": s["tool"], "params": s["params"]} for s in g["steps"]],
    )  # fmt: skip
    assert replay_task(task)["score"] == 1.0
    assert replay_task(task, [])["score"] == 0.0
    # doing harm or extra costs: collateral writes, a wrong last write and a random policy all fall short
    from dataclaw.envcraft.quality.soundness import run_soundness

    report = run_soundness(task)
    assert report.passed, report.reasons
