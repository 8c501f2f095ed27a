"""A seccomp filter for the worker: the few system calls whose effects outlive a submission or
reach past its namespaces are refused.

- The kernel keyrings (`add_key`, `request_key`, `keyctl`) are not namespaced: a key one
  submission makes readable can be read by any later one, whatever its user id, until the
  machine reboots. Refused with EPERM (as Docker's default profile does).
- New user namespaces (`unshare` or `clone` with CLONE_NEWUSER) give the code capabilities
  inside them, and with them mounts of its own (a view of its cgroup, say). Refused with
  EPERM. `clone3` passes its flags in memory a filter cannot read: it is refused with ENOSYS,
  so that the C library falls back to `clone`, whose flags are checked.
- System calls of another ABI (32-bit `int 0x80`, x32 on x86_64) would get around the numbers
  above: all are refused.

Everything else is allowed: the filter takes nothing away that Python, numpy, torch or an
IPython kernel use. It is installed last in `confine()`, after `no_new_privs`, and every
process the worker starts inherits it. On a processor this module does not know, no filter
is installed, and `install()` says so.
"""

from __future__ import annotations

import ctypes
import errno
import platform

PR_SET_SECCOMP, SECCOMP_MODE_FILTER = 22, 2
CLONE_NEWUSER = 0x10000000
X32_BIT = 0x40000000
# struct seccomp_data: int nr; __u32 arch; __u64 instruction_pointer; __u64 args[6]
NR, ARCH, ARG0_LOW = 0, 4, 16  # the low half of args[0], on these little-endian processors
BPF_LD_W_ABS = 0x20
BPF_JEQ_K, BPF_JGE_K, BPF_JSET_K = 0x15, 0x35, 0x45
BPF_RET_K = 0x06
ALLOW = 0x7FFF0000
ERRNO = 0x00050000


class _Arch:
    def __init__(self, audit: int, add_key: int, request_key: int, keyctl: int, unshare: int,
                 clone: int, clone3: int, x32: bool) -> None:
        self.audit, self.x32 = audit, x32
        self.refused = (add_key, request_key, keyctl)
        self.unshare, self.clone, self.clone3 = unshare, clone, clone3


ARCHES = {
    "x86_64": _Arch(0xC000003E, add_key=248, request_key=249, keyctl=250, unshare=272,
                    clone=56, clone3=435, x32=True),
    "aarch64": _Arch(0xC00000B7, add_key=217, request_key=218, keyctl=219, unshare=97,
                     clone=220, clone3=435, x32=False),
}


class _Instruction(ctypes.Structure):
    _fields_ = [("code", ctypes.c_ushort), ("jt", ctypes.c_ubyte), ("jf", ctypes.c_ubyte),
                ("k", ctypes.c_uint32)]


class _Program(ctypes.Structure):
    _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.POINTER(_Instruction))]


def program(arch: _Arch) -> list[tuple[int, int, int, int]]:
    """The filter as (code, jump if true, jump if false, k) instructions."""
    deny = ERRNO | errno.EPERM
    body: list[tuple[int, int, int, int]] = [(BPF_LD_W_ABS, 0, 0, NR)]
    if arch.x32:
        body.append((BPF_JGE_K, 0, 1, X32_BIT))
        body.append((BPF_RET_K, 0, 0, deny))
    for number in arch.refused:
        body.append((BPF_JEQ_K, 0, 1, number))
        body.append((BPF_RET_K, 0, 0, deny))
    body.append((BPF_JEQ_K, 0, 1, arch.clone3))
    body.append((BPF_RET_K, 0, 0, ERRNO | errno.ENOSYS))
    # unshare(flags) and clone(flags, ...): refused when the flags ask for a user namespace.
    body.append((BPF_JEQ_K, 1, 0, arch.unshare))
    body.append((BPF_JEQ_K, 0, 3, arch.clone))
    body.append((BPF_LD_W_ABS, 0, 0, ARG0_LOW))
    body.append((BPF_JSET_K, 0, 1, CLONE_NEWUSER))
    body.append((BPF_RET_K, 0, 0, deny))
    body.append((BPF_RET_K, 0, 0, ALLOW))
    # First of all: a system call of another ABI is refused whatever its number.
    return [(BPF_LD_W_ABS, 0, 0, ARCH), (BPF_JEQ_K, 1, 0, arch.audit),
            (BPF_RET_K, 0, 0, deny), *body]


def install() -> str:
    """Install the filter in this process (and all it will start); what it refuses, in words,
    or why there is none. `no_new_privs` must be set already."""
    arch = ARCHES.get(platform.machine())
    if arch is None:
        return f"no system-call filter (no filter is known for {platform.machine()})"
    instructions = program(arch)
    table = (_Instruction * len(instructions))(*[_Instruction(*i) for i in instructions])
    prog = _Program(len(instructions), table)
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, ctypes.byref(prog), 0, 0) != 0:
        number = ctypes.get_errno()
        raise OSError(number, f"seccomp filter: {errno.errorcode.get(number, number)}")
    return "no kernel keyrings and no new user namespaces (a seccomp filter)"
