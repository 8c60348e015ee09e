"""The Ray executor: the same stages on a Ray cluster (or a Ray started on this machine).

- **CPU stages** run as Ray Data ``map_batches``. A stage that holds state (it overrides ``setup``:
  decoders, OCR, embedders) runs on an actor pool: each actor calls ``setup`` once, then processes
  batches of records. A stateless stage runs as Ray tasks on the cluster's already-started workers, so
  it pays no actor start-up (seconds per actor on a small machine). A list of inputs is one dataset; a
  lazy input (a generator, the previous stage of a chain) is cut into windows of ``window`` records,
  one dataset each (so setup runs once per actor per window).
- **ASYNC stages** (model calls) keep ``concurrency`` calls in flight in all, taken from the input as
  calls finish. A stage that calls a model endpoint runs them from the driver (the endpoint is what
  scales; the usage ledger and response cache stay the driver's); a stage that runs its model itself
  (it declares GPUs, or ``async_on_actors=True``) runs on async Ray actors, set up once each, whose
  response cache is the stage's own (a sqlite file in the run directory, reopened by path in each
  actor): an answer an actor got is there for a resumed run.
- **Other work** (claw audits: :meth:`RayExecutor.calls`) runs on a pool of Ray actors, ``workers``
  calls in flight.
- **Hosted objects** (rollouts and calibration: :meth:`RayExecutor.hosting`): a rollout's harness (the
  env session or the sandboxed workspace, its tools and verifier) lives on a Ray actor while the agent
  loop and its model calls stay on the driver, so every answer goes through the driver's response cache
  and usage ledger. An actor that dies takes its harnesses with it: their rollouts start again on a
  live actor, and the model calls they repeat are answered from the cache (never paid twice).

The driver owns the store: workers return records, the runner writes them. Actors are restarted when
their process dies and the calls in flight with it are retried (``max_restarts`` / ``max_task_retries``),
so a killed worker loses no record. Stages declare per-worker resources (:class:`Demand`), asked of the
cluster per actor; a demand no node can meet is one clear error before anything is written.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import logging
import os
import pickle
import socket
import threading
from collections.abc import AsyncIterator, Callable, Iterable, Iterator
from pathlib import Path
from typing import Any, TypeVar
from urllib.parse import urlparse

from dataclaw.core.errors import ConfigError, DataclawError, Reject
from dataclaw.pipeline.executors.base import (
    ExecutorSettings,
    Host,
    HostLost,
    Items,
    Stopping,
    aiter_items,
    crash_reject,
    is_fatal,
    process_one,
    register_executor,
    scratch_tempdir,
    worker_crashed,
)
from dataclaw.pipeline.executors.local import LocalExecutor
from dataclaw.pipeline.stage import Demand, Record, Resources, Result, Stage

log = logging.getLogger(__name__)

T = TypeVar("T")
R = TypeVar("R")

RAY_HINT = (
    "--executor ray needs Ray, which is not installed: pip install 'dataclaw[ray]' "
    "(or pip install 'ray[data]>=2.50,<3')"
)
CONNECT_TIMEOUT_S = 5.0
MB = 1024 * 1024
RESTARTS = 3
"""How often a dead actor is restarted (its calls in flight retried on the new one)."""


class RayWorkersDying(DataclawError):
    """Ray workers of a stage died more often than they may be restarted (a record that crashes its
    worker every time, or a node out of memory)."""


def import_ray() -> Any:
    """``ray``, or a ConfigError with the install hint."""
    try:
        import ray
    except ImportError:
        raise ConfigError(RAY_HINT) from None
    return ray


def _probe(address: str) -> None:
    """Fail fast with one line when ``address`` (``host:port`` or ``ray://host:port``) does not answer:
    ``ray.init`` itself retries for minutes."""
    if address == "auto":
        return
    parsed = urlparse(address if "://" in address else f"tcp://{address}")
    host, port = parsed.hostname, parsed.port
    if not host or not port:
        raise ConfigError(f"--ray-address {address!r}: expected HOST:PORT, ray://HOST:PORT or auto")
    try:
        with socket.create_connection((host, port), timeout=CONNECT_TIMEOUT_S):
            pass
    except OSError as exc:
        raise ConfigError(
            f"--ray-address {address}: no Ray cluster answers there ({exc.strerror or exc}); "
            "start one with `ray start --head` or check the address"
        ) from None


def connect(address: str | None, num_cpus: int | None = None) -> Any:
    """Join the cluster at ``address`` (None: ``RAY_ADDRESS``, else start Ray here with ``num_cpus``)."""
    ray = import_ray()
    if ray.is_initialized():
        return ray
    address = address or os.environ.get("RAY_ADDRESS") or None
    if address:
        _probe(address)
    try:
        ray.init(
            address=address,
            num_cpus=None if address else num_cpus,
            include_dashboard=False,
            log_to_driver=False,
            configure_logging=False,
            ignore_reinit_error=True,
        )
    except (ConnectionError, RuntimeError, ValueError) as exc:
        where = f"the Ray cluster at {address}" if address else "a local Ray"
        raise ConfigError(f"cannot start or join {where}: {str(exc).splitlines()[0][:200]}") from None
    _quiet(ray)
    return ray


def _quiet(ray: Any) -> None:
    """Ray Data's own progress logs and bars off: the command draws its own progress. Its per-operator
    resource reservation off too: each dataset here is one map over records already in memory, and
    reserving half the cluster for other operators left one of two CPUs idle (0.68x the local executor
    on 2 cores, 1.2x without it: ``benchmarks/bench_executors.py``)."""
    ctx = ray.data.DataContext.get_current()
    ctx.op_resource_reservation_enabled = False
    ctx.enable_progress_bars = False
    with contextlib.suppress(AttributeError):
        ctx.enable_operator_progress_bars = False
    for name in ("ray.data", "ray._private", "ray"):
        logging.getLogger(name).setLevel(logging.WARNING)
    logging.getLogger("ray.data._internal.progress").setLevel(logging.ERROR)  # "progress bars disabled"


def _node_fits(resources: dict[str, float], demand: Demand) -> bool:
    return (
        resources.get("CPU", 0.0) >= demand.cpus
        and resources.get("GPU", 0.0) >= demand.gpus
        and resources.get("memory", 0.0) >= demand.memory_mb * MB
    )


def _node_text(resources: dict[str, float]) -> str:
    return (
        f"{resources.get('CPU', 0):g} CPU, {int(resources.get('memory', 0) // MB)} MB memory, "
        f"{resources.get('GPU', 0):g} GPU"
    )


def check_demand(stage_name: str, demand: Demand, nodes: list[dict[str, Any]]) -> None:
    """ConfigError unless some alive node has ``demand`` in total."""
    alive = [n.get("Resources", {}) for n in nodes if n.get("Alive", n.get("alive", True))]
    if any(_node_fits(r, demand) for r in alive):
        return
    biggest = max(alive, key=lambda r: (r.get("GPU", 0), r.get("CPU", 0)), default={})
    raise ConfigError(
        f"stage {stage_name} asks for {demand.describe()} per worker, and no node of the Ray cluster has "
        f"that (largest: {_node_text(biggest) if biggest else 'no node'})"
    )


def _remote_args(demand: Demand) -> dict[str, Any]:
    args: dict[str, Any] = {"num_cpus": demand.cpus}
    if demand.gpus:
        args["num_gpus"] = demand.gpus
    if demand.memory_mb:
        args["memory"] = demand.memory_mb * MB
    return args


def _named_args(demand: Demand) -> dict[str, Any]:
    """``map_batches``' own resource parameters."""
    args = _remote_args(demand)
    return {"num_cpus": args["num_cpus"], "num_gpus": args.get("num_gpus"), "memory": args.get("memory")}


def _restartable() -> dict[str, Any]:
    """Actors of a Ray Data pool restart when their process dies, and retry the batch they held."""
    return {"max_restarts": RESTARTS, "max_task_retries": RESTARTS}


# worker side ---------------------------------------------------------------------------------------
def _process_batch(stage: Stage, batch: dict[str, Any]) -> dict[str, Any]:
    """``{"k", "blob"}`` records in, ``{"k", "blob", "ok"}`` results out (a crash is that record's reject)."""
    ks, blobs, oks = [], [], []
    for k, blob in zip(batch["k"], batch["blob"], strict=True):
        result, ok = process_one(stage, pickle.loads(blob))
        ks.append(int(k))
        blobs.append(pickle.dumps(result))
        oks.append(ok)
    return {"k": ks, "blob": blobs, "ok": oks}


class _BatchWorker:
    """A Ray Data actor for a stage with state: set up once, then batches in, results out."""

    def __init__(self, stage_blob: bytes, scratch: str | None) -> None:
        self.stage: Stage = pickle.loads(stage_blob)
        self.scratch = Path(scratch) if scratch else None
        with scratch_tempdir(self.scratch):
            self.stage.setup()

    def __call__(self, batch: dict[str, Any]) -> dict[str, Any]:
        with scratch_tempdir(self.scratch):
            return _process_batch(self.stage, batch)


def _batch_task(batch: dict[str, Any], stage_blob: bytes, scratch: str | None) -> dict[str, Any]:
    """A Ray Data task for a stateless stage (no ``setup``): runs on any started worker."""
    with scratch_tempdir(Path(scratch) if scratch else None):
        return _process_batch(pickle.loads(stage_blob), batch)


def stateless(stage: Stage) -> bool:
    """Whether the stage keeps no per-worker state (it does not override :meth:`Stage.setup`)."""
    return type(stage).setup is Stage.setup


class _AsyncWorker:
    """An async Ray actor for ASYNC stages: set up once, many ``aprocess`` calls at a time."""

    def __init__(self, stage_blob: bytes) -> None:
        self.stage: Stage = pickle.loads(stage_blob)
        self.stage.setup()

    def pid(self) -> int:
        return os.getpid()

    async def run(self, blob: bytes) -> tuple[bytes, bool]:
        item = pickle.loads(blob)
        try:
            return pickle.dumps(await self.stage.aprocess(item)), True
        except Exception as exc:
            if is_fatal(exc):
                raise
            return pickle.dumps(crash_reject(self.stage, item, exc)), False


class _CallWorker:
    """A Ray actor that runs functions (an audit, a rollout) for :meth:`RayExecutor.calls`."""

    def pid(self) -> int:
        return os.getpid()

    def run(self, fn: Callable[[Any], Any], item: Any) -> Any:
        return fn(item)


class _Gone(Exception):
    """The object asked for is not on this actor (the actor was restarted since it was made)."""


class _Raised:
    """An exception a hosted object's method raised, carried back to be raised again on the driver."""

    def __init__(self, exc: BaseException) -> None:
        try:
            pickle.dumps(exc)
            self.exc = exc
        except Exception:  # noqa: BLE001 - an exception that does not pickle arrives as its text
            self.exc = RuntimeError(f"{type(exc).__name__}: {exc}")


class _HostWorker:
    """A threaded Ray actor holding objects (harnesses) by key; the driver calls their methods."""

    def __init__(self) -> None:
        self.objects: dict[int, Any] = {}

    def pid(self) -> int:
        return os.getpid()

    def make(self, key: int, factory: Callable[..., Any], args: tuple, kwargs: dict) -> Any:
        try:
            obj = factory(*args, **kwargs)
        except Exception as exc:  # noqa: BLE001 - raised again on the driver
            return _Raised(exc)
        self.objects[key] = obj
        # its methods run here; its plain attributes (a harness's task_id, kind) are read once, now
        names = [n for n in dir(obj) if not n.startswith("_")]
        methods = [n for n in names if callable(getattr(type(obj), n, None))]
        values = {n: v for n in names if isinstance(v := getattr(obj, n, None), str | int | float | bool)}
        return methods, values

    def call(self, key: int, name: str, args: tuple, kwargs: dict) -> Any:
        obj = self.objects.get(key)
        if obj is None:
            return _Raised(_Gone(key))
        try:
            return getattr(obj, name)(*args, **kwargs)
        except Exception as exc:  # noqa: BLE001 - raised again on the driver
            return _Raised(exc)

    def drop(self, key: int) -> None:
        self.objects.pop(key, None)


class _Hosted:
    """The driver's handle on an object living on a :class:`_HostWorker`: its methods are blocking remote
    calls (the agent loop runs them in threads, as it runs a local harness's), its plain attributes the
    values read when it was made. A dead actor raises :class:`HostLost`, on this call and every later one;
    ``cleanup`` (the object's last call) removes it from its actor."""

    def __init__(
        self, ray: Any, actor: Any, key: int, made: tuple[list[str], dict[str, Any]], release: Callable
    ) -> None:
        methods, values = made
        self.__dict__.update(values)
        self._ray, self._actor, self._key, self._release = ray, actor, key, release
        self._methods, self._lost = frozenset(methods), False

    def __getattr__(self, name: str) -> Any:
        if name.startswith("_") or name not in self._methods:
            raise AttributeError(f"{name!r}: a hosted object exposes its methods and plain attributes only")

        def method(*args: Any, **kwargs: Any) -> Any:
            if self._lost:
                raise HostLost("the worker holding this object died")
            try:
                out = self._ray.get(self._actor.call.remote(self._key, name, args, kwargs))
            except (self._ray.exceptions.RayActorError, self._ray.exceptions.WorkerCrashedError) as exc:
                self._gone()
                raise HostLost(f"the worker holding this object died ({type(exc).__name__})") from None
            if isinstance(out, _Raised):
                if isinstance(out.exc, _Gone):
                    self._gone()
                    raise HostLost("the worker holding this object was restarted")
                raise out.exc
            if name == "cleanup":
                self._release()
            return out

        return method

    def _gone(self) -> None:
        self._lost = True
        self._release()


# run side ------------------------------------------------------------------------------------------
@register_executor
class RayExecutor:
    """Stages on Ray. ``address``: the cluster (None: ``RAY_ADDRESS``, else a Ray on this machine with
    ``workers`` CPUs); ``workers``: actors per stage (default: the cluster's CPUs / the stage's CPUs);
    ``concurrency``: ASYNC calls in flight; ``batch_size``: records per ``map_batches`` call;
    ``window``: records per dataset when the input is lazy; ``async_on_actors``: ASYNC stages on actors
    (default: only those that declare GPUs)."""

    name = "ray"

    def __init__(
        self,
        address: str | None = None,
        workers: int | None = None,
        concurrency: int = 16,
        *,
        batch_size: int = 64,
        window: int = 20_000,
        async_on_actors: bool | None = None,
    ) -> None:
        self.address = address
        self.workers = workers
        self.concurrency = max(1, concurrency)
        self.batch_size = max(1, batch_size)
        self.window = max(1, window)
        self.async_on_actors = async_on_actors
        self.ray = connect(address, workers)

    @classmethod
    def from_settings(cls, settings: ExecutorSettings, workers: int | None, concurrency: int) -> RayExecutor:
        """Ray is imported (and started or joined) only when this executor is asked for."""
        return cls(address=settings.ray_address, workers=workers, concurrency=concurrency)

    def check(self, stages: Iterable[Stage]) -> None:
        nodes = self.ray.nodes()
        for stage in stages:
            check_demand(stage.name, stage.demand, nodes)

    def _actors(self, demand: Demand, want: int | None = None) -> int:
        if want is not None:
            return max(1, want)
        cpus = self.ray.cluster_resources().get("CPU", 1.0)
        return max(1, int(cpus // max(demand.cpus, 0.01)))

    # CPU stages: Ray Data --------------------------------------------------------------------------
    async def map(
        self, stage: Stage, items: Items, scratch: Path | None = None
    ) -> AsyncIterator[tuple[Record, Result, bool]]:
        self.check([stage])
        if stage.resources is Resources.ASYNC:
            on_actors = self.async_on_actors if self.async_on_actors is not None else stage.demand.gpus > 0
            if on_actors:
                mapped = self._map_async(stage, aiter_items(items))
            else:  # the driver's event loop, the same bounded window as on one machine
                mapped = LocalExecutor(workers=1, concurrency=self.concurrency).map(stage, items)
            async for out in mapped:
                yield out
            return
        source = aiter_items(items)
        while True:
            window: list[Record] = []
            async for item in source:
                window.append(item)
                if len(window) >= self.window:
                    break
            if not window:
                return
            async for out in self._map_window(stage, window, scratch):
                yield out
            if len(window) < self.window:
                return

    async def _map_window(
        self, stage: Stage, window: list[Record], scratch: Path | None
    ) -> AsyncIterator[tuple[Record, Result, bool]]:
        ray = self.ray
        if scratch is not None:
            scratch.mkdir(parents=True, exist_ok=True)
        rows = [{"k": k, "blob": pickle.dumps(item)} for k, item in enumerate(window)]
        size = min(self._actors(stage.demand, self.workers), max(1, len(window) // self.batch_size or 1))
        blocks = max(1, -(-len(rows) // self.batch_size))
        args = (self.ray.cloudpickle.dumps(stage), str(scratch) if scratch else None)
        ds = ray.data.from_items(rows, override_num_blocks=blocks)
        if stateless(stage):  # tasks on the started workers: no actor to start, at most ``size`` at once
            ds = ds.map_batches(
                _batch_task, fn_args=args, concurrency=size, batch_size=self.batch_size,
                batch_format="default", max_retries=RESTARTS, **_named_args(stage.demand),
            )  # fmt: skip
        else:
            ds = ds.map_batches(
                _BatchWorker, fn_constructor_args=args, compute=ray.data.ActorPoolStrategy(size=size),
                batch_size=self.batch_size, batch_format="default", **_named_args(stage.demand),
            )  # fmt: skip
        seen: set[int] = set()
        batches = iter(ds.iter_batches(batch_size=None, batch_format="default"))
        try:
            while True:
                try:
                    batch = await asyncio.to_thread(next, batches, None)
                except ray.exceptions.RayError as exc:
                    fatal = _fatal_cause(exc)
                    if fatal is not None:
                        raise fatal from None
                    if not _died(ray, exc):
                        raise
                    raise RayWorkersDying(
                        f"stage {stage.name}: Ray workers kept dying ({type(exc).__name__}); "
                        f"{len(window) - len(seen)} records are retried on the next run "
                        "(rerun with --executor local to find a record that crashes its worker)"
                    ) from None
                if batch is None:
                    return
                for k, blob, ok in zip(batch["k"], batch["blob"], batch["ok"], strict=True):
                    seen.add(int(k))
                    yield window[int(k)], pickle.loads(blob), bool(ok)
        finally:
            with contextlib.suppress(Exception):
                batches.close()  # type: ignore[attr-defined]

    # ASYNC stages: async actors --------------------------------------------------------------------
    async def _map_async(
        self, stage: Stage, source: AsyncIterator[Record]
    ) -> AsyncIterator[tuple[Record, Result, bool]]:
        first = await anext(source, None)
        if first is None:
            return
        ray = self.ray
        n = self._actors(stage.demand, self.workers)
        per = max(1, -(-self.concurrency // n))
        cls = ray.remote(_AsyncWorker).options(
            max_concurrency=per,
            max_restarts=RESTARTS,
            max_task_retries=RESTARTS,
            **_remote_args(stage.demand),
        )
        blob = self.ray.cloudpickle.dumps(stage)
        actors = [cls.remote(blob) for _ in range(n)]
        self.last_actors = actors  # (tests kill one of them)
        load = [0] * n
        running: dict[Any, tuple[Record, int]] = {}
        pending: list[Record] = [first]
        exhausted = False
        try:
            while True:
                while len(running) < self.concurrency:
                    if not pending and not exhausted:
                        nxt = await anext(source, None)
                        if nxt is None:
                            exhausted = True
                        else:
                            pending.append(nxt)
                    if not pending:
                        break
                    item = pending.pop()
                    a = min(range(n), key=load.__getitem__)
                    load[a] += 1
                    running[actors[a].run.remote(pickle.dumps(item))] = (item, a)
                if not running:
                    return
                done, _ = await asyncio.to_thread(
                    ray.wait, list(running), num_returns=1, timeout=None, fetch_local=True
                )
                for ref in done:
                    item, a = running.pop(ref)
                    load[a] -= 1
                    try:
                        out, ok = await asyncio.to_thread(ray.get, ref)
                    except ray.exceptions.RayTaskError as exc:
                        cause = exc.as_instanceof_cause()
                        if is_fatal(cause):
                            raise cause from None
                        yield item, crash_reject(stage, item, cause), False
                        continue
                    except (ray.exceptions.RayActorError, ray.exceptions.WorkerCrashedError):
                        yield item, worker_crashed(stage, item, RESTARTS + 1), False
                        continue
                    yield item, pickle.loads(out), ok
        finally:
            for ref in running:
                with contextlib.suppress(Exception):
                    ray.cancel(ref, force=True)
            for actor in actors:
                with contextlib.suppress(Exception):
                    ray.kill(actor)

    # other work: actors ----------------------------------------------------------------------------
    def calls(
        self, fn: Callable[[T], R], items: Iterable[T], workers: int, *, stopping: Stopping | None = None
    ) -> Iterator[tuple[T, R]]:
        """``workers`` Ray actors run ``fn`` (a module-level function, pickled by reference), one call
        each at a time; items are taken lazily. A call's exception ends the iteration, raised here."""
        ray = self.ray
        it = iter(items)
        cls = ray.remote(_CallWorker).options(max_restarts=RESTARTS, max_task_retries=RESTARTS, num_cpus=1)
        actors: list[Any] = []
        free: list[Any] = []
        running: dict[Any, tuple[T, Any]] = {}
        try:
            while True:
                while len(running) < max(1, workers):
                    item = next(it, _NONE)
                    if item is _NONE:
                        break
                    if not free:
                        actors.append(cls.remote())
                        free.append(actors[-1])
                    actor = free.pop()
                    running[actor.run.remote(fn, item)] = (item, actor)
                if not running:
                    return
                done, _ = ray.wait(list(running), num_returns=1)
                for ref in done:
                    item, actor = running.pop(ref)
                    free.append(actor)
                    try:
                        value = ray.get(ref)
                    except ray.exceptions.RayTaskError as exc:
                        raise exc.as_instanceof_cause() from None
                    yield item, value
        finally:
            for ref in running:
                with contextlib.suppress(Exception):
                    ray.cancel(ref, force=True)
            for actor in actors:
                with contextlib.suppress(Exception):
                    ray.kill(actor)

    @contextlib.contextmanager
    def hosting(self, concurrency: int) -> Iterator[Host]:
        """Objects on threaded Ray actors (one per cluster CPU, at most ``concurrency``; each holds up to
        its share of the ``concurrency`` objects in use), placed on the actor holding fewest. Actors are
        restarted when their process dies, but the objects they held are gone: calls on those raise
        :class:`HostLost` (the caller starts that work again). All actors go when the context ends."""
        ray = self.ray
        n = max(1, min(self._actors(Demand(), self.workers), concurrency))
        per = max(1, -(-concurrency // n))
        cls = ray.remote(_HostWorker).options(
            max_concurrency=per, max_restarts=RESTARTS, max_task_retries=0, num_cpus=1
        )
        actors = [cls.remote() for _ in range(n)]
        self.host_actors = actors  # (tests kill one of them)
        load = [0] * n
        failed = [0] * n
        dead: set[int] = set()
        lock = threading.Lock()
        keys = itertools.count()

        def place() -> tuple[int, int]:
            with lock:
                live = [i for i in range(n) if i not in dead]
                if not live:
                    raise RayWorkersDying(
                        f"the Ray workers holding rollouts (env sessions, workspaces) died more than "
                        f"{RESTARTS} times each; the rollouts not stored are retried on the next run"
                    )
                a = min(live, key=load.__getitem__)
                load[a] += 1
                return a, next(keys)

        def releaser(a: int, key: int) -> Callable[[], None]:
            done = threading.Event()

            def release() -> None:
                with lock:
                    if done.is_set():
                        return
                    done.set()
                    load[a] -= 1
                with contextlib.suppress(Exception):
                    actors[a].drop.remote(key)

            return release

        def host(factory: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
            while True:
                a, key = place()
                try:
                    made = ray.get(actors[a].make.remote(key, factory, args, kwargs))
                except (ray.exceptions.RayActorError, ray.exceptions.WorkerCrashedError):
                    with lock:  # dying now, or out of restarts: place the object elsewhere
                        load[a] -= 1
                        failed[a] += 1
                        if failed[a] > RESTARTS:
                            dead.add(a)
                    continue
                if isinstance(made, _Raised):
                    with lock:
                        load[a] -= 1
                    raise made.exc
                return _Hosted(ray, actors[a], key, made, releaser(a, key))

        try:
            yield host
        finally:
            for actor in actors:
                with contextlib.suppress(Exception):
                    ray.kill(actor)


_NONE: Any = object()


def _died(ray: Any, exc: BaseException) -> bool:
    """Whether a Ray error chain says a worker process died (not a bug in a stage)."""
    kinds = (ray.exceptions.RayActorError, ray.exceptions.WorkerCrashedError, ray.exceptions.ActorDiedError)
    seen: BaseException | None = exc
    while seen is not None:
        if isinstance(seen, kinds) or "died" in str(seen).lower()[:500]:
            return True
        seen = seen.__cause__ or seen.__context__
    return False


def _fatal_cause(exc: BaseException) -> BaseException | None:
    """The stage's own fatal exception inside a Ray error chain, if there is one."""
    seen: BaseException | None = exc
    while seen is not None:
        cause = getattr(seen, "as_instanceof_cause", None)
        inner = cause() if callable(cause) else seen
        if is_fatal(inner):
            return inner
        seen = seen.__cause__ or seen.__context__
    return None


__all__ = ["RAY_HINT", "RayExecutor", "RayWorkersDying", "Reject", "check_demand", "connect", "import_ray"]
