"""Code checks of a claw workspace task (EnvCraft C.5 rules and the C.6 cross-artifact invariants).

``audit_task(task)`` builds the workspace in the sandbox, runs the verifier on the untouched workspace (and,
when the task ships a reference ``solution.py``, on the solved one) and checks:

* ``code_only``: builder and verifier import only the standard library; the verifier has no network,
  subprocess, LLM or credential access (static, AST) — and both run on a stdlib-only interpreter with no
  network anyway, so a third-party import that does run is a ``non_stdlib_import`` naming the module;
* ``builder``: the builder finishes, writes only inside the workspace, plants no escaping symlinks (a crash
  names the exception, file and line);
* ``verifier``: it runs on the untouched workspace and writes a well-formed ``workplace_score.json``
  (a crash, timeout or malformed score is a *data defect*, routed to repair, never an agent failure; a
  valid score file followed by a non-zero exit is scored, and the exit status kept as a metric);
* ``untouched_floor``: the untouched workspace scores no more than ``floor`` (default 0): a verifier
  that gives credit for doing nothing is rejected; scores are ``total_score / declared max`` (C.5: 100);
* ``score_details``: the written details cover the declared max (else ``partial_details``, a warning);
* ``path_consistency``: every output path the prompt asks for is inspected by the verifier, verbatim
  (traced in the run, or built by ``os.path.join``/pathlib in the verifier's source);
* ``objective_consistency``: the verifier inspects no output the prompt does not ask for and changes
  nothing in the workspace but its score file;
* ``output_fields``: every field name the verifier reads from or expects in the output (``data["k"]``,
  ``.get("k")``, an expected record's keys, a ``required_fields`` list) is named by the prompt or held by
  the inputs (else ``objective_mismatch``: the prompt says "format as before" and the verifier wants
  ``accuracy_diff``);
* ``data_consistency``: identifiers the verifier checks literally exist in the built workspace; with a
  solution, the solved workspace scores 1.0;
* ``answer_uniqueness``: two builds agree (up to record order and timestamps) and the verifier gives the
  same score on them (a builder that draws different data each time has no single answer);
* ``information_separation``: the prompt holds no expected value and no scoring internals.

Checks have a severity: a failing ``error`` rejects the task; a ``warning`` (a heuristic that is not sure)
is kept in the record and the summary and rejects nothing.

By layer: :mod:`.report` (reasons, checks, the report), :mod:`.static` (the code-only rules),
:mod:`.paths` (path analysis), :mod:`.fields` (output fields and numbers), :mod:`.consistency` (the C.6
invariants), :mod:`.dynamic` (the sandboxed runs and :func:`audit_task`).
"""

from dataclaw.envcraft.tasks.claw.audit.dynamic import audit_task
from dataclaw.envcraft.tasks.claw.audit.fields import required_output_keys
from dataclaw.envcraft.tasks.claw.audit.paths import constructed_paths, prompt_paths
from dataclaw.envcraft.tasks.claw.audit.report import (
    DEFECT_REASONS,
    VERIFIER_CHECKS,
    AuditReport,
    Check,
    ClawAuditReason,
    Severity,
)
from dataclaw.envcraft.tasks.claw.audit.static import code_problems

__all__ = [
    "DEFECT_REASONS",
    "VERIFIER_CHECKS",
    "AuditReport",
    "Check",
    "ClawAuditReason",
    "Severity",
    "audit_task",
    "code_problems",
    "constructed_paths",
    "prompt_paths",
    "required_output_keys",
]
