"""``WarmWorker`` under many caller threads through restarts: one job at a time, every reply to its caller.

``cleanup()`` once swapped in a fresh lock, so a thread already queued on the old lock could run beside a
caller that took the new one — two threads writing frames to one worker and reading each other's replies.
"""

from __future__ import annotations

import threading

import pytest

from dataclaw.sandbox import SandboxError, Status, WarmWorker

pytestmark = [pytest.mark.usefixtures("require_bwrap"), pytest.mark.slow]


class CountingWorker(WarmWorker):
    """Counts how many jobs are inside the worker's critical section at once (the most seen)."""

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self._count_lock = threading.Lock()
        self.active = 0
        self.most = 0

    def _job_locked(self, *args, **kwargs):  # type: ignore[no-untyped-def]
        with self._count_lock:
            self.active += 1
            self.most = max(self.most, self.active)
        try:
            return super()._job_locked(*args, **kwargs)
        finally:
            with self._count_lock:
                self.active -= 1


def test_callers_through_cleanups_and_kills_never_overlap(workspace, limits, policy):
    worker = CountingWorker(workspace, limits, policy=policy, preload=["json"])
    worker.start()
    outcomes: list[tuple[str, object]] = []
    errors: list[BaseException] = []
    record = threading.Lock()
    go = threading.Barrier(13)

    def caller(n: int) -> None:
        go.wait()
        for i in range(6):
            token = f"{n}-{i}"
            try:
                out = worker.call("json:loads", f'"{token}"', timeout=10)
            except BaseException as exc:  # noqa: BLE001 - collected and asserted below
                with record:
                    errors.append(exc)
                continue
            with record:
                outcomes.append((token, out))

    def disrupter() -> None:
        go.wait()
        for i in range(6):
            if i % 2:
                worker.kill()  # the running job (if any) loses its worker; the next one restarts it
            else:
                worker.cleanup()
            worker.call("json:loads", '"probe"', timeout=10)

    threads = [threading.Thread(target=caller, args=(n,)) for n in range(12)]
    threads.append(threading.Thread(target=disrupter))
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=240)
    worker.cleanup()
    assert not any(t.is_alive() for t in threads), "a caller hung"
    # a kill that lands while the worker is starting makes that start fail: a SandboxError, nothing else
    assert all(isinstance(e, SandboxError) and "failed to start" in str(e) for e in errors), errors
    assert len(outcomes) + len(errors) == 12 * 6
    assert worker.most == 1, f"{worker.most} jobs ran at once on one worker"
    ok = [(token, out) for token, out in outcomes if out.status is Status.OK]  # type: ignore[attr-defined]
    for token, out in ok:
        assert out.result == token, f"caller {token} got another job's reply {out.result!r}"  # type: ignore[attr-defined]
    failed = [out for _, out in outcomes if out.status is not Status.OK]  # type: ignore[attr-defined]
    for out in failed:  # a job whose worker was killed under it fails cleanly, classified, no traceback
        assert out.status is Status.ERROR and "Traceback" not in out.message  # type: ignore[attr-defined]
    why = [(out.message, out.duration_s) for out in failed]  # type: ignore[attr-defined]
    assert len(ok) >= 12 * 6 - 6 - len(errors), f"more jobs failed than the disrupter could have cost: {why}"
