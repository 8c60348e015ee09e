"""Session storage: journal + snapshot, torn tails, compaction, cross-process replay, locks, SIGKILL."""

from __future__ import annotations

import os
import random
import signal
import time
from pathlib import Path

import pytest

from dataclaw.envcraft.runtime import EnvError, EnvPackage, ErrorCategory, state_hash
from dataclaw.envcraft.runtime.store import JOURNAL, LOCK, SNAPSHOT, decode_entry, encode_entry


def _items(env, sid: str) -> list[int]:
    return env.get_session_state(sid)["items"]


def test_session_files_and_fresh_instance_sees_writes(counter_pkg: EnvPackage, tmp_path: Path) -> None:
    env = counter_pkg.env_cls(tmp_path)
    sid = env.create_session("reach_three", "s1")
    for i in range(5):
        assert env.call(sid, "append_item", value=i)["status"] == "ok"
    d = tmp_path / "s1"
    assert {SNAPSHOT, JOURNAL, LOCK} <= {p.name for p in d.iterdir()}
    assert len((d / JOURNAL).read_bytes().splitlines()) == 5
    other = counter_pkg.env_cls(tmp_path)  # empty cache: snapshot + replayed journal
    assert _items(other, sid) == [0, 1, 2, 3, 4]
    assert state_hash(other.get_session_state(sid)) == state_hash(env.get_session_state(sid))


def test_two_instances_interleave_through_the_journal(counter_pkg: EnvPackage, tmp_path: Path) -> None:
    a, b = counter_pkg.env_cls(tmp_path), counter_pkg.env_cls(tmp_path)
    sid = a.create_session("reach_three")
    for i in range(10):
        (a if i % 2 else b).call(sid, "append_item", value=i)
    assert _items(a, sid) == list(range(10)) == _items(b, sid)
    assert [x["index"] for x in a.get_session_state(sid)["actions"]] == list(range(10))


def test_compaction_folds_journal_into_snapshot(counter_pkg: EnvPackage, tmp_path: Path) -> None:
    env = counter_pkg.env_cls(tmp_path, compact_every=4)
    other = counter_pkg.env_cls(tmp_path, compact_every=4)
    sid = env.create_session("reach_three", "c")
    for i in range(10):
        (env if i < 6 else other).call(sid, "append_item", value=i)
    assert len((tmp_path / "c" / JOURNAL).read_bytes().splitlines()) == 10 % 4
    assert _items(counter_pkg.env_cls(tmp_path), sid) == list(range(10))
    assert _items(env, sid) == list(range(10))  # env's cache noticed the other instance's compaction


def test_torn_tail_is_ignored_then_cut(counter_pkg: EnvPackage, tmp_path: Path) -> None:
    env = counter_pkg.env_cls(tmp_path)
    sid = env.create_session("reach_three", "t")
    env.call(sid, "append_item", value=1)
    journal = tmp_path / "t" / JOURNAL
    whole = journal.read_bytes()
    line = encode_entry(
        {"record": {"index": 1, "tool": "append_item", "params": {"value": 2}}, "apply": True, "seq": 2}
    )
    journal.write_bytes(whole + line[: len(line) // 2])  # a writer died mid-append
    fresh = counter_pkg.env_cls(tmp_path)
    assert _items(fresh, sid) == [1]
    assert fresh.call(sid, "append_item", value=3)["status"] == "ok"
    assert _items(counter_pkg.env_cls(tmp_path), sid) == [1, 3]
    assert all(decode_entry(raw) is not None for raw in journal.read_bytes().splitlines())


def test_corrupt_line_counts_as_torn(counter_pkg: EnvPackage, tmp_path: Path) -> None:
    env = counter_pkg.env_cls(tmp_path)
    sid = env.create_session("reach_three", "k")
    for i in range(3):
        env.call(sid, "append_item", value=i)
    journal = tmp_path / "k" / JOURNAL
    lines = journal.read_bytes().splitlines(keepends=True)
    lines[2] = lines[2].replace(b'"value":2', b'"value":9')  # checksum no longer matches
    journal.write_bytes(b"".join(lines))
    assert _items(counter_pkg.env_cls(tmp_path), sid) == [0, 1]


def test_create_refuses_duplicates_and_bad_ids(counter_env) -> None:
    counter_env.create_session("reach_three", "dup")
    with pytest.raises(EnvError, match="already exists"):
        counter_env.create_session("reach_three", "dup")
    for bad in ("../x", "", ".hidden", "a/b", "x" * 200):
        with pytest.raises(EnvError) as info:
            counter_env.create_session("reach_three", bad)
        assert info.value.category == ErrorCategory.INVALID_ARGUMENT


def test_missing_session_and_deleted_session(counter_env) -> None:
    out = counter_env.call("ghost", "get_counter")
    assert out["error"]["category"] == "session_not_found"
    sid = counter_env.create_session("reach_three")
    counter_env.delete_session(sid)
    assert counter_env.call(sid, "get_counter")["error"]["category"] == "session_not_found"


def test_lock_timeout_is_bounded_and_agent_safe(counter_pkg: EnvPackage, tmp_path: Path) -> None:
    holder = counter_pkg.env_cls(tmp_path)
    waiter = counter_pkg.env_cls(tmp_path, lock_timeout_s=0.2)
    sid = holder.create_session("reach_three")
    with holder.store.transaction(sid):
        t0 = time.monotonic()
        out = waiter.call(sid, "get_counter")
        waited = time.monotonic() - t0
    assert out["status"] == "error" and out["error"]["category"] == "lock_timeout"
    assert out["error"]["retryable"] is True and str(tmp_path) not in out["error"]["message"]
    assert 0.19 <= waited < 10  # it waited for the timeout, and the wait is bounded (not a speed check)
    assert waiter.call(sid, "get_counter")["status"] == "ok"


def _fork(child) -> int:  # type: ignore[no-untyped-def]
    pid = os.fork()
    if pid == 0:  # pragma: no cover - child
        try:
            child()
        finally:
            os._exit(0)
    return pid


def test_killed_lock_holder_does_not_wedge_the_session(counter_pkg: EnvPackage, tmp_path: Path) -> None:
    env = counter_pkg.env_cls(tmp_path)
    sid = env.create_session("reach_three")
    r, w = os.pipe()

    def hold() -> None:
        child = counter_pkg.env_cls(tmp_path)
        with child.store.transaction(sid):
            os.write(w, b"x")
            time.sleep(60)

    pid = _fork(hold)
    assert os.read(r, 1) == b"x"
    waiter = counter_pkg.env_cls(tmp_path, lock_timeout_s=0.3)
    assert waiter.call(sid, "get_counter")["error"]["category"] == "lock_timeout"  # really held
    os.kill(pid, signal.SIGKILL)
    os.waitpid(pid, 0)
    assert waiter.call(sid, "increment")["status"] == "ok"  # within the 0.3 s lock timeout: not wedged
    assert (tmp_path / sid / LOCK).exists()  # the lock file stays; flock state died with the process


@pytest.mark.slow
def test_sigkill_during_writes_always_leaves_a_prefix(counter_pkg: EnvPackage, tmp_path: Path) -> None:
    """50 times: a writer appends 0, 1, 2, ... (1,000 writes, compaction every 64) and is SIGKILLed at a
    random moment; the session always loads and equals the state after some prefix of the actions."""
    rng = random.Random(7)
    env = counter_pkg.env_cls(tmp_path, compact_every=64)
    sid = env.create_session("reach_three", "crash")
    previous = 0
    for _ in range(50):
        r, w = os.pipe()

        def write(w: int = w) -> None:
            child = counter_pkg.env_cls(tmp_path, compact_every=64)
            start = len(child.get_session_state(sid)["items"])
            os.write(w, b"go")
            for i in range(start, start + 1000):
                child.call(sid, "append_item", value=i)

        pid = _fork(write)
        os.read(r, 2)
        time.sleep(rng.uniform(0, 0.05))
        os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)
        os.close(r)
        os.close(w)
        state = counter_pkg.env_cls(tmp_path).get_session_state(sid)
        n = len(state["items"])
        assert state["items"] == list(range(n))
        assert [a["index"] for a in state["actions"]] == list(range(n))
        assert state["meta"]["action_index"] == n
        assert n >= previous  # nothing that was applied before is lost
        previous = n
    assert previous > 0


def test_cache_is_bounded_and_list_skips_temporaries(counter_pkg: EnvPackage, tmp_path: Path) -> None:
    env = counter_pkg.env_cls(tmp_path)
    env.store.cache_size = 3
    sids = [env.create_session("reach_three", f"s{i}") for i in range(6)]
    for sid in sids:
        env.call(sid, "increment")
    assert len(env.store._cache) == 3
    assert all(env.get_session_state(sid)["counter"]["value"] == 1 for sid in sids)  # evicted ones reload
    (tmp_path / ".creating-x").mkdir()
    (tmp_path / ".creating-x" / SNAPSHOT).write_text("{}")
    assert env.store.list_sessions() == sids
    env.store.close()


def test_journal_entry_that_fails_on_replay_is_an_infrastructure_error(
    counter_pkg: EnvPackage, tmp_path: Path
) -> None:
    env = counter_pkg.env_cls(tmp_path)
    sid = env.create_session("reach_three", "r")
    env.call(sid, "increment")
    bad = {
        "record": {"index": 1, "tool": "increment", "params": {"by": 0}, "at": "x", "status": "ok"},
        "apply": True,
    }
    with open(
        tmp_path / "r" / JOURNAL, "ab"
    ) as fh:  # as if another process recorded a call that cannot replay
        fh.write(encode_entry({**bad, "seq": 2}))
    out = env.call(sid, "get_counter")
    assert out["status"] == "error" and out["error"]["category"] == "infrastructure"
    assert "between" not in out["error"]["message"]  # the replayed tool's own message is not shown
    with pytest.raises(EnvError):
        counter_pkg.env_cls(tmp_path).get_session_state(sid)


def test_durable_mode_fsyncs_and_behaves_the_same(counter_pkg: EnvPackage, tmp_path: Path) -> None:
    env = counter_pkg.env_cls(tmp_path, durable=True, compact_every=2)
    sid = env.create_session("reach_three")
    for i in range(5):
        env.call(sid, "append_item", value=i)
    assert _items(counter_pkg.env_cls(tmp_path), sid) == list(range(5))


def test_threads_share_one_store_with_a_tiny_cache(counter_pkg: EnvPackage, tmp_path: Path) -> None:
    """Eviction never closes descriptors a thread is using (else a reused fd could write elsewhere)."""
    import threading

    env = counter_pkg.env_cls(tmp_path)
    env.store.cache_size = 2
    sids = [env.create_session("reach_three", f"t{i}") for i in range(12)]
    errors: list[dict] = []

    def work(k: int) -> None:
        for i in range(40):
            sid = sids[(k + i) % len(sids)]
            out = env.call(sid, "append_item", value=k * 1000 + i)
            if out["status"] != "ok":
                errors.append(out)

    threads = [threading.Thread(target=work, args=(k,)) for k in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    fresh = counter_pkg.env_cls(tmp_path)
    values = sorted(v for sid in sids for v in fresh.get_session_state(sid)["items"])
    assert values == sorted(k * 1000 + i for k in range(8) for i in range(40))
    for sid in sids:  # each session holds exactly the values written to it, in its journal order
        state = fresh.get_session_state(sid)
        assert len(state["items"]) == len(state["actions"]) == state["meta"]["action_index"]
