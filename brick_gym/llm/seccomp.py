"""The sandbox's seccomp filter: a classic BPF program, built here in pure Python, that bubblewrap loads
(``--seccomp FD``) into the sandboxed process before the agent's code runs.

It refuses (``EPERM``) what a program needs only to leave its box or to take memory the limits do not see: new
namespaces (``unshare``, ``setns``, ``clone`` with a namespace flag), mounts of any kind, ``ptrace`` and cross-process
memory access, the kernel keyring, ``bpf``, ``perf_event_open``, ``userfaultfd``, ``io_uring``, module and kexec
loading, memory-backed files and segments outside the file system (``memfd_create``, System V shared memory, message
queues). ``clone3`` gets ``ENOSYS`` (its flags sit behind a pointer a filter cannot read), so the C library falls
back to ``clone``, whose flags are checked. Any other architecture than the one the table is for, and the x32 ABI,
are refused outright.

Why pure Python rather than libseccomp: the filter is a few dozen instructions, has no native dependency to install
or to go missing, and is the same bytes on every host; the attack tests check that it holds.
"""

from __future__ import annotations

import errno
import platform
import struct

__all__ = ["DENIED", "NAMESPACE_FLAGS", "SeccompUnsupported", "filter_program"]

# classic BPF opcodes (linux/filter.h)
_LD_W_ABS = 0x20
_JEQ_K = 0x15
_JGE_K = 0x35
_JSET_K = 0x45
_RET_K = 0x06

_RET_ALLOW = 0x7FFF0000
_RET_ERRNO = 0x00050000
_RET_KILL_PROCESS = 0x80000000

_NR, _ARCH, _ARG0_LOW = 0, 4, 16
"""Offsets in ``struct seccomp_data``: syscall number, audit arch, low 32 bits of the first argument."""

_X32_BIT = 0x40000000

NAMESPACE_FLAGS = 0x7E020080
"""CLONE_NEWNS | NEWCGROUP | NEWUTS | NEWIPC | NEWUSER | NEWPID | NEWNET | NEWTIME."""

DENIED = tuple(
    [
        "unshare",
        "setns",
        "mount",
        "umount2",
        "pivot_root",
        "chroot",
        "ptrace",
        "process_vm_readv",
        "process_vm_writev",
        "kcmp",
        "pidfd_getfd",
        "keyctl",
        "add_key",
        "request_key",
        "bpf",
        "perf_event_open",
        "userfaultfd",
        "io_uring_setup",
        "io_uring_enter",
        "io_uring_register",
        "open_tree",
        "move_mount",
        "fsopen",
        "fsconfig",
        "fsmount",
        "fspick",
        "mount_setattr",
        "name_to_handle_at",
        "open_by_handle_at",
        "init_module",
        "finit_module",
        "delete_module",
        "kexec_load",
        "kexec_file_load",
        "reboot",
        "swapon",
        "swapoff",
        "memfd_create",
        "memfd_secret",
        "shmget",
        "msgget",
        "semget",
        "mq_open",
    ]
)
"""System calls the sandbox refuses with EPERM (``clone`` is refused only with a namespace flag)."""


def _table(text: str) -> dict[str, int]:
    words = text.split()
    return {name: int(nr) for name, nr in zip(words[::2], words[1::2], strict=True)}


_TABLES: dict[str, tuple[int, dict[str, int]]] = {
    "x86_64": (
        0xC000003E,
        _table(
            "unshare 272 setns 308 mount 165 umount2 166 pivot_root 155 chroot 161 ptrace 101 process_vm_readv 310 "
            "process_vm_writev 311 kcmp 312 pidfd_getfd 438 keyctl 250 add_key 248 request_key 249 bpf 321 "
            "perf_event_open 298 userfaultfd 323 io_uring_setup 425 io_uring_enter 426 io_uring_register 427 "
            "open_tree 428 move_mount 429 fsopen 430 fsconfig 431 fsmount 432 fspick 433 mount_setattr 442 "
            "name_to_handle_at 303 open_by_handle_at 304 init_module 175 finit_module 313 delete_module 176 "
            "kexec_load 246 kexec_file_load 320 reboot 169 swapon 167 swapoff 168 memfd_create 319 memfd_secret 447 "
            "shmget 29 msgget 68 semget 64 mq_open 240 clone 56 clone3 435"
        ),
    ),
    "aarch64": (
        0xC00000B7,
        _table(
            "unshare 97 setns 268 mount 40 umount2 39 pivot_root 41 chroot 51 ptrace 117 process_vm_readv 270 "
            "process_vm_writev 271 kcmp 272 pidfd_getfd 438 keyctl 219 add_key 217 request_key 218 bpf 280 "
            "perf_event_open 241 userfaultfd 282 io_uring_setup 425 io_uring_enter 426 io_uring_register 427 "
            "open_tree 428 move_mount 429 fsopen 430 fsconfig 431 fsmount 432 fspick 433 mount_setattr 442 "
            "name_to_handle_at 264 open_by_handle_at 265 init_module 105 finit_module 273 delete_module 106 "
            "kexec_load 104 kexec_file_load 294 reboot 142 swapon 224 swapoff 225 memfd_create 279 memfd_secret 447 "
            "shmget 194 msgget 186 semget 190 mq_open 180 clone 220 clone3 435"
        ),
    ),
}
"""Per machine: (AUDIT_ARCH value, syscall numbers). x86_64 is tested on the project's machines; aarch64's numbers
are the kernel's generic table (asm-generic/unistd.h)."""


class SeccompUnsupported(RuntimeError):
    """No syscall table for this machine's architecture: the sandbox refuses to run rather than run unfiltered."""


def _op(code: int, k: int, jt: int = 0, jf: int = 0) -> bytes:
    return struct.pack("=HBBI", code, jt, jf, k)


def filter_program(machine: str | None = None) -> bytes:
    """The filter as ``struct sock_filter`` entries, ready for ``bwrap --seccomp FD`` (native byte order)."""
    machine = machine or platform.machine()
    if machine not in _TABLES:
        raise SeccompUnsupported(f"the sandbox's seccomp filter has no syscall table for {machine!r}")
    arch, numbers = _TABLES[machine]
    eperm = _RET_ERRNO | errno.EPERM
    denied = [numbers[name] for name in DENIED]
    # layout: [arch check][x32 check][one jeq per denied call][clone][clone3][allow][eperm][enosys][clone flags]
    prog = [_op(_LD_W_ABS, _ARCH), _op(_JEQ_K, arch, 1, 0), _op(_RET_K, _RET_KILL_PROCESS), _op(_LD_W_ABS, _NR)]
    body = [(_JGE_K, _X32_BIT, "eperm")] + [(_JEQ_K, nr, "eperm") for nr in denied]
    body += [(_JEQ_K, numbers["clone"], "flags"), (_JEQ_K, numbers["clone3"], "enosys")]
    targets = {"allow": len(body), "eperm": len(body) + 1, "enosys": len(body) + 2, "flags": len(body) + 3}
    for i, (code, k, target) in enumerate(body):
        prog.append(_op(code, k, targets[target] - i - 1, 0))
    prog += [_op(_RET_K, _RET_ALLOW), _op(_RET_K, eperm), _op(_RET_K, _RET_ERRNO | errno.ENOSYS)]
    prog += [_op(_LD_W_ABS, _ARG0_LOW), _op(_JSET_K, NAMESPACE_FLAGS, 0, 1), _op(_RET_K, eperm)]
    prog.append(_op(_RET_K, _RET_ALLOW))
    return b"".join(prog)
