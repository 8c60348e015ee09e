"""Model usage saved as the run goes, so a killed run's manifest is true.

:class:`LiveUsage` wraps the backends of a run's models: a request is counted as *started* (and the
count written to ``manifest.json``) before it is sent, and as *answered* or *failed* (by error class)
when it ends; the usage ledger's totals (tokens, cost, cache hits per model) are saved with them, at
most every ``interval`` seconds and on :meth:`close`. The manifest's ``models.requests`` holds, per
model string and in total, what this and earlier invocations sent; ``models.usage`` is the ledger's.
A SIGKILL loses nothing that reached the server: every request sent was counted first.
"""

from __future__ import annotations

import threading
import time
import uuid
from typing import Any

from dataclaw.core.store import RunStore

_FIELDS = ("started", "answered", "failed")


class _CountedBackend:
    """A backend whose requests are counted by a :class:`LiveUsage` (everything else is the backend's)."""

    def __init__(self, inner: Any, live: LiveUsage, model: str) -> None:
        self._inner, self._live, self._model = inner, live, model

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__") or name in ("_inner", "_live", "_model"):  # e.g. while unpickling
            raise AttributeError(name)
        return getattr(self._inner, name)

    async def generate(self, request: Any) -> Any:
        self._live.started(self._model)
        try:
            out = await self._inner.generate(request)
        except BaseException as exc:
            self._live.finished(self._model, exc)
            raise
        self._live.finished(self._model, None)
        return out


class LiveUsage:
    """Request counts and the ledger's usage of one invocation, kept in the run's manifest."""

    def __init__(self, store: RunStore, ledger: Any = None, interval: float = 1.0) -> None:
        self.store = store
        self.ledger = ledger
        self.interval = interval
        self.invocation = getattr(ledger, "invocation", None) or uuid.uuid4().hex[:12]
        self._by_model: dict[str, dict[str, Any]] = {}
        self._lock = threading.Lock()
        self._last = 0.0
        self._dirty = False
        self.fatal: dict[str, BaseException] = {}
        """Fatal errors requests got (their class says ``fatal = True``), by message. The model may still
        recover from one (a single downgrade that drops images): the caller stops the run when a record
        failed with one of these (see :meth:`fatal_for`)."""
        models = store.manifest().get("models") or {}
        self._earlier = {
            k: v for k, v in ((models.get("requests") or {}).get("invocations") or {}).items()
            if k != self.invocation
        }  # fmt: skip

    def watch(self, model: Any) -> Any:
        """Count the requests of ``model`` (a :class:`~dataclaw.models.Model`); returns it."""
        if not isinstance(model.backend, _CountedBackend):
            model.backend = _CountedBackend(model.backend, self, model.model_id)
        return model

    def _entry(self, model: str) -> dict[str, Any]:
        return self._by_model.setdefault(model, {"started": 0, "answered": 0, "failed": 0, "errors": {}})

    def started(self, model: str) -> None:
        """A request is about to be sent: count it and save, before it leaves."""
        with self._lock:
            self._entry(model)["started"] += 1
            self._dirty = True
        self.save()

    def finished(self, model: str, error: BaseException | None) -> None:
        with self._lock:
            entry = self._entry(model)
            if error is None:
                entry["answered"] += 1
            else:
                entry["failed"] += 1
                name = type(error).__name__
                entry["errors"][name] = entry["errors"].get(name, 0) + 1
                if getattr(error, "fatal", False):
                    self.fatal[str(error)] = error
            self._dirty = True
        self.save(force=False)

    def fatal_for(self, message: str) -> BaseException | None:
        """The fatal request error a record failed with (its reject message names it), if any."""
        with self._lock:
            return self.fatal.get(message)

    def requests(self) -> dict[str, Any]:
        """``{"by_model", "total", "invocations"}`` over this and earlier invocations."""
        with self._lock:
            mine = {m: {**e, "errors": dict(e["errors"])} for m, e in self._by_model.items()}
        invocations = {**self._earlier, self.invocation: mine}
        by_model: dict[str, dict[str, Any]] = {}
        for inv in invocations.values():
            for model, e in inv.items():
                acc = by_model.setdefault(model, {"started": 0, "answered": 0, "failed": 0, "errors": {}})
                for key in _FIELDS:
                    acc[key] += int(e.get(key, 0))
                for name, n in (e.get("errors") or {}).items():
                    acc["errors"][name] = acc["errors"].get(name, 0) + n
        for acc in by_model.values():
            acc["in_flight"] = acc["started"] - acc["answered"] - acc["failed"]
        total = {key: sum(e[key] for e in by_model.values()) for key in (*_FIELDS, "in_flight")}
        return {"by_model": by_model, "total": total, "invocations": invocations}

    def usage(self) -> dict[str, Any]:
        """The ledger's usage as :meth:`UsageLedger.save` stores it (run total and per invocation)."""
        if self.ledger is None:
            return {}
        from dataclaw.models.ledger import merge_summaries

        models = self.store.manifest().get("models") or {}
        invocations = {**(models.get("invocations") or {}), self.ledger.invocation: self.ledger.summary()}
        return {"usage": merge_summaries(invocations.values()), "invocations": invocations}

    def save(self, force: bool = True) -> None:
        """Write the counts now (``force``, cheap: the stage counts are left as they are) or when
        ``interval`` has passed since the last write (then the stage counts are refreshed too)."""
        now = time.monotonic()
        with self._lock:
            timed = now - self._last >= self.interval
            if not self._dirty or not (force or timed):
                return
            self._dirty = False
            if timed:
                self._last = now
        fields = {"models": {**self.usage(), "requests": self.requests()}}
        if timed:
            self.store.update_manifest(**fields)
        else:
            self.store.merge_manifest(**fields)

    def close(self) -> None:
        """Final save (also on errors and interrupts)."""
        with self._lock:
            self._dirty = True
        self.save()
