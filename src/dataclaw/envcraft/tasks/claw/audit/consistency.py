"""The cross-artifact invariants of C.6 checked on the built and verified workspace: path, objective,
output-field and data consistency, the reference solution, answer uniqueness over two builds, and
information separation (the prompt leaks no expected value and no scoring internals)."""

from __future__ import annotations

import csv
import io
import json
import re
from pathlib import Path
from typing import Any

from dataclaw.envcraft.tasks.claw.audit.fields import (
    _answer_like_number,
    _answer_sets,
    _as_number,
    _key_strings,
    _number_constants,
    _threshold_numbers,
    _unstated_fields,
)
from dataclaw.envcraft.tasks.claw.audit.paths import (
    _PATH_TOKEN,
    _differing,
    _norm,
    constructed_paths,
    prompt_paths,
)
from dataclaw.envcraft.tasks.claw.audit.report import AuditReport, ClawAuditReason, _verifier_problem
from dataclaw.envcraft.tasks.claw.audit.static import _parse, _string_constants
from dataclaw.envcraft.tasks.claw.workspace import (
    SCORE_FILE,
    VerifierRun,
    WorkspaceTask,
    crash_summary,
    fresh_workspace,
    run_builder,
    run_solution,
    run_verifier,
    snapshot,
)
from dataclaw.sandbox import SandboxPolicy, Status

LEAK_WORDS = ("workplace_score", "verify_workplace", "total_score", "max_score")
"""Scoring internals a request must never show (C.5): a prompt holding them is rejected."""
SOFT_LEAK_WORDS = ("verifier", "scoring rule", "score file", "grader")
"""Words that may point at the checker, or may be the role's own vocabulary: a warning."""
_ABS_PATH = re.compile(r"(?<![\w.])/(?:home|root|tmp|workspace|usr|etc|var|mnt)(?:/[\w.-]+)+")
_NUMBER = re.compile(r"(?<![\w.])-?\d[\d,]*(?:\.\d+)?(?![\w])")
_ID_LIKE = re.compile(r"^[A-Za-z]+[-_][A-Za-z0-9_-]*\d{2,}[A-Za-z0-9_-]*$")
_FIELD_NAME = re.compile(r"^[a-z][a-z_]*$")
_TIMESTAMP = re.compile(
    r"\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}(?::\d{2}(?:\.\d+)?)?(?:Z|[+-]\d{2}:?\d{2})?|\b1[6-9]\d{8}(?:\.\d+)?\b"
)


def _leaks(task: WorkspaceTask, inputs: dict[str, bytes], solved: dict[str, bytes] | None) -> list[str]:
    """Expected values visible in the prompt: verifier literals and solution outputs that the input
    workspace does not already hold (those are derived answers, not user-specified data). Only values
    with a digit count (ids, amounts, dates): words are the task's vocabulary, not its answer; the keys
    the verifier reads (output field names) and the thresholds it compares with are what the request
    must say, so they never count."""
    tree = _parse(task.verifier)
    input_text = "\n".join([*inputs, *(b.decode("utf-8", "replace") for b in inputs.values())])
    input_numbers = {_as_number(t) for t in _NUMBER.findall(input_text)}
    keys = _key_strings(tree)
    outputs = set(prompt_paths(task.prompt))
    strings: set[str] = set()
    numbers: set[float] = set()
    for s in _string_constants(task.verifier):
        if _PATH_TOKEN.fullmatch(s) or "/" in s or s in input_text or s in keys:
            continue
        if any(s in p.split("/") or p.startswith(s) for p in outputs):
            continue
        if 3 <= len(s) <= 64 and any(ch.isdigit() for ch in s):
            strings.add(s)
    thresholds = _threshold_numbers(tree)
    for x in _number_constants(tree):
        if _answer_like_number(x) and x not in input_numbers and x not in thresholds:
            numbers.add(x)
    if solved is not None:
        for rel, data in solved.items():
            if rel == SCORE_FILE or inputs.get(rel) == data:
                continue
            text = data.decode("utf-8", "replace")
            for tok in _NUMBER.findall(text):
                x = _as_number(tok)
                if (
                    x is not None
                    and _answer_like_number(x)
                    and x not in input_numbers
                    and x not in thresholds
                ):
                    numbers.add(x)
            for tok in re.findall(r"[A-Za-z][\w-]*\d[\w-]*", text):
                if tok not in input_text and tok not in keys:
                    strings.add(tok)
    words = set(re.findall(r"[\w-]+(?:\.[\w-]+)*", task.prompt))
    found = sorted(s for s in strings if s in words or (" " in s and s in task.prompt))
    for answer in _answer_sets(tree):  # the whole expected selection spelled out in the request
        if all(_FIELD_NAME.match(a) or a in keys for a in answer):
            continue  # output field names (review, roadmap, papers_used): the request must name them
        if all(a in words or (" " in a and a in task.prompt) for a in answer):
            found.append(" + ".join(answer))
    prompt_numbers = {_as_number(t) for t in _NUMBER.findall(task.prompt)}
    found += [f"{x:.15g}" for x in sorted(numbers) if x in prompt_numbers]
    return found


def _input_reference(p: str, inputs: dict[str, bytes], dirs: set[str]) -> bool:
    """The prompt names an existing input, in full or by a partial path (``papers.json`` for
    ``db_dumps/papers.json``)."""
    return p in inputs or p in dirs or any(k.endswith("/" + p) for k in (*inputs, *dirs))


def _matches(a: str, b: str) -> bool:
    return a == b or a.endswith("/" + b) or b.endswith("/" + a)


def _consistency_checks(
    task: WorkspaceTask,
    report: AuditReport,
    inputs: dict[str, bytes],
    dirs: set[str],
    vr: VerifierRun,
    after: dict[str, bytes],
) -> None:
    exists = set(inputs) | dirs | {""}
    constants = _string_constants(task.verifier)
    statics = {
        _norm(s) for s in constants if _PATH_TOKEN.fullmatch(s.removeprefix("./")) and not s.startswith("/")
    }
    built = constructed_paths(task.verifier)
    traced = {_norm(p) for p in vr.inspected} - {""}
    prompt_outputs = [
        p for p in (_norm(x) for x in prompt_paths(task.prompt)) if not _input_reference(p, inputs, dirs)
    ]
    checked = traced | built | statics
    exact = [p for p in prompt_outputs if p in checked]
    # a bare file name in the prompt that the verifier inspects inside a folder: maybe the prose says where
    loose = [
        p
        for p in prompt_outputs
        if p not in exact and "/" not in p and any(c.endswith("/" + p) for c in checked)
    ]
    unchecked = [p for p in prompt_outputs if p not in exact and p not in loose]

    def extra_outputs(paths: set[str]) -> list[str]:
        out = []
        for v in sorted(paths):
            if v in exists or v == SCORE_FILE or _input_reference(v, inputs, dirs):
                continue
            if any(_matches(v, p) or p.startswith(v + "/") for p in prompt_outputs):
                continue  # the requested output, or its folder (ops/ for ops/review_summary.json)
            if "/" not in v and any(k.endswith("/" + v) for k in (*traced, *built)):
                continue  # a bare name the verifier joins onto a folder at run time
            out.append(v)
        return out

    observed = extra_outputs(traced | statics)
    if unchecked and (observed or not (exact or loose)):
        # the verifier inspects none of the requested outputs, or looks somewhere the prompt never names
        report.add(
            "path_consistency",
            (
                ClawAuditReason.PATH_MISMATCH,
                f"output paths requested by the prompt but not inspected by the verifier: {unchecked}",
            ),
        )
    elif unchecked:
        # the requested outputs it does check are there; the rest may be prose (a file named as an example)
        report.add(
            "path_consistency",
            (
                ClawAuditReason.PATH_MISMATCH,
                f"the prompt names {unchecked} besides {sorted(exact + loose)}, and the verifier never "
                "inspects them",
            ),
            warning=True,
        )
    elif loose:
        report.add(
            "path_consistency",
            (
                ClawAuditReason.PATH_MISMATCH,
                f"the prompt names {loose} but the verifier inspects them under another folder: "
                f"{sorted(c for c in checked if any(c.endswith('/' + p) for p in loose))[:4]}",
            ),
            warning=True,
        )
    elif not prompt_outputs:
        report.add(
            "path_consistency",
            (ClawAuditReason.NO_OUTPUT_PATH, "the prompt names no output path for the agent to produce"),
            warning=True,
        )
    else:
        report.add("path_consistency", None)

    inferred_only = [p for p in extra_outputs(built) if p not in observed]
    added = sorted(set(after) - set(inputs))
    changed = sorted(k for k in inputs if after.get(k) != inputs[k])
    if changed:
        report.add(
            "objective_consistency",
            (
                ClawAuditReason.VERIFIER_MUTATES,
                f"the verifier changed or removed workspace files: {changed[:5]}",
            ),
        )
    elif observed:
        report.add(
            "objective_consistency",
            (
                ClawAuditReason.OBJECTIVE_MISMATCH,
                f"the verifier checks outputs the prompt never asks for: {observed}",
            ),
        )
    elif added or inferred_only:
        what = (
            f"the verifier writes files besides {SCORE_FILE}: {added[:5]}"
            if added
            else f"the verifier's source builds paths the prompt never names: {inferred_only[:5]}"
        )
        kind = ClawAuditReason.VERIFIER_MUTATES if added else ClawAuditReason.OBJECTIVE_MISMATCH
        report.add("objective_consistency", (kind, what), warning=True)
    else:
        report.add("objective_consistency", None)
    unstated = _unstated_fields(task, inputs)
    report.add(
        "output_fields",
        None
        if not unstated
        else (
            ClawAuditReason.OBJECTIVE_MISMATCH,
            f"the verifier requires output fields the prompt never names (nor any input holds): "
            f"{unstated[:6]}; an agent that follows the prompt cannot know them",
        ),
    )
    text = "\n".join(b.decode("utf-8", "replace") for b in inputs.values())
    missing = sorted(
        s for s in set(constants) if _ID_LIKE.match(s) and s not in text and s not in task.prompt
    )
    report.add(
        "data_consistency",
        None
        if not missing
        else (
            ClawAuditReason.DATA_INCONSISTENT,
            f"the verifier checks identifiers absent from the built workspace and the prompt: {missing[:5]}",
        ),
    )


def _solution_check(
    task: WorkspaceTask,
    report: AuditReport,
    tmp: Path,
    policy: SandboxPolicy,
    wall_s: float | None,
    mount: str,
) -> tuple[dict[str, bytes] | None, VerifierRun | None]:
    """With a reference solution: build, solve, verify — it must score 1.0."""
    if task.solution is None:
        return None, None
    ws = fresh_workspace(tmp, "solved")
    if run_builder(task, ws, policy=policy, wall_s=wall_s).status is not Status.OK:
        return None, None
    out = run_solution(task, ws, policy=policy, wall_s=wall_s)
    if out.status is not Status.OK:
        crash = crash_summary(out.stderr, "solution.py", mount, out.message)
        report.add("solution", (ClawAuditReason.SOLUTION_CRASH, f"solution.py failed: {crash}"))
        return None, None
    solved = snapshot(ws)
    vr = run_verifier(task, ws, policy=policy)
    report.solved_score = vr.score
    report.metrics["solved_verifier"] = vr.metrics()
    if vr.defect:
        report.add("solution", _verifier_problem(vr, "solved", mount))
    elif vr.score is not None and vr.score < 1.0 - 1e-9:
        report.add(
            "solution",
            (ClawAuditReason.SOLUTION_NOT_FULL, f"the reference solution scores {vr.score:.2f}, not 1.0"),
        )
    else:
        report.add("solution", None)
    return solved, vr


def _canonical(rel: str, data: bytes) -> Any:
    """A file's content with record order and timestamps factored out: JSON with sorted lists, CSV and
    text as sorted lines."""
    text = _TIMESTAMP.sub("<t>", data.decode("utf-8", "replace"))

    def norm(x: Any) -> Any:
        if isinstance(x, dict):
            return {k: norm(v) for k, v in x.items()}
        if isinstance(x, list):
            return sorted((norm(v) for v in x), key=lambda v: json.dumps(v, sort_keys=True, default=str))
        return x

    if rel.endswith((".json", ".jsonl", ".ndjson")):
        try:
            return norm(json.loads(text))
        except ValueError:
            lines = text.splitlines()
            try:
                return sorted(json.dumps(norm(json.loads(ln)), sort_keys=True) for ln in lines if ln.strip())
            except ValueError:
                pass
    if rel.endswith((".csv", ".tsv")):
        rows = list(csv.reader(io.StringIO(text), delimiter="\t" if rel.endswith(".tsv") else ","))
        return rows[:1] + sorted(rows[1:])
    return sorted(text.splitlines())


def _verifier_reads(task: WorkspaceTask, *runs: VerifierRun | None) -> set[str]:
    """Workspace paths the verifier touches in a run or names in its source."""
    out = constructed_paths(task.verifier)
    out |= {_norm(s) for s in _string_constants(task.verifier) if _PATH_TOKEN.fullmatch(s.removeprefix("./"))}
    for vr in runs:
        if vr is not None:
            out |= {_norm(p) for p in vr.inspected}
    return out - {""}


def idle_transcript(task: WorkspaceTask) -> list[dict[str, Any]]:
    """The transcript of an episode in which the agent did and said nothing (the user's request alone):
    what every untouched run of the audit grades, so a grader that reads the transcript runs over real
    entries, never over an empty list that hides its bugs."""
    from dataclaw.envcraft.rollout.harness import openclaw_transcript

    return openclaw_transcript([{"role": "user", "content": task.prompt}])


def _uniqueness_check(
    task: WorkspaceTask,
    report: AuditReport,
    tmp: Path,
    inputs: dict[str, bytes],
    first: VerifierRun,
    reads: set[str],
    policy: SandboxPolicy,
    wall_s: float | None,
) -> None:
    ws = fresh_workspace(tmp, "b")
    if run_builder(task, ws, policy=policy, wall_s=wall_s).status is not Status.OK:
        report.add(
            "answer_uniqueness", (ClawAuditReason.NON_DETERMINISTIC, "the builder failed on a second run")
        )
        return
    second_inputs = snapshot(ws)
    differ = _differing(inputs, second_inputs)
    second = run_verifier(task, ws, policy=policy, transcript=idle_transcript(task))
    if second.score != first.score:
        report.add(
            "answer_uniqueness",
            (ClawAuditReason.NON_DETERMINISTIC, f"the verifier scored {first.score} then {second.score}"),
        )
        return
    if not differ:
        report.add("answer_uniqueness", None)
        return
    real = [
        k
        for k in differ
        if k not in inputs
        or k not in second_inputs
        or _canonical(k, inputs[k]) != _canonical(k, second_inputs[k])
    ]
    hardcoded = [k for k in real if not any(_matches(k, r) for r in reads)]
    if hardcoded:
        report.add(
            "answer_uniqueness",
            (ClawAuditReason.NON_DETERMINISTIC, f"two builds differ in {hardcoded[:5]}: no single answer"),
        )
    elif real:
        report.add(
            "answer_uniqueness",
            (
                ClawAuditReason.NON_DETERMINISTIC,
                f"two builds differ in {real[:5]}, which the verifier reads (it may derive its answer from "
                "them)",
            ),
            warning=True,
        )
    else:
        report.add(
            "answer_uniqueness",
            (
                ClawAuditReason.NON_DETERMINISTIC,
                f"two builds differ only in record order or timestamps in {differ[:5]} (same data)",
            ),
            warning=True,
        )


def _separation_check(
    task: WorkspaceTask, report: AuditReport, inputs: dict[str, bytes], solved: dict[str, bytes] | None
) -> None:
    leaks = _leaks(task, inputs, solved)
    lower = task.prompt.lower()
    vocab = [w for w in LEAK_WORDS if w in lower]
    soft = [w for w in SOFT_LEAK_WORDS if re.search(rf"\b{re.escape(w)}\b", lower)]
    abs_paths = _ABS_PATH.findall(task.prompt)
    if leaks:
        report.add(
            "information_separation",
            (ClawAuditReason.ANSWER_LEAK, f"the prompt reveals expected values: {leaks[:5]}"),
        )
    elif vocab:
        report.add(
            "information_separation",
            (ClawAuditReason.ANSWER_LEAK, f"the prompt mentions verification internals: {vocab}"),
        )
    elif soft or abs_paths:
        reason = ClawAuditReason.ANSWER_LEAK if soft else ClawAuditReason.PROMPT_ABSOLUTE_PATH
        what = (
            f"the prompt mentions the checker: {soft}"
            if soft
            else f"the prompt uses absolute paths: {abs_paths[:3]}"
        )
        report.add("information_separation", (reason, what), warning=True)
    else:
        report.add("information_separation", None)
