"""Back-pressure for one endpoint: an AIMD concurrency window, answer timeouts that do not count time
queued behind our own requests, and a circuit breaker.

* :class:`AdaptiveLimiter` — at most ``limit`` requests in flight. The window starts at the configured
  concurrency, halves (at most once per window of requests, like TCP) on overload signals — timeouts,
  HTTP 429/503, dropped connections — and grows back by about one request per window of answers while
  latency is not rising, never above the configured value. A single-slot server therefore settles at a
  small window; a server with room keeps the configured one.
* Answer timeouts (:meth:`AdaptiveLimiter.answer_timeout`): a request's clock starts when it leaves our
  semaphore, never while it waits in it, and restarts whenever the endpoint answers another of our
  requests — the server is alive and working through a queue we filled, so a request waiting its turn on
  a one-slot server is not "no answer". A server that answers nothing for ``timeout`` seconds times out;
  ``cap`` (the request's overall deadline) bounds the wait in any case.
* :class:`CircuitBreaker` — after ``threshold`` failures in a row that condemn the endpoint (unreachable,
  wrong key, unknown model, no answer at all after every retry), further requests fail at once with the
  same one-line error until ``cooldown`` has passed; then one request may try again.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
import time
from collections import deque
from enum import StrEnum

from dataclaw.models.errors import CircuitOpenError, ModelError


class Signal(StrEnum):
    """How a request ended, as the window sees it."""

    OK = "ok"
    """An answer (including an error answer that says nothing about load)."""
    OVERLOAD = "overload"
    """A timeout, HTTP 429/503 or a dropped connection: the server has more than it can take."""
    NEUTRAL = "neutral"
    """Nothing to learn (cancelled, a local error)."""


class AdaptiveLimiter:
    """An AIMD concurrency window with FIFO waiters, bound to one event loop."""

    def __init__(self, limit: int, *, decrease: float = 0.5, latency_slack: float = 1.25) -> None:
        self.configured = limit
        self.limit = float(limit)
        self.lowest = float(limit)
        self.decrease = decrease
        self.latency_slack = latency_slack
        self.in_flight = 0
        self.max_in_flight = 0
        self.decreases = 0
        self._waiters: deque[asyncio.Future[int]] = deque()
        self._sent = 0  # requests let through so far (their sequence numbers)
        self._decreased_at = -1  # sequence number of the last request sent before the last decrease
        self._latency: float | None = None  # EWMA of answer latencies
        self._timers: dict[asyncio.Timeout, tuple[float, float]] = {}  # in-flight clocks: (timeout, cap)
        self._moved_at = float("-inf")  # loop time the clocks were last moved

    @property
    def window(self) -> int:
        """Requests allowed in flight now."""
        return max(1, int(self.limit))

    def state(self) -> dict[str, int]:
        """The numbers a run summary shows: configured, current and lowest window, most seen in flight."""
        return {
            "configured": self.configured,
            "effective": self.window,
            "lowest": max(1, int(self.lowest)),
            "max_in_flight": self.max_in_flight,
        }

    async def acquire(self) -> int:
        """Wait for a slot (first come, first served); return the request's sequence number."""
        if not self._waiters and self.in_flight < self.window:
            return self._take()
        fut: asyncio.Future[int] = asyncio.get_running_loop().create_future()
        self._waiters.append(fut)
        try:
            return await fut
        except asyncio.CancelledError:
            if fut.done() and not fut.cancelled():  # granted just before the cancel: give it back
                self.in_flight -= 1
                self._wake()
            else:
                with contextlib.suppress(ValueError):
                    self._waiters.remove(fut)
            raise

    def _take(self) -> int:
        self.in_flight += 1
        self.max_in_flight = max(self.max_in_flight, self.in_flight)
        self._sent += 1
        return self._sent - 1

    def _wake(self) -> None:
        while self._waiters and self.in_flight < self.window:
            fut = self._waiters.popleft()
            if not fut.done():
                fut.set_result(self._take())

    def release(self, seq: int, signal: Signal, latency_s: float | None = None) -> None:
        """End request ``seq``; adapt the window to how it ended."""
        self.in_flight -= 1
        if signal is Signal.OVERLOAD:
            if seq > self._decreased_at:  # one decrease per window: older requests saw the old window
                self.limit = max(1.0, self.limit * self.decrease)
                self.lowest = min(self.lowest, self.limit)
                self._decreased_at = self._sent - 1
                self.decreases += 1
        elif signal is Signal.OK and latency_s is not None:
            previous = self._latency
            self._latency = latency_s if previous is None else 0.8 * previous + 0.2 * latency_s
            if self.limit < self.configured and (
                previous is None or latency_s <= previous * self.latency_slack
            ):
                self.limit = min(float(self.configured), self.limit + 1.0 / self.limit)
        self._wake()

    def answer_timeout(self, timeout: float, cap: float) -> asyncio.Timeout:
        """An ``asyncio.timeout`` for one request's answer: ``timeout`` seconds without any answer from the
        endpoint, never past the loop time ``cap``; hand it to :meth:`done` afterwards."""
        clock = asyncio.timeout_at(min(asyncio.get_running_loop().time() + timeout, cap))
        self._timers[clock] = (timeout, cap)
        return clock

    def done(self, clock: asyncio.Timeout) -> None:
        """Stop moving ``clock`` (its request has ended)."""
        self._timers.pop(clock, None)

    def answered(self) -> None:
        """The endpoint answered a request: every other request's clock starts again (it is queued behind
        ours, not lost). Clocks move at most once per twentieth of the timeout, so a busy endpoint does
        not pay a timer reschedule per request in flight per answer (a clock may run 5% short)."""
        if not self._timers:
            return
        now = asyncio.get_running_loop().time()
        timeout = next(iter(self._timers.values()))[0]
        if now - self._moved_at < timeout / 20:
            return
        self._moved_at = now
        for clock, (timeout, cap) in self._timers.items():
            when = min(now + timeout, cap)
            current = clock.when()
            if current is None or when <= current or clock.expired():
                continue
            with contextlib.suppress(RuntimeError):  # a clock that is firing now cannot move
                clock.reschedule(when)


class CircuitBreaker:
    """Fail fast after ``threshold`` fatal failures in a row; thread-safe (one per endpoint and process)."""

    def __init__(self, threshold: int = 5, cooldown: float = 30.0) -> None:
        self.threshold = threshold
        self.cooldown = cooldown
        self.failures = 0
        self.last_error: ModelError | None = None
        self.opened_at: float | None = None
        self._lock = threading.Lock()

    def check(self) -> None:
        """Raise :class:`CircuitOpenError` while the circuit is open; after the cool-down let one
        request through (half-open: its outcome closes or reopens the circuit)."""
        with self._lock:
            if self.opened_at is None or self.last_error is None:
                return
            if time.monotonic() - self.opened_at >= self.cooldown:
                self.opened_at = time.monotonic()  # the trial request; others keep failing fast
                return
            err = self.last_error
        raise CircuitOpenError(
            f"{err} [failing fast: {self.failures} failures in a row]",
            model=err.model,
            raw_text=err.raw_text,
        )

    def success(self) -> None:
        if not self.failures and self.opened_at is None:  # the common case, without the lock
            return
        with self._lock:
            self.failures = 0
            self.opened_at = None
            self.last_error = None

    def failure(self, error: ModelError) -> None:
        """Count one fatal failure; open the circuit at the threshold."""
        with self._lock:
            self.failures += 1
            self.last_error = error
            if self.failures >= self.threshold:
                self.opened_at = time.monotonic()


_BREAKERS: dict[tuple[str, int], CircuitBreaker] = {}
_BREAKERS_LOCK = threading.Lock()


def breaker_for(endpoint: str, threshold: int, cooldown: float = 30.0) -> CircuitBreaker:
    """The process-wide breaker of ``endpoint`` (every model object on it with this threshold shares one)."""
    with _BREAKERS_LOCK:
        key = (endpoint, threshold)
        if key not in _BREAKERS:
            _BREAKERS[key] = CircuitBreaker(threshold, cooldown)
        return _BREAKERS[key]
