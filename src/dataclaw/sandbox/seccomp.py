"""A tiny seccomp filter (classic BPF, no libseccomp needed): no new user namespaces, no IP sockets.

When the caller is root, bubblewrap runs without a user namespace, so its ``--disable-userns`` is not
available; an unprivileged program could otherwise create a user namespace and become "root" there —
not an escape (bind mounts stay locked), but a large kernel attack surface. The filter makes ``unshare``
and ``clone`` with ``CLONE_NEWUSER`` fail with EPERM, makes ``clone3`` report ENOSYS (its flags live in
memory that BPF cannot read; the C library then falls back to ``clone``), and refuses foreign syscall ABIs
(x32, i386). As a normal user bubblewrap's ``--disable-userns`` applies too; the filter still runs first,
so an attempt reads as EPERM in both modes.

IP sockets: the network namespace is empty but has a loopback interface, so a program could still talk to
a server it started itself, or find one another run left listening. ``socket(AF_INET|AF_INET6, …)`` fails
with EAFNOSUPPORT, so any connection attempt — loopback included — ends in an error the launcher classifies
as a ``network`` violation (Unix sockets and socket pairs keep working: event loops and pipes need them).
"""

from __future__ import annotations

import errno
import platform
import struct

CLONE_NEWUSER = 0x10000000
AUDIT_ARCH = {"x86_64": 0xC000003E, "aarch64": 0xC00000B7}
# (unshare, clone, clone3, socket) syscall numbers per architecture.
SYSCALLS = {"x86_64": (272, 56, 435, 41), "aarch64": (97, 220, 435, 198)}
X32_SYSCALL_BIT = 0x40000000
AF_INET, AF_INET6 = 2, 10

_LD_W_ABS, _JEQ, _JGE, _JSET, _RET = 0x20, 0x15, 0x35, 0x45, 0x06
_ALLOW = 0x7FFF0000
_ERRNO = 0x00050000


def _insn(code: int, k: int, jt: int = 0, jf: int = 0) -> bytes:
    return struct.pack("<HBBI", code, jt, jf, k)


def sandbox_filter(machine: str | None = None) -> bytes | None:
    """The filter for this machine's architecture, or None where it has no syscall table here."""
    arch = machine or platform.machine()
    if arch not in SYSCALLS:
        return None
    unshare, clone, clone3, socket = SYSCALLS[arch]
    # (label, code, k, jump-if-true label, jump-if-false label); None = fall through to the next one
    program: list[tuple[str, int, int, str | None, str | None]] = [
        ("", _LD_W_ABS, 4, None, None),  # the syscall's ABI
        ("", _JEQ, AUDIT_ARCH[arch], None, "enosys"),
        ("", _LD_W_ABS, 0, None, None),  # the syscall number
        ("", _JGE, X32_SYSCALL_BIT, "enosys", None),
        ("", _JEQ, unshare, "flags", None),
        ("", _JEQ, clone, "flags", None),
        ("", _JEQ, clone3, "enosys", None),
        ("", _JEQ, socket, "domain", None),
        ("", _RET, _ALLOW, None, None),
        ("flags", _LD_W_ABS, 16, None, None),  # low 32 bits of the first argument
        ("", _JSET, CLONE_NEWUSER, "eperm", None),
        ("", _RET, _ALLOW, None, None),
        ("domain", _LD_W_ABS, 16, None, None),  # socket(domain, …): the address family
        ("", _JEQ, AF_INET, "eafnosupport", None),
        ("", _JEQ, AF_INET6, "eafnosupport", None),
        ("", _RET, _ALLOW, None, None),
        ("eafnosupport", _RET, _ERRNO | errno.EAFNOSUPPORT, None, None),
        ("eperm", _RET, _ERRNO | errno.EPERM, None, None),
        ("enosys", _RET, _ERRNO | errno.ENOSYS, None, None),
    ]
    where = {label: i for i, (label, *_) in enumerate(program) if label}

    def offset(i: int, label: str | None) -> int:
        return 0 if label is None else where[label] - i - 1

    return b"".join(
        _insn(code, k, offset(i, jt), offset(i, jf)) for i, (_, code, k, jt, jf) in enumerate(program)
    )
