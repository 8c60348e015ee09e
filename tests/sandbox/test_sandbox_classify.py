"""Outcome classification rules, in-process: errno and exception types, signals, launcher records."""

from __future__ import annotations

import errno
import os
import signal
import socket
import urllib.error

import pytest

from dataclaw.sandbox import _inner

ROOTS = ["/workspace", "/usr", "/tmp", "/etc/passwd"]
WRITABLE = ["/workspace", "/tmp"]


def _oserror(num: int, filename: str | None = None) -> OSError:
    return OSError(num, os.strerror(num), filename) if filename else OSError(num, os.strerror(num))


@pytest.mark.parametrize(
    ("exc", "expected"),
    [
        (MemoryError(), ("resource_limit", "memory")),
        (_oserror(errno.EFBIG), ("resource_limit", "file_size")),
        (_oserror(errno.ENOSPC), ("resource_limit", "disk")),
        (_oserror(errno.EMFILE), ("resource_limit", "open_files")),
        (BlockingIOError(errno.EAGAIN, "again"), ("resource_limit", "processes")),
        (_oserror(errno.ENETUNREACH), ("violation", "network")),
        (socket.gaierror(socket.EAI_AGAIN, "Temporary failure in name resolution"), ("violation", "network")),
        (_oserror(errno.EROFS, "/usr/x"), ("violation", "read_only")),
        (_oserror(errno.EACCES, "/etc/passwd"), ("violation", "permission")),
        (_oserror(errno.EACCES, "/workspace/locked"), ("error", None)),
        (_oserror(errno.ENOENT, "/etc/shadow"), ("violation", "outside")),
        (_oserror(errno.ENOENT, "/var/tmp/other/secret"), ("violation", "outside")),
        (_oserror(errno.ENOENT, "/workspace/missing.txt"), ("error", None)),
        (_oserror(errno.ENOENT), ("error", None)),
        (_oserror(errno.ECONNREFUSED), ("error", None)),
        (_oserror(errno.EPERM), ("violation", "operation")),
        (ValueError("x"), ("error", None)),
        (KeyboardInterrupt(), ("error", None)),
    ],
)
def test_exceptions_are_classified_by_type_errno_and_path(exc, expected):
    assert _inner.classify_exception(exc, ROOTS, WRITABLE) == expected


def test_wrapped_causes_are_followed():
    url_error = urllib.error.URLError(_oserror(errno.ENETUNREACH))
    assert _inner.classify_exception(url_error, ROOTS, WRITABLE) == ("violation", "network")
    try:
        try:
            raise MemoryError
        except MemoryError as inner:
            raise RuntimeError("wrapped") from inner
    except RuntimeError as outer:
        assert _inner.classify_exception(outer, ROOTS, WRITABLE) == ("resource_limit", "memory")


def test_relative_paths_are_resolved_against_the_cwd(monkeypatch, tmp_path):
    monkeypatch.chdir(tmp_path)
    exc = _oserror(errno.ENOENT, "missing.txt")
    assert _inner.classify_exception(exc, [str(tmp_path)], [str(tmp_path)]) == ("error", None)
    assert _inner.classify_exception(exc, ["/elsewhere"], []) == ("violation", "outside")


@pytest.mark.parametrize(
    ("code", "status", "resource"),
    [
        (0, "ok", None),
        (3, "error", None),
        (128 + signal.SIGXCPU, "resource_limit", "cpu"),
        (128 + signal.SIGXFSZ, "resource_limit", "file_size"),
        (128 + signal.SIGKILL, "resource_limit", "memory"),
        (128 + signal.SIGSEGV, "error", None),
    ],
)
def test_exit_codes_and_signals(code, status, resource):
    verdict = _inner.classify_exit(code, None, False, 10)
    assert (verdict["status"], verdict["resource"]) == (status, resource)


def test_signal_message_names_the_signal_and_a_deliberate_exit_wins():
    assert (
        _inner.classify_exit(128 + signal.SIGSEGV, None, False, 10)["message"]
        == "the program was killed by SIGSEGV"
    )
    deliberate = {"event": "exit", "exit_code": "152", "pid": 2}
    assert _inner.classify_exit(152, deliberate, False, 10)["status"] == "error"
    assert _inner.classify_exit(None, None, True, 2.5)["message"] == "timed out after 2.5 s"


def test_records_round_trip_and_garbage_is_ignored():
    r, w = os.pipe()
    _inner._Reporter(w).send(event="exception", status="violation", resource="network", type="Odd\tName\n")
    _inner._Reporter(w).send(event="exit", exit_code=0, resource=None)
    os.write(w, b"garbage without fields\npid=notanumber\tevent=exit\n\x00\xff\n")
    os.close(w)
    records = _inner.parse_records(os.read(r, 65536))
    os.close(r)
    assert [rec["event"] for rec in records] == ["exception", "exit"]
    assert records[0]["type"] == "Odd Name " and records[0]["pid"] == os.getpid()
    assert "resource" not in records[1]


def test_the_main_process_record_wins_over_forked_children():
    records = [
        {"event": "started", "pid": 2},
        {"event": "exception", "status": "resource_limit", "resource": "processes", "pid": 7},
        {"event": "exit", "exit_code": "0", "pid": 2},
    ]
    assert _inner.pick_record(records, 2)["event"] == "exit"
    assert _inner.pick_record(records[:2], 2)["pid"] == 7
    assert _inner.pick_record([], 2) is None


def test_frames_round_trip():
    r, w = os.pipe()
    _inner.write_frame(w, {"a": [1, "ü"]})
    os.close(w)
    assert _inner._read_frame(r) == {"a": [1, "ü"]}
    assert _inner._read_frame(r) is None
    os.close(r)


def test_seccomp_filter_layout():
    from dataclaw.sandbox.seccomp import sandbox_filter

    prog = sandbox_filter("x86_64")
    assert prog is not None and len(prog) == 19 * 8  # 19 classic-BPF instructions of 8 bytes
    assert sandbox_filter("riscv64") is None


def test_forged_records_cannot_inject_statuses_or_text():
    forged = {
        "event": "exception",
        "status": "ok",
        "resource": "../../etc",
        "type": "/etc/passwd <b>",
        "pid": 2,
    }
    verdict = _inner.classify_exit(1, forged, False, 10)
    assert verdict == {"status": "error", "resource": None, "message": "the program raised etcpasswdb"}
    forged = {"event": "exception", "status": "timeout", "resource": "memory", "type": "X", "pid": 2}
    verdict = _inner.classify_exit(1, forged, False, 10)
    assert (verdict["status"], verdict["resource"]) == ("error", None)
