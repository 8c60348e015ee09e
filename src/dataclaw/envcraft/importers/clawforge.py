"""ClawForge (the EnvCraft paper's released code, ``zeng-yirong/clawforge``) → environments on our runtime.

Two kinds of source, one format name (``clawforge``), both for ``dataclaw env import``:

**Tool-API environments** (``ClawForge-Tool_env/*.py``): one file per environment, a class whose public
methods are the tools, with ``_load_scenario(scenario)`` / ``get_env_state()`` and a module-level default
state. Beside a file, ``<Stem>.json`` may hold scenarios (one state dict; ``{"scenarios": {id: state or
{"state", "title", "task_prompt", "reference_solution"}}}``; or BFCL's ``{"initial_config": {Class:
state}}``). Each file becomes a package ``LIB/envs/import/<name>/``: the file unchanged
(``api_source.py``), the tool descriptions read from it (:mod:`.clawforge_api`), ``env.py`` (the runtime
adapter, :mod:`.clawforge_package`), scenarios, README and SKILL. The code runs only in the sandbox: a
probe loads every scenario through the class (a hang is ``import_timeout``, a crash ``import_error``),
then the package is opened in its sandboxed env worker and a session made per scenario. The package
then works with ``env show/tools/call/graph``, ``tasks sample --library``, ``tasks synth``, ``rollout``.

**Claw environment releases** (``claw_chains/{claw_tool_graphs, claw_tool_env_docs, claw_chains_out}`` and
``<env>/{README.md, SKILL.md, data/}``, or the flat ``tool_graphs/ tool_docs/ chains/ envs/`` copy): one
item per environment in the tool docs. Its tool graph is loaded and re-labelled: ClawForge's node roles
(``read``, ``produce``, ``guard``, ``other``) are not side effects, so each verb's side effect is read from
the docs — a verb that a scenario's gold actions perform is a write, then the verb's own words (``get``,
``list``, ``show``, ``search`` … read; ``create``, ``update``, ``approve``, ``adjust`` … write), then its
help text; what stays unknown is a read, so no chain is ever made to end on it. The graph is saved to
``LIB/graphs/<env>_tool_graph.json`` (``tasks sample --graph``); the released chains are checked (every
CLI step a known verb, the last non-scaffold step a write) and kept in ``LIB/chains/<env>.jsonl``, the
others counted by reason. A world-data folder (no code) becomes a specification source for ``env synth``:
``LIB/specs/<env>.yaml`` (a scenario: README + SKILL + the verbs) with the folder's data beside it.
Each released environment is also made runnable (:mod:`.clawforge_runnable`): a spec built from its tool
docs and world data (:mod:`.clawforge_spec`, no model) is compiled by the spec compiler, the released
verbs are laid over it with their own names and parameters, and the package is placed in
``LIB/envs/import/<env>/`` with ``data/import_report.json`` (tools reproduced, rules reproduced, what was
dropped and why). Its row is ``passed`` (runnable) when the package loads in its env worker, passes the
environment audit and at least :data:`MIN_TOOL_SHARE` of its released tools answer.
"""

from __future__ import annotations

import json
import re
import shutil
import tempfile
import textwrap
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any, ClassVar

import yaml

from dataclaw.core.ids import root_id, stable_hash
from dataclaw.envcraft.importers.base import (
    IMPORT_PATH,
    IMPORTERS,
    ImportContext,
    Importer,
    ImportReason,
    ImportReject,
    Produces,
    SourceItem,
    library_row,
    mark_imported,
)
from dataclaw.envcraft.importers.clawforge_api import ApiSourceError, fields_of, read_api
from dataclaw.envcraft.importers.clawforge_runnable import build_runnable
from dataclaw.envcraft.importers.clawforge_spec import (  # noqa: F401 - the word lists stay importable here
    READ_WORDS,
    WRITE_WORDS,
    _gold_action_types,
    verb_side_effect,
)

PROBE_TIMEOUT_S = 20.0
MIN_TOOL_SHARE = 0.8
"""A released environment is runnable when its package loads, passes the audit and at least this share of
its released tools answer."""
BASE_TIME = "2025-01-01T09:00:00+00:00"
MAX_SOURCE_BYTES = 2 << 20
TEMPLATE = Path(__file__).parent / "clawforge_package" / "env.py"


def relabel_graph(graph: Any, docs: dict[str, Any]) -> dict[str, int]:
    """Set every CLI node's ``role`` to its side effect from the docs (the original role kept as
    ``clawforge_role``, the evidence as ``side_effect_source``); counts of read/write nodes."""
    gold = _gold_action_types(docs)
    verbs = {v["verb"]: v for v in docs.get("visible_verbs", []) + docs.get("hidden_verbs", [])}
    counts: Counter[str] = Counter()
    for name, data in graph.graph.nodes(data=True):
        if data.get("layer") == "scaffold":
            continue
        verb = verbs.get(name) or {"verb": name, "action": data.get("action"), "role": data.get("role")}
        effect, why = verb_side_effect(verb, gold)
        data.setdefault("clawforge_role", data.get("role"))
        data["role"], data["side_effect_source"] = effect, why
        counts[effect] += 1
    return dict(counts)


def check_chain(chain: dict[str, Any], effects: dict[str, str]) -> str | None:
    """None when a released chain is usable; else why not (``unknown_tool: …`` / ``ends_on_read: …``)."""
    steps = [s for s in chain.get("chain") or [] if isinstance(s, dict) and s.get("layer") != "scaffold"]
    for s in steps:
        if s.get("layer") == "cli" and s.get("op") not in effects:
            return f"unknown_tool: step calls {s.get('op')!r}, which the tool docs do not have"
    if not steps:
        return "no_environment_step: only scaffold steps (read, grep, finish)"
    last = steps[-1]
    if last.get("layer") == "cli" and effects.get(str(last.get("op"))) != "write":
        return f"ends_on_read: the last step {last.get('op')!r} is a read"
    return None


# ---- layouts -------------------------------------------------------------------------------------------


def _release_dirs(src: Path) -> dict[str, Path] | None:
    """The folders of a claw release: tool docs (required), graphs, chains, env world data."""
    for docs, graphs, chains, envs in (
        ("tool_docs", "tool_graphs", "chains", "envs"),
        (
            "claw_chains/claw_tool_env_docs",
            "claw_chains/claw_tool_graphs",
            "claw_chains/claw_chains_out",
            ".",
        ),
        ("claw_tool_env_docs", "claw_tool_graphs", "claw_chains_out", ".."),
    ):
        if (src / docs).is_dir() and any((src / docs).glob("*.json")):
            return {"docs": src / docs, "graphs": src / graphs, "chains": src / chains, "envs": src / envs}
    return None


def _api_files(src: Path) -> list[Path]:
    if src.is_file():
        return [src] if src.suffix == ".py" else []
    return sorted(p for p in src.rglob("*.py") if p.is_file() and not p.name.startswith("_"))


def _has_api_class(path: Path) -> bool:
    try:
        text = path.read_text(encoding="utf-8", errors="replace")[:MAX_SOURCE_BYTES]
    except OSError:
        return False
    return (
        "_load_scenario" in text and "get_env_state" in text and re.search(r"^class ", text, re.M) is not None
    )


def env_name(stem: str) -> str:
    """``TodoManagementSystem`` → ``todo_management_system`` (a package and import name)."""
    s = re.sub(r"(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])", "_", stem)
    s = re.sub(r"[^0-9a-zA-Z_]+", "_", s).strip("_").lower()
    return ("env_" + s) if not s or s[0].isdigit() else s


@IMPORTERS.add
class ClawForgeImporter(Importer):
    """ClawForge tool-API environment files, or a claw release (tool graphs, tool docs, chains, world
    data) → environments in a library."""

    name: ClassVar[str] = "clawforge"
    produces: ClassVar[frozenset[Produces]] = frozenset({Produces.ENVIRONMENTS})
    description: ClassVar[str] = (
        "ClawForge tool-API environments (one .py class per environment + scenario JSON) → runnable "
        "packages; claw releases (tool graphs, tool docs, chains, world data) → graphs, chains, spec sources"
    )

    def sniff(self, src: Path) -> str | None:
        if not src.exists():
            return "does not exist"
        if src.is_dir() and _release_dirs(src) is not None:
            return None
        files = _api_files(src)
        if any(_has_api_class(p) for p in files[:200]):
            return None
        if files:
            return "no .py file with a class defining _load_scenario() and get_env_state()"
        return "neither tool-API .py files nor a claw release (tool_docs/ or claw_chains/claw_tool_env_docs/)"

    def items(self, src: Path, ctx: ImportContext) -> Iterator[SourceItem]:
        release = _release_dirs(src) if src.is_dir() else None
        if release is not None:
            yield from self._release_items(release)
            return
        names: dict[str, str] = {}
        for path in _api_files(src):
            if not _has_api_class(path) and path.suffix == ".py" and "class " not in _head(path):
                continue  # helpers and scripts beside the environments
            key = path.relative_to(src).as_posix() if src.is_dir() else path.name
            name = env_name(path.stem)
            scen = path.with_suffix(".json")
            digest = stable_hash([_bytes(path), _bytes(scen) if scen.is_file() else b""], 16)
            payload = {"kind": "api", "file": str(path), "scenarios": str(scen) if scen.is_file() else None}
            if name in names:
                payload["duplicate_of"] = names[name]
            names.setdefault(name, key)
            yield SourceItem(key, digest, payload)

    def _release_items(self, dirs: dict[str, Path]) -> Iterator[SourceItem]:
        for docs in sorted(dirs["docs"].glob("*.json")):
            if docs.name.startswith("_"):  # _scaffold_tools.json: the agent's built-in tools, not an env
                continue
            env = docs.stem
            graph = dirs["graphs"] / f"{env}_tool_graph.json"
            if not graph.is_file():
                graph = dirs["graphs"] / f"{env}.json"
            chains = dirs["chains"] / f"{env}.jsonl"
            world = dirs["envs"] / env
            parts = [docs, graph, chains, world / "README.md", world / "SKILL.md"]
            digest = stable_hash([_bytes(p) if p.is_file() else b"" for p in parts], 16)
            yield SourceItem(
                f"release/{env}",
                digest,
                {
                    "kind": "release",
                    "env": env,
                    "docs": str(docs),
                    "graph": str(graph) if graph.is_file() else None,
                    "chains": str(chains) if chains.is_file() else None,
                    "world": str(world) if (world / "data").is_dir() else None,
                },
            )

    def convert(self, item: SourceItem, ctx: ImportContext) -> list[dict[str, Any]] | ImportReject:
        payload = item.payload or {}
        if "duplicate_of" in payload:
            return ImportReject(ImportReason.DUPLICATE, f"same environment name as {payload['duplicate_of']}")
        if payload.get("kind") == "release":
            return self._convert_release(item, ctx)
        return self._convert_api(item, ctx)

    # ---- tool-API environments ------------------------------------------------------------------------

    def _convert_api(self, item: SourceItem, ctx: ImportContext) -> list[dict[str, Any]] | ImportReject:
        path = Path(item.payload["file"])
        raw = path.read_bytes()
        if len(raw) > MAX_SOURCE_BYTES:
            return ImportReject(ImportReason.UNREADABLE, f"larger than {MAX_SOURCE_BYTES >> 20} MB")
        try:
            source = raw.decode("utf-8")
            info = read_api(source, path.name)
        except UnicodeDecodeError:
            return ImportReject(ImportReason.UNREADABLE, "not UTF-8 text")
        except SyntaxError as exc:
            return ImportReject(ImportReason.SYNTAX_ERROR, f"does not compile: {exc.msg} (line {exc.lineno})")
        except ApiSourceError as exc:
            return ImportReject(ImportReason.MALFORMED, str(exc))
        tools = [m for m in info.methods if m.skipped is None]
        if not tools:
            return ImportReject(
                ImportReason.MALFORMED, f"class {info.cls} has no public method to use as a tool"
            )
        scenarios = _read_scenarios(item.payload.get("scenarios"), info.cls)
        if isinstance(scenarios, ImportReject):
            return scenarios
        names = {m.name for m in tools}
        for sid, sc in scenarios.items():
            for step in sc.get("reference_solution") or []:
                tool = step.get("tool") if isinstance(step, dict) else None
                if tool not in names:
                    return ImportReject(
                        ImportReason.UNKNOWN_TOOL,
                        f"scenario {sid!r}: its reference solution calls {tool!r}, which {info.cls} lacks",
                        {"tool": str(tool), "scenario": sid},
                    )
        probe = _probe(source, info.cls, {sid: sc["state"] for sid, sc in scenarios.items()}, ctx)
        if isinstance(probe, ImportReject):
            return probe
        state_keys = info.state_keys or probe["keys"]
        api = _api_json(info, tools, state_keys, env_name(path.stem))
        folder = _write_package(ctx.out, api, source, scenarios, probe, info)
        check = _open_check(folder, ctx)
        name = api["name"]
        reasons = [
            {"code": "skipped_method", "message": f"{m.name}: {m.skipped}"} for m in info.methods if m.skipped
        ]
        if info.uses_wall_clock:
            reasons.append(
                {"code": "wall_clock", "message": "reads the wall clock: pointed at the session clock"}
            )
        if check is not None:
            reasons.insert(0, {"code": "load_failed", "message": check})
        rid = root_id("import-env", name, [item.key, item.fingerprint])
        writes = sum(1 for t in api["tools"] if t["side_effect"] == "write")
        return [
            library_row(
                "clawforge",
                rid, item.key, name, package=str(folder.relative_to(ctx.out)), passed=check is None,
                reasons=reasons, tools=len(api["tools"]), scenarios=len(scenarios) + 1,
                kind="clawforge_tool_api", writes=writes, reads=len(api["tools"]) - writes,
            )
        ]  # fmt: skip

    # ---- claw releases --------------------------------------------------------------------------------

    def _convert_release(self, item: SourceItem, ctx: ImportContext) -> list[dict[str, Any]] | ImportReject:
        from dataclaw.envcraft.graph import load_tool_graph

        p = item.payload
        env = p["env"]
        try:
            docs = json.loads(Path(p["docs"]).read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, ValueError) as exc:
            return ImportReject(ImportReason.UNREADABLE, f"tool docs are not JSON ({exc})")
        if not isinstance(docs, dict) or not isinstance(docs.get("visible_verbs"), list):
            return ImportReject(ImportReason.MALFORMED, "tool docs have no visible_verbs list")
        gold = _gold_action_types(docs)
        effects = {
            v["verb"]: verb_side_effect(v, gold)[0]
            for v in docs["visible_verbs"] + docs.get("hidden_verbs", [])
            if isinstance(v, dict) and "verb" in v
        }
        out: dict[str, Any] = {"kind": "clawforge_release", "verbs": len(docs["visible_verbs"])}
        out["side_effects"] = dict(Counter(effects[v["verb"]] for v in docs["visible_verbs"] if "verb" in v))
        if p.get("graph"):
            from dataclaw.core.errors import ConfigError

            try:
                graph = load_tool_graph(p["graph"], env=env)
            except ConfigError as exc:
                return ImportReject(ImportReason.MALFORMED, str(exc).replace(str(p["graph"]), "tool graph"))
            out["graph_roles"] = relabel_graph(graph, docs)
            dest = graph.save(ctx.out / "graphs" / f"{env}_tool_graph.json")
            out["graph"] = str(dest.relative_to(ctx.out))
        if p.get("chains"):
            kept, dropped = [], Counter()
            for line in Path(p["chains"]).read_text(encoding="utf-8").splitlines():
                if not line.strip():
                    continue
                try:
                    chain = json.loads(line)
                except ValueError:
                    dropped["malformed"] += 1
                    continue
                why = check_chain(chain, effects) if isinstance(chain, dict) else "malformed: not an object"
                if why is None:
                    kept.append(line)
                else:
                    dropped[why.split(":")[0]] += 1
            chains_out = ctx.out / "chains" / f"{env}.jsonl"
            chains_out.parent.mkdir(parents=True, exist_ok=True)
            chains_out.write_text("".join(x + "\n" for x in kept), encoding="utf-8")
            out["chains"] = {
                "kept": len(kept),
                "dropped": dict(dropped),
                "file": str(chains_out.relative_to(ctx.out)),
            }
        if p.get("world"):
            out["spec"] = _spec_source(Path(p["world"]), env, docs, ctx.out)
        rid = root_id("import-env", env, [item.key, item.fingerprint])
        world = Path(p["world"]) if p.get("world") else None
        built = build_runnable(
            env, docs, world, ctx.out, audit=bool(ctx.options.get("audit", True)), unsafe=ctx.policy.unsafe
        )
        report = built["report"]
        released = len(docs["visible_verbs"])
        share = built.get("tools_reproduced", 0) / max(1, released)
        min_share = float(ctx.options.get("min_tool_share", MIN_TOOL_SHARE))
        reasons = [built["reason"]] if built.get("reason") else []
        runnable = bool(built["runnable"])
        if runnable and share < min_share:
            reasons.append({"code": "tools_missing", "message": f"{share:.0%} of the released tools answer "
                            f"(at least {min_share:.0%} needed)"})  # fmt: skip
        rules = report.get("rules", [])
        out.update(
            package=built.get("package"),
            runnable=runnable and share >= min_share,
            audit=built.get("audit"),
            tools_released=released,
            tools_reproduced=built.get("tools_reproduced", 0),
            tools_share=round(share, 3),
            rules_found=len(rules),
            rules_enforced=sum(1 for r in rules if r.get("enforced")),
            rules_inferred=len(report.get("rules_inferred") or []),
            dropped=[f"{d['tool']}: {d['why']}" for d in report.get("tools_dropped", [])],
            report=f"{built['package']}/data/import_report.json" if built.get("package") else None,
        )
        passed = bool(out["runnable"])
        fields = {**out, "tools": len(effects)}
        return [library_row("clawforge", rid, item.key, env, passed=passed, reasons=reasons, **fields)]


# ---- helpers -------------------------------------------------------------------------------------------


def _bytes(path: Path) -> bytes:
    try:
        return path.read_bytes()
    except OSError:
        return b""


def _head(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8", errors="replace")[:65536]
    except OSError:
        return ""


def _read_scenarios(path: str | None, cls: str) -> dict[str, dict[str, Any]] | ImportReject:
    """Scenario id → ``{"state", "title", "task_prompt", "reference_solution"}`` from a scenario file."""
    if not path:
        return {}
    try:
        raw = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        return ImportReject(ImportReason.UNREADABLE, f"scenario file {Path(path).name} is not JSON ({exc})")
    if not isinstance(raw, dict):
        return ImportReject(ImportReason.MALFORMED, f"scenario file {Path(path).name} is not a JSON object")
    if isinstance(raw.get("initial_config"), dict):  # BFCL's shape: {Class: state}
        raw = {"scenarios": {Path(path).stem.lower(): raw["initial_config"].get(cls, {})}}
    entries = raw["scenarios"] if isinstance(raw.get("scenarios"), dict) else {Path(path).stem.lower(): raw}
    out: dict[str, dict[str, Any]] = {}
    for sid, entry in entries.items():
        sid = env_name(str(sid))
        if not isinstance(entry, dict):
            return ImportReject(ImportReason.MALFORMED, f"scenario {sid!r} is not an object")
        state = entry.get("state") if isinstance(entry.get("state"), dict) else entry
        out[sid] = {
            "state": {
                k: v for k, v in state.items() if k not in ("title", "task_prompt", "reference_solution")
            },
            "title": entry.get("title") or sid.replace("_", " "),
            "task_prompt": entry.get("task_prompt") or "",
            "reference_solution": entry.get("reference_solution") or [],
        }
    return out


_PROBE = r"""
import json, sys, types

SOURCE, CLS, SCENARIOS = sys.argv[1], sys.argv[2], sys.argv[3]
with open(SOURCE, encoding="utf-8") as fh:
    code = fh.read()
module = types.ModuleType("api_source")
exec(compile(code, "api_source.py", "exec"), module.__dict__)


def encode(value):
    if isinstance(value, dict):
        return {str(k): encode(v) for k, v in value.items()}
    if isinstance(value, (list, tuple, set, frozenset)):
        return [encode(v) for v in value]
    if isinstance(value, (str, int, float, bool)) or value is None:
        return value
    return str(value)


cls = getattr(module, CLS)
obj = cls()
obj._load_scenario({})
state = obj.get_env_state()
if not isinstance(state, dict):
    raise TypeError("get_env_state() returned %s, not a dict" % type(state).__name__)
out = {"keys": [str(k) for k in state], "scenarios": {}}
with open(SCENARIOS, encoding="utf-8") as fh:
    scenarios = json.load(fh)
for sid, scenario in scenarios.items():
    obj = cls()
    obj._load_scenario(scenario)
    out["scenarios"][sid] = sorted(str(k) for k in obj.get_env_state())
json.dumps(encode(state))
print("@@probe@@" + json.dumps(out))
"""


def _probe(
    source: str, cls: str, scenarios: dict[str, dict[str, Any]], ctx: ImportContext
) -> dict[str, Any] | ImportReject:
    """Import the class, build its default state and load every scenario — in the sandbox."""
    from dataclaw.envcraft.tasks.claw.workspace import crash_summary
    from dataclaw.sandbox import Limits, Status, run

    with tempfile.TemporaryDirectory(prefix="dataclaw-clawforge-") as tmp:
        ws = Path(tmp)
        (ws / "api_source.py").write_text(source, encoding="utf-8")
        (ws / "scenarios.json").write_text(json.dumps(scenarios), encoding="utf-8")
        mount = str(ws.resolve()) if ctx.policy.unsafe else ctx.policy.workspace_mount
        wall = float(ctx.options.get("probe_timeout_s", PROBE_TIMEOUT_S))
        limits = Limits(cpu_s=wall, wall_s=wall, memory_mb=1024, stdlib_only=True)
        outcome = run(
            _PROBE, ws, limits, policy=ctx.policy,
            args=[f"{mount}/api_source.py", cls, f"{mount}/scenarios.json"],
        )  # fmt: skip
    if outcome.status is Status.TIMEOUT:
        return ImportReject(
            ImportReason.IMPORT_TIMEOUT,
            f"{cls} did not finish loading within {limits.wall_s:g} s (in the sandbox)",
        )
    marker = next((ln for ln in outcome.stdout.splitlines() if ln.startswith("@@probe@@")), None)
    if outcome.status is not Status.OK or marker is None:
        why = crash_summary(outcome.stderr, "api_source.py", mount, outcome.message)
        if outcome.module:
            why = f"imports {outcome.module!r}, which is not in the standard library"
        return ImportReject(ImportReason.IMPORT_ERROR, f"{cls} failed to load in the sandbox: {why}")
    return json.loads(marker.removeprefix("@@probe@@"))


def _api_json(info: Any, tools: list[Any], state_keys: list[str], name: str) -> dict[str, Any]:
    specs = []
    for m in tools:
        fields = fields_of(m.writes, info, state_keys) if m.writes else []
        specs.append(
            {
                "name": m.name,
                "description": m.description,
                "params": m.params,
                "returns": m.returns,
                "success_keys": m.success_keys,
                "side_effect": "write" if fields else "read",
                "fields": fields,
            }
        )
    return {
        "name": name,
        "class": info.cls,
        "description": info.description,
        "state_keys": state_keys,
        "attributes": {k: a for k, a in info.attributes.items() if k in state_keys},
        "tools": specs,
    }


def _write_package(
    lib: Path, api: dict[str, Any], source: str, scenarios: dict[str, dict[str, Any]], probe: dict[str, Any],
    info: Any,
) -> Path:  # fmt: skip
    """Write the package into a build folder, then move it to ``LIB/envs/import/<name>/``."""
    name = api["name"]
    build = lib / ".build" / IMPORT_PATH / name
    if build.exists():
        shutil.rmtree(build)
    (build / "data" / "scenarios").mkdir(parents=True)
    (build / "__init__.py").write_text(
        f'"""{name}: ClawForge tool environment {info.cls}, imported by dataclaw."""\n\n'
        "from .env import ClawForgeEnvironment\n\nENVIRONMENT = ClawForgeEnvironment\n",
        encoding="utf-8",
    )
    (build / "__main__.py").write_text(
        f'"""``python -m {name} <command>``: the environment CLI."""\n\n'
        f"from {name} import ENVIRONMENT\nfrom dataclaw.envcraft.runtime.cli import main\n\n"
        "raise SystemExit(main(ENVIRONMENT))\n",
        encoding="utf-8",
    )
    shutil.copyfile(TEMPLATE, build / "env.py")
    mark_imported(build, "clawforge", name, cls=info.cls)
    (build / "api_source.py").write_text(source, encoding="utf-8")
    (build / "data" / "api.json").write_text(json.dumps(api, indent=2, ensure_ascii=False) + "\n", "utf-8")
    prompt = info.description or f"Use the {info.cls} tools to do what the user asks."
    all_scenarios = {"default": {"title": f"{info.cls} default state", "task_prompt": prompt, "state": None}}
    all_scenarios.update(scenarios)
    for sid, sc in all_scenarios.items():
        doc: dict[str, Any] = {
            "scenario_id": sid,
            "title": sc["title"],
            "task_prompt": sc.get("task_prompt") or prompt,
            "base_time": BASE_TIME,
            "description": f"imported from ClawForge ({info.cls})",
        }
        if sc.get("state") is not None:
            doc["evaluation"] = {"initial_state": sc["state"]}
        if sc.get("reference_solution"):
            doc["reference_solution"] = sc["reference_solution"]
        (build / "data" / "scenarios" / f"{sid}.json").write_text(
            json.dumps(doc, indent=2, ensure_ascii=False, default=str) + "\n", encoding="utf-8"
        )
    tools = "\n".join(f"- `{t['name']}` ({t['side_effect']}): {t['description']}" for t in api["tools"])
    (build / "README.md").write_text(
        f"# {name}\n\n{prompt}\n\nImported by `dataclaw env import clawforge` from the ClawForge tool-API "
        f"environment `{info.cls}` (file kept unchanged as `api_source.py`). State keys: "
        f"{', '.join(api['state_keys'])}.\n\n## Tools\n\n{tools}\n",
        encoding="utf-8",
    )
    writes = [t["name"] for t in api["tools"] if t["side_effect"] == "write"]
    reads = [t["name"] for t in api["tools"] if t["side_effect"] == "read"]
    skill = [
        f"# {name}",
        "",
        textwrap.shorten(prompt, 300),
        "",
        f"- Read tools: {', '.join(reads)[:600] or 'none'}",
        f"- Write tools: {', '.join(writes)[:600] or 'none'}",
        "- A failed call returns an error message; fix the arguments and call again.",
    ]
    (build / "SKILL.md").write_text("\n".join(skill) + "\n", encoding="utf-8")
    dest = lib / "envs" / IMPORT_PATH / name
    if dest.exists():
        shutil.rmtree(dest)
    dest.parent.mkdir(parents=True, exist_ok=True)
    shutil.move(str(build), dest)
    return dest


_CHECK = """
import sys, tempfile
from dataclaw.envcraft.worker import open_environment
env_cls = open_environment(sys.argv[1]).env_cls
if not len(env_cls.tools):
    sys.exit("the package has no tools")
with tempfile.TemporaryDirectory() as root:
    env = env_cls(root)
    for sid in env_cls.scenarios():
        env.get_session_state(env.create_session(sid))
print("ok")
"""


def _open_check(folder: Path, ctx: ImportContext) -> str | None:
    """Open the package in its sandboxed env worker and make a session of every scenario — from a fresh
    dataclaw process, so no worker of this one is tied to the package: None when it works, else why not."""
    import subprocess
    import sys

    try:
        done = subprocess.run(
            [sys.executable, "-c", _CHECK, str(folder)], capture_output=True, text=True, timeout=180
        )
    except subprocess.TimeoutExpired:
        return "the package did not load in its env worker within 180 s"
    if done.returncode == 0 and done.stdout.strip().endswith("ok"):
        return None
    last = (done.stderr.strip().splitlines() or ["no output"])[-1]
    return f"the package does not load in its env worker: {last[:300]}"


def _spec_source(world: Path, env: str, docs: dict[str, Any], lib: Path) -> dict[str, Any]:
    """A claw world-data folder → ``LIB/specs/<env>.yaml`` (one env synth scenario: what README and
    SKILL say, the verbs) and ``LIB/specs/<env>/data`` (the world data, copied)."""
    readme = _text(world / "README.md")
    skill = _text(world / "SKILL.md")
    first = next((ln.strip() for ln in readme.splitlines() if ln.strip() and not ln.startswith("#")), "")
    verbs = ", ".join(
        f"{v['verb']} ({v.get('help') or v.get('role')})" for v in docs.get("visible_verbs", [])[:40]
    )
    description = (
        " ".join(x for x in (first, f"Commands: {verbs}." if verbs else "", _skill_rules(skill)) if x).strip()
        or f"The {env} claw environment."
    )
    spec = {
        "id": re.sub(r"[^a-z0-9_]+", "_", env.lower()).strip("_"),
        "category": "claw",
        "name": env.replace("_", " "),
        "description": description[:4000],
    }
    specs = lib / "specs"
    specs.mkdir(parents=True, exist_ok=True)
    (specs / f"{env}.yaml").write_text(
        yaml.safe_dump({"scenarios": [spec]}, sort_keys=False, allow_unicode=True), "utf-8"
    )
    data = specs / env / "data"
    if data.exists():
        shutil.rmtree(data)
    shutil.copytree(world / "data", data)
    for doc in ("README.md", "SKILL.md"):
        if (world / doc).is_file():
            shutil.copyfile(world / doc, specs / env / doc)
    n_files = sum(1 for p in data.rglob("*") if p.is_file())
    return {"file": f"specs/{env}.yaml", "data": f"specs/{env}/data", "data_files": n_files}


def _text(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return ""


def _skill_rules(skill: str) -> str:
    rules = [ln.strip("-* ").strip() for ln in skill.splitlines() if ln.strip().startswith(("-", "*"))]
    return ("Rules: " + " ".join(rules[:8])) if rules else ""
