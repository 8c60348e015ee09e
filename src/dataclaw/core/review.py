"""Human verdicts on a run's records: the run's append-only verdict file, read by the viewer and the exports.

A reviewer accepts, rejects or annotates a sample, a task or a model response in ``dataclaw view``;
each verdict is one JSON line appended to ``RUN/_viewer/verdicts.jsonl`` (record id, kind, verdict,
note, reviewer, time). Stage files are never edited: the verdict file sits beside them, and for each
record the last ``accept`` or ``reject`` line wins (notes accumulate). Exports read it through
:func:`review_filter`: a rejected record is left out, and with ``reviewed_only`` so is one nobody decided
on.

It lives in ``core`` because both engines' exporters read it and the viewer writes it.
"""

from __future__ import annotations

import fcntl
import json
import threading
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from dataclaw.core.errors import ConfigError

VERDICTS_FILE = Path("_viewer") / "verdicts.jsonl"
"""Where a run keeps its human verdicts (``_viewer`` is never read as a stage or a nested run)."""
VERDICTS = ("accept", "reject", "note")
DECISIONS = ("accept", "reject")
KINDS = ("sample", "task", "response")
MAX_ID, MAX_NOTE, MAX_REVIEWER = 1000, 10_000, 200
HUMAN_REJECTED, UNREVIEWED = "human_rejected", "unreviewed"
"""The reasons an export gives for leaving a record out because of its review."""

_lock = threading.Lock()


class VerdictError(ConfigError):
    """A verdict line that is not one (one line: which field, what is wrong)."""


@dataclass(frozen=True)
class Verdict:
    """One line of the verdict file."""

    id: str
    kind: str
    verdict: str
    note: str = ""
    reviewer: str = ""
    time: str = ""
    stage: str = ""

    @classmethod
    def from_dict(cls, raw: Any, *, now: bool = False) -> Verdict:
        """A checked verdict from untrusted JSON (a browser's POST, an imported file); ``now``: stamp it."""
        if not isinstance(raw, dict):
            raise VerdictError("a verdict must be a JSON object")
        rid, kind, verdict = raw.get("id"), raw.get("kind"), raw.get("verdict")
        if not isinstance(rid, str) or not rid or len(rid) > MAX_ID:
            raise VerdictError(f"id must be a record id (a non-empty string of at most {MAX_ID} characters)")
        if kind not in KINDS:
            raise VerdictError(f"kind must be one of {', '.join(KINDS)}, not {kind!r}")
        if verdict not in VERDICTS:
            raise VerdictError(f"verdict must be one of {', '.join(VERDICTS)}, not {verdict!r}")
        note, reviewer, stage = raw.get("note") or "", raw.get("reviewer") or "", raw.get("stage") or ""
        for name, value, most in (("note", note, MAX_NOTE), ("reviewer", reviewer, MAX_REVIEWER)):
            if not isinstance(value, str) or len(value) > most:
                raise VerdictError(f"{name} must be a string of at most {most} characters")
        if not isinstance(stage, str) or len(stage) > 100:
            raise VerdictError("stage must be a stage file name")
        if verdict == "note" and not note.strip():
            raise VerdictError("a note verdict needs the note's text")
        time = raw.get("time")
        if now or not time:
            time = datetime.now(UTC).isoformat(timespec="milliseconds")
        elif not isinstance(time, str) or not _iso(time):
            raise VerdictError(f"time must be an ISO 8601 timestamp, not {time!r}")
        return cls(rid, str(kind), str(verdict), note, reviewer.strip(), str(time), stage)

    def to_dict(self) -> dict[str, str]:
        out = {"id": self.id, "kind": self.kind, "verdict": self.verdict, "note": self.note}
        out.update(reviewer=self.reviewer, time=self.time)
        return {**out, "stage": self.stage} if self.stage else out


def _iso(text: str) -> bool:
    try:
        datetime.fromisoformat(text)
    except ValueError:
        return False
    return True


@dataclass
class Review:
    """What the verdict file says about one record: the deciding verdict and every note."""

    id: str
    kind: str
    decision: str | None = None
    """``accept`` / ``reject`` (the last one written), or None while nobody decided."""
    reviewer: str = ""
    time: str = ""
    notes: list[Verdict] = field(default_factory=list)
    history: list[Verdict] = field(default_factory=list)

    @property
    def note(self) -> str:
        """The latest note (a decision's note or a note verdict's)."""
        return next((v.note for v in reversed(self.history) if v.note), "")


@dataclass
class Reviews:
    """Every record's review in a run, and the lines of the file that could not be read."""

    by_id: dict[str, Review] = field(default_factory=dict)
    problems: list[str] = field(default_factory=list)
    lines: int = 0

    def get(self, rid: str, kind: str | None = None) -> Review | None:
        review = self.by_id.get(rid)
        return review if review is not None and (kind is None or review.kind == kind) else None

    def decision(self, rid: str, kind: str | None = None) -> str | None:
        review = self.get(rid, kind)
        return review.decision if review is not None else None


def verdict_path(run_dir: str | Path) -> Path:
    return Path(run_dir) / VERDICTS_FILE


def append_verdicts(run_dir: str | Path, verdicts: Iterable[Verdict]) -> int:
    """Append ``verdicts`` to the run's verdict file (one write under a file lock); returns how many."""
    lines = b"".join(json.dumps(v.to_dict(), ensure_ascii=False).encode("utf-8") + b"\n" for v in verdicts)
    if not lines:
        return 0
    path = verdict_path(run_dir)
    path.parent.mkdir(parents=True, exist_ok=True)
    with _lock, path.open("ab") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        try:
            if fh.tell() and not _ends_with_newline(path):  # a torn line before us stays its own line
                fh.write(b"\n")
            fh.write(lines)
            fh.flush()
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)
    return lines.count(b"\n")


def _ends_with_newline(path: Path) -> bool:
    with path.open("rb") as fh:
        fh.seek(-1, 2)
        return fh.read(1) == b"\n"


class ReviewReader:
    """A run's reviews, rereading only the lines appended since the last look (the file only grows; a
    shorter or replaced file is read again from the start). A last line without its newline is being
    written or was torn by a crash: reported, not applied, until its newline lands."""

    def __init__(self, run_dir: str | Path) -> None:
        self.path = verdict_path(run_dir)
        self._lock = threading.Lock()
        self._reset()

    def _reset(self) -> None:
        self._reviews = Reviews()
        self._offset = self._line = 0
        self._ino: int | None = None

    def read(self) -> Reviews:
        with self._lock:
            try:
                st = self.path.stat()
            except FileNotFoundError:
                self._reset()
                return Reviews()
            except OSError as exc:
                return Reviews(problems=[f"{VERDICTS_FILE}: cannot be read ({exc.strerror})"])
            if st.st_ino != self._ino or st.st_size < self._offset:
                self._reset()
                self._ino = st.st_ino
            tail = b""
            if st.st_size > self._offset:
                try:
                    with self.path.open("rb") as fh:
                        fh.seek(self._offset)
                        data = fh.read(st.st_size - self._offset)
                except OSError as exc:
                    return Reviews(problems=[f"{VERDICTS_FILE}: cannot be read ({exc.strerror})"])
                end = data.rfind(b"\n") + 1
                for raw in data[:end].split(b"\n")[:-1]:
                    self._line += 1
                    self._apply(raw)
                self._offset += end
                tail = data[end:]
            out = self._reviews
            if tail.strip():
                torn = f"{VERDICTS_FILE}: line {self._line + 1} is incomplete (torn); skipped"
                return Reviews(out.by_id, [*out.problems, torn], out.lines)
            return Reviews(out.by_id, list(out.problems), out.lines)

    def _apply(self, raw: bytes) -> None:
        out = self._reviews
        if not raw.strip():
            return
        try:
            v = Verdict.from_dict(json.loads(raw))
        except (ValueError, VerdictError) as exc:
            out.problems.append(f"{VERDICTS_FILE}: line {self._line} is not a verdict ({exc}); skipped")
            return
        out.lines += 1
        review = out.by_id.get(v.id)
        if review is None or review.kind != v.kind:
            review = out.by_id[v.id] = Review(v.id, v.kind)
        review.history.append(v)
        if v.verdict in DECISIONS:
            review.decision, review.reviewer, review.time = v.verdict, v.reviewer, v.time
        else:
            review.notes.append(v)


def read_reviews(run_dir: str | Path) -> Reviews:
    """The run's reviews (empty when nobody reviewed); bad lines are reported with file and line, skipped."""
    return ReviewReader(run_dir).read()


def review_filter(run_dir: str | Path, kind: str, reviewed_only: bool = False) -> Callable[[str], str | None]:
    """For an export: record id → why its review keeps it out (``human_rejected``, ``unreviewed``) or None."""
    reviews = read_reviews(run_dir)

    def why(rid: str) -> str | None:
        decision = reviews.decision(rid, kind)
        if decision == "reject":
            return HUMAN_REJECTED
        if reviewed_only and decision is None:
            return UNREVIEWED
        return None

    return why


def read_verdict_file(path: str | Path) -> list[Verdict]:
    """The verdicts of a downloaded file (the static viewer's), every line checked; one bad line is an
    error naming it (an import is all or nothing)."""
    src = Path(path)
    if not src.is_file():
        raise ConfigError(f"{src}: no such verdict file")
    out = []
    text = src.read_text(encoding="utf-8", errors="replace")
    for n, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        try:
            out.append(Verdict.from_dict(json.loads(line)))
        except ValueError:
            raise ConfigError(f"{src}: line {n} is not valid JSON") from None
        except VerdictError as exc:
            raise ConfigError(f"{src}: line {n}: {exc}") from None
    return out
